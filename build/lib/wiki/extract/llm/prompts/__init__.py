"""The LLM extractor's prompts, one versioned file each (``map_v2.md``), filled by name."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from wiki.extract.llm.schema import lead_schema_text, merge_schema_text, schema_text

#: The map prompt's version: part of the extraction cache key (``LLMExtractor.name``).
PROMPT_VERSION = "map_v2"
#: The merge prompt's version: part of the merge-decision cache key (``merges.cache_name``).
MERGE_PROMPT_VERSION = "merge_v1"
#: The page-lead prompt's version (``wiki.extract.llm.leads``).
LEAD_PROMPT_VERSION = "lead_v1"
_DIR = Path(__file__).parent
_SPLIT = "=== user ==="


@lru_cache(maxsize=4)
def _load(version: str) -> tuple[str, str]:
    text = (_DIR / f"{version}.md").read_text(encoding="utf-8")
    text = text.split("-->", 1)[1] if text.startswith("<!--") else text
    system, user = text.split(_SPLIT, 1)
    return system.replace("=== system ===", "", 1).strip(), user.strip()


def map_messages(
    title: str, document: str, pages: list[tuple[str, str]], *, with_schema: bool, fenced: bool, bounded: bool = False
) -> list[dict[str, str]]:
    """The chat messages for one call: ``pages`` as ``[(handle, title)]``; ``with_schema`` puts the
    JSON schema in the prompt (the modes without structured output; ``bounded`` as
    ``schema.answer_schema``), ``fenced`` asks for the
    answer in a ```json block. Placeholders are replaced once each, document last, so a document
    that contains ``{{...}}`` is sent as it is; its own document tags are escaped (:func:`delimited`)."""
    system, user = _load(PROMPT_VERSION)
    instruction = _instruction(lambda: schema_text(bounded), with_schema=with_schema, fenced=fenced)
    listing = "\n".join(f"{handle}: {name}" for handle, name in pages) or "(none)"
    safe_title = " ".join(title.split()).replace('"', "'")
    head, tail = user.split("{{document}}", 1)
    user = head.replace("{{pages}}", listing).replace("{{title}}", safe_title) + delimited(document) + tail
    return [
        {"role": "system", "content": system.replace("{{schema_instruction}}", instruction)},
        {"role": "user", "content": user},
    ]


#: A document's own ``<document`` or ``</document`` tag: it must not open or close the prompt's.
_DELIMITER = re.compile(r"<(?=\s*/?\s*document\b)", re.I)


def delimited(document: str) -> str:
    """``document`` as the prompt holds it between its ``<document>`` tags: a ``<document`` or
    ``</document`` of its own written ``&lt;document`` (issue 26: a fake closing tag followed by
    "instructions" must not end the data). Everything else as it is."""
    return _DELIMITER.sub("&lt;", document)


def merge_messages(title: str, listing: str, *, with_schema: bool, fenced: bool) -> list[dict[str, str]]:
    """The chat messages of one merge call: ``listing`` is the items and their candidates as
    ``wiki.extract.llm.merges.listing`` writes them; ``with_schema`` and ``fenced`` as for
    :func:`map_messages`."""
    system, user = _load(MERGE_PROMPT_VERSION)
    instruction = _instruction(merge_schema_text, with_schema=with_schema, fenced=fenced)
    safe_title = " ".join(title.split()).replace('"', "'")
    head, tail = user.split("{{items}}", 1)
    user = head.replace("{{title}}", safe_title) + listing + tail
    return [
        {"role": "system", "content": system.replace("{{schema_instruction}}", instruction)},
        {"role": "user", "content": user},
    ]


def lead_messages(listing: str, *, with_schema: bool, fenced: bool, bounded: bool = False) -> list[dict[str, str]]:
    """The chat messages of one page-lead call: ``listing`` is the pages and their contributions as
    ``wiki.extract.llm.leads.listing`` writes them; ``with_schema``, ``fenced`` and ``bounded`` as
    for :func:`map_messages`."""
    system, user = _load(LEAD_PROMPT_VERSION)
    instruction = _instruction(lambda: lead_schema_text(bounded), with_schema=with_schema, fenced=fenced)
    head, tail = user.split("{{pages}}", 1)
    return [
        {"role": "system", "content": system.replace("{{schema_instruction}}", instruction)},
        {"role": "user", "content": head + listing + tail},
    ]


def _instruction(schema: Callable[[], str], *, with_schema: bool, fenced: bool) -> str:
    """The system prompt's answer-format sentences: the schema (modes without structured output)
    and the fence (``fenced`` mode)."""
    instruction = "\nThe JSON object follows this JSON schema:\n" + schema() if with_schema else ""
    if fenced:
        instruction += "\nWrite the JSON object inside one ```json fenced block."
    return instruction
