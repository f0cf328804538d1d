"""What the two task-queue repositories share: the scope of a KB's lanes, the column widths of
``migrations/0001_task_queue.sql``, the error cut and the checks that refuse a value before any write.

Values that do not fit raise ``wiki.errors.BadInput`` (a ``ValueError``) before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from wiki.errors import ERROR_LIMIT_BYTES, BadInput, EmptyDedupKey

TRUNCATED_SUFFIX = "...(truncated)"

# Column widths (VARCHAR(n)) of the migration.
WIDTHS = {"task_type": 64, "scope": 32, "scope_id": 64, "op": 32, "dedup_key": 128, "related_id": 64}


def truncate_error(text: str, limit_bytes: int = ERROR_LIMIT_BYTES) -> str:
    """``text`` cut to at most ``limit_bytes`` bytes of UTF-8, ending in ``...(truncated)`` when cut.

    Cuts on a character boundary, so the result is always valid UTF-8. NUL characters (which a
    PostgreSQL TEXT column refuses) are removed first.
    """
    text = text.replace("\x00", "")
    raw = text.encode("utf-8")
    if len(raw) <= limit_bytes:
        return text
    keep = max(0, limit_bytes - len(TRUNCATED_SUFFIX.encode("utf-8")))
    return raw[:keep].decode("utf-8", errors="ignore") + TRUNCATED_SUFFIX


def strip_nul(value: Any) -> Any:
    """JSONB refuses ``\\u0000`` in strings; dead letters must store whatever bad input failed."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {strip_nul(str(k)): strip_nul(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strip_nul(v) for v in value]
    return value


def require(**fields: str) -> None:
    """Raise ``BadInput`` when a required text field is empty (``EmptyDedupKey`` for ``dedup_key``)
    or wider than its column."""
    for name, value in fields.items():
        if not isinstance(value, str) or not value:
            kind = EmptyDedupKey if name == "dedup_key" else BadInput
            raise kind(f"{name} is required (got {value!r})")
        check_width(name, value)


def check_width(name: str, value: str) -> None:
    """Raise ``BadInput`` when ``value`` is wider than the column ``name``."""
    width = WIDTHS.get(name)
    if width is not None and len(value) > width:
        raise BadInput(f"{name} is longer than {width} characters")


def int_ids(ids: Iterable[int]) -> list[int]:
    """Row ids as ints (a driver would send numeric strings as text)."""
    return [int(i) for i in ids]
