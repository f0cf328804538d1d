"""Who may press the operations page's buttons: the holder of the ops token (``KBWIKI_WEB_OPS_TOKEN``).

Without a token set the page is read-only (no form is shown and every action answers 403). An
operator signs in once by posting the token; the server answers with a session cookie whose value
is an HMAC of the token (``HttpOnly``, ``SameSite=Strict``, path ``/ops``), so the token itself is
never stored in the browser. Every action form carries a CSRF field, another HMAC of the token:
a cross-site form can neither send the cookie (SameSite) nor know the field. Both are compared in
constant time.
"""

from __future__ import annotations

import hashlib
import hmac

COOKIE = "kbwiki_ops"
COOKIE_PATH = "/ops"
#: Seconds a sign-in lasts.
SESSION_S = 8 * 3600


class OpsGuard:
    """Checks sessions and CSRF fields against one ops token (None: read-only)."""

    def __init__(self, token: str | None) -> None:
        self.token = token or None

    @property
    def enabled(self) -> bool:
        """Whether actions exist at all (a token is set)."""
        return self.token is not None

    def _mac(self, purpose: str) -> str:
        assert self.token is not None
        return hmac.new(self.token.encode(), purpose.encode(), hashlib.sha256).hexdigest()

    def token_ok(self, given: str) -> bool:
        """Whether ``given`` is the ops token."""
        return self.enabled and hmac.compare_digest(given.encode(), self.token.encode())

    def session_value(self) -> str:
        """The session cookie's value for a signed-in operator."""
        return self._mac("session")

    def csrf_value(self) -> str:
        """The CSRF field every action form carries."""
        return self._mac("csrf")

    def signed_in(self, cookie: str | None) -> bool:
        """Whether ``cookie`` (the session cookie's value, None when absent) is a valid session."""
        return self.enabled and cookie is not None and hmac.compare_digest(cookie, self.session_value())

    def action_allowed(self, cookie: str | None, csrf: str | None) -> bool:
        """Whether a POST with this session cookie and CSRF field may act."""
        return self.signed_in(cookie) and csrf is not None and hmac.compare_digest(csrf, self.csrf_value())
