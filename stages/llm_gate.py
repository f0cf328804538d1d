"""The map stage's glue to the LLM extractor: the KB's own model settings, the existing pages
offered as handles, the extraction cache across output modes, and the pause of a KB whose
endpoint refused its configuration (``wiki_llm_config_errors``).

Every function also accepts the offline extractor and then does what map always did, so the call
sites in ``stages.map`` stay a few lines.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import structlog

from repos.extractions import ExtractionRepository
from repos.knowledge import KnowledgeBaseRepository
from repos.llm_errors import LLMConfigErrorRepository
from repos.pages import WikiPageRepository
from repos.pending_ops import PendingOp, TaskPendingOpsRepository
from wiki.errors import LLMConfigError
from wiki.extract import Extractor
from wiki.models import Document, Extraction, PageLite
from wiki.settings import Settings

if TYPE_CHECKING:
    from wiki.extract.llm.extractor import LLMExtractor

log = structlog.get_logger(__name__)

#: Words of a document looked at for existing page titles (1- to 4-word phrases of them).
_HANDLE_SCAN_WORDS = 4000
#: Existing pages offered per document (``LLMExtractor`` offers at most 40 of them as handles).
_PAGES_OFFERED = 40


def _is_llm(extractor: Extractor) -> bool:
    # Not isinstance: that would import the openai SDK (about a second) into offline workers too.
    return hasattr(extractor, "extract_named")


_WORD = re.compile(r"\w[\w+#.-]*")


def extractor_for(extractor: Extractor, kb_id: str, *, kbs: KnowledgeBaseRepository) -> Extractor:
    """The extractor for this KB: the LLM one with the KB's ``wiki_config.llm`` applied, else
    ``extractor`` as it is."""
    if _is_llm(extractor):
        kb = kbs.get(kb_id)
        if kb is not None and kb.wiki_config.llm is not None:
            return extractor.for_override(kb.wiki_config.llm)
    return extractor


def cache_names(extractor: Extractor) -> list[str]:
    """The cache keys an unchanged document's extraction may be under: for the LLM extractor, one
    per output mode (the remembered mode first: a provider's mode can change between runs)."""
    if _is_llm(extractor):
        return extractor.cache_names()
    return [extractor.name]


def cached(
    extractor: Extractor, kb_id: str, doc: Document, *, extractions: ExtractionRepository
) -> tuple[Extraction, str] | None:
    """The cached extraction of ``doc``'s content and its cache key, or None (one statement for
    every cache name: a query per name was a seventh of a map's time with an instant model)."""
    return extractions.first_of(kb_id, doc.id, doc.content_hash, cache_names(extractor))


def extract(
    extractor: Extractor, kb_id: str, doc: Document, *, pages: WikiPageRepository, llm_errors: LLMConfigErrorRepository
) -> tuple[Extraction, str]:
    """Extract ``doc``; returns the extraction and the cache key it is stored under. The LLM
    extractor is offered the KB's entity and concept pages whose title or alias the document
    names (one ``title_matches`` probe); its success clears the KB's configuration error."""
    if not _is_llm(extractor):
        return extractor.extract(doc.title, doc.content), extractor.name
    extraction, name, _ = extractor.extract_named(doc.title, doc.content, _named_pages(kb_id, doc.content, pages=pages))
    if llm_errors.clear(kb_id):
        log.info("llm.config_error_cleared", knowledge_base_id=kb_id, model=extractor.config.model)
    return extraction, name


def _named_pages(kb_id: str, text: str, *, pages: WikiPageRepository) -> list[PageLite]:
    words = _WORD.findall(text.lower())[:_HANDLE_SCAN_WORDS]
    phrases = {" ".join(words[i : i + n]) for n in range(1, 5) for i in range(len(words) - n + 1)}
    named: dict[str, PageLite] = {}
    for _, page in pages.title_matches(kb_id, phrases):
        named.setdefault(page.slug, page)
    return sorted(named.values(), key=lambda p: (-len(p.title), p.slug))[:_PAGES_OFFERED]


def paused(extractor: Extractor, kb_id: str, *, llm_errors: LLMConfigErrorRepository) -> bool:
    """Whether the KB's model work waits on a configuration error recorded for this very
    configuration (a changed configuration is tried again)."""
    if not _is_llm(extractor):
        return False
    row = llm_errors.get(kb_id)
    return row is not None and row.fingerprint == extractor.config.fingerprint()


def pause(op: PendingOp, *, ops: TaskPendingOpsRepository, settings: Settings, worker_id: str | None) -> str:
    """Give the op back without counting a failure, claimable again in ``llm_pause_s``; returns
    the map outcome ``paused``."""
    ops.release([op.id], by=worker_id, not_before_s=settings.llm_pause_s)
    return "paused"


def record_config_error(
    extractor: LLMExtractor, kb_id: str, exc: LLMConfigError, *, llm_errors: LLMConfigErrorRepository
) -> None:
    """Record the KB's configuration error; logged (``llm.config_error``) only when it is new for
    this configuration, so a paused KB does not fill the log."""
    new = llm_errors.record(kb_id, extractor.config.fingerprint(), exc.status, exc.message, exc.base_url, exc.model)
    if new:
        log.error(
            "llm.config_error",
            knowledge_base_id=kb_id,
            status=exc.status,
            base_url=exc.base_url,
            model=exc.model,
            message=exc.message,
            paused_for="until the configuration changes",
        )
