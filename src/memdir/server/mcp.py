"""memdir's MCP server: the agent tools, the memory files and the boot context over MCP.

Thin over the same registry the Python dispatcher uses (``memdir.tools``): the
tool list comes from the one definition of each tool, with its JSON Schema and
its hints (read-only, destructive, idempotent), and every call goes through
``Tools.call``, so a bad call is a structured ``{ok: false, reason}`` result the
model can read (``isError`` set), never a protocol error.

Resources: ``memdir://notebook``, ``memdir://context`` (the boot context) and
any memory file as ``memdir://file/{path}``. Prompt: ``boot_context``. Each tool
lists its result's schema (``outputSchema``); the tools listed are those the
manifest's ``[tools]`` offers, and any tool the folder serves can be called.

Every handler runs its memory work on the folder's worker thread (``memdir.aio``),
never on the event loop, so one slow search does not stall the server's other
requests (or its pings).

Each client session's calls are recorded in the activity history as a ``chat``
activity (``memdir.server.mcp_sessions``), so ``recall_activity`` and ``memdir recall``
have something to recall under hosts that never start an activity themselves.

One server serves one memory folder (``--dir`` or ``--agent``): nothing it does
can reach outside it, except a shared vault the folder's manifest mounts.
Transports: stdio (what Claude Desktop and Claude Code start), and streamable
HTTP on 127.0.0.1 by default; bound anywhere else it requires a bearer token.
"""

from __future__ import annotations

import hmac
import json
import logging
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

from memdir import __version__
from memdir.aio import AsyncMemory
from memdir.context import PROFILES
from memdir.errors import MemdirError
from memdir.folder_index import warm_search
from memdir.maintain.background import Housekeeper
from memdir.memory import Memory, open_memory
from memdir.paths import resolved
from memdir.server.bearer import bearer_token
from memdir.server.mcp_sessions import IDLE_SECONDS, SessionRecorder
from memdir.tools import Tools

log = logging.getLogger("memdir.mcp")

LOOPBACK = ("127.0.0.1", "localhost", "::1")
DEFAULT_PORT = 8765
DEFAULT_MAINTAIN_EVERY = 900.0
"""seconds between the server's own ``memdir maintain`` runs"""

_HABITS = (
    ("update_notebook", "keep what you are doing right now in the notebook (update_notebook)"),
    (
        "memory_save",
        "save each fact, preference or insight worth keeping with memory_save, one per call",
    ),
    ("card_write", "keep what you learn about a person, project or topic on its card (card_write)"),
    (
        "working_state_start",
        "record the task you take on and its result "
        "(working_state_start, then working_state_finish)",
    ),
    ("journal_append", "note what happened today in the journal (journal_append)"),
    ("lesson_add", "write down a lesson when something went wrong (lesson_add)"),
    (
        "memory_search",
        "search before you ask the user something you may already know "
        "(memory_search, then memory_get for the lines a hit points at)",
    ),
    ("memory_update", "promote validated knowledge into curated sections with memory_update"),
)


def instructions(tools: Iterable[str]) -> str:
    """The server's instructions to the model, naming only the tools it offers."""
    offered = set(tools)
    habits = [habit for name, habit in _HABITS if name in offered]
    while_working = f" While you work: {'; '.join(habits)}." if habits else ""
    return (
        "memdir is your long-term memory: a folder of markdown files that persists between "
        "conversations. Start by reading the boot context (resource memdir://context, or the "
        f"boot_context prompt).{while_working} Every result says which file it touched (store); "
        "a refusal comes back as ok: false with a reason you can act on."
    )


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class MemdirMCP(MCPServer[Any]):
    """An MCPServer whose tools come from memdir's registry rather than Python signatures."""

    def __init__(
        self,
        memory: Memory,
        *,
        legacy_tools: bool = False,
        transport: str = "stdio",
        idle_seconds: float | None = None,
    ) -> None:
        """``transport`` and ``idle_seconds`` say what a client session is, for the
        history (``SessionRecorder``): over stdio, the process's one client."""
        tools = Tools(memory)
        super().__init__(
            name="memdir",
            title="memdir",
            description="Long-term memory in a folder of markdown files",
            instructions=instructions(tools.names(legacy=legacy_tools)),
            version=__version__,
            log_level="WARNING",
        )
        self.memory = memory
        self.amemory = AsyncMemory(memory)
        """the same memory for the handlers: its calls run off the event loop, in turn"""
        self.tools = tools
        self.legacy_tools = legacy_tools
        self.sessions = SessionRecorder(memory, transport, idle_seconds=idle_seconds)
        _add_resources(self, self.amemory)

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Any = None
    ) -> Any:
        # the SDK's own "Unknown prompt" is a ValueError: code 0, and a traceback logged
        known = [prompt.name for prompt in self._prompt_manager.list_prompts()]
        if name not in known:
            reason = f"no prompt {name!r} here; the prompts are: {', '.join(known)}"
            raise MCPError(types.INVALID_PARAMS, reason)
        return await super().get_prompt(name, arguments, context)

    async def list_tools(self) -> list[types.Tool]:
        return [types.Tool.model_validate(t) for t in self.tools.mcp(legacy=self.legacy_tools)]

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        # the full schema, not the compact one listed: any argument it takes is accepted
        tool = self.tools.get(name)
        return None if tool is None else tool.schema()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> types.CallToolResult:
        # the tool and its record, off the event loop, on the folder's worker thread
        return await self.amemory.run(lambda: self.call_now(name, arguments, context))

    def call_now(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> types.CallToolResult:
        """One tool call, run in this thread and recorded in the session's activity (the
        team server runs it in its own worker pool: ``server.team``)."""
        key, client = _session_of(context, self.sessions.transport)
        result = self.sessions.call(
            key, client, name, arguments, lambda: self.tools.call(name, arguments)
        )
        return tool_result(result)


def tool_result(result: dict[str, Any]) -> types.CallToolResult:
    """A tool's result as MCP carries it: the JSON as text and as structured content,
    ``isError`` set when it is a refusal."""
    text = json.dumps(result, ensure_ascii=False, indent=1)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=result,
        is_error=not result.get("ok", False),
    )


def _session_of(
    context: Context[Any, Any] | None, transport: str
) -> tuple[str, tuple[str, str] | None]:
    """Which client session a call belongs to, and the client's (name, version): over
    HTTP the ``Mcp-Session-Id`` (2025 protocol) or else the client itself (2026: each
    request stands alone); over stdio the process's one client."""
    client: tuple[str, str] | None = None
    try:
        request = context.request_context if context is not None else None
    except ValueError:  # called outside a request (in-process use)
        request = None
    if request is not None:
        params = request.session.client_params
        info = params.client_info if params is not None else None
        if info is not None:
            client = (info.name, info.version)
        headers = getattr(request.request, "headers", None)
        session_id = headers.get(SESSION_HEADER) if headers is not None else None
        if session_id:
            return f"http:{session_id}", client
    if transport == "http" and client is not None:
        return f"client:{client[0]}/{client[1]}", client
    return transport, client


SESSION_HEADER = "mcp-session-id"


def session_ends(
    app: ASGIApp, sessions: SessionRecorder, memory: AsyncMemory | None = None
) -> ASGIApp:
    """End a session's activity when its client deletes it (``DELETE /mcp``); with
    ``memory``, on its worker (the history write off the event loop)."""

    async def watched(scope: Scope, receive: Receive, send: Send) -> None:
        await app(scope, receive, send)
        if scope["type"] == "http" and scope.get("method") == "DELETE":
            given = dict(scope.get("headers") or []).get(SESSION_HEADER.encode(), b"")
            if given:
                key = f"http:{given.decode('latin-1')}"
                if memory is None:
                    sessions.end(key)
                else:
                    await memory.run(lambda: sessions.end(key))

    return watched


def _add_resources(server: MCPServer[Any], memory: AsyncMemory) -> None:
    if memory.sync.has("notebook"):  # the manifest, read already: nothing to wait for

        @server.resource(
            "memdir://notebook",
            name="notebook",
            title="Notebook",
            description="NOTEBOOK.md: the agent's working memory, always in its prompt.",
            mime_type="text/markdown",
        )
        async def notebook() -> str:
            return await memory.notebook.render()

    @server.resource(
        "memdir://context",
        name="context",
        title="Boot context",
        description="What the agent loads at boot: identity, knowledge, notebook, journal.",
        mime_type="text/markdown",
    )
    async def boot() -> str:
        return (await memory.context()).text

    @server.resource(
        "memdir://file/{+path}",
        name="file",
        title="Memory file",
        description="Any file of the memory folder by its path, e.g. memdir://file/knowledge.md",
        mime_type="text/markdown",
    )
    async def memory_file(path: str) -> str:
        got = await memory.get(path)
        if got.ok:
            return got.text
        reason = f"{got.path}: {got.reason}"
        if got.reason and got.reason.startswith("no file "):
            raise ResourceNotFoundError(reason)
        raise ResourceError(reason)  # the client reads memdir's reason; no traceback logged

    @server.prompt(
        name="boot_context",
        title="Boot context",
        description=(
            "The agent's memory to start a conversation with; profile is one of "
            + ", ".join(PROFILES)
            + "; query adds the memories most relevant to it."
        ),
    )
    async def boot_context(profile: str = "default", query: str | None = None) -> str:
        # an MCPError reaches the client with its message; anything else the SDK turns
        # into "Internal server error", with a traceback in the server's log
        if profile not in PROFILES:
            reason = f"profile must be one of {', '.join(PROFILES)}, not {profile!r}"
            raise MCPError(types.INVALID_PARAMS, reason)
        return (await memory.context(profile=profile, query=query or None)).text


def build_server(
    folder: str | Path, *, legacy_tools: bool = False, transport: str = "stdio"
) -> MemdirMCP:
    """The MCP server for the memory folder at ``folder``."""
    idle = IDLE_SECONDS if transport == "http" else None
    return MemdirMCP(
        open_memory(folder), legacy_tools=legacy_tools, transport=transport, idle_seconds=idle
    )


def bearer_guard(app: ASGIApp, token: str) -> ASGIApp:
    """Refuse every HTTP request without ``Authorization: Bearer <token>`` (401)."""
    expected = token.encode()

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = bearer_token(dict(scope.get("headers") or []).get(b"authorization", b""))
            if given is None or not hmac.compare_digest(given.encode("latin-1"), expected):
                body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded


def http_app(
    server: MemdirMCP, *, host: str = "127.0.0.1", token: str | None = None, ui: bool = True
) -> ASGIApp:
    """The streamable HTTP app (at ``/mcp``), behind a bearer token when one is given,
    and the web page at ``/ui`` (``memdir.ui``) under the same token, which a browser
    may give once as ``/ui/?token=`` instead of the header.

    Bound to anything but loopback, a token is required."""
    if host not in LOOPBACK and not token:
        raise MemdirError(
            f"serving on {host} exposes this memory beyond this machine: give --token "
            "(or set MEMDIR_TOKEN), and send it as 'Authorization: Bearer <token>'"
        )
    # the SDK forgets an idle session when the history ends its activity
    idle = server.sessions.idle_seconds or IDLE_SECONDS
    app: ASGIApp = session_ends(
        server.streamable_http_app(host=host, session_idle_timeout=idle),
        server.sessions,
        server.amemory,
    )
    app = bearer_guard(app, token) if token else app
    return with_pages(app, server.memory, token=token) if ui else app


def with_pages(app: ASGIApp, memory: Memory, *, token: str | None) -> ASGIApp:
    """``app`` with the web page beside it: ``/ui`` goes to the page, which checks the
    token itself; everything else (``/mcp``, the lifespan) to ``app``. The page opens
    the folder for itself, as another process would: the tools' calls and the page's
    requests share no state but the files, the index and the folder's lock."""
    from memdir.ui import PREFIX, build_app

    # without a token (loopback only) the page answers to loopback names; with one, to any
    pages: ASGIApp = build_app(open_memory(memory.root), token=token)

    async def routed(scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] == "http" and (path == PREFIX or path.startswith(PREFIX + "/")):
            await pages(scope, receive, send)
        else:
            await app(scope, receive, send)

    return routed


def serve(
    folder: Path,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    legacy_tools: bool = False,
    maintain_every: float = DEFAULT_MAINTAIN_EVERY,
    agent: str | None = None,
) -> None:
    """Run the server until the client goes away (stdio) or the process is stopped (HTTP),
    with ``memdir maintain`` every ``maintain_every`` seconds beside it (0: never). Over
    HTTP, once it listens, it says where on stderr (``agent``: the folder is that agent's)."""
    server = build_server(folder, legacy_tools=legacy_tools, transport="http" if http else "stdio")
    warm_search(server.memory)  # the first search call finds the model made
    keeper = Housekeeper(server.memory.root, maintain_every) if maintain_every > 0 else None
    if keeper is not None:
        keeper.start()
    try:
        if not http:
            server.run("stdio")
            return
        app = http_app(server, host=host, token=token)

        def listening(bound: int) -> None:
            said = announcement(server.memory.root, host, bound, token=bool(token), agent=agent)
            print(said, file=sys.stderr, flush=True)

        run_http(app, host, port, listening)
    finally:
        if keeper is not None:
            keeper.stop()

        def close() -> None:
            server.sessions.close()
            server.memory.close()

        # a client that hangs up mid-call (stdin closed) leaves the call running on the
        # folder's worker: it finishes, and is recorded, before the history closes
        server.amemory.finish(close)


def announcement(root: Path, host: str, port: int, *, token: bool, agent: str | None = None) -> str:
    """What ``memdir serve --http`` prints once it listens: where, what, and the token."""
    shown = f"[{host}]" if ":" in host else host
    served = f"agent {agent}'s folder {root}" if agent else f"the folder {root}"
    if token:
        guard = "a token is required: send 'Authorization: Bearer <token>' (--token, MEMDIR_TOKEN)"
    else:
        guard = "no token is required (only this machine can connect: --token sets one)"
    return (
        f"memdir: serving {served} over MCP at http://{shown}:{port}/mcp\n"
        f"memdir: {guard}; Ctrl-C stops it\n"
        f"memdir: the web page is beside it at http://{shown}:{port}/ui/"
    )


def run_http(app: ASGIApp, host: str, port: int, listening: Callable[[int], None]) -> None:
    """uvicorn, telling ``listening`` the port once it serves; the socket is bound first
    (``listen.bind``: a port in use is a MemdirError)."""
    import uvicorn

    from memdir.server.listen import bind

    sock = bind(host, port)

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                listening(int(self.servers[0].sockets[0].getsockname()[1]))

    # uvicorn shuts down on SIGTERM, then raises it again: with the default handler
    # that killed the process before ``serve`` could end its sessions and free its lock
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm) if main else None
    try:
        with sock:
            Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run([sock])
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def host_config(folder: Path | None = None, agent: str | None = None) -> dict[str, Any]:
    """The ``mcpServers`` entry for Claude Desktop / Claude Code (``claude_desktop_config.json``
    or ``.mcp.json``) that starts this server over stdio."""
    import shutil
    import sys

    beside = Path(sys.executable).parent / "memdir"  # the script of this very install
    command = str(beside) if beside.is_file() else shutil.which("memdir")
    args: list[str] = ["serve"]
    if command is None:
        command, args = sys.executable, ["-m", "memdir", "serve"]
    if agent is not None:
        args += ["--agent", agent]
    elif folder is not None:
        args += ["--dir", str(resolved(Path(folder)))]
    return {"mcpServers": {"memdir": {"command": command, "args": args}}}
