"""What the offline extractor makes pages of, and what it says about them (issue 14, rules 1-5)."""

from __future__ import annotations

import pytest

from wiki.extract.offline import OfflineExtractor
from wiki.models import Extraction

EXTRACTOR = OfflineExtractor()


def _extract(text: str, title: str = "Doc") -> Extraction:
    return EXTRACTOR.extract(title, text)


def _names(extraction: Extraction, kind: str | None = None) -> set[str]:
    return {i.name for i in extraction.items if kind is None or i.kind == kind}


def _item(extraction: Extraction, name: str):
    return next(i for i in extraction.items if i.name == name)


SENTENCE_PIECES = (
    "The method checks whether the value is valid. The method checks the type first. "
    "Blocks allocated by the allocator are freed later. Blocks allocated early stay in place. "
    "The parser was designed by Diego in 2001. The lexer was also designed by Diego. "
    "Real-valued functions are common in numeric code. Real-valued inputs work too. "
    "See LAYOUT for details on the layout. The LAYOUT of the table is fixed. "
    "Called when the socket closes, the hook runs. Called again, it does nothing. "
    "The object was deleted and re-inserted into the table. It was deleted and re-inserted twice. "
    "Each line of the string is a set of values. Every line and every string holds a set. "
    "Raise KeyError if the key is missing. Raise KeyError when the map is empty. "
    "Read Documentation/admin-guide/index.rst first, then Documentation/foo.rst and more. "
    "The timeout() call returns early. Use timeout() when waiting for the timeout() result."
)


def test_sentence_pieces_and_stray_words_are_not_pages() -> None:
    names = {n.casefold() for n in _names(_extract(SENTENCE_PIECES))}
    for piece in (
        "method checks",
        "blocks allocated",
        "designed by diego",
        "real-valued",
        "layout",
        "called",
        "deleted and re-inserted",
        "line",
        "string",
        "set",
        "raise keyerror",
        "documentation",
        "timeout",
    ):
        assert piece not in names, sorted(names)


def test_a_name_seen_once_and_never_defined_stays_a_phrase_of_the_summary() -> None:
    text = (
        "The kernel keeps a list of open files per process. The page cache is a store of file data in "
        "memory. The page cache is flushed by writeback threads. Nothing else is said here today."
    )
    names = {n.casefold() for n in _names(_extract(text))}
    assert "page cache" in names  # two sentences, the subject of both, defined in one
    assert "open files" not in names and "writeback threads" not in names


def test_the_lead_is_the_defining_sentence_not_a_pointer_to_the_document() -> None:
    text = (
        "Most drivers allocate buffers through the slab allocator at probe time. "
        "The slab allocator is a cache of fixed-size objects that keeps fragmentation low. "
        "Drivers free their buffers to the slab allocator on removal."
    )
    item = _item(_extract(text), "slab allocator")
    assert item.description == "The slab allocator is a cache of fixed-size objects that keeps fragmentation low."
    assert "discussed in" not in item.description


@pytest.mark.parametrize(
    "text, name, lead",
    [
        (
            "Blah uses memfd today. The memfd_create() call, the usual way to get one, returns a descriptor. "
            "Programs close memfd_create() results when done.",
            "memfd_create",
            "The memfd_create() call, the usual way to get one, returns a descriptor.",
        ),
        (
            "Grafana provides dashboards for metrics. Teams run Grafana next to Prometheus.",
            "Grafana",
            "Grafana provides dashboards for metrics.",
        ),
    ],
)
def test_defining_shapes_make_the_lead(text: str, name: str, lead: str) -> None:
    extraction = _extract(text)
    assert _item(extraction, name).description == lead, extraction.items


def test_case_forms_of_a_concept_are_one_item_with_the_forms_as_aliases() -> None:
    text = (
        "Photons are particles of light that carry energy. PHOTONS travel at the speed of light. "
        "The photons travel through the fibre."
    )
    extraction = _extract(text)
    concepts = [i for i in extraction.items if i.kind == "concept"]
    assert [c.name for c in concepts] == ["photons"]
    assert set(concepts[0].aliases) >= {"Photons", "PHOTONS"}
    assert "photons travel" not in {n.casefold() for n in _names(extraction)}


def test_names_starting_with_non_ascii_capitals_are_found() -> None:
    text = (
        "The Øresund Bridge is a railway and motorway bridge across the strait. Traffic on the "
        "Øresund Bridge is heavy. The Åland Islands are an autonomous region of Finland. Visitors "
        "reach the Åland Islands by ferry. Łódź is a city in central Poland. The museum in Łódź is "
        "large. Île-de-France is the region around Paris. Many people live in Île-de-France today. "
        "The Ångström is a unit of length used for wavelengths. Wavelengths are given in Ångström."
    )
    entities = _names(_extract(text), "entity")
    assert {"Øresund Bridge", "Åland Islands", "Łódź", "Île-de-France", "Ångström"} <= entities
    assert "Islands" not in entities and "Bridge" not in entities


def test_possessives_are_stripped() -> None:
    text = (
        "Ada Lovelace's notes describe an algorithm for the engine. Ada Lovelace is an English "
        "mathematician known for her notes. The Jones' house is old. Smith's tool is Smith's own."
    )
    entities = _names(_extract(text), "entity")
    assert "Ada Lovelace" in entities
    assert not any(name.endswith(("'s", "'", "\u2019s")) for name in entities)


def test_a_dot_starting_a_word_or_a_path_does_not_cut_a_sentence() -> None:
    text = (
        "Settings are read from the .netrc file in your home directory. The .netrc file is a "
        "plain text file that holds login names. Run ./configure to build it, then `.write()` it."
    )
    extraction = _extract(text)
    assert extraction.summary == "Settings are read from the .netrc file in your home directory."
    sentences = [s for i in extraction.items for s in i.evidence] + [extraction.body]
    assert not any(s.endswith(" .") or s.endswith("the .") for s in sentences)
    assert "Run ./configure to build it, then .write() it." in extraction.body


def test_a_dictionary_word_is_not_an_alias_of_a_code_name() -> None:
    text = (
        "The email.generator module is a package that writes messages as text. Its class Generator "
        "flattens a message. Use email.generator when a message must be sent, and a Generator "
        "for each message."
    )
    item = _item(_extract(text), "email.generator")
    assert "generator" not in item.aliases


def test_evidence_is_whole_sentences_even_when_long() -> None:
    long = "The frobnicator unit turns " + "input into output and back again, " * 14 + "without loss."
    text = f"{long} The frobnicator unit is a small box. Nothing else matters here at all."
    item = _item(_extract(text), "frobnicator unit")
    assert item.description == "The frobnicator unit is a small box."
    assert long in item.evidence and all(s in text for s in item.evidence)


CHINESE = (
    "北京大兴国际机场是位于中国北京市大兴区的超大型国际航空枢纽。北京大兴国际机场于2019年9月25日正式通航。"
    "中国民用航空局是主管民用航空事业的国家局。中国民用航空局负责机场的管理！航站楼由扎哈·哈迪德设计。"
)
JAPANESE = (
    "東京スカイツリーは東京都墨田区にある電波塔である。高さは634メートルで、世界一高いタワーとして知られている。"
    "東京スカイツリーの建設は2008年に始まった。電波塔は放送用の電波を送信する塔である。"
)


def test_a_chinese_document_gives_a_summary_and_names_in_its_own_script() -> None:
    extraction = _extract(CHINESE, "北京大兴国际机场")
    assert extraction.summary == "北京大兴国际机场是位于中国北京市大兴区的超大型国际航空枢纽。"
    airport = _item(extraction, "北京大兴国际机场")
    assert airport.kind == "entity" and airport.description == extraction.summary
    assert "中国民用航空局负责机场的管理！" in _item(extraction, "中国民用航空局").evidence


def test_a_japanese_document_gives_a_summary_and_names_in_its_own_script() -> None:
    extraction = _extract(JAPANESE, "東京スカイツリー")
    assert extraction.summary == "東京スカイツリーは東京都墨田区にある電波塔である。"
    assert _item(extraction, "東京スカイツリー").kind == "entity"
    tower = _item(extraction, "電波塔")
    assert tower.kind == "concept" and tower.description == "電波塔は放送用の電波を送信する塔である。"


def test_a_short_japanese_document_is_usable() -> None:
    extraction = _extract("富士山は日本で最も高い山である。", "富士山")
    assert extraction.summary == "富士山は日本で最も高い山である。"
    assert _names(extraction) == {"富士山"}


def test_a_mixed_chinese_and_english_document_works() -> None:
    text = (
        "Redis 是一个开源的内存数据库。Redis 支持多种数据结构。内存数据库是把数据保存在内存中的数据库。"
        "Redis is an in-memory data store used as a cache. Redis keeps its data in memory."
    )
    extraction = _extract(text, "Redis")
    redis = _item(extraction, "Redis")
    assert redis.description == "Redis is an in-memory data store used as a cache."
    assert "Redis 是一个开源的内存数据库。" in redis.evidence
    assert "内存数据库" in _names(extraction, "concept")
