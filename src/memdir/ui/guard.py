"""Who may see the pages and who may write: the token, the host and the CSRF token.

- Bound to loopback without a token, only requests whose ``Host`` names this machine
  are answered (a page elsewhere cannot reach it by pointing its own name at
  127.0.0.1: DNS rebinding).
- With a token (``memdir serve --http --token``, required beyond loopback), a request
  needs ``Authorization: Bearer <token>`` (as ``/mcp``) or the cookie a browser gets
  by opening ``/ui/?token=<token>`` once (HttpOnly, SameSite=Strict, the token
  itself never stored: an HMAC of it).
- Every write (POST) carries the page's CSRF token, an HMAC of a secret made when
  the app starts; a page on another origin cannot read it, so cannot forge a write.
  A POST whose ``Origin`` is not this server's is refused as well.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request

from memdir.server.bearer import bearer_token

COOKIE = "memdir_ui"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


class Guard:
    def __init__(self, token: str | None, *, hosts: tuple[str, ...] | None = None) -> None:
        self.token = token
        self.hosts = hosts
        """host names a request may name in ``Host``; None: loopback ones (no token) or any"""
        self._secret = secrets.token_bytes(32)
        self.csrf = hmac.new(self._secret, b"csrf", hashlib.sha256).hexdigest()

    def cookie_value(self) -> str:
        assert self.token is not None
        return hmac.new(self.token.encode(), b"memdir-ui", hashlib.sha256).hexdigest()

    def host_refusal(self, request: Request) -> str | None:
        """Why this request's ``Host`` is refused, or None."""
        allowed = self.hosts
        if allowed is None:
            if self.token:
                return None
            allowed = LOOPBACK_NAMES
        host = request.headers.get("host", "")
        name = urlsplit(f"//{host}").hostname or ""
        if name in allowed or f"[{name}]" in allowed:
            return None
        return f"this page answers to {', '.join(allowed)} only, not {host or 'no Host'}"

    def authorised(self, request: Request) -> bool:
        if not self.token:
            return True
        given = bearer_token(request.headers.get("authorization", ""))
        if given is not None and hmac.compare_digest(given.encode(), self.token.encode()):
            return True
        cookie = request.cookies.get(COOKIE, "")
        return hmac.compare_digest(cookie.encode(), self.cookie_value().encode())

    def token_in_query(self, request: Request) -> bool:
        given = request.query_params.get("token", "")
        return bool(self.token) and hmac.compare_digest(given.encode(), (self.token or "").encode())

    def csrf_for(self, request: Request) -> str:
        """The CSRF token this request's pages carry in their forms (one per app here;
        the team server's guard makes one per token and agent)."""
        return self.csrf

    def write_refusal(self, request: Request, form_csrf: str) -> str | None:
        """Why this POST is refused (a missing or wrong CSRF token, a foreign origin)."""
        origin = request.headers.get("origin")
        if origin and origin != "null":
            host = request.headers.get("host", "")
            if urlsplit(origin).netloc != host:
                return f"a write from {origin} is refused: open the page from this server"
        expected = self.csrf_for(request)
        if not form_csrf or not hmac.compare_digest(form_csrf.encode(), expected.encode()):
            return "the form's CSRF token is missing or stale: reload the page and try again"
        return None
