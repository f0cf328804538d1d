"""ASGI middleware in front of every route of the web face: the headers every response carries,
NUL bytes refused, request bodies bounded. The Host allow-list is Starlette's
``TrustedHostMiddleware`` (``kbwiki.web.app``).

Each is a plain ASGI class (no ``BaseHTTPMiddleware``: it would buffer bodies and hide the order of
``receive`` and ``send``), so a refusal is sent before a byte of the body is read.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from starlette.convertors import Convertor, register_url_convertor
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: What scripts, styles, frames and forms a page may use: this server's only (page HTML is
#: sanitised by ``kbwiki.web.markdown``; the policy is the second fence).
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:;"
    " object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
}
#: Bytes a request body may hold: the largest form is the sign-in (a token) or an action (a CSRF
#: token), under 1 KiB; 64 KiB leaves room and bounds what a stranger can make the server read.
MAX_BODY_BYTES = 64 * 1024


class RowIdConvertor(Convertor[int]):
    """A path parameter that is a PostgreSQL ``bigint`` id: 1 to 18 digits. Starlette's ``int``
    takes any number of digits and a 5,000-digit one raised in ``int()`` (a 500 and a traceback
    in the log for every such request); a longer one here matches no route (404)."""

    regex = "[0-9]{1,18}"

    def convert(self, value: str) -> int:
        return int(value)

    def to_string(self, value: int) -> str:
        return str(value)


register_url_convertor("row_id", RowIdConvertor())


class SecurityHeaders:
    """Adds ``SECURITY_HEADERS`` to every HTTP response (pages, JSON, ``/metrics``, static files,
    errors) and ``Cache-Control: no-store`` under ``no_store_prefix`` (the operations pages, whose
    signed-in views hold forms and error details no cache should keep). A header the route set
    itself is kept."""

    def __init__(self, app: ASGIApp, no_store_prefix: str = "/ops") -> None:
        self.app = app
        self.no_store_prefix = no_store_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        no_store = scope["path"] == self.no_store_prefix or scope["path"].startswith(self.no_store_prefix + "/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
                if no_store:
                    headers["cache-control"] = "no-store"
            await send(message)

        await self.app(scope, receive, send_with_headers)


class RejectNul:
    """Answers 400 to a request whose path or query string holds a NUL byte (raw or ``%00``):
    PostgreSQL refuses NUL in text, so such a request would otherwise reach a query and fail as
    a 500 with a traceback in the log."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (
            "\x00" in scope["path"] or b"\x00" in unquote_to_bytes(scope.get("query_string", b""))
        ):
            await PlainTextResponse("NUL bytes are not allowed in a URL", status_code=400)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class BodyTooLarge(Exception):
    """A request body grew past ``MAX_BODY_BYTES`` while it was read (no Content-Length given)."""


class BodyLimit:
    """Answers 413 to a request body over ``max_bytes``: at once when its Content-Length says so
    (before any route, so before sign-in checks, reads or spools a byte), and as soon as a body
    sent without a length passes it."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = PlainTextResponse(f"request body over {self.max_bytes} bytes", status_code=413)
        length = Headers(scope=scope).get("content-length", "")
        if length and (not length.isdigit() or int(length) > self.max_bytes):
            await too_large(scope, receive, send)
            return
        seen = 0
        started = False

        async def bounded_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, bounded_receive, tracking_send)
        except BodyTooLarge:
            if started:
                raise
            await too_large(scope, receive, send)
