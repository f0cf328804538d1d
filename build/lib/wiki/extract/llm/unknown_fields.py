"""Fields a model added to its answer that the schema does not have: named, said once, ignored.

``collect`` names them by their place in the answer (``confidence``, ``items[].confidence``,
``items[].evidence[].page``); ``report`` logs ``llm.unknown_fields_ignored`` (a warning) the first
time a field is seen for a KB and model in this process, not at every call: a model that always
adds ``confidence`` says so once per KB, and an operator sees which fields its answers carry.
"""

from __future__ import annotations

import threading

import structlog
from pydantic import BaseModel

from wiki.extract.llm.ratelimit import current_share

log = structlog.get_logger(__name__)

#: (KB, model, field) triples already reported; emptied when it holds this many (a process that
#: served very many KBs then says a field again, which is harmless).
MAX_REMEMBERED = 10_000

_seen: set[tuple[str, str, str]] = set()
_seen_lock = threading.Lock()


def collect(value: object, prefix: str = "") -> set[str]:
    """The unknown fields of a validated answer model ``value`` and of the models inside it (its
    fields' values and their lists), each as ``<prefix><path>``: ``items[].confidence``."""
    if isinstance(value, list):
        return {name for entry in value for name in collect(entry, f"{prefix}[]" if prefix else prefix)}
    if not isinstance(value, BaseModel):
        return set()
    found = {f"{prefix}.{key}" if prefix else key for key in (value.model_extra or {})}
    for name in type(value).model_fields:
        found |= collect(getattr(value, name), f"{prefix}.{name}" if prefix else name)
    return found


def report(model: str, answer: str, fields: set[str]) -> None:
    """Log the ``fields`` of a ``model``'s ``answer`` (``map``, ``merge``, ``lead``) not yet
    reported for the current KB (``ratelimit.current_share``: ``""`` outside a KB's work) and model."""
    if not fields:
        return
    kb_id = current_share()
    with _seen_lock:
        new = sorted(f for f in fields if (kb_id, model, f) not in _seen)
        if len(_seen) + len(new) > MAX_REMEMBERED:
            _seen.clear()
        _seen.update((kb_id, model, f) for f in new)
    if new:
        log.warning("llm.unknown_fields_ignored", knowledge_base_id=kb_id, model=model, answer=answer, fields=new)


def forget() -> None:
    """Forget what was reported (tests start afresh)."""
    with _seen_lock:
        _seen.clear()
