"""The map stage's glue to the LLM extractor: the KB's own model settings, the existing pages
offered as handles, the extraction cache across output modes, the pause of a KB whose endpoint
refused its configuration, whose account is out of credit or whose token budget is spent
(``wiki_llm_config_errors``), and the KB's usage counters (``wiki_llm_usage``: one upsert per
document, logged as ``llm.usage``).

Every function also accepts the offline extractor and then does what map always did, so the call
sites in ``stages.map`` stay a few lines.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import structlog

from repos.knowledge import KnowledgeBaseRepository
from repos.llm_errors import LLMConfigErrorRepository
from repos.llm_usage import LLMUsageRepository
from repos.pages import WikiPageRepository
from repos.pending_ops import PendingOp
from stages.deps import Deps
from stages.llm_merges import model_merges
from wiki.errors import LLMConfigError, LLMError
from wiki.extract import Extractor
from wiki.extract.llm.ratelimit import sharing
from wiki.llm_config import estimated_usd
from wiki.models import Document, Extraction, MapOutcome, PageLite
from wiki.plural import counted

if TYPE_CHECKING:
    from wiki.extract.llm.extractor import LLMExtractor, RunStats

log = structlog.get_logger(__name__)

#: Words of a document looked at for existing page titles (1- to 4-word phrases of them).
_HANDLE_SCAN_WORDS = 4000
#: Existing pages offered per document (``LLMExtractor`` offers at most 40 of them as handles).
_PAGES_OFFERED = 40


#: Kinds of pause a probe may end: a document is let through now and then (``probe_s`` after the
#: pause, then twice as long each time, at most ``PROBE_MAX_S``) and its success resumes the KB. An
#: endpoint that refused every output mode may have been fixed (a streaming-only server set to
#: answer plainly), an account topped up: neither changes the configuration. A spent budget is
#: not probed: no call can end it.
PROBED_KINDS = ("config", "credit")
#: The longest interval between two probes of a paused KB: 24 calls a day at most.
PROBE_MAX_S = 3600.0

#: How an operator lets a paused KB continue, by the pause's kind (said in the log and by status).
RESUME_HINT = {
    "config": "fix KBWIKI_LLM_* or wiki_config.llm, or the endpoint: the KB resumes by itself once the configuration"
    " changes or a probe call succeeds; `kbwiki resume --kb NAME` tries again now",
    "credit": "add credit at the provider, then run `kbwiki resume --kb NAME` (a configuration change or a probe"
    " call that succeeds resumes it too)",
    "budget": "raise the token budget (wiki_config.llm.token_budget or KBWIKI_LLM_TOKEN_BUDGET): the KB resumes"
    " by itself; or run `kbwiki resume --kb NAME --reset-budget` to count its budget from zero again",
}


def is_llm(extractor: Extractor) -> bool:
    # Not isinstance: that would import the openai SDK (about a second) into offline workers too.
    return hasattr(extractor, "extract_named")


# A word may hold "." "-" "+" "#" inside ("node.js", "x86-64") and end in "+" or "#" ("C++", "C#"),
# never in "." or "-": a title at the end of a sentence ("... of Mira Kalden.") must still match.
_WORD = re.compile(r"\w(?:[\w+#.-]*[\w+#])?")


def extractor_for(extractor: Extractor, kb_id: str, *, kbs: KnowledgeBaseRepository) -> Extractor:
    """The extractor for this KB: the LLM one with the KB's ``wiki_config.llm`` applied, else
    ``extractor`` as it is."""
    if is_llm(extractor):
        kb = kbs.get(kb_id)
        if kb is not None and kb.wiki_config.llm is not None:
            return extractor.for_override(kb.wiki_config.llm)
    return extractor


def cache_names(extractor: Extractor) -> list[str]:
    """The cache keys an unchanged document's extraction may be under: for the LLM extractor, one
    per output mode (the remembered mode first: a provider's mode can change between runs)."""
    if is_llm(extractor):
        return extractor.cache_names()
    return [extractor.name]


def cached(extractor: Extractor, kb_id: str, doc: Document, deps: Deps) -> tuple[Extraction, str] | None:
    """The cached extraction of ``doc``'s content and its cache key, or None (one statement for
    every cache name: a query per name was a seventh of a map's time with an instant model). A hit
    of the LLM extractor's cache is counted in ``llm_usage`` (``cache_hits``) when given."""
    found = deps.extractions.first_of(kb_id, doc.id, doc.content_hash, cache_names(extractor))
    if found is not None and deps.llm_usage is not None and is_llm(extractor):
        _count(extractor, kb_id, doc, None, llm_usage=deps.llm_usage, outcome="cached")
    return found


def extract(extractor: Extractor, kb_id: str, doc: Document, deps: Deps) -> tuple[Extraction, str]:
    """Extract ``doc``; returns the extraction and the cache key it is stored under. The LLM
    extractor is offered the KB's entity and concept pages whose title or alias the document
    names (one ``title_matches`` probe), then, given ``extractions`` (the merge-decision cache),
    the merges the model decides among near names are applied (``stages.llm_merges``); its
    success clears the KB's pause. Its calls and tokens, also those of a failed extraction, are
    added to ``llm_usage`` when given (one upsert)."""
    if not is_llm(extractor):
        return extractor.extract(doc.title, doc.content), extractor.name
    stats = None
    named = _named_pages(kb_id, doc.content, pages=deps.pages)
    try:
        with sharing(kb_id):  # the KB's fair share of the model's shared rate limit
            extraction, name, stats = extractor.extract_named(doc.title, doc.content, named)
            if deps.extractions is not None:
                # the merge call's tokens are added to the document's ``stats``: usage and budget see them
                extraction = model_merges(
                    extractor, kb_id, doc, extraction, pages=deps.pages, extractions=deps.extractions, spent=stats
                )
    except LLMError as exc:
        stats = stats or getattr(exc, "stats", None)
        if deps.llm_usage is not None and stats is not None and stats.calls:
            _count(extractor, kb_id, doc, stats, llm_usage=deps.llm_usage, outcome="failed")
        raise
    if deps.llm_usage is not None:
        _count(extractor, kb_id, doc, stats, llm_usage=deps.llm_usage, outcome="mapped")
    if deps.llm_errors.clear(kb_id):
        log.info("llm.config_error_cleared", knowledge_base_id=kb_id, model=extractor.config.model)
    return extraction, name


def _count(
    extractor: LLMExtractor,
    kb_id: str,
    doc: Document,
    stats: RunStats | None,
    *,
    llm_usage: LLMUsageRepository,
    outcome: str,
) -> None:
    """One upsert of the document's calls and tokens (or one cache hit) and its ``llm.usage`` line."""
    calls, prompt, completion = (stats.calls, stats.prompt_tokens, stats.completion_tokens) if stats else (0, 0, 0)
    estimated = stats.estimated_tokens if stats else 0
    model = extractor.config.model
    llm_usage.add(
        kb_id,
        model,
        # only a try that gave an extraction counts as one; a failed try's calls and tokens still count
        extractions=1 if outcome == "mapped" else 0,
        failures=1 if outcome == "failed" else 0,
        calls=calls,
        prompt_tokens=prompt,
        completion_tokens=completion,
        estimated_tokens=estimated,
        cache_hits=1 if stats is None else 0,
    )
    usd = estimated_usd(extractor.config, prompt, completion)
    log.info(
        "llm.usage",
        knowledge_base_id=kb_id,
        knowledge_id=doc.id,
        model=model,
        outcome=outcome,
        calls=calls,
        prompt_tokens=prompt,
        completion_tokens=completion,
        estimated_tokens=estimated,
        estimated_usd=None if usd is None else round(usd, 6),
    )


def _named_pages(kb_id: str, text: str, *, pages: WikiPageRepository) -> list[PageLite]:
    words = _WORD.findall(text.lower())[:_HANDLE_SCAN_WORDS]
    phrases = {" ".join(words[i : i + n]) for n in range(1, 5) for i in range(len(words) - n + 1)}
    named: dict[str, PageLite] = {}
    for _, page in pages.title_matches(kb_id, phrases):
        named.setdefault(page.slug, page)
    return sorted(named.values(), key=lambda p: (-len(p.title), p.slug))[:_PAGES_OFFERED]


def paused(
    extractor: Extractor,
    kb_id: str,
    deps: Deps,
    *,
    probe_s: float | None = None,
) -> bool:
    """Whether the KB's model work waits: on a configuration error, an out-of-credit answer or a
    spent budget recorded for this very configuration (a changed configuration is tried again),
    or because the KB's ``token_budget`` is spent now (then recorded, and logged once as
    ``llm.paused``). A budget is checked before a document's calls: documents already under way
    finish, so a KB may overshoot it by up to ``ingest_map_parallel`` documents' tokens.

    Given ``probe_s`` (``Settings.llm_pause_s``), a pause of a ``PROBED_KINDS`` kind lets this
    document through as a probe when one is due (``LLMConfigErrorRepository.claim_probe``, logged
    as ``llm.probe``): its success clears the pause (:func:`extract`), its refusal records it again."""
    if not is_llm(extractor):
        return False
    config = extractor.config
    row = deps.llm_errors.get(kb_id)
    if row is not None and row.fingerprint == config.fingerprint():
        if probe_s is None or row.kind not in PROBED_KINDS:
            return True
        probe = deps.llm_errors.claim_probe(kb_id, row.fingerprint, probe_s, PROBE_MAX_S)
        if probe is None:
            return True
        log.info("llm.probe", knowledge_base_id=kb_id, kind=row.kind, probe=probe, model=config.model)
        return False
    if config.token_budget is None or deps.llm_usage is None:
        return False
    spent = deps.llm_usage.budget_spent(kb_id)
    if spent < config.token_budget:
        return False
    message = f"the KB's token budget is spent: {spent} of {counted(config.token_budget, 'token')}"
    if deps.llm_errors.record(kb_id, config.fingerprint(), 402, message, config.base_url, config.model, kind="budget"):
        log.error(
            "llm.paused",
            knowledge_base_id=kb_id,
            reason="budget",
            model=config.model,
            spent_tokens=spent,
            token_budget=config.token_budget,
            resume=RESUME_HINT["budget"],
        )
    return True


def pause(op: PendingOp, deps: Deps) -> MapOutcome:
    """Give the op back without counting a failure, claimable again in ``llm_pause_s``; returns
    the map outcome ``paused``."""
    deps.ops.release([op.id], by=deps.worker_id, not_before_s=deps.settings.llm_pause_s)
    return MapOutcome.paused


def record_config_error(
    extractor: LLMExtractor, kb_id: str, exc: LLMConfigError, *, llm_errors: LLMConfigErrorRepository
) -> None:
    """Record the KB's configuration error (or out-of-credit answer, ``exc.kind`` ``credit``);
    logged (``llm.config_error``, ``llm.out_of_credit``) only when it is new for this
    configuration, so a paused KB does not fill the log."""
    new = llm_errors.record(
        kb_id, extractor.config.fingerprint(), exc.status, exc.message, exc.base_url, exc.model, kind=exc.kind
    )
    if new:
        log.error(
            "llm.out_of_credit" if exc.kind == "credit" else "llm.config_error",
            knowledge_base_id=kb_id,
            status=exc.status,
            base_url=exc.base_url,
            model=exc.model,
            message=exc.message,
            paused_for="until `kbwiki resume` or a configuration change"
            if exc.kind == "credit"
            else "until the configuration changes",
            resume=RESUME_HINT[exc.kind],
        )
