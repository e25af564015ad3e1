"""The web page on the team server: agent ID's pages at ``/agents/ID/ui/``.

The same pages as ``memdir ui`` (``memdir.ui``), over the agent's memory as the team
server keeps it open (``TeamApp._served``: one per agent and access, in its LRU), run
on that memory's own worker, in turn with its MCP calls.

- Who may look is the database's tokens' rule (``storage.postgres.tokens``), checked on
  every request before anything is opened or read: none, or a malformed, unknown,
  revoked or expired one is 401; a valid token for other agents is 403.
- A browser cannot send a bearer header, so a person opens ``/agents/ID/ui/?token=``
  once: the token is checked, then set in an HttpOnly, SameSite=Strict cookie scoped
  to ``/agents/ID/ui`` (Secure over https) and the browser sent on to the address
  without it. The cookie holds the token itself, checked against the database's hash
  at each request like the header (so revoking it, or its expiry, stops the page at
  the next load, and any server behind a proxy can check it: nothing is kept in a
  process). A refused cookie is cleared. ``Authorization: Bearer`` works too.
- Every write carries a CSRF token: an HMAC of the agent under the request's token,
  which a page on another origin can neither read nor make; a POST from another
  origin is refused as well (``ui.guard.Guard.write_refusal``).
- A read-only token opens the agent's read-only memory: every view is there, every
  edit and restore is refused with the reason, before it runs, and nothing changes.
- One log line per request on ``memdir.team``, as for MCP (``tool=ui``): never a token.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import re
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from memdir.config import AGENT_ID_RE
from memdir.storage.postgres.tokens import TokenRefused
from memdir.ui.app import UI, app_of
from memdir.ui.guard import Guard

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from memdir.memory import Memory
    from memdir.server.mcp import Receive, Scope, Send
    from memdir.server.team import TeamApp, _Served

log = logging.getLogger("memdir.team")

UI_PATH = re.compile(r"/agents/([^/]+)/ui(/.*)?")
COOKIE = "memdir_team_ui"
TOKEN_KEY = "memdir.team.token"
"""where a request's checked token waits in its ASGI scope, for its CSRF token"""
READ_ONLY = (
    "this token is read-only: it can see every view of this memory but not change it; "
    "nothing was written. Ask for a token made without --read-only to edit."
)


class TeamGuard(Guard):
    """The page's guard once the team server has checked the request's token: it has
    no token of its own (each request's is in its scope), answers to any host (a proxy
    names itself; every request carries a token a page elsewhere cannot add) and makes
    one CSRF token per token and agent."""

    def __init__(self, agent: str) -> None:
        super().__init__(None, hosts=None)
        self.agent = agent

    def host_refusal(self, request: Request) -> str | None:
        return None

    def authorised(self, request: Request) -> bool:
        return TOKEN_KEY in request.scope  # the team server let it in

    def token_in_query(self, request: Request) -> bool:
        return False  # taken out of the address before the page sees it

    def csrf_for(self, request: Request) -> str:
        token = str(request.scope.get(TOKEN_KEY, ""))
        message = f"memdir-team-ui csrf {self.agent}".encode()
        return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


class TeamPages:
    """Serves ``/agents/ID/ui`` for a ``TeamApp`` (see the module)."""

    def __init__(self, team: TeamApp) -> None:
        self.team = team

    @staticmethod
    def match(path: str) -> str | None:
        """The agent a page's path names, or None if it is not a page's path."""
        found = UI_PATH.fullmatch(path)
        return None if found is None else found.group(1)

    async def __call__(self, agent: str, scope: Scope, receive: Receive, send: Send) -> None:
        began = time.perf_counter()
        said: dict[str, Any] = {"token": "-", "outcome": "-", "status": 0}

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                said["status"] = int(message["status"])
            await send(message)

        try:
            await self._answer(agent, scope, receive, sending, said)
        finally:
            status = said["status"]
            outcome = said["outcome"]
            if outcome == "-":
                outcome = "ok" if status < 400 else f"http-{status}"
            log.info(
                "agent=%s token=%s tool=ui outcome=%s status=%d ms=%.1f",
                agent if AGENT_ID_RE.fullmatch(agent) else "?",
                said["token"],
                outcome,
                status,
                (time.perf_counter() - began) * 1000,
            )

    async def _answer(
        self, agent: str, scope: Scope, receive: Receive, send: Send, said: dict[str, Any]
    ) -> None:
        request = Request(scope, receive)
        prefix = f"/agents/{agent}/ui"
        if not AGENT_ID_RE.fullmatch(agent):
            await _page(404, "not found: that is not an agent id")(scope, receive, send)
            return
        given = request.query_params.get("token", "")
        presented, source = _presented(request, given)
        if presented is None:
            said["outcome"] = "unauthorized"
            refusal = _page(
                401,
                f"a token is required: open {prefix}/?token=<token> once (memdir token create "
                f"--agent {agent} makes one), or send 'Authorization: Bearer <token>'",
            )
            await refusal(scope, receive, send)
            return
        try:
            token = await self.team.run(functools.partial(self.team.gate.verify, presented, agent))
        except TokenRefused as refused:
            said["outcome"] = "unauthorized" if refused.status == 401 else "forbidden"
            response = _page(refused.status, refused.reason)
            if source == "cookie":  # revoked, expired or for other agents: forget it
                response.delete_cookie(COOKIE, path=prefix)
            await response(scope, receive, send)
            return
        except Exception as exc:
            log.warning("cannot check a token: %s", exc)
            said["outcome"] = "unavailable"
            await _page(503, "the database does not answer; try again")(scope, receive, send)
            return
        said["token"] = token.id
        path = str(scope.get("path", ""))
        if source == "query" or path == prefix:  # the token leaves the address
            kept = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = (path if path != prefix else prefix + "/") + (
                f"?{urlencode(kept)}" if kept else ""
            )
            entered = RedirectResponse(target, status_code=303)
            if source == "query":
                entered.set_cookie(
                    COOKIE,
                    presented,
                    path=prefix,
                    httponly=True,
                    samesite="strict",
                    secure=_https(request),
                )
            await entered(scope, receive, send)
            return
        served = await self.team._served(agent, token.read_only)
        if served is None:
            said["outcome"] = "not-found"
            refusal = _page(404, f"no agent {agent!r} in this database (memdir init --agent)")
            await refusal(scope, receive, send)
            return
        served.in_flight += 1
        try:
            pages = served.pages
            if pages is None:
                pages = served.pages = await self.team.run(
                    functools.partial(self._pages, served, prefix)
                )
            await pages(dict(scope, **{TOKEN_KEY: presented}), receive, send)
        finally:
            served.in_flight -= 1

    def _pages(self, served: _Served, prefix: str) -> Starlette:
        """The agent's pages over its memory as the server keeps it open."""
        mcp, source, agent, read_only = served.mcp, self.team.source, served.agent, served.read_only

        async def in_turn(call: Any) -> Any:  # with the agent's MCP calls, on its worker
            async with mcp._lock():
                return await mcp.amemory.run(call)

        def reopen() -> Memory:  # doctor runs beside the page, on the agent opened anew
            return source.open(agent, read_only=read_only)

        ui = UI(
            mcp.memory,
            prefix=prefix,
            guard=TeamGuard(agent),
            amemory=mcp.amemory,
            run=in_turn,
            reopen=reopen,
            read_only=READ_ONLY if read_only else None,
        )
        return app_of(ui)


def _presented(request: Request, given: str) -> tuple[str | None, str]:
    """The token a request presents and where: the address, the header, the cookie."""
    if given:
        return given, "query"
    scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and bearer.strip():
        return bearer.strip(), "header"
    cookie = request.cookies.get(COOKIE, "")
    if cookie:
        return cookie, "cookie"
    return None, ""


def _https(request: Request) -> bool:
    forwarded = request.headers.get("x-forwarded-proto", "")
    return request.url.scheme == "https" or forwarded.split(",")[0].strip() == "https"


def _page(status: int, message: str) -> Response:
    from memdir.ui.app import SECURITY_HEADERS

    body = (
        "<!doctype html><meta charset=utf-8><title>memdir: refused</title>"
        f"<h1>{status}</h1><p role=alert>{_escape(message)}</p>"
    )
    response = HTMLResponse(body, status_code=status)
    for key, value in SECURITY_HEADERS.items():
        response.headers[key] = value
    if status == 401:
        response.headers["www-authenticate"] = "Bearer"
    return response


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
