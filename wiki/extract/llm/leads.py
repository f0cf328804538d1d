"""Page leads the model writes: an entity or concept page's opening paragraph, re-synthesised from
a bounded set of its contributions (``wiki.render.lead_inputs``: the first ``LEAD_SOURCES``).

``stages.leads`` asks for the leads of up to ``PAGES_PER_CALL`` pages in ONE call. Everything the
model sees is a handle (``p1``, ``p2``... in the call), the page's title and type, and one line per
contribution; it never sees the page, so a call's size does not grow with the page's sources. An
answer naming an unknown handle is ignored; a page the answer leaves out, or whose lead is empty
once cleaned, gets none (it keeps ``best_lead``); fields the schema does not have are ignored
(``unknown_fields``); an answer that is not the schema's JSON gives no lead at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from wiki.extract.llm import unknown_fields
from wiki.extract.llm.client import ChatClient
from wiki.extract.llm.grounding import Refusal
from wiki.extract.llm.intro import plain_paragraph
from wiki.extract.llm.prompts import lead_messages
from wiki.extract.llm.schema import LeadEnvelope, LeadOut, lead_schema
from wiki.extract.llm.structured import CallStats, ask, entries

log = structlog.get_logger(__name__)

#: Pages whose leads one call writes (about 400 characters of input each: a call stays near 1k
#: prompt tokens besides the instructions).
PAGES_PER_CALL = 8
#: Longest lead kept, in characters (three sentences or so).
MAX_LEAD_CHARS = 600


@dataclass(frozen=True)
class LeadQuestion:
    """One page to write a lead for: its title and type, and ``lead_inputs`` (their ``lead_key``
    is ``key``: the lead is stored only if the page still has it)."""

    slug: str
    title: str
    page_type: str
    inputs: tuple[str, ...]
    key: str


@dataclass
class LeadStats(CallStats):
    """One lead call's tokens and outcome (logged as ``lead.written``); ``unknown_handles``: answers
    naming no page of the call."""

    unknown_handles: int = 0


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace('"', "'")


def listing(questions: Sequence[LeadQuestion]) -> str:
    """The prompt's text: each page as ``p1: "Title" (entity)`` and its contributions as ``- ...`` lines."""
    lines: list[str] = []
    for i, q in enumerate(questions, 1):
        lines.append(f'p{i}: "{_one_line(q.title)}" ({q.page_type})')
        lines += [f"  - {_one_line(line)}" for line in q.inputs]
    return "\n".join(lines)


def write_leads(
    client: ChatClient, questions: Sequence[LeadQuestion], deadline: float | None = None
) -> tuple[list[str], LeadStats]:
    """One call writing the leads of ``questions`` (at most ``PAGES_PER_CALL``); returns, per
    question in order, its lead as plain prose (``intro.plain_paragraph``: links kept as their text,
    a handle as its page's title, Markdown marks and HTML dropped, a sentence with a link or address
    none of the page's lines holds dropped; at most ``MAX_LEAD_CHARS``) or "" (none), and the call's
    stats.

    Raises ``LLMConfigError`` (a 400 in every mode, or 401, 402, 403, 404, 422) and
    ``LLMUnavailable`` (transport retries or ``deadline`` spent). An answer that is cut, filtered,
    empty or not the schema's JSON, or a prompt too long for the context, gives no lead
    (``stats.invalid``); raises ValueError for more than ``PAGES_PER_CALL`` questions."""
    if len(questions) > PAGES_PER_CALL:
        raise ValueError(f"at most {PAGES_PER_CALL} pages per lead call, got {len(questions)}")
    text = listing(questions)
    stats = LeadStats()
    leads = [""] * len(questions)
    bounded = client.config.bounded_schema  # a small local model behind a grammar loops without bounds
    found = ask(
        client,
        lambda with_schema, fenced: lead_messages(text, with_schema=with_schema, fenced=fenced, bounded=bounded),
        lead_schema(bounded),
        LeadEnvelope,
        stats,
        deadline=deadline,
    )
    if found is None:
        return leads, stats
    handles = {f"p{i}": i - 1 for i in range(1, len(questions) + 1)}
    refused: list[Refusal] = []
    titles = {handle: questions[i].title for handle, i in handles.items()}  # "[[p2]]" in a lead: its title
    answers, unknown = entries(found, found.leads, LeadOut, "leads")
    for out in answers:
        index = handles.get(out.page.strip().lower())
        if index is None:
            stats.unknown_handles += 1
            continue
        if not leads[index]:  # a page's second answer: the first one stands
            # grounded on the page's own lines: a link or address none of them holds is dropped
            leads[index] = plain_paragraph(
                out.lead, MAX_LEAD_CHARS, titles, source=listing([questions[index]]), refused=refused
            )
    unknown_fields.report(client.config.model, "lead", unknown)
    for refusal in refused:
        log.info("llm.refused", line=refusal.line(), call="page leads")
    return leads, stats
