"""Opaque keyset cursors: the sort keys of the row after which the next page of a listing starts.

A cursor is URL-safe base64 (no padding) of the JSON list ``[kind, *keys]``, so any title, KB
name or source URI survives a shell, a URL and a JSON body, and a cursor of one listing is refused
by another. It is not signed: it only says where a tenant-scoped, bounded read starts, so a forged
one can do no more than a valid one of the same kind.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from wiki.errors import BadInput

#: Longest cursor accepted (characters): keys are a title or URI and an id.
MAX_CURSOR_CHARS = 4096
#: What no stored key holds and PostgreSQL refuses in a parameter: NUL, lone surrogates.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def encode_cursor(kind: str, *keys: int | str) -> str:
    """The cursor of ``kind`` for the row with sort keys ``keys`` (ints and strings)."""
    raw = json.dumps([kind, *keys], ensure_ascii=False, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, kind: str, types: tuple[type, ...]) -> tuple:
    """The sort keys :func:`encode_cursor` put in ``cursor``, as a tuple of ``types``.

    Raises ``BadInput`` when ``cursor`` is not a cursor of ``kind`` with keys of ``types`` (bad
    base64, bad JSON, another listing's cursor, wrong key types, longer than ``MAX_CURSOR_CHARS``).
    """
    keys = None
    if len(cursor) <= MAX_CURSOR_CHARS:
        try:
            keys = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        except (binascii.Error, UnicodeDecodeError, ValueError):
            keys = None
    ok = (
        isinstance(keys, list)
        and len(keys) == len(types) + 1
        and keys[0] == kind
        and all(type(k) is t for k, t in zip(keys[1:], types, strict=True))
        and not any(isinstance(k, str) and _UNSTORABLE.search(k) for k in keys[1:])
    )
    if not ok:
        raise BadInput(f"{cursor[:80]!r} is not a cursor of this listing")
    return tuple(keys[1:])
