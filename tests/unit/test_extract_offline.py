"""The offline extractor and the item-name guard shared by every extractor."""

from __future__ import annotations

import re

import pysbd
import pytest

from wiki.extract import ExtractionError, Extractor, get_extractor, validate_item_name
from wiki.extract.offline import MAX_ANALYSED_CHARS, MAX_CONCEPTS, MAX_ENTITIES, OfflineExtractor
from wiki.models import Extraction
from wiki.settings import Settings

PROSE = """# Process management

The subprocess module is a standard library module that runs child processes for Python programs.
It was designed by the Python Software Foundation to replace older interfaces such as os.system.
subprocess.Popen is the class that starts a child process, and Popen objects expose its pipes.
Most helpers follow POSIX conventions, so a pipe behaves the same on every POSIX system.
POSIX is a family of standards for the interfaces of operating systems.
The Python Software Foundation is a non-profit organisation that holds the rights to Python.

In the Linux kernel, memory for small objects comes from kmalloc() and the slab allocator.
The slab allocator is a cache of fixed-size objects that keeps memory fragmentation low.
Large buffers come from vmalloc() instead, because kmalloc() needs physically contiguous pages.
Engineers at the Python Software Foundation review every change to the subprocess module.

```
SecretFencedName = do_not_quote_me()
```

A child process inherits its environment unless the caller passes a new one.
Each child process has its own exit status, which the parent reads after it finishes.
"""

SEGMENTER = pysbd.Segmenter(language="en", clean=False)


def _collapsed(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def extraction() -> Extraction:
    return OfflineExtractor().extract("Process management", PROSE)


def test_is_an_extractor_with_a_versioned_name() -> None:
    extractor = get_extractor(Settings(extractor="offline"))
    assert isinstance(extractor, OfflineExtractor)
    assert isinstance(extractor, Extractor)
    assert re.search(r"v\d+$", extractor.name)


def test_llm_setting_gives_the_llm_extractor() -> None:
    from wiki.extract.llm import LLMExtractor

    extractor = get_extractor(Settings(extractor="llm", llm_model="m1"))
    assert isinstance(extractor, LLMExtractor) and isinstance(extractor, Extractor)
    assert extractor.name.startswith("llm-map_v2-") and extractor.name.endswith(":m1")


def test_is_deterministic(extraction: Extraction) -> None:
    again = OfflineExtractor().extract("Process management", PROSE)
    assert again.model_dump() == extraction.model_dump()


def test_result_validates_and_is_bounded(extraction: Extraction) -> None:
    Extraction.model_validate(extraction.model_dump())
    kinds = [item.kind for item in extraction.items]
    assert 0 < kinds.count("entity") <= MAX_ENTITIES
    assert 0 < kinds.count("concept") <= MAX_CONCEPTS
    assert "\n" not in extraction.summary and len(extraction.summary) <= 300
    assert "[[" not in extraction.body and not extraction.body.lstrip().startswith("#")
    assert 1 <= len(extraction.body.split("\n\n")) <= 3


def test_summary_is_the_first_informative_sentence(extraction: Extraction) -> None:
    first = PROSE.splitlines()[2]
    assert extraction.summary == first
    assert extraction.body.startswith(first)


def test_every_name_passes_the_guard_and_aliases_differ(extraction: Extraction) -> None:
    for item in extraction.items:
        assert validate_item_name(item.name) == item.name
        assert item.name not in item.aliases
        assert len(set(item.aliases)) == len(item.aliases)


def test_finds_names_acronyms_and_code_identifiers(extraction: Extraction) -> None:
    entities = {item.name: item for item in extraction.items if item.kind == "entity"}
    for expected in ("Python Software Foundation", "POSIX", "subprocess.Popen"):
        assert expected in entities, sorted(entities)
    # kmalloc() is only ever used here ("memory comes from kmalloc()"), never said to be or do
    # anything: it stays a mention, not a page with a placeholder lead
    assert "kmalloc" not in entities
    assert "Popen" in entities["subprocess.Popen"].aliases
    assert "The" not in entities and "Most" not in entities  # capitalised only at a sentence start
    concepts = [item.name for item in extraction.items if item.kind == "concept"]
    folded = {name.casefold() for name in entities}
    assert concepts and all(c.casefold() not in folded for c in concepts)


def test_evidence_is_quoted_from_the_input_and_not_from_code(extraction: Extraction) -> None:
    source = _collapsed(PROSE)
    for item in extraction.items:
        assert 1 <= len(item.evidence) <= 3
        assert len(set(item.evidence)) == len(item.evidence)
        for sentence in item.evidence:
            assert sentence in source  # whole sentences, never cut
            assert "SecretFencedName" not in sentence


def test_descriptions_are_single_sentences(extraction: Extraction) -> None:
    for item in extraction.items:
        assert len(SEGMENTER.segment(item.description)) == 1, item.description
        assert item.description[-1] in ".!?\u2026"
        assert item.name.casefold() in item.description.casefold()


def test_a_definitional_sentence_becomes_the_description(extraction: Extraction) -> None:
    by_name = {item.name.casefold(): item for item in extraction.items}
    slab = by_name.get("slab allocator")
    assert slab is not None, sorted(by_name)
    definition = next(line for line in PROSE.splitlines() if line.startswith("The slab allocator is"))
    assert slab.description == definition


def test_markup_is_stripped_from_sentences() -> None:
    text = (
        "Overview\n========\n\nThe :c:func:`kmalloc` function is the **usual** way to allocate "
        "small objects in the kernel. See `the guide <https://example.org/guide>`_ for details on "
        "``GFP_KERNEL`` and other allocation flags used by drivers. The ``GFP_KERNEL`` flag is the "
        "usual allocation flag of kernel code that may sleep.\n"
    )
    result = OfflineExtractor().extract("Overview", text)
    assert result.summary.startswith("The kmalloc function is the usual way")
    names = {item.name for item in result.items}
    assert {"kmalloc", "GFP_KERNEL"} <= names
    for item in result.items:
        for sentence in item.evidence:
            assert not re.search(r"[`*]|:c:func:|https?://", sentence)


def test_analysis_is_capped() -> None:
    head = PROSE * (MAX_ANALYSED_CHARS // len(PROSE) + 1)
    tail = "Zanzibar Quokka Consortium members discuss nothing but Zanzibar Quokka matters. " * 2000
    extractor = OfflineExtractor()
    assert extractor.extract("t", head + tail) == extractor.extract("t", (head + tail)[:MAX_ANALYSED_CHARS])


@pytest.mark.parametrize("text", ["", "   \n\n  ", "!!! ??? ... --- ***", "```\ncode only()\n```"])
def test_no_usable_sentence_raises(text: str) -> None:
    with pytest.raises(ExtractionError):
        OfflineExtractor().extract("Empty", text)


@pytest.mark.parametrize(
    "name",
    [
        "",
        "   ",
        "<think>",
        "<think>reasoning</think>",
        "</s>",
        "https://example.org/page",
        "www.example.org",
        "mailto:someone@example.org",
        "someone@example.org",
        "../etc/passwd",
        "./local",
        "/usr/bin",
        "~/notes",
        "C:\\Windows",
        "C:\\",
        "usr/share/doc",
        "src/main.py",
        "[[Other Page]]",
        "a|b",
        "`",
        "# Heading",
        "12345",
        "3.14",
        "!!!",
        "...",
        "\U0001f680",
        "\U0001f680 Rocket",
        "the",
        "The",
        "of the",
        "x" * 81,
        "one two three four five six seven",
        "line\x00break",
    ],
)
def test_bad_names_are_rejected(name: str) -> None:
    assert validate_item_name(name) is None


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Linux Kernel", "Linux Kernel"),
        ("TCP/IP", "TCP/IP"),
        ("I/O", "I/O"),
        ("UTF-8", "UTF-8"),
        ("C#", "C#"),
        ("os.path", "os.path"),
        ("`os.path`", "os.path"),
        ("**Python**", "Python"),
        ("Python.", "Python"),
        ("  hash   table ", "hash table"),
        ("\u6771\u4eac", "\u6771\u4eac"),
        ("Python Software Foundation", "Python Software Foundation"),
    ],
)
def test_good_names_are_cleaned(raw: str, clean: str) -> None:
    assert validate_item_name(raw) == clean


def test_threads_extracting_at_once_get_the_same_results_as_one_thread():
    # Seen in the worker: a shared pysbd/yake instance mixed state between threads (IndexError,
    # and extractions that depended on what other threads were extracting).
    from concurrent.futures import ThreadPoolExecutor

    from tests.support.corpus import shipped_docs
    from wiki.extract.offline import OfflineExtractor

    def extract(doc):
        try:
            return OfflineExtractor().extract(doc.title, doc.text)
        except ExtractionError as exc:
            return repr(exc)

    docs = shipped_docs()[:24]
    serial = [extract(d) for d in docs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(extract, docs))
    assert sum(not isinstance(x, str) for x in serial) >= 16
    assert parallel == serial
