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
from wiki.models import WikiConfig, unprintable

#: The dotted keys a KB's configuration has, in the order they are listed.
KEYS = tuple([k for k in WikiConfig.model_fields if k != "llm"] + [f"llm.{k}" for k in LLMOverride.model_fields])
#: Characters of an API key left visible when a configuration is shown.
KEY_TAIL = 4
#: Characters one value may have: a URL, a model name, a key or a JSON object of request fields is
#: far shorter; a value is shown back whole by ``kbwiki config``.
MAX_VALUE_CHARS = 4096
#: Keys whose values are secrets: never repeated in an error.
SECRET_KEYS = frozenset({"llm.api_key"})


def _value(key: str, text: str) -> object:
    """``text`` as JSON when it parses, else as text. Raises ``BadInput`` for a value too long, one
    holding a control character, and what PostgreSQL's jsonb refuses (NaN, infinities, NUL)."""
    if len(text) > MAX_VALUE_CHARS:
        raise BadInput(f"{key}: a value has at most {MAX_VALUE_CHARS:,} characters (got {len(text):,})")
    if what := unprintable(text):
        raise BadInput(f"{key}: a value cannot contain {what}")
    try:
        value = json.loads(text)
    except ValueError:
        return text
    try:
        dumped = json.dumps(value, allow_nan=False)
    except ValueError:
        raise BadInput(f"{key}: NaN and infinite numbers cannot be stored (JSON has none)") from None
    if "\\u0000" in dumped:
        raise BadInput(f"{key}: a NUL character (\\u0000) cannot be stored")
    return value


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
    both = {item.partition("=")[0].strip() for item in sets} & {key.strip() for key in unsets}
    if both:
        raise BadInput(f"{', '.join(sorted(both))}: both set and unset; give one")
    for item in sets:
        key, sep, text = item.partition("=")
        if not sep:
            raise BadInput(f"{_shown_item(item)} is not KEY=VALUE (e.g. ingest_batch_size=50, llm.model=qwen3)")
        *parents, leaf = _path(key.strip())
        node = new
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = _value(key.strip(), text)
    for key in unsets:
        *parents, leaf = _path(key.strip())
        node = new
        for part in parents:
            node = node.get(part, {})
        node.pop(leaf, None)
    try:
        # strict: a JSON true is no batch size of 1, a string "5" no number
        valid = WikiConfig.model_validate(new, strict=True)
    except ValidationError as exc:
        raise BadInput("; ".join(_problem(e) for e in exc.errors())) from None
    stored = valid.model_dump(exclude_none=True)
    if not stored.get("llm"):
        stored.pop("llm", None)  # every model override removed: nothing left to store
    return stored


def _problem(error: dict) -> str:
    key = ".".join(str(p) for p in error["loc"])
    got = "****" if key in SECRET_KEYS else json.dumps(error.get("input"), default=str)[:80]
    return f"{key}: {error['msg']} (got {got})"


def _shown_item(item: str) -> str:
    """An ``=``-less ``--set`` item as an error repeats it: cut, since it may be a pasted secret."""
    return repr(item[:12] + "\u2026") if len(item) > 12 else repr(item)


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
