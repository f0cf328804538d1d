"""The seam between ``ChatClient`` and a rate limit shared by every worker process.

``ChatClient`` asks its ``RateLimiter`` for a ``Lease`` before each HTTP request (each tenacity
try included) and releases it after, with the tokens the call really used and whether the
endpoint answered 429. ``wiki`` holds only this protocol and the do-nothing ``UNLIMITED``; the
Redis implementation is ``repos.rate_limit.RedisRateLimiter`` (wired by ``stages.deps``).

The limit's key is the endpoint and the model (``model_key``); the share a caller draws from is
its knowledge base, set around a document's calls with ``sharing(kb_id)`` (a context variable,
so every call path under it, the extractor's or another's, is counted for that KB).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

_share: ContextVar[str] = ContextVar("kbwiki_llm_share", default="")


@contextmanager
def sharing(kb_id: str) -> Iterator[None]:
    """Count the model calls made inside the block (in this thread) for KB ``kb_id``."""
    token = _share.set(kb_id)
    try:
        yield
    finally:
        _share.reset(token)


def current_share() -> str:
    """The KB the calls of this thread count for (``""`` outside ``sharing``)."""
    return _share.get()


def model_key(base_url: str | None, model: str) -> str:
    """One model at one endpoint, the unit a limit applies to: ``<model>@<12 hex digits of the
    endpoint and model>`` (the model's name cut to 60 characters, so logs name it)."""
    digest = hashlib.sha256(f"{base_url or ''}\n{model}".encode()).hexdigest()[:12]
    return f"{model[:60]}@{digest}"


def estimate_tokens(prompt_chars: int, max_tokens: int) -> int:
    """Tokens reserved before a call: the prompt at 4 characters a token (OpenAI's rule of thumb
    for English) plus the whole answer cap; corrected with the real usage after the call."""
    return prompt_chars // 4 + max_tokens


@dataclass(frozen=True)
class ModelLimits:
    """One model's budget, shared by every process: ``max_concurrency`` requests in flight,
    ``rpm`` requests and ``tpm`` tokens (prompt and answer) a minute. 0 means unlimited."""

    max_concurrency: int = 0
    rpm: int = 0
    tpm: int = 0


class Lease(Protocol):
    """One granted request slot; release it exactly once."""

    def release(self, used_tokens: int | None, throttled: bool = False) -> None:
        """Give the slot back. ``used_tokens``: the call's real prompt plus answer tokens (None:
        unknown, the reservation stands); ``throttled``: the endpoint answered 429, so every
        process slows down."""


class RateLimiter(Protocol):
    """Blocks until a request to a model may start."""

    def acquire(self, key: str, share: str, limits: ModelLimits, tokens: int, deadline: float) -> Lease:
        """A lease for one request to model ``key`` counted for KB ``share``, reserving ``tokens``;
        waits as long as needed but not past ``deadline`` (``time.monotonic()``). Raises
        ``wiki.errors.LLMUnavailable`` when the deadline passes first."""
        ...

    def notice(self, share: str, text: str, ttl_s: float) -> None:
        """Say to KB ``share``'s status what its model calls wait for (``text``, one line: "waiting
        60 s for rate limit", "model slow: ..."), for ``ttl_s`` seconds; never raises."""
        ...


class _NoLease:
    def release(self, used_tokens: int | None, throttled: bool = False) -> None:
        return None


class _Unlimited:
    """A limiter that never waits (the offline tests and a process without Redis)."""

    def acquire(self, key: str, share: str, limits: ModelLimits, tokens: int, deadline: float) -> Lease:
        return _NoLease()

    def notice(self, share: str, text: str, ttl_s: float) -> None:
        return None


UNLIMITED: RateLimiter = _Unlimited()
