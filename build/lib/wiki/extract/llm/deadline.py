"""A wall-clock deadline on every HTTP request the SDK makes: connect, first byte and total.

httpx's timeouts bound each socket operation, not the request: a server that sends one byte every
5 s never trips a 120 s read timeout, and held a worker thread past the document's budget until
Dramatiq's own time limit killed it (issue 26). Here every connect, read and write of a request
gets at most the time left until the deadline set by :func:`within` (``time.monotonic()``), and
once it has passed the next one raises the HTTP library's own ``ReadTimeout`` (or
``ConnectTimeout``), which the SDK turns into ``openai.APITimeoutError`` like any timeout: a
request ends at most one socket operation's scheduling late, whatever the server sends.

The seam is the network backend of the HTTP library's connection pool (httpcore's
``NetworkBackend``, public there): ``http_client`` builds the SDK's client (``DefaultHttpxClient``)
with a transport whose pool connects through :class:`_Backend`. The pool is an attribute of the
transport (``_pool``) that httpx does not document; when it is missing, the client is built
without the deadline (logged once), and each socket operation is still bounded by its timeout.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import openai
import structlog

log = structlog.get_logger(__name__)

_deadline: ContextVar[float | None] = ContextVar("kbwiki_llm_deadline", default=None)


@contextmanager
def within(deadline: float) -> Iterator[None]:
    """Bound every socket operation of the requests made in the block (in this thread) by
    ``deadline`` (``time.monotonic()``)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` cut to the time left; raises ``error`` once the deadline has passed."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream:
    """A connection whose every read and write is cut to the deadline."""

    def __init__(self, inner: Any, errors: Any) -> None:
        self.inner, self.errors = inner, errors

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, _left(timeout, self.errors.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, _left(timeout, self.errors.WriteTimeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        inner = self.inner.start_tls(ssl_context, server_hostname, _left(timeout, self.errors.ConnectTimeout))
        return _Stream(inner, self.errors)

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _Backend:
    """A network backend whose connections keep to the deadline of the request using them."""

    def __init__(self, inner: Any, errors: Any) -> None:
        self.inner, self.errors = inner, errors

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, **kwargs: Any) -> _Stream:
        stream = self.inner.connect_tcp(host, port, _left(timeout, self.errors.ConnectTimeout), **kwargs)
        return _Stream(stream, self.errors)

    def connect_unix_socket(self, path: str, timeout: float | None = None, **kwargs: Any) -> _Stream:
        stream = self.inner.connect_unix_socket(path, _left(timeout, self.errors.ConnectTimeout), **kwargs)
        return _Stream(stream, self.errors)

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def http_client() -> Any:
    """The SDK's default HTTP client (``openai.DefaultHttpxClient``) with the deadline on its
    connections (module docstring)."""
    client = openai.DefaultHttpxClient()
    # The HTTP library the SDK was built on (httpx, or a fork of it), and its httpcore beside it.
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is None:
        log.warning("llm.no_deadline", reason="the HTTP client has no connection pool to wrap")
        return client
    errors = importlib.import_module(type(pool).__module__.split(".")[0])
    pool._network_backend = _Backend(backend, errors)
    return client
