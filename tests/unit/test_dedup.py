"""Page identity: the name key that decides which page an entity or concept belongs to."""

from __future__ import annotations

import itertools

import pytest

from wiki.dedup import is_code_name, name_key, singular


@pytest.mark.parametrize(
    "names",
    [
        ("ACME Corp", "Acme  Corp.", "acme-corp"),
        ("Photons", "photons", "PHOTONS", "photon"),
        ("actors", "actor", "Actor"),
        ("file type", "file-type", "FileType"),
        ("Café Müller", "Cafe Muller"),
        ("mutexes", "mutex"),
        ("policies", "policy"),
        ("indices", "index"),
    ],
)
def test_spelling_case_separator_and_plural_variants_share_a_key(names):
    assert len({name_key(n) for n in names}) == 1, {n: name_key(n) for n in names}


@pytest.mark.parametrize(
    "name, other",
    [
        ("ARM Cortex-A9", "ARM Cortex-A5"),
        ("IPv6", "IPv4"),
        ("Python 3", "Python 2"),
        ("ext4", "ext3"),
        ("Windows 10", "Windows 11"),
    ],
)
def test_names_differing_in_a_number_or_version_never_share_a_key(name, other):
    assert name_key(name) != name_key(other)


@pytest.mark.parametrize(
    "name, other",
    [
        ("Acme Cloud", "Acme Corp"),
        ("Settings.database_url", "DATABASE_URL"),  # a qualified name is not its last part
        ("comp.lang.python", "Python"),  # nor a name its alias
        ("C++", "C"),
        ("C#", "C"),
        ("C++", "C#"),  # "+" and "#" tell languages apart
        ("上海中心", "上海中心大厦"),
    ],
)
def test_related_names_keep_their_own_keys(name, other):
    assert name_key(name) != name_key(other)


@pytest.mark.parametrize(
    "word", ["news", "series", "analysis", "status", "class", "redis", "bus", "aws", "data", "a5s"]
)
def test_words_that_are_not_plural_nouns_stay(word):
    assert singular(word) == word


def test_a_key_is_never_empty_for_a_name_with_text():
    assert name_key("!!!") == "!!!"
    assert name_key("上海中心大厦") == "上海中心大厦"


def test_the_key_of_a_merged_page_is_its_title_key_whichever_name_is_the_title():
    """Every name of one key gives that key: a page titled by any of its sources' names is found
    by the same key, so which item came first cannot change which page a later item joins."""
    names = ["Photons", "photon", "PHOTONS"]
    for a, b in itertools.permutations(names, 2):
        assert name_key(a) == name_key(b)


@pytest.mark.parametrize(
    "names",
    [
        ("QueueEmpty", "Queue.empty", "queue.empty"),
        ("re.findall", "distutils.filelist.findall", "findall"),
        ("email.header.Header.encode", "email.charset.Charset.header_encode", "Header.encode"),
        ("GFP_KERNEL", "gfp_kernel", "GFP KERNEL"),
        ("file_type", "file type"),
        ("setUp", "setup"),  # unittest's hook is not the word (the demo's "setup" page mixed them)
    ],
)
def test_code_identifiers_keep_their_case_and_qualifier(names):
    """Issue 23: a code name is its own key, so names that differ in case or qualifier are pages apart."""
    assert len({name_key(n) for n in names}) == len(names), {n: name_key(n) for n in names}
    assert name_key("kmalloc()") == name_key("kmalloc") and name_key("Queue.get()") == "Queue.get"


@pytest.mark.parametrize("name", ["setUp", "tearDown", "handleError", "keyBindings"])
def test_lower_camel_case_is_a_code_name(name):
    assert is_code_name(name)


@pytest.mark.parametrize("name", ["macOS", "eBPF", "JavaScript", "iOS", "setup"])
def test_a_product_spelling_or_a_word_is_no_code_name(name):
    assert not is_code_name(name)


def test_one_everyday_word_of_a_longer_title_links_nothing() -> None:
    from wiki.dedup import link_aliases

    # linux-doc linked every "Processor" to "adjunct processor"
    assert link_aliases("adjunct processor", ["Processor", "AP", "adjunct processors"]) == ["AP", "adjunct processors"]
    assert link_aliases("heap", ["Heap", "heaps"]) == ["Heap", "heaps"]
