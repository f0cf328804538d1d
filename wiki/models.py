"""Pydantic models shared by every layer: documents, extractions, pages and tunables.

These are the boundary types: repositories return them, actors parse message arguments into
them, extractors must produce an ``Extraction`` that validates.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    field_validator,
)

from wiki.errors import BadInput
from wiki.llm_config import LLMOverride

# Limits on titles and names, each defined once here (the columns are TEXT: the limits keep pages
# and listings readable, and a runaway extractor or file from filling them).
MAX_TITLE_CHARS = 500  # a document's title as stored: ``stages.ingest.submit_document`` cuts a longer one
MAX_SOURCE_TITLE_CHARS = 200  # a title read from a file, its front matter or first heading (corpus, wiki.text)
MAX_ITEM_NAME_CHARS = 200  # an extracted entity or concept name (``ExtractedItem.name``)
MAX_SUMMARY_CHARS = 500  # a page's one-line summary (``wiki_pages.summary``)
#: Items one extraction holds at most (``Extraction.items``): a module's reference may document
#: this many classes and functions; the LLM extractor's own schema asks for at most 40.
MAX_ITEMS = 80
#: Names one document may mention beyond its items (``Extraction.mentions``): a row each in the
#: mention index, so it bounds the index at this many rows per document.
MAX_MENTIONS = 250


class PageType(StrEnum):
    """``wiki_pages.page_type``. A str enum: its members are the stored strings, and compare
    equal to them. Members are named as their values (a member is what PostgreSQL holds)."""

    summary = "summary"  # one per document
    entity = "entity"  # an entity page merged from the documents naming it
    concept = "concept"  # a concept page, likewise
    index = "index"  # the KB's index page
    disambiguation = "disambiguation"  # the pages of code names sharing a bare name ("Queue")


def page_type_or_none(value: str | None) -> str | None:
    """``value`` as a page type filter: None for none (None or empty); raises ``BadInput`` for a
    word that is no page type."""
    if not value:
        return None
    if value not in PageType.__members__.values():
        raise BadInput(f"unknown page type {value[:40]!r}: one of {', '.join(t.value for t in PageType)}")
    return value


#: The page types an extracted item (``ExtractedItem.kind``) makes: merged by name, link targets of mentions.
ITEM_TYPES = (PageType.entity, PageType.concept)


class DocStatus(StrEnum):
    """``knowledges.status``, a document's place in the pipeline (migrations/0002's column
    comment). A str enum: members compare equal to the stored strings."""

    pending = "pending"  # stored, waiting for map
    mapped = "mapped"  # extracted, waiting for reduce
    done = "done"  # its pages are written
    skipped = "skipped"  # nothing to write (too short, empty extraction), with the reason
    failed = "failed"  # past its fail budget: a dead letter holds its op
    deleting = "deleting"  # its retract is queued
    deleted = "deleted"  # retracted: its pages no longer cite it


class MapOutcome(StrEnum):
    """What ``wiki_map`` did with one document's op (``stages.map.map_document``)."""

    mapped = "mapped"  # extracted and stored
    cached = "cached"  # the stored extraction of the same content and extractor: no extractor call
    skipped = "skipped"  # nothing to write: status and reason on the document
    gone = "gone"  # the op was handled already (or meanwhile, by another worker)
    deleted = "deleted"  # the document is deleted or tombstoned: the op is dropped
    retry = "retry"  # a failure counted, the op released for a later try
    dead = "dead"  # the fail budget spent (or a failure for good): dead-lettered
    paused = "paused"  # the KB's model work is paused (configuration, credit, budget): released uncounted


#: The statuses of a document whose retract is queued or done: map and reduce write nothing for it.
RETRACTED = (DocStatus.deleting, DocStatus.deleted)


class PageStatus(StrEnum):
    """``wiki_pages.status``: lint's fix archives a near-empty page (no longer a link target)."""

    draft = "draft"
    published = "published"
    archived = "archived"


ItemKind = Literal["entity", "concept"]


class WikiConfig(BaseModel):
    """Per-KB overrides of the ingest tunables (``knowledge_bases.wiki_config``).

    ``None`` means "use the process setting". Bounds match ``wiki.settings.Settings``.
    """

    model_config = ConfigDict(extra="forbid")

    ingest_batch_size: int | None = Field(default=None, ge=1, le=1000)
    ingest_map_parallel: int | None = Field(default=None, ge=1, le=256)
    #: Stored as ``ingest_reduce_parallel`` before it was named for what it bounds: still read.
    crosslink_parallel: int | None = Field(
        default=None, ge=1, le=64, validation_alias=AliasChoices("crosslink_parallel", "ingest_reduce_parallel")
    )
    #: Seconds cross-link and back-link runs wait for the ingest to end (``stages.pacing``), whichever
    #: the extractor; 0 links after every batch.
    link_defer_s: float | None = Field(default=None, ge=0, le=86_400, allow_inf_nan=False)
    #: The KB's own model endpoint, model, key... over the ``KBWIKI_LLM_*`` settings.
    llm: LLMOverride | None = None


#: Unicode categories a KB name may not contain: controls (newline, tab, NUL, ESC...), line and
#: paragraph separators, lone surrogates (undecodable command-line bytes), private use.
_REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
    "Cs": "an undecodable character",
    "Co": "a private-use character",
}
#: Bidirectional controls: they make a name display as another (the rest of category Cf, e.g.
#: the zero-width joiner of emoji sequences, is allowed).
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
KB_NAME_MAX = 255  # knowledge_bases.name VARCHAR(255)


def unprintable(text: str) -> str | None:
    """What makes ``text`` unprintable on one line, e.g. "a control character (\\n)", or None.

    Names that show to a reader (KB names, document file names) may not hold these: a newline
    splits a listed row in two, a bidirectional control makes one name display as another."""
    for ch in text:
        what = _REFUSED_CATEGORIES.get(unicodedata.category(ch)) or (
            "a bidirectional control" if ch in _BIDI_CONTROLS else None
        )
        if what:
            return f"{what} ({ch.encode('unicode_escape').decode()})"
    return None


def printable(name: str) -> str:
    """``name`` with the bytes that were not UTF-8 (surrogate escapes from ``os.walk``) written as
    ``\\xe9`` and characters that do not print on one line (``wiki.models.unprintable``) as
    ``\\n``: a str that encodes to UTF-8 and prints as one line, for messages. Other names come
    back unchanged."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file system decoding produces
        text = name.encode("utf-8", "backslashreplace").decode("utf-8")
    else:
        text = raw.decode("utf-8", "backslashreplace")
    if unprintable(text) is None:
        return text
    return "".join(ch.encode("unicode_escape").decode() if unprintable(ch) else ch for ch in text)


def _check_kb_name(name: str) -> str:
    if not name:
        raise ValueError("a knowledge base name cannot be empty")
    if len(name) > KB_NAME_MAX:
        raise ValueError(f"a knowledge base name has at most {KB_NAME_MAX} characters (got {len(name)})")
    if what := unprintable(name):
        raise ValueError(f"a knowledge base name cannot contain {what}")
    return name


#: A KB name as stored: surrounding whitespace stripped, 1-255 characters, printable on one line.
KnowledgeBaseName = Annotated[
    str,
    BeforeValidator(lambda v: v.strip() if isinstance(v, str) else v),
    AfterValidator(_check_kb_name),
]
_KB_NAME = TypeAdapter(KnowledgeBaseName)


def valid_kb_name(name: object) -> str:
    """``name`` as a KB is stored under it (stripped). Raises ``pydantic.ValidationError`` (a
    ValueError) when it is empty, longer than 255 characters, or holds a character that is not
    printable on one line (newline, tab, other controls, line separators, bidirectional controls)."""
    return _KB_NAME.validate_python(name)


class KnowledgeBase(BaseModel):
    """One knowledge base (``knowledge_bases`` row). ``source_root``: the real path of the folder
    its source URIs are relative to (``kbwiki.source_root``), None until its first ingest."""

    id: str
    tenant_id: int
    name: str
    wiki_config: WikiConfig = Field(default_factory=WikiConfig)
    source_root: str | None = None
    deleted_at: datetime | None = None


class Document(BaseModel):
    """One document of a KB (``knowledges`` row). ``content`` is clean UTF-8 without NUL bytes."""

    id: str
    tenant_id: int
    knowledge_base_id: str
    title: str
    source_uri: str = ""
    content: str = ""
    content_hash: str = ""
    status: str = DocStatus.pending
    error: str = ""


class ExtractedItem(BaseModel):
    """An entity or concept found in one document.

    ``description`` is one sentence saying what the thing is; ``evidence`` are sentences quoted
    from the document (at most 3) that the page cites.

    The statistics say how much the document says of it, so a page can be chosen and led across
    the corpus (``wiki.coverage``): ``sentences`` naming it, ``subject`` of them with it as their
    subject, ``rank`` how well ``description`` says what it is (``wiki.coverage.RANKS``: 3 a
    definition, 2 what it does, 1 a central fact, 0 none; None: ranked from the description by
    ``wiki.render.lead_rank``), ``named`` whether it is a proper name, an acronym or a code name
    (not a lower-case term), ``titled`` whether the document's title or a heading names it,
    ``parent`` the qualified name of the class or module it is a member of ("queue.Queue" for
    "queue.Queue.get").
    """

    name: str = Field(min_length=1, max_length=MAX_ITEM_NAME_CHARS)
    kind: ItemKind
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    evidence: list[str] = Field(default_factory=list, max_length=3)
    sentences: int = Field(default=1, ge=0, le=32767)
    subject: int = Field(default=0, ge=0, le=32767)
    rank: int | None = Field(default=None, ge=0, le=3)
    named: bool = False
    titled: bool = False
    parent: str = Field(default="", max_length=MAX_ITEM_NAME_CHARS)


class Extraction(BaseModel):
    """The map stage's result for one document (cached in ``wiki_extractions``).

    ``summary`` is one line (the page's summary column); ``body`` is Markdown paragraphs for the
    summary page. ``items`` holds the entities and concepts the document alone makes pages of, at
    most ``MAX_ITEMS`` in all; ``mentions`` the other names it names, at most ``MAX_MENTIONS``.
    """

    summary: str = Field(min_length=1)
    body: str = Field(min_length=1)
    items: list[ExtractedItem] = Field(default_factory=list, max_length=MAX_ITEMS)
    #: The other names the document names that may have a page once the corpus supports them
    #: (``wiki.coverage.page_worthy``): a name other documents name too, a term another defines.
    mentions: list[ExtractedItem] = Field(default_factory=list, max_length=MAX_MENTIONS)

    @field_validator("summary")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return " ".join(value.split())


class SourceRef(BaseModel):
    """A citation of one document by a page."""

    knowledge_id: str
    title: str


class Fact(BaseModel):
    """One document's contribution to a page (``Page.facts``: {knowledge id: Fact}), so the page
    can be rendered again from its remaining sources. An entity/concept page's
    (``wiki.coverage.facts_of``): the document's ``doc_title`` and ``summary_slug`` (what its
    quotes cite), its ``description`` of the subject ("" none), ``evidence`` (its sentences the page
    quotes), the ``name``, ``aliases`` and ``kind`` it gives it, and ``seq`` (place on the page, 1
    first). A summary page's: ``links`` (kind, slug, display, description) to the item pages it
    lists (``wiki.render.render_summary_page``). Stored by ``facts_json``; a field a stored fact
    lacks reads as its default (0 for the ``seq`` of rows older than it)."""

    doc_title: str = ""
    summary_slug: str = ""
    description: str = ""
    evidence: list[str] = Field(default_factory=list)
    name: str = ""
    aliases: list[str] = Field(default_factory=list)
    kind: str = ""
    seq: int = 0
    links: list[tuple[str, str, str, str]] = Field(default_factory=list)


def facts_json(facts: dict[str, Fact]) -> dict[str, dict]:
    """``facts`` as ``wiki_pages.facts`` stores them: each fact without its defaulted fields, so a
    summary page's holds only its ``links`` and a page cited by many documents stays small."""
    return {k: f.model_dump(exclude_defaults=True) for k, f in facts.items()}


class PageLite(BaseModel):
    """The narrow view of a page used for link resolution and dedup (no content)."""

    # validated against the enums, held as their plain strings (what PostgreSQL, JSON and YAML see)
    model_config = ConfigDict(use_enum_values=True)

    slug: str
    title: str
    page_type: PageType
    status: PageStatus = PageStatus.published.value
    aliases: list[str] = Field(default_factory=list)


class Page(PageLite):
    """A whole wiki page (``wiki_pages`` row)."""

    id: int | None = None
    tenant_id: int
    knowledge_base_id: str
    content: str
    summary: str = ""
    source_refs: list[SourceRef] = Field(default_factory=list)
    facts: dict[str, Fact] = Field(default_factory=dict)
    #: The lead a model wrote from the page's first contributions, and their ``wiki.render.lead_key``
    #: ("" and "": none; the page opens with ``wiki.render.best_lead``).
    lead: str = ""
    lead_key: str = ""
    version: int = 1
    updated_at: datetime | None = None
