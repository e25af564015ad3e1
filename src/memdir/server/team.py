"""The team server: every agent of a PostgreSQL database over MCP, behind bearer tokens.

``memdir serve --http --database-url URL`` runs ``TeamApp``: the MCP endpoint of agent
ID is ``/agents/ID/mcp`` (streamable HTTP, the single-folder server's ``MemdirMCP``
over that agent's ``Memory``, so the same tools, resources and prompt), and
``/healthz`` answers a load balancer (200 when the database answers, else 503), and
``/agents/ID/ui/`` is the agent's web page under the same tokens (``server.team_ui``).

- Which agent a request acts for is its path, never guessed. Every request needs
  ``Authorization: Bearer <token>`` for THAT agent (``storage.postgres.tokens``): no
  token, a malformed, unknown, revoked or expired one is 401; a valid token for other
  agents is 403; both before anything is opened or read (a token whose row this
  process read in the last ``tokens.CHECK_SECONDS`` is checked from memory, so a token
  revoked elsewhere stops working within that bound). A token reaches its agents
  and, through them, the vaults their manifests mount. A read-only token's memory is
  opened read-only and each write tool is refused with a reason before it runs.
- Any process can answer any request: the HTTP transport is stateless (no session
  lives in one process), and writes to one folder are serialised across processes and
  hosts by the folder's lock (a PostgreSQL advisory lock in the write's transaction),
  so several servers behind a proxy lose nothing (tests/test_team_server.py).
- Tool calls run in a fixed pool of worker threads (``workers``: a thread keeps its
  database connections, so a process holds a bounded number), one call at a time per
  agent and access in a process; calls for other agents run beside it.
- Agents are opened when first asked for and kept open, the ``max_open`` most recently
  used; past that the least recently used idle one is closed.
- One log line per request on ``memdir.team`` (stderr): agent, token id, tool,
  outcome, status, milliseconds. Never a token, never an argument, never memory text.

``AgentSource`` is what the server needs of where agents live (``PgAgents`` in
production); ``Gate`` is what it needs of tokens (``storage.postgres.tokens.Tokens``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings

from memdir.config import AGENT_ID_RE
from memdir.server.bearer import bearer_token
from memdir.server.mcp import ASGIApp, MemdirMCP, Receive, Scope, Send, tool_result
from memdir.server.mcp_sessions import IDLE_SECONDS
from memdir.server.team_ui import TeamPages
from memdir.storage.postgres.tokens import TokenRefused
from memdir.tools.registry import error

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.storage.postgres.tokens import Token

log = logging.getLogger("memdir.team")

AGENT_PATH = re.compile(r"/agents/([^/]+)/mcp/?")
DEFAULT_MAX_OPEN = 256
DEFAULT_WORKERS = 4
SWEEP_SECONDS = 60.0
"""how often idle client sessions are looked for (their activities ended)"""
READS_THAT_TOUCH = frozenset({"memory_get", "card_read"})
"""tools that read, and on a writable memory mark a card recalled: a read-only token
runs them on a read-only memory, which reads without touching"""
T = TypeVar("T")


class AgentSource(Protocol):
    """Where the team server finds agents."""

    def exists(self, agent: str) -> bool:
        """True if ``agent`` has a memory folder here."""
        ...

    def open(self, agent: str, *, read_only: bool) -> Memory:
        """The agent's memory, opened (read-only: every write refused)."""
        ...

    def check(self) -> None:
        """Raise if the agents cannot be reached now (``/healthz``)."""
        ...

    def close(self) -> None: ...


class Gate(Protocol):
    """What the server asks of tokens."""

    def verify(self, presented: str, agent: str) -> Token:
        """The token if it lets a request act for ``agent``, else ``TokenRefused``."""
        ...

    def remembered(self, presented: str, agent: str) -> Token | None:
        """``verify``'s answer from memory, with no I/O (run in the event loop), or None
        when only ``verify`` can tell."""
        ...


@dataclass
class _Request:
    """What one request's log line says, filled in as the request goes."""

    agent: str
    token: str = "-"
    tool: str = "-"
    outcome: str = "-"
    status: int = 0


_CURRENT: contextvars.ContextVar[_Request | None] = contextvars.ContextVar(
    "memdir_team_request", default=None
)


class TeamMCP(MemdirMCP):
    """``MemdirMCP`` for one agent as the team server serves it: each call in the
    server's worker pool, one at a time; with read-only access, writes refused."""

    def __init__(
        self,
        memory: Memory,
        *,
        read_only: bool,
        run: Callable[[Callable[[], Any]], Any],
        legacy_tools: bool = False,
    ) -> None:
        # no watcher thread per agent (each would hold connections of its own): the
        # app's sweep ends idle sessions, in the worker pool
        super().__init__(memory, legacy_tools=legacy_tools, transport="http", idle_seconds=None)
        self.sessions.idle_seconds = IDLE_SECONDS
        self.read_only_access = read_only
        self._run = run
        self._serial: anyio.Lock | None = None

    def _lock(self) -> anyio.Lock:
        if self._serial is None:  # made in the event loop that uses it
            self._serial = anyio.Lock()
        return self._serial

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> types.CallToolResult:
        record = _CURRENT.get()
        _name(name if isinstance(name, str) and AGENT_ID_RE.fullmatch(name) else "?")
        tool = self.tools.get(name)
        if self.read_only_access and tool is not None and not _reads(tool.name, tool.read_only):
            if record is not None:
                record.outcome = "read-only"
            return tool_result(
                error(
                    f"{name}: this token is read-only: it can search, read and recall this "
                    "memory but not change it; nothing was written. Ask for a token made "
                    "without --read-only to write."
                )
            )
        async with self._lock():
            result: types.CallToolResult = await self._run(
                functools.partial(self.call_now, name, arguments, context)
            )
        if record is not None:
            record.outcome = "refused" if result.is_error else "ok"
        return result

    async def list_tools(self) -> list[types.Tool]:
        _name("list_tools")
        return await super().list_tools()

    async def read_resource(self, uri: Any, context: Context[Any, Any] | None = None) -> Any:
        _name("read_resource")
        async with self._lock():
            return await super().read_resource(uri, context)

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[Any, Any] | None = None,
    ) -> Any:
        _name("get_prompt")
        async with self._lock():
            return await super().get_prompt(name, arguments, context)


def _reads(name: str, read_only: bool) -> bool:
    return read_only or name in READS_THAT_TOUCH


def _name(what: str) -> None:
    """Name the request's MCP call in its log line (a tool's name, or what it asks)."""
    record = _CURRENT.get()
    if record is not None:
        record.tool = what


@dataclass
class _Served:
    """One agent (with one kind of access) open in this process."""

    agent: str
    read_only: bool
    mcp: TeamMCP
    app: ASGIApp
    stop: anyio.Event = field(default_factory=anyio.Event)
    stopped: anyio.Event = field(default_factory=anyio.Event)
    in_flight: int = 0
    pages: ASGIApp | None = None
    """the agent's web page over this memory (``server.team_ui``), made when first asked"""


class TeamApp:
    """The team server's ASGI app (see the module)."""

    def __init__(
        self,
        source: AgentSource,
        gate: Gate,
        *,
        max_open: int = DEFAULT_MAX_OPEN,
        workers: int = DEFAULT_WORKERS,
        legacy_tools: bool = False,
    ) -> None:
        if max_open < 1 or workers < 1:
            raise ValueError("max_open and workers must be at least 1")
        self.source = source
        self.gate = gate
        self.max_open = max_open
        self.legacy_tools = legacy_tools
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="memdir-team")
        self._open: OrderedDict[tuple[str, bool], _Served] = OrderedDict()
        self._opening: dict[tuple[str, bool], anyio.Lock] = {}
        self._tasks: anyio.abc.TaskGroup | None = None
        self.pages = TeamPages(self)
        """``/agents/ID/ui``: the agent's web page, under the same tokens"""

    async def run(self, call: Callable[[], T]) -> T:
        """``call()`` in a worker thread of the pool, with this request's context."""
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, context.run, call)

    # -- ASGI ----------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets here
        path = str(scope.get("path", ""))
        if path == "/healthz":
            await self._healthz(send)
            return
        paged = TeamPages.match(path)
        if paged is not None:
            await self.pages(paged, scope, receive, send)
            return
        matched = AGENT_PATH.fullmatch(path)
        if matched is None:
            await _answer(
                send, 404, "not found: the MCP endpoint of agent ID is /agents/ID/mcp, its "
                "web page /agents/ID/ui/"
            )  # fmt: skip
            return
        await self._agent_request(matched.group(1), scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            sweeping = anyio.CancelScope()
            tasks.start_soon(self._sweep, sweeping)
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            sweeping.cancel()
            for served in list(self._open.values()):
                served.stop.set()
            self._open.clear()
        self._tasks = None
        await self.run(self.source.close)
        self._pool.shutdown(wait=True)
        await send({"type": "lifespan.shutdown.complete"})

    async def _sweep(self, scope: anyio.CancelScope) -> None:
        """End the client sessions idle past ``IDLE_SECONDS``, now and then."""
        with scope:
            while True:
                await anyio.sleep(SWEEP_SECONDS)
                for served in list(self._open.values()):
                    try:
                        await self.run(served.mcp.sessions.end_idle)
                    except Exception as exc:  # recording never stops the server
                        log.warning("could not end idle sessions of %s: %s", served.agent, exc)

    async def _healthz(self, send: Send) -> None:
        try:
            await self.run(self.source.check)
        except Exception as exc:
            log.warning("healthz: the database does not answer: %s", exc)
            await _answer(send, 503, "the database does not answer", ok=False)
            return
        body = {"ok": True, "open_agents": len(self._open)}
        await _send_json(send, 200, body)

    async def _agent_request(self, agent: str, scope: Scope, receive: Receive, send: Send) -> None:
        record = _Request(agent if AGENT_ID_RE.fullmatch(agent) else "?")
        began = time.perf_counter()
        reset = _CURRENT.set(record)

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                record.status = int(message["status"])
            await send(message)

        try:
            await self._authorised(record, scope, receive, sending)
        finally:
            _CURRENT.reset(reset)
            if record.outcome == "-":
                record.outcome = "ok" if record.status < 400 else f"http-{record.status}"
            ms = (time.perf_counter() - began) * 1000
            log.info(
                "agent=%s token=%s tool=%s outcome=%s status=%d ms=%.1f",
                record.agent,
                record.token,
                record.tool,
                record.outcome,
                record.status,
                ms,
            )

    async def _authorised(
        self, record: _Request, scope: Scope, receive: Receive, send: Send
    ) -> None:
        agent = record.agent
        if agent == "?":
            await _answer(send, 404, "not found: that is not an agent id")
            return
        presented = _bearer(scope)
        if presented is None:
            record.outcome = "unauthorized"
            await _answer(
                send, 401, "unauthorized: send 'Authorization: Bearer <token>' for this agent "
                "(memdir token create --agent ID makes one)", bearer=True
            )  # fmt: skip
            return
        try:
            token = self.gate.remembered(presented, agent)
            if token is None:  # a read: in the pool, with the pool's connections
                token = await self.run(functools.partial(self.gate.verify, presented, agent))
        except TokenRefused as refused:
            record.outcome = "unauthorized" if refused.status == 401 else "forbidden"
            what = "unauthorized" if refused.status == 401 else "forbidden"
            await _answer(send, refused.status, f"{what}: {refused.reason}", bearer=True)
            return
        except Exception as exc:
            log.warning("cannot check a token: %s", exc)
            record.outcome = "unavailable"
            await _answer(send, 503, "the database does not answer; try again")
            return
        record.token = token.id
        served = await self._served(agent, token.read_only)
        if served is None:
            record.outcome = "not-found"
            await _answer(send, 404, f"no agent {agent!r} in this database (memdir init --agent)")
            return
        served.in_flight += 1
        try:
            await served.app(scope, receive, send)
        finally:
            served.in_flight -= 1

    # -- agents open in this process --------------------------------------------------

    async def _served(self, agent: str, read_only: bool) -> _Served | None:
        key = (agent, read_only)
        served = self._open.get(key)
        if served is not None:
            self._open.move_to_end(key)
            return served
        lock = self._opening.setdefault(key, anyio.Lock())
        async with lock:
            served = self._open.get(key)
            if served is None:
                served = await self._start(agent, read_only)
                if served is not None:
                    self._open[key] = served
                    self._evict()
        self._opening.pop(key, None)
        return served

    async def _start(self, agent: str, read_only: bool) -> _Served | None:
        if not await self.run(functools.partial(self.source.exists, agent)):
            return None

        def build() -> TeamMCP:
            memory = self.source.open(agent, read_only=read_only)
            try:
                return TeamMCP(
                    memory, read_only=read_only, run=self.run, legacy_tools=self.legacy_tools
                )
            except BaseException:
                memory.close()
                raise

        mcp = await self.run(build)
        # no DNS-rebinding check: every request carries a token a browser page cannot
        # add, and behind a proxy the Host is the proxy's name
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        app: ASGIApp = mcp.streamable_http_app(
            streamable_http_path=f"/agents/{agent}/mcp",
            stateless_http=True,
            transport_security=security,
        )
        served = _Served(agent, read_only, mcp, app)
        assert self._tasks is not None, "the app runs under an ASGI server with lifespan on"
        await self._tasks.start(self._keep, served)
        return served

    async def _keep(self, served: _Served, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Run the agent's MCP session manager until it is stopped, then close it."""
        try:
            async with served.mcp.session_manager.run():
                task_status.started()
                await served.stop.wait()
        finally:
            with anyio.CancelScope(shield=True):
                await self.run(functools.partial(_close, served.mcp))
                served.stopped.set()

    def _evict(self) -> None:
        while len(self._open) > self.max_open:
            idle = next((k for k, s in self._open.items() if s.in_flight == 0), None)
            if idle is None:
                return
            self._open.pop(idle).stop.set()


def _close(mcp: MemdirMCP) -> None:
    try:
        mcp.sessions.close()
    finally:
        try:
            mcp.memory.close()
        finally:
            mcp.amemory.stop_worker()  # an evicted agent keeps no idle thread


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            return bearer_token(bytes(value))
    return None


async def _send_json(
    send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


async def _answer(
    send: Send, status: int, reason: str, *, ok: bool = False, bearer: bool = False
) -> None:
    headers = [(b"www-authenticate", b"Bearer")] if bearer and status == 401 else []
    await _send_json(send, status, {"ok": ok, "error": reason}, headers)


# -- running it ----------------------------------------------------------------------


class PgAgents:
    """The agents of one PostgreSQL database (``AgentSource``), all opened over the one
    ``Database`` this process shares for the URL and schema (``storage.agents.database``)."""

    def __init__(self, url: str, schema: str = "memdir") -> None:
        from memdir.storage.agents import database

        self.url = url
        self.schema = schema
        self.db = database(url, schema)

    def exists(self, agent: str) -> bool:
        from memdir.storage.agents import agent_exists

        return agent_exists(self.url, agent, schema=self.schema)

    def open(self, agent: str, *, read_only: bool) -> Memory:
        from memdir.storage.agents import open_agent

        return open_agent(self.url, agent, read_only=read_only, schema=self.schema, db=self.db)

    def check(self) -> None:
        self.db.reader().execute("SELECT 1").fetchone()

    def close(self) -> None:
        from memdir.storage.agents import close_databases

        close_databases()


def where(url: str) -> str:
    """The database as the server names it: never its password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception:
        return "the database given"
    host = parts.get("host") or "localhost"
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"database {parts.get('dbname') or parts.get('user') or '?'} on {host}{port}"


def announcement(url: str, host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return (
        f"memdir: serving every agent of the {where(url)} over MCP at "
        f"http://{shown}:{port}/agents/ID/mcp (health: /healthz; each agent's web page: "
        f"http://{shown}:{port}/agents/ID/ui/?token=<token>)\n"
        "memdir: each request needs 'Authorization: Bearer <token>' for its agent "
        "(memdir token create); Ctrl-C stops it"
    )


def serve_team(
    url: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    legacy_tools: bool = False,
    max_open: int = DEFAULT_MAX_OPEN,
    workers: int = DEFAULT_WORKERS,
    schema: str = "memdir",
) -> None:
    """Run the team server until the process is stopped; a log line per request on
    stderr, and once it listens, where. ``schema``: the one the agents and tokens are
    in (the command line's ``MEMDIR_DATABASE_SCHEMA``)."""
    import sys

    import psycopg

    from memdir.errors import MemdirError
    from memdir.server.mcp import run_http
    from memdir.storage.postgres.tokens import Tokens

    try:
        source = PgAgents(url, schema)
    except psycopg.Error as exc:
        raise MemdirError(f"cannot reach the {where(url)}: {str(exc).strip()}") from exc
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("memdir: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    app = TeamApp(
        source, Tokens(source.db), max_open=max_open, workers=workers, legacy_tools=legacy_tools
    )
    _warm_default_search()

    def listening(bound: int) -> None:
        print(announcement(url, host, bound), file=sys.stderr, flush=True)

    run_http(app, host, port, listening)


def _warm_default_search() -> None:
    """The default embedder's search model made ready beside the start (MiniLM's int8
    conversion, once per model cache), as ``memdir serve`` does for its folder: agents open
    on demand, and most use the default."""
    from memdir.config.manifest import IndexSettings
    from memdir.folder_index import embedder_named
    from memdir.index.embedders import EmbedderUnavailable, load_embedder, prepare_in_background

    try:
        embedder = load_embedder(*embedder_named(IndexSettings()))
    except EmbedderUnavailable:  # each agent's search says why, when it opens
        return
    prepare_in_background(embedder)
