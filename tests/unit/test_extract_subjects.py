"""Issue 23: the subject of a document gets a page, in any script, and code names keep their identity.

The small cases a new user tried: a document about a person, documents about electrons, a Chinese
document on a tower and one on a poet, names opening with a non-ASCII capital; and a module's
reference whose members, classes and module are items under their qualified names."""

from __future__ import annotations

from wiki.coverage import KeyStats, page_worthy, rows_of, stats_after
from wiki.dedup import name_key
from wiki.extract.offline import OfflineExtractor
from wiki.models import Document, Extraction


def _extract(title: str, text: str) -> Extraction:
    return OfflineExtractor().extract(title, text)


def _item(extraction: Extraction, name: str):
    return next((i for i in extraction.items if i.name == name), None)


def test_a_document_about_a_person_makes_a_page_led_by_a_central_fact():
    text = (
        "Oskar Venn was born in Bergen in 1921 and studied physics in Oslo. Venn founded the Venn Institute "
        "for Applied Optics in 1950. Oskar Venn wrote three books on lens design before he retired in 1986."
    )
    extraction = _extract("Oskar Venn", text)
    venn = _item(extraction, "Oskar Venn")
    assert venn is not None and venn.description.startswith("Oskar Venn was born in Bergen")
    assert venn.subject >= 2 and venn.named
    # the surname alone is the same person, not a page of its own
    assert _item(extraction, "Venn") is None and "Venn" in venn.aliases


def test_names_opening_with_a_non_ascii_capital_make_pages():
    palace = _extract(
        "Élysée Palace",
        "The Élysée Palace is the official residence of the President of France. Élysée Palace was built in "
        "1722. The Élysée Palace stands on the Rue du Faubourg Saint-Honoré in Paris.",
    )
    assert _item(palace, "Élysée Palace") is not None
    orsted = _extract(
        "Ørsted",
        "Ørsted is a Danish energy company that develops offshore wind farms. Ørsted was called DONG Energy "
        "until 2017. The company Ørsted is headquartered in Fredericia.",
    )
    assert _item(orsted, "Ørsted") is not None


def test_three_documents_about_electrons_make_one_electron_page_whatever_their_case():
    docs = {
        "Electrons": "Electrons are subatomic particles with a negative elementary charge. Electrons orbit the "
        "nucleus of an atom. The electron was discovered by J. J. Thomson in 1897.",
        "Electron shells": "ELECTRONS fill the shells of an atom from the inside out. Each shell holds a fixed "
        "number of electrons. Chemists describe the outer electrons as valence electrons.",
        "Valence": "Valence electrons take part in chemical bonds. The electrons of the outer shell decide how "
        "an atom bonds, and the electrons of inner shells do not.",
    }
    rows = []
    for i, (title, text) in enumerate(docs.items()):
        doc = Document(id=f"k{i}", tenant_id=1, knowledge_base_id="kb", title=title)
        rows += rows_of(doc, _extract(title, text), f"doc-{i}").values()
    key = name_key("electron")
    stats = stats_after({}, [], [r for r in rows if r.key == key])[key]
    assert stats.docs == 3 and page_worthy(stats)
    assert {r.name.lower() for r in rows if r.key == key} <= {"electron", "electrons"}


def test_the_subject_of_a_chinese_document_makes_a_page():
    tower = _extract(
        "上海中心大厦",
        "上海中心大厦位于上海浦东陆家嘴，是中国最高的建筑。大厦高632米，于2015年竣工。上海中心大厦由美国建筑师事务所设计。",
    )
    item = _item(tower, "上海中心大厦")
    assert item is not None and item.description == "上海中心大厦位于上海浦东陆家嘴，是中国最高的建筑。"
    poet = _extract(
        "李白", "李白（701年－762年），字太白，号青莲居士，唐朝诗人。李白被后人誉为诗仙。李白的诗歌想象丰富。"
    )
    assert _item(poet, "李白") is not None
    poem = _extract("静夜思", "《静夜思》是李白所作的一首五言古诗。这首诗写于唐玄宗开元十四年。《静夜思》流传很广。")
    assert _item(poem, "静夜思") is not None


def test_a_modules_reference_qualifies_its_code_names_and_makes_its_module_and_classes_items():
    text = (
        "# frobq\n\nA multi-producer, multi-consumer frob queue.\n\n"
        "## FrobQueue\n\nCreate a frob queue object with a given maximum size.\n\n"
        "### FrobQueue.empty\n\nReturn True if the frob queue is empty, False otherwise.\n\n"
        "### FrobQueue.put\n\nPut an item into the frob queue.\n\n"
        "## FrobQueueEmpty\n\nException raised by FrobQueue.get(block=0).\n"
    )
    extraction = _extract("frobq", text)
    names = {i.name: i for i in extraction.items}
    assert {"frobq", "frobq.FrobQueue", "frobq.FrobQueue.empty", "frobq.FrobQueueEmpty"} <= names.keys()
    assert names["frobq"].description == "`frobq` is a module: a multi-producer, multi-consumer frob queue."
    assert names["frobq.FrobQueue.empty"].parent == "frobq.FrobQueue"
    assert names["frobq.FrobQueue"].parent == "frobq" and "FrobQueue" in names["frobq.FrobQueue"].aliases
    # "QueueEmpty" is not "Queue.empty": two keys, two pages
    assert name_key("frobq.FrobQueueEmpty") != name_key("frobq.FrobQueue.empty")


def test_a_class_whose_methods_are_documented_gets_a_page_listing_them():
    text = (
        "# pools\n\nWorker pools for the job runner.\n\n## Pool\n\n### Pool.submit\n\n"
        "Submit a job to the pool and return its future.\n\n### Pool.close\n\nClose the pool to new jobs.\n"
    )
    names = {i.name: i for i in _extract("pools", text).items}
    assert names["pools.Pool"].description == "`pools.Pool` is a class of `pools`."
    assert names["pools.Pool.submit"].parent == "pools.Pool"


def test_a_mention_carries_what_its_document_says_of_the_name():
    text = (
        "The Venn Institute for Applied Optics publishes lens designs every year. Readers order them from "
        "the Venn Institute for Applied Optics by mail. Kestrel Labs prints them in Bergen."
    )
    extraction = _extract("Lens catalogues", text)
    mentions = {m.name: m for m in [*extraction.items, *extraction.mentions]}
    assert "Kestrel Labs" in mentions and mentions["Kestrel Labs"].named
    assert mentions["Kestrel Labs"].evidence == ["Kestrel Labs prints them in Bergen."]
    assert KeyStats().docs == 0
