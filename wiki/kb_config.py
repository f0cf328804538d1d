"""Changing a KB's ``wiki_config`` by dotted keys (``kbwiki config``): ``ingest_batch_size=50``,
``llm.model=qwen3``, and showing it with its API key masked.

A value is read as JSON when it parses (``50``, ``true``, ``{"temperature": 0}``, ``"50"``), else
as the text given (``qwen3``). The result is validated as a whole by ``wiki.models.WikiConfig``,
so a change is stored entirely or not at all.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import ValidationError

from wiki.errors import BadInput
from wiki.llm_config import LLMOverride
from wiki.models import WikiConfig

#: The dotted keys a KB's configuration has, in the order they are listed.
KEYS = tuple([k for k in WikiConfig.model_fields if k != "llm"] + [f"llm.{k}" for k in LLMOverride.model_fields])
#: Characters of an API key left visible when a configuration is shown.
KEY_TAIL = 4


def _value(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _path(key: str) -> list[str]:
    if key not in KEYS:
        raise BadInput(f"unknown key {key!r}: the keys are {', '.join(KEYS)}")
    return key.split(".")


def changed(config: dict, sets: Sequence[str], unsets: Sequence[str]) -> dict:
    """``config`` (a stored ``wiki_config``) with each ``KEY=VALUE`` of ``sets`` set and each key of
    ``unsets`` removed (the process setting applies again), validated and dumped without the keys
    left unset. Raises ``BadInput`` naming the key for an unknown key, an ``=``-less item or a value
    ``WikiConfig`` refuses."""
    new = WikiConfig.model_validate(config).model_dump(exclude_none=True)
    for item in sets:
        key, sep, text = item.partition("=")
        if not sep:
            raise BadInput(f"{item!r} is not KEY=VALUE (e.g. ingest_batch_size=50, llm.model=qwen3)")
        *parents, leaf = _path(key.strip())
        node = new
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = _value(text)
    for key in unsets:
        *parents, leaf = _path(key.strip())
        node = new
        for part in parents:
            node = node.get(part, {})
        node.pop(leaf, None)
    try:
        valid = WikiConfig.model_validate(new)
    except ValidationError as exc:
        raise BadInput("; ".join(_problem(e) for e in exc.errors())) from None
    stored = valid.model_dump(exclude_none=True)
    if not stored.get("llm"):
        stored.pop("llm", None)  # every model override removed: nothing left to store
    return stored


def _problem(error: dict) -> str:
    key = ".".join(str(p) for p in error["loc"])
    return f"{key}: {error['msg']} (got {json.dumps(error.get('input'), default=str)[:80]})"


def shown(config: dict) -> list[str]:
    """The lines ``key = value`` (value as JSON) of a stored ``wiki_config``, in ``KEYS`` order, the
    API key masked to its last ``KEY_TAIL`` characters; [] when nothing is overridden."""
    flat = WikiConfig.model_validate(config).model_dump(exclude_none=True)
    llm = flat.pop("llm", None) or {}
    if "api_key" in llm:
        key = llm["api_key"]
        llm["api_key"] = "****" + (key[-KEY_TAIL:] if len(key) > 2 * KEY_TAIL else "")
    values = {**flat, **{f"llm.{k}": v for k, v in llm.items()}}
    return [f"{k} = {json.dumps(values[k], ensure_ascii=False)}" for k in KEYS if k in values]
