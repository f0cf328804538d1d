"""The model's answer, as strict pydantic models: the JSON schema sent to the provider is
generated from them, and every answer is validated by them (``extra="forbid"``).

The envelope (``MapAnswer``) is validated first with its items left raw, then each item alone, so
that one bad item is dropped and counted instead of failing the whole answer.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


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


@lru_cache(maxsize=1)
def answer_schema() -> dict[str, Any]:
    """``MapAnswer``'s JSON schema in the shape OpenAI's strict structured outputs accept: every
    property required (nullable ones as ``anyOf`` with null), ``additionalProperties: false``."""
    schema = MapAnswer.model_json_schema()

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


def schema_text() -> str:
    """The schema as compact JSON, for the prompt of the modes without structured output."""
    return json.dumps(answer_schema(), separators=(",", ":"))
