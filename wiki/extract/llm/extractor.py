"""The LLM extractor: one document → sections → one call each → one validated ``Extraction``.

What reaches the ``Extraction`` is checked here, not trusted:

- handles, never slugs: the model sees the document as ``d1`` and existing pages as ``p1``,
  ``p2``...; ``[[p2]]`` / ``[[p2|words]]`` become the page's title or the words (cross-linking
  links titles), ``same_as: "p2"`` names the item after that page; an unknown handle, a typed slug
  or a Markdown link becomes plain text;
- every quote must occur in the document, typography forgiven (``quotes``: NFKC, quote and dash
  families, ellipsis, whitespace), else it is dropped; the quote kept is the document's own
  spelling; an item left without a quote is dropped; names pass ``validate_item_name`` like
  offline names;
- fields the schema does not have are ignored (``unknown_fields``: said once per KB and model);
  a dropped item's reason names its field and the rule (``items[2].kind: must be 'entity' or
  'concept'``), logged as ``llm.items_dropped``;
- an answer whose invalid items (schema, name or quotes) exceed ``max_invalid_share`` fails, its
  reason giving the first items' reasons.
- nothing the document may have told the model reaches a page (issue 26,
  ``wiki.extract.llm.grounding``): every string is plain text (``wiki.extract.llm.plain``); a quote
  that is an instruction to a model is no evidence; an item's name and each alias must occur in
  its quotes; ``same_as`` needs the item's name to agree with the page's
  (``wiki.dedup.same_thing_refused``); a prose sentence with a link not in the document, an unsafe
  scheme, a request for credentials or a directive is dropped. Refused items do not count as
  invalid (the answer is not broken, the document is hostile); each refusal is logged
  (``llm.refused``) and counted (``RunStats.refused``).

Output modes are tried in the order ``json_schema`` → ``json_object`` (schema in the prompt) →
``fenced`` (a ```json block); a 400 moves to the next, and the mode that worked is remembered per
base URL and model for the process. A 400 or 413 saying the input exceeds the context halves the
section like a truncated answer (it is no configuration error: a shorter document would pass).
``finish_reason == "length"`` halves the section and retries (at most ``MAX_SPLITS`` times), never
repairs; an empty answer with reasoning is retried once with
``thinking_off``; ``content_filter`` raises ``LLMRefused``. JSON repair (json-repair) runs only
on an answer that stopped normally.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import json_repair
import structlog
from pydantic import ValidationError

from wiki.dedup import name_key, same_thing_refused
from wiki.errors import LLMConfigError, LLMError, LLMOutputInvalid, LLMRefused
from wiki.extract import validate_item_name
from wiki.extract.llm import unknown_fields
from wiki.extract.llm.client import ChatClient, ModeRejected, OutputMode
from wiki.extract.llm.grounding import Grounds, Refusal, directive, ground_prose, in_quotes
from wiki.extract.llm.plain import drop_tags, escape_angles, plain_name
from wiki.extract.llm.prompts import PROMPT_VERSION, map_messages
from wiki.extract.llm.quotes import QuoteSource
from wiki.extract.llm.ratelimit import RateLimiter
from wiki.extract.llm.schema import ItemOut, MapEnvelope, answer_schema
from wiki.llm_config import LLMConfig, LLMOverride
from wiki.models import ExtractedItem, Extraction, PageLite
from wiki.plural import counted

log = structlog.get_logger(__name__)

MODES: tuple[OutputMode, ...] = ("json_schema", "json_object", "fenced")
#: Halvings of a section whose answer hit max_tokens before the document fails: 3 → pieces of 1/8.
MAX_SPLITS = 3
#: A quote shorter than this (normalised as ``quotes`` says) proves nothing: dropped.
MIN_QUOTE_CHARS = 8
MAX_ITEMS = 40
MAX_ALIASES = 8
MAX_DESCRIPTION_CHARS = 400
MAX_BODY_CHARS = 8000
#: Existing pages offered to the model as handles per document.
MAX_PAGE_HANDLES = 40

_remembered: dict[tuple[str | None, str], OutputMode] = {}
_remembered_lock = threading.Lock()

_WIKILINK = re.compile(r"\[\[\s*([^\]|]*?)\s*(?:\|\s*([^\]]*?)\s*)?\]\]")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_AUTOLINK = re.compile(r"<(?:https?|ftp|mailto):[^>\s]*>", re.I)
_HANDLE = re.compile(r"[a-z]\d{1,4}", re.I)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.S)
_THINK = re.compile(r"^\s*<think>.*?</think>", re.S)


def remembered_mode(base_url: str | None, model: str) -> OutputMode | None:
    """The output mode that last worked for this endpoint and model in this process, if any."""
    with _remembered_lock:
        return _remembered.get((base_url, model))


def _remember(base_url: str | None, model: str, mode: OutputMode) -> None:
    with _remembered_lock:
        _remembered[(base_url, model)] = mode


def next_mode(mode: OutputMode, exc: ModeRejected, config: LLMConfig, rejected: list[str]) -> OutputMode:
    """The output mode to try after the endpoint refused ``mode`` (a 400, ``exc``), appended to
    ``rejected``; raises ``LLMConfigError`` (400) when ``mode`` was the last of ``MODES``."""
    rejected.append(mode)
    following = MODES[MODES.index(mode) + 1 :]
    if not following:
        raise LLMConfigError(400, exc.message, config.base_url, config.model) from None
    log.warning("llm.mode_rejected", model=config.model, mode=mode, next=following[0], message=exc.message)
    return following[0]


def forget_modes() -> None:
    """Forget every remembered output mode (tests start each endpoint afresh)."""
    with _remembered_lock:
        _remembered.clear()


def normalise(text: str) -> str:
    """``text`` with every whitespace run as one space, stripped (how quotes are compared)."""
    return " ".join(text.split())


def sections(text: str, budget: int) -> list[str]:
    """``text`` cut into pieces of at most ``budget`` characters, at blank lines where it can, else
    at line ends, else hard; a text within budget is one section."""
    if len(text) <= budget:
        return [text]
    out: list[str] = []
    current = ""
    for para in re.split(r"(\n\s*\n)", text):
        if len(current) + len(para) <= budget:
            current += para
            continue
        if current.strip():
            out.append(current)
        current = ""
        while len(para) > budget:
            cut = para.rfind("\n", 0, budget)
            cut = cut if cut > budget // 2 else budget
            out.append(para[:cut])
            para = para[cut:]
        current = para
    if current.strip():
        out.append(current)
    return out


def _halves(text: str) -> list[str] | None:
    """``text`` in two pieces at the line end nearest its middle, or None when too short to cut."""
    if len(text) < 400:
        return None
    return sections(text, len(text) // 2 + len(text) // 8)


@dataclass
class _Partial:
    summary: str
    body: str
    items: list[ExtractedItem]


@dataclass
class RunStats:
    """One document's calls and tokens (logged as ``llm.extracted``)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: Of those tokens, the ones counted here: the server gave no plausible usage (``tokens``).
    estimated_tokens: int = 0
    repaired: int = 0
    dropped_items: int = 0
    #: Items, aliases, merges, quotes and sentences kept out by the grounding checks (issue 26).
    refused: int = 0
    #: Evidence quotes the answers gave, and those kept (found in the document, at most 3 an item).
    quotes: int = 0
    quotes_kept: int = 0
    mode: OutputMode | None = None
    modes_rejected: list[str] = field(default_factory=list)
    #: ``time.monotonic()`` by which every call of the document must be done.
    deadline: float | None = None


@dataclass(frozen=True)
class _Document:
    """What every call about one document checks its answer against: the document's title, the
    existing pages offered as handles, its text folded for quotes (``QuoteSource``) and its grounds
    (``Grounds``), and the ``RunStats`` its calls add to."""

    title: str
    handles: dict[str, PageLite]
    source: QuoteSource
    grounds: Grounds
    stats: RunStats


class _Truncated(Exception):
    def __init__(self, raw: str, why: str = "") -> None:
        self.raw, self.why = raw, why


class LLMExtractor:
    """``Extractor`` backed by an OpenAI-compatible chat endpoint (``LLMConfig``); thread-safe.

    ``name`` is ``llm-<prompt version>-<output mode>:<model>`` (64 characters at most, the model's
    name then shortened with a hash): the ``wiki_extractions`` cache key, so a new prompt, model or
    mode never reuses another's results. Raises the ``LLMError`` subclasses of ``wiki.errors``.
    """

    def __init__(self, config: LLMConfig, limiter: RateLimiter | None = None) -> None:
        self.config = config
        self.client = ChatClient(config, limiter)
        self._variants: dict[str, LLMExtractor] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The cache key for the mode the next call would start with."""
        return self.name_for(remembered_mode(self.config.base_url, self.config.model) or MODES[0])

    def name_for(self, mode: OutputMode) -> str:
        """The cache key of results produced in ``mode`` (a bounded schema is a mode of its own: its
        answers are shorter)."""
        mode_key = f"{mode}-bounded" if self.config.bounded_schema else mode
        name = f"llm-{PROMPT_VERSION}-{mode_key}:{self.config.model}"
        if len(name) > 64:
            digest = hashlib.sha256(self.config.model.encode()).hexdigest()[:8]
            name = f"llm-{PROMPT_VERSION}-{mode_key}:{self.config.model[:30]}~{digest}"
        return name

    def cache_names(self) -> list[str]:
        """Every mode's cache key, the one the next call would start with first: an unchanged
        document's result may be under any (another process may have learned another mode)."""
        first = self.name
        return [first] + [n for n in (self.name_for(m) for m in MODES) if n != first]

    def for_override(self, override: LLMOverride | None) -> LLMExtractor:
        """The extractor for a KB's ``wiki_config.llm`` (this one when it changes nothing)."""
        config = self.config.with_override(override)
        if config == self.config:
            return self
        key = config.model_dump_json()  # not fingerprint: that leaves out the rate limits
        with self._lock:
            if key not in self._variants:
                self._variants[key] = LLMExtractor(config, self.client.limiter)
            return self._variants[key]

    def use_limiter(self, limiter: RateLimiter) -> None:
        """Take every request of this extractor and its per-KB variants through ``limiter`` (the
        shared rate limit, wired by ``stages.deps``)."""
        with self._lock:
            self.client.limiter = limiter
            for variant in self._variants.values():
                variant.client.limiter = limiter

    def extract(self, title: str, text: str) -> Extraction:
        """``Extractor.extract``: see :meth:`extract_named` (no existing pages offered)."""
        return self.extract_named(title, text)[0]

    def extract_named(self, title: str, text: str, pages: Sequence[PageLite] = ()) -> tuple[Extraction, str, RunStats]:
        """Extract ``text``, offering ``pages`` (at most ``MAX_PAGE_HANDLES``) as handles; returns the
        extraction, its cache key (``name_for`` the mode that produced it) and the run's stats.

        Raises ``LLMConfigError`` (endpoint refused the request), ``LLMUnavailable`` (transport
        retries spent), ``LLMRefused`` (content filter) or ``LLMOutputInvalid``; the error carries
        the calls and tokens spent before it as ``stats`` (a ``RunStats``), so they are counted too.
        """
        handles = {f"p{i}": page for i, page in enumerate(pages[:MAX_PAGE_HANDLES], 1)}
        stats = RunStats(deadline=time.monotonic() + self.config.document_budget_s)
        doc = _Document(title, handles, QuoteSource(text), Grounds.of(text), stats)
        partials: list[_Partial] = []
        try:
            for section in sections(text, self.config.section_chars):
                partials += self._section(doc, section, depth=0)
            extraction = _merge(partials)
        except LLMError as exc:
            exc.stats = stats
            raise
        log.info(
            "llm.extracted",
            model=self.config.model,
            mode=stats.mode,
            calls=stats.calls,
            prompt_tokens=stats.prompt_tokens,
            completion_tokens=stats.completion_tokens,
            repaired=stats.repaired,
            dropped_items=stats.dropped_items,
            refused=stats.refused,
            quotes=stats.quotes,
            quotes_kept=stats.quotes_kept,
            items=len(extraction.items),
        )
        return extraction, self.name_for(stats.mode or MODES[0]), stats

    def _section(self, doc: _Document, section: str, depth: int) -> list[_Partial]:
        try:
            return [self._call(doc, section)]
        except _Truncated as exc:
            halves = _halves(section) if depth < MAX_SPLITS else None
            if not halves or len(halves) < 2:
                if exc.why:
                    raise LLMOutputInvalid(
                        f"{exc.why} (even for a section of {len(section)} characters; lower section_chars)"
                    ) from None
                raise LLMOutputInvalid(
                    f"the answer was cut at max_tokens ({self.config.max_tokens}) even for a section of "
                    f"{len(section)} characters; raise max_tokens",
                    exc.raw,
                ) from None
            log.info("llm.section_split", model=self.config.model, chars=len(section), depth=depth + 1)
            return [p for half in halves for p in self._section(doc, half, depth + 1)]

    def _call(self, doc: _Document, section: str) -> _Partial:
        c, title, stats = self.config, doc.title, doc.stats
        mode = remembered_mode(c.base_url, c.model) or MODES[0]
        extra: dict = {}
        thinking_retried = False
        pages = [(h, p.title) for h, p in doc.handles.items()]
        while True:
            messages = map_messages(
                title,
                section,
                pages,
                with_schema=mode != "json_schema",
                fenced=mode == "fenced",
                bounded=c.bounded_schema,
            )
            try:
                answer = self.client.complete(
                    messages, mode, answer_schema(c.bounded_schema), extra, deadline=stats.deadline
                )
            except ModeRejected as exc:
                if exc.too_long:  # the input, not the mode or the configuration: a smaller section may fit
                    raise _Truncated("", f"the endpoint refused the input as too long: {exc.message}") from None
                mode = next_mode(mode, exc, c, stats.modes_rejected)
                continue
            _remember(c.base_url, c.model, mode)
            stats.mode = mode
            stats.calls += 1
            stats.prompt_tokens += answer.prompt_tokens
            stats.completion_tokens += answer.completion_tokens
            stats.estimated_tokens += answer.estimated_tokens
            if answer.finish_reason == "length":
                raise _Truncated(answer.content)
            if answer.finish_reason == "content_filter":
                raise LLMRefused(
                    "the provider's content filter stopped the answer (finish_reason content_filter)", answer.content
                )
            if not answer.content.strip():
                if answer.reasoning and not thinking_retried and c.thinking_off:
                    thinking_retried = True
                    extra = dict(c.thinking_off)
                    log.info("llm.thinking_off_retry", model=c.model)
                    continue
                raise LLMOutputInvalid(
                    "empty answer" + (" with reasoning only, also with thinking off" if answer.reasoning else ""),
                    answer.reasoning,
                )
            if answer.finish_reason != "stop":
                raise LLMOutputInvalid(f"the answer ended with finish_reason {answer.finish_reason!r}", answer.content)
            data, repaired = _parse(answer.content, mode)
            stats.repaired += repaired
            return _validate(data, answer.content, doc, c)


def _parse(raw: str, mode: OutputMode) -> tuple[dict, bool]:
    """The JSON object in an answer that stopped normally: a leading ``<think>...</think>`` block
    removed, then the fenced block when there is one (any mode: some servers wrap json_object
    answers too), else the whole text; json-repair when strict parsing fails. Returns (object,
    repaired)."""
    # Servers that do not parse a thinking model's reasoning out leave it in the content, first.
    answer = _THINK.sub("", raw, count=1)
    fenced = _FENCE.search(answer)
    text = (fenced.group(1) if fenced else answer).strip()
    try:
        value = json.loads(text)
        repaired = False
    except ValueError:
        try:
            value = json_repair.loads(text)
        except Exception:  # the library's own failures: nothing to repair
            value = None
        repaired = True
    if not isinstance(value, dict) or not value:
        raise LLMOutputInvalid("the answer is not a JSON object" + (" (even after repair)" if repaired else ""), raw)
    return value, repaired


def _plain(text: str, handles: dict[str, PageLite], title: str) -> str:
    """``text`` with handles resolved to page titles (``d1`` to the document's title), any other
    wiki link or Markdown link reduced to its words, and autolinks removed."""

    def sub(m: re.Match) -> str:
        target, display = m.group(1).strip(), (m.group(2) or "").strip()
        key = target.lower()
        if key in handles:
            return display or handles[key].title
        if key == "d1":
            return display or title
        if display:
            return display
        return "" if _HANDLE.fullmatch(target) else target.replace("-", " ").replace("_", " ")

    text = _WIKILINK.sub(sub, text)
    text = _MD_LINK.sub(r"\1", text)
    return _AUTOLINK.sub("", text)


class _Rejected(Exception):
    """An item the extractor does not take; the message is ``<field>: <rule>``."""


def _validate(data: dict, raw: str, doc: _Document, config: LLMConfig) -> _Partial:
    handles, title, stats = doc.handles, doc.title, doc.stats
    try:
        envelope = MapEnvelope.model_validate(data)
    except ValidationError as exc:
        raise LLMOutputInvalid(f"the answer does not match the schema: {_short(exc)}", raw) from None
    unknown = unknown_fields.collect(envelope)
    items: list[ExtractedItem] = []
    reasons: list[str] = []
    refused: list[Refusal] = []
    for i, value in enumerate(envelope.items):
        try:
            out = ItemOut.model_validate(value)
        except ValidationError as exc:
            reasons.append(_short(exc, f"items[{i}]"))
            continue
        unknown |= unknown_fields.collect(out, "items[]")
        stats.quotes += len(out.evidence)
        try:
            item = _item(out, handles, doc.source, title, doc.grounds, refused)
        except _Rejected as exc:
            reasons.append(f"items[{i}].{exc}")
            continue
        if isinstance(item, ExtractedItem):
            items.append(item)
            stats.quotes_kept += len(item.evidence)
    unknown_fields.report(config.model, "map", unknown)
    total = len(envelope.items)
    stats.dropped_items += len(reasons)
    if total and len(reasons) / total > config.max_invalid_share:
        raise LLMOutputInvalid(
            f"{len(reasons)} of {counted(total, 'item')} invalid (at most {config.max_invalid_share:.0%} allowed): "
            + "; ".join(reasons[:3])
            + ("; ..." if len(reasons) > 3 else ""),
            raw,
        )
    if reasons:
        log.info("llm.items_dropped", model=config.model, dropped=len(reasons), of=total, reasons=reasons[:5])
    usable = doc.grounds.source
    summary = normalise(escape_angles(_plain(_grounded(envelope.summary, usable, refused), handles, title)))
    body = escape_angles(_plain(_grounded(envelope.body, usable, refused), handles, title))
    body = "\n\n".join(p.strip() for p in body.split("\n\n") if p.strip())
    for refusal in refused:
        log.info("llm.refused", line=refusal.line())
    stats.refused += len(refused)
    return _Partial(summary=summary, body=body, items=items)


def _item(
    item: ItemOut,
    handles: dict[str, PageLite],
    source: QuoteSource,
    title: str,
    grounds: Grounds,
    refused: list[Refusal],
) -> ExtractedItem | Refusal:
    """The checked item, or the ``Refusal`` that keeps it out (also appended to ``refused``, with
    those of its aliases, quotes and ``same_as``); ``grounds`` are the document's (``Grounds.of``).
    Raises ``_Rejected`` when it is invalid: its name is refused, or none of its quotes occurs in
    the document."""
    own = validate_item_name(plain_name(item.name))
    page = handles.get((item.same_as or "").strip().lower())
    canonical = validate_item_name(page.title) if page is not None else None
    quotes: list[str] = []
    refused_quotes = 0
    for evidence in item.evidence:
        if evidence.source.strip().lower() != "d1":
            continue
        quote = source.find(evidence.quote, MIN_QUOTE_CHARS)
        if quote is None:
            continue
        if why := grounds.hidden(quote) or (
            f'an instruction to a model ("{found[:40]}")' if (found := directive(quote)) else None
        ):
            refused_quotes += 1
            refused.append(Refusal("quote", quote, f"no evidence: {why}"))
            continue
        if quote not in quotes:
            quotes.append(quote)
    subject = own or canonical
    if subject is None:
        raise _Rejected(f"name: {item.name[:60]!r} is not a page name the wiki takes (validate_item_name)")
    if not quotes:
        if not refused_quotes:
            raise _Rejected(f"evidence: no quote of at least {MIN_QUOTE_CHARS} characters occurs in the document")
        return _refuse(refused, Refusal("item", subject, "its only quotes are hidden text or instructions to a model"))
    if not in_quotes(subject, quotes):
        return _refuse(refused, Refusal("item", subject, "its name does not occur in its quotes"))
    name, aliases_in = subject, list(item.aliases)
    if own and canonical:
        why = same_thing_refused(own, canonical, page.aliases)
        if why:
            refused.append(Refusal("same_as", f"{own} -> {canonical}", f"the names do not agree ({why})"))
        else:
            if own.casefold() != canonical.casefold():
                aliases_in.insert(0, own)
            name = canonical
    # an alias of an existing page links every mention of it in the KB there: one document alone
    # may only give it a name that agrees with the page's own (as a same_as must)
    key = name_key(name)
    existing = next((p for p in handles.values() if name_key(p.title) == key), None)
    aliases: list[str] = []
    for alias in aliases_in:
        alias = validate_item_name(plain_name(alias))
        if not alias or alias.casefold() == name.casefold() or alias in aliases:
            continue
        if not in_quotes(alias, quotes):
            refused.append(Refusal("alias", alias, f"not in the quotes of {name!r}"))
            continue
        if existing is not None and (why := same_thing_refused(alias, existing.title, existing.aliases)):
            refused.append(Refusal("alias", alias, f"not a name of the existing page {existing.title!r} ({why})"))
            continue
        aliases.append(alias)
    description = normalise(escape_angles(_plain(_grounded(item.description, grounds.source, refused), handles, title)))
    return ExtractedItem(
        name=name,
        kind=item.kind,
        aliases=aliases[:MAX_ALIASES],
        description=description[:MAX_DESCRIPTION_CHARS],
        evidence=quotes[:3],
    )


def _grounded(text: str, source: str, refused: list[Refusal]) -> str:
    """Model prose without tags (``drop_tags``; the caller escapes ``<``/``>`` last) and without
    the sentences ``ground_prose`` refuses (their refusals appended to ``refused``); links are
    still there for it to judge."""
    text, why = ground_prose(drop_tags(text), source)
    refused += why
    return text


def _refuse(refused: list[Refusal], refusal: Refusal) -> Refusal:
    refused.append(refusal)
    return refusal


def _merge(partials: list[_Partial]) -> Extraction:
    """One ``Extraction`` from the sections' answers: the first summary, the bodies in order (cut at
    ``MAX_BODY_CHARS``), items merged by case-folded name (aliases and quotes joined, at most 3)."""
    summary = next((p.summary for p in partials if p.summary), "")
    bodies: list[str] = []
    size = 0
    for p in partials:
        if p.body and size + len(p.body) <= MAX_BODY_CHARS:
            bodies.append(p.body)
            size += len(p.body)
    body = "\n\n".join(bodies) or summary
    if not summary:
        summary = normalise(body.split("\n\n")[0]) if body else ""
    if not summary:
        raise LLMOutputInvalid("the answer has no summary and no body")
    merged: dict[str, ExtractedItem] = {}
    for p in partials:
        for item in p.items:
            key = item.name.casefold()
            seen = merged.get(key)
            if seen is None:
                if len(merged) < MAX_ITEMS:
                    merged[key] = item
                continue
            merged[key] = joined_item(seen, item)
    return Extraction(summary=summary, body=body, items=list(merged.values()))


def joined_item(seen: ExtractedItem, item: ExtractedItem) -> ExtractedItem:
    """``seen`` with ``item`` (another item of its name, case-folded) folded in: ``item``'s aliases
    and quotes ``seen`` lacks appended (an alias that is ``seen``'s name left out; at most
    ``MAX_ALIASES`` aliases and 3 quotes), ``seen``'s description unless it has none. Pure."""
    aliases = seen.aliases + [a for a in item.aliases if a not in seen.aliases and a != seen.name]
    evidence = seen.evidence + [q for q in item.evidence if q not in seen.evidence]
    update = {
        "aliases": aliases[:MAX_ALIASES],
        "evidence": evidence[:3],
        "description": seen.description or item.description,
    }
    return seen.model_copy(update=update)


def _short(exc: ValidationError, prefix: str = "") -> str:
    """The first 3 errors of ``exc`` as ``<field>: <rule>``, each field under ``prefix``
    (``items[2].kind: must be 'entity' or 'concept'``, ``summary: is required``)."""
    return "; ".join(f"{_path(e['loc'], prefix) or 'the answer'}: {_rule(e['msg'])}" for e in exc.errors()[:3])


def _path(loc: tuple, prefix: str = "") -> str:
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _rule(message: str) -> str:
    """pydantic's words as a rule: "Input should be ..." -> "must be ...", "Field required" -> "is
    required"."""
    if message == "Field required":
        return "is required"
    message = re.sub(r"a valid dictionary or instance of \w+", "an object", message)
    return re.sub(r"^\w+ should ", "must ", message)
