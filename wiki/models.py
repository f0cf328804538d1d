"""Pydantic models shared by every layer: documents, extractions, pages and tunables.

These are the boundary types: repositories return them, actors parse message arguments into
them, extractors must produce an ``Extraction`` that validates.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

PageType = Literal["summary", "entity", "concept", "index"]
PageStatus = Literal["draft", "published", "archived"]
ItemKind = Literal["entity", "concept"]


class WikiConfig(BaseModel):
    """Per-KB overrides of the ingest tunables (``knowledge_bases.wiki_config``).

    ``None`` means "use the process setting". Bounds match ``wiki.settings.Settings``.
    """

    model_config = ConfigDict(extra="forbid")

    ingest_batch_size: int | None = Field(default=None, ge=1, le=1000)
    ingest_map_parallel: int | None = Field(default=None, ge=1, le=256)
    ingest_reduce_parallel: int | None = Field(default=None, ge=1, le=64)


class KnowledgeBase(BaseModel):
    """One knowledge base (``knowledge_bases`` row)."""

    id: str
    tenant_id: int
    name: str
    wiki_config: WikiConfig = Field(default_factory=WikiConfig)
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
    status: str = "pending"
    error: str = ""


class ExtractedItem(BaseModel):
    """An entity or concept found in one document.

    ``description`` is one sentence saying what the thing is; ``evidence`` are sentences quoted
    from the document (at most 3) that the page cites.
    """

    name: str = Field(min_length=1, max_length=200)
    kind: ItemKind
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    evidence: list[str] = Field(default_factory=list, max_length=3)


class Extraction(BaseModel):
    """The map stage's result for one document (cached in ``wiki_extractions``).

    ``summary`` is one line (the page's summary column); ``body`` is Markdown paragraphs for the
    summary page. ``items`` holds entities and concepts, at most 40 in all.
    """

    summary: str = Field(min_length=1)
    body: str = Field(min_length=1)
    items: list[ExtractedItem] = Field(default_factory=list, max_length=40)

    @field_validator("summary")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return " ".join(value.split())


class SourceRef(BaseModel):
    """A citation of one document by a page."""

    knowledge_id: str
    title: str


class PageLite(BaseModel):
    """The narrow view of a page used for link resolution and dedup (no content)."""

    slug: str
    title: str
    page_type: PageType
    status: PageStatus = "published"
    aliases: list[str] = Field(default_factory=list)


class Page(PageLite):
    """A whole wiki page (``wiki_pages`` row)."""

    id: int | None = None
    tenant_id: int
    knowledge_base_id: str
    content: str
    summary: str = ""
    source_refs: list[SourceRef] = Field(default_factory=list)
    facts: dict[str, dict] = Field(default_factory=dict)
    version: int = 1
    updated_at: datetime | None = None
