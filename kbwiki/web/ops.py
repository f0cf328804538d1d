"""Who may press the operations page's buttons: the holder of the ops token (``KBWIKI_WEB_OPS_TOKEN``).

Without a token set the page is read-only (no form is shown and every action answers 403). An
operator signs in by posting the token; the server opens a session (``repos.web_sessions``: a
random cookie value, its SHA-256 stored with an expiry of ``SESSION_S``) and answers with the
cookie (``HttpOnly``, ``SameSite=Strict``, path ``/ops``). Signing out deletes the session, so a
copied cookie stops working; changing the token ends every session.

Every action form carries a CSRF token bound to the session: the session's hash signed with
itsdangerous under a key drawn at random when the server starts (so a restart asks forms to be
reloaded) and timed to the session's lifetime. A form from another session, an old server or none
is refused; the sign-out form too. Failed sign-ins are limited per client address
(``SIGN_IN_LIMIT``; the socket's address unless ``KBWIKI_WEB_TRUSTED_PROXIES`` names the proxy
that sent X-Forwarded-For) and logged.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from itsdangerous import BadSignature, URLSafeTimedSerializer
from limits import parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request

from repos.web_sessions import WebSessionRepository

COOKIE = "kbwiki_ops"
COOKIE_PATH = "/ops"
#: Seconds a sign-in lasts (a working day), then the session is gone and the operator signs in again.
SESSION_S = 8 * 3600
#: Failed sign-ins allowed per client address (a moving window). The audit guessed 223 tokens a
#: second; at 10 a minute a 16-character random token (KBWIKI_WEB_OPS_TOKEN's minimum) is out of reach.
SIGN_IN_LIMIT = "10/minute"


def _hash(cookie: str) -> bytes:
    return hashlib.sha256(cookie.encode()).digest()


class OpsGuard:
    """Sessions, CSRF tokens and sign-in limits for one ops token (None: read-only) and one tenant."""

    def __init__(self, token: str | None, tenant_id: int, sessions: WebSessionRepository) -> None:
        self.token = token or None
        self.tenant_id = tenant_id
        self.sessions = sessions
        self._csrf = URLSafeTimedSerializer(secrets.token_bytes(32), salt="kbwiki-ops-csrf")
        # a changed token ends the sessions opened with the old one; the token itself is not stored
        self._fingerprint = hmac.new((token or "").encode(), b"kbwiki-session", hashlib.sha256).digest()
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        # per address only: a cap on all addresses together let anyone lock the operators out
        # (from a few addresses, or from visitors' browsers posting a cross-site form)
        self._limit = parse(SIGN_IN_LIMIT)

    @property
    def enabled(self) -> bool:
        """Whether actions exist at all (a token is set)."""
        return self.token is not None

    def sign_in_allowed(self, address: str) -> bool:
        """Whether ``address`` may try a sign-in now (under ``SIGN_IN_LIMIT`` failures of its own)."""
        return self._limiter.test(self._limit, "ops-sign-in", address)

    def sign_in_failed(self, address: str) -> None:
        """Count a failed sign-in of ``address`` against ``SIGN_IN_LIMIT``."""
        self._limiter.hit(self._limit, "ops-sign-in", address)

    def token_ok(self, given: str) -> bool:
        """Whether ``given`` is the ops token (compared in constant time)."""
        return self.enabled and hmac.compare_digest(given.encode(), self.token.encode())

    def open_session(self) -> str:
        """A new session; returns the cookie's value (random, 256 bits)."""
        value = secrets.token_urlsafe(32)
        self.sessions.open(_hash(value), self.tenant_id, self._fingerprint, SESSION_S)
        return value

    def close_session(self, cookie: str | None) -> None:
        """End the session of ``cookie`` (sign-out); an unknown or absent cookie is a no-op."""
        if cookie:
            self.sessions.close(_hash(cookie))

    def signed_in(self, cookie: str | None) -> bool:
        """Whether ``cookie`` (the session cookie's value, None when absent) is an open session."""
        return self.enabled and bool(cookie) and self.sessions.is_open(_hash(cookie), self.tenant_id, self._fingerprint)

    def csrf_value(self, cookie: str) -> str:
        """The CSRF token of the session of ``cookie``, for every action form of its pages."""
        return self._csrf.dumps(_hash(cookie).hex())

    def action_allowed(self, cookie: str | None, csrf: object) -> bool:
        """Whether a POST with this session cookie and CSRF field may act: an open session and a
        token signed by this server for that session within ``SESSION_S``."""
        if not isinstance(csrf, str) or not csrf or not self.signed_in(cookie):
            return False
        try:
            bound = self._csrf.loads(csrf, max_age=SESSION_S)
        except BadSignature:  # SignatureExpired is one
            return False
        return isinstance(bound, str) and hmac.compare_digest(bound, _hash(cookie).hex())


async def operator_form(guard: OpsGuard, request: Request) -> FormData:
    """The form an operator posted: its session is open (checked before a byte of the body is
    read) and its CSRF field is that session's. Raises ``HTTPException`` 403 otherwise."""
    cookie = request.cookies.get(COOKIE)
    if not await run_in_threadpool(guard.signed_in, cookie):
        raise HTTPException(403, "sign in with the ops token first")
    form = await request.form()
    if not await run_in_threadpool(guard.action_allowed, cookie, form.get("csrf")):
        raise HTTPException(403, "this form is not one of your session's (expired, or from another page): reload it")
    return form
