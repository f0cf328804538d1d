"""The model's answer, as pydantic models: the JSON schema sent to the provider is generated from
them, and every answer is validated by them.

Tolerant parsing, strict meaning: the schema sent is strict (every property required,
``additionalProperties: false``), and so are the types our validation accepts (``strict=True``: no
``"3"`` for a number), but a field the schema does not know is set aside (``extra="allow"``, read
back by ``unknown_fields.collect``) and ignored: a model that adds ``confidence`` to each item
still has its items read. The envelope (``MapAnswer``) is validated first with its items left raw,
then each item alone, so that one bad item is dropped and counted instead of failing the whole
answer.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    """Strict types; unknown fields kept aside in ``model_extra`` (named once, then ignored)."""

    model_config = ConfigDict(extra="allow", strict=True)


class EvidenceOut(_Strict):
    """One quote: ``source`` is the document's handle (``d1``), ``quote`` its words, copied."""

    source: str
    quote: str


class ItemOut(_Strict):
    """One entity or concept. ``same_as`` is the handle (``p3``) of an existing page it is, else null."""

    name: str
    kind: Literal["entity", "concept"]
    same_as: str | None
    aliases: list[str]
    description: str
    evidence: list[EvidenceOut]


class MapAnswer(_Strict):
    """The whole answer for one document or section."""

    summary: str
    body: str
    items: list[ItemOut] = Field(max_length=40)


class MapEnvelope(_Strict):
    """``MapAnswer`` with its items unchecked (each is validated alone as an ``ItemOut``)."""

    summary: str
    body: str
    items: list[Any]


#: With ``bounded``: the longest string of each field (characters) and the most entries of each
#: list, tight enough that a whole answer fits a small model's budget (about 3,500 characters,
#: about 1,000 tokens): a grammar-constrained model that loops fills a string to its bound and
#: moves on. The answer is still validated by the models above.
STRING_BOUNDS = {
    "summary": 300,
    "body": 300,
    "name": 60,
    "description": 200,
    "quote": 160,
    "source": 8,
    "same_as": 8,
    "aliases": 60,
    "page": 8,  # a lead call's page handle
    "lead": 600,  # wiki.extract.llm.leads.MAX_LEAD_CHARS
}
LIST_BOUNDS = {"items": 4, "aliases": 2, "evidence": 2, "leads": 8}


class MergeChoiceOut(_Strict):
    """One merge decision: ``item`` is the item's handle (``i2``), ``merge_into`` the handle of one
    of its own candidate pages (``p5``) or null for a new page."""

    item: str
    merge_into: str | None


class MergeAnswer(_Strict):
    """The whole answer of a merge call."""

    decisions: list[MergeChoiceOut]


class MergeEnvelope(_Strict):
    """``MergeAnswer`` with its decisions unchecked (each is validated alone)."""

    decisions: list[Any]


class LeadOut(_Strict):
    """One page's lead: ``page`` is the page's handle (``p2``), ``lead`` the paragraph."""

    page: str
    lead: str


class LeadAnswer(_Strict):
    """The whole answer of a lead call (``wiki.extract.llm.leads``)."""

    leads: list[LeadOut]


class LeadEnvelope(_Strict):
    """``LeadAnswer`` with its leads unchecked (each is validated alone)."""

    leads: list[Any]


def _strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()

    def fix(node: Any) -> None:
        if isinstance(node, dict):
            node.pop("title", None)
            node.pop("default", None)
            node.pop("maxItems", None)  # not in every provider's schema subset; checked on our side
            if node.get("type") == "object" and "properties" in node:
                node["required"] = list(node["properties"])
                node["additionalProperties"] = False
            for value in node.values():
                fix(value)
        elif isinstance(node, list):
            for value in node:
                fix(value)

    fix(schema)
    return schema


@lru_cache(maxsize=1)
def merge_schema() -> dict[str, Any]:
    """``MergeAnswer``'s JSON schema in the strict shape (as :func:`answer_schema`)."""
    return _strict_schema(MergeAnswer)


def merge_schema_text() -> str:
    """The merge schema as compact JSON, for the prompt of the modes without structured output."""
    return json.dumps(merge_schema(), separators=(",", ":"))


@lru_cache(maxsize=2)
def lead_schema(bounded: bool = False) -> dict[str, Any]:
    """``LeadAnswer``'s JSON schema in the strict shape, ``bounded`` as :func:`answer_schema`'s."""
    schema = _strict_schema(LeadAnswer)
    if bounded:
        _bound(schema)
    return schema


def lead_schema_text(bounded: bool = False) -> str:
    """The lead schema as compact JSON, for the prompt of the modes without structured output."""
    return json.dumps(lead_schema(bounded), separators=(",", ":"))


@lru_cache(maxsize=2)
def answer_schema(bounded: bool = False) -> dict[str, Any]:
    """``MapAnswer``'s JSON schema in the shape OpenAI's strict structured outputs accept: every
    property required (nullable ones as ``anyOf`` with null), ``additionalProperties: false``.
    ``bounded`` adds ``maxLength`` to every string and ``maxItems`` to every list
    (``STRING_BOUNDS``, ``LIST_BOUNDS``): a grammar-constrained small model then cannot loop."""
    schema = _strict_schema(MapAnswer)
    if bounded:
        _bound(schema)
    return schema


def _bound(node: Any, field: str = "") -> None:
    """Add ``maxLength``/``maxItems`` below ``node``; ``field`` is the property it is the value of."""
    if isinstance(node, dict):
        if node.get("type") == "string" and field in STRING_BOUNDS:
            node["maxLength"] = STRING_BOUNDS[field]
        if node.get("type") == "array" and field in LIST_BOUNDS:
            node["maxItems"] = LIST_BOUNDS[field]
        for key, value in node.items():
            if key == "properties":
                for name, prop in value.items():
                    _bound(prop, name)
            elif key in ("items", "anyOf"):
                _bound(value, field)
            elif key == "$defs":
                for definition in value.values():
                    _bound(definition)
    elif isinstance(node, list):
        for value in node:
            _bound(value, field)


def schema_text(bounded: bool = False) -> str:
    """The schema as compact JSON, for the prompt of the modes without structured output."""
    return json.dumps(answer_schema(bounded), separators=(",", ":"))
