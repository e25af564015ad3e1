"""The MCP server through the real MCP client SDK: over stdio and over streamable HTTP,
with the server started as a separate process by the real ``memdir serve`` command."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

import memdir
from memdir.cli import app
from memdir.server.mcp import MemdirMCP, host_config
from memdir.server.mcp_sessions import SessionRecorder, summarise_arguments

SERVE = [sys.executable, "-m", "memdir", "serve"]
HOST = types.Implementation(name="test-host", version="1.2")
"""the client's name and version, as an initialize request (or envelope) gives them"""


def _env() -> dict[str, str]:
    env = dict(os.environ)  # carries the test's MEMDIR_HOME
    env["MEMDIR_EMBEDDER"] = "hashing"
    return env


def _run(session: Callable[[Client], Awaitable[None]], server: Any, mode: str = "auto") -> None:
    """One client session; ``mode`` "legacy" speaks the 2025 protocol (initialize and,
    over HTTP, a session id), as Claude Desktop and Claude Code do today."""

    async def main() -> None:
        async with Client(server, read_timeout_seconds=60, client_info=HOST, mode=mode) as client:
            await session(client)

    anyio.run(main)


def _recalled(folder: Path) -> list[dict[str, Any]]:
    """What ``memdir recall list --json`` shows of the chat activities, with each one's logs."""
    listed = CliRunner().invoke(
        app, ["recall", "list", "--type", "chat", "--dir", str(folder), "--json"]
    )
    assert listed.exit_code == 0, listed.output
    found = []
    for activity in json.loads(listed.stdout):
        got = CliRunner().invoke(
            app, ["recall", "get", activity["id"], "--dir", str(folder), "--json"]
        )
        assert got.exit_code == 0, got.output
        found.append(json.loads(got.stdout))
    return found


def _check_recorded(activity: dict[str, Any], *, ended: bool = True) -> None:
    """The session _one_session makes, as the history keeps it."""
    assert activity["label"] == "test-host 1.2 (MCP)"
    assert (activity["endedAt"] is not None) is ended
    calls = [e for e in activity["logs"] if e["type"] == "tool_start"]
    assert [e["metadata"]["tool"] for e in calls] == SESSION_CALLS
    ends = [e for e in activity["logs"] if e["type"] == "tool_end"]
    assert [e["metadata"]["ok"] for e in ends] == [True, True, True, True, False, False]
    assert calls[0]["metadata"]["arguments"] == {
        "content": "Dana keeps the release checklist",
        "tags": ["ops"],
    }
    if ended:
        assert activity["totalTools"] == len(SESSION_CALLS)
        assert {"memory_save", "memory_search", "memory_get"} <= set(activity["keywords"])
        assert "2 of its 6 calls were refused" in activity["summary"]


def _payload(result: Any) -> dict[str, Any]:
    data = result.structured_content
    assert data == json.loads(result.content[0].text)
    return dict(data)


SESSION_CALLS = [
    "memory_save",
    "memory_search",
    "memory_get",
    "state_update",
    "memory_save",
    "memory_get",
]


async def _one_session(client: Client) -> None:
    """Initialise (done by Client), list tools, save, search, get, call a tool the compact
    set leaves out, refuse a bad call. Each result the client takes is checked by it
    against the tool's outputSchema (the SDK does, for every result not an error)."""
    listed = await client.list_tools()
    names = [tool.name for tool in listed.tools]
    assert names[:4] == ["update_notebook", "clear_notebook", "memory_save", "memory_search"]
    assert "state_update" not in names and "working_state_start" not in names  # compact
    search = next(tool for tool in listed.tools if tool.name == "memory_search")
    assert search.annotations is not None and search.annotations.read_only_hint is True
    assert search.input_schema["properties"]["query"]["type"] == "string"
    for tool in listed.tools:
        assert tool.output_schema is not None, tool.name
        assert tool.output_schema["properties"]["ok"]["type"] == "boolean"
    assert search.output_schema is not None
    assert search.output_schema["properties"]["hits"]["items"]["properties"]["path"]

    saved = await client.call_tool(
        "memory_save", {"content": "Dana keeps the release checklist", "tags": ["ops"]}
    )
    assert not saved.is_error
    assert _payload(saved)["store"] == "knowledge.md"

    found = _payload(await client.call_tool("memory_search", {"query": "release checklist"}))
    hit = found["hits"][0]
    assert hit["path"] == "knowledge.md" and "**checklist**" in hit["snippet"]

    got = await client.call_tool(
        "memory_get",
        {"path": hit["path"], "from_line": hit["lines"][0], "to_line": hit["lines"][1]},
    )
    assert "Dana keeps the release checklist" in _payload(got)["text"]
    # not offered, still served: a model that learned the longer list is answered
    state = await client.call_tool("state_update", {"key": "deploy", "text": "staging green"})
    assert not state.is_error and _payload(state)["store"] == "state.md"

    refused = await client.call_tool("memory_save", {"content": ["one", "two"]})
    assert refused.is_error
    assert "call it once per item" in _payload(refused)["reason"]
    outside = await client.call_tool("memory_get", {"path": "../other-agent/knowledge.md"})
    assert outside.is_error and "leaves the memory folder" in _payload(outside)["reason"]


def test_stdio_session_with_the_real_client(folder: Path) -> None:
    """The 2026 protocol over stdio; the session is recorded as a chat activity, ended
    when the client closed the server's input."""
    params = StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], "--dir", str(folder)], env=_env()
    )
    _run(_one_session, params)
    assert "Dana keeps the release checklist" in (folder / "knowledge.md").read_text()
    [activity] = _recalled(folder)
    _check_recorded(activity)
    assert activity["logs"][0]["metadata"]["transport"] == "stdio"


def test_stdio_resources_and_prompt(folder: Path) -> None:
    memory = memdir.open(folder, embedder="none")
    memory.notebook.update("task", "Ship the release notes")
    (folder / "identity" / "SOUL.md").write_text("# Soul\n\nI am Wren, the release agent.\n")
    (folder / "journal" / "2025-01-01.md").write_bytes(b"# d\n\n- caf\xe9 au lait\n")
    memory.close()

    async def session(client: Client) -> None:
        listed = await client.list_resources()
        assert {str(r.uri) for r in listed.resources} == {"memdir://notebook", "memdir://context"}
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["memdir://file/{+path}"]
        notebook = await client.read_resource("memdir://notebook")
        assert "Ship the release notes" in notebook.contents[0].text  # type: ignore[union-attr]
        boot = await client.read_resource("memdir://context")
        assert "I am Wren" in boot.contents[0].text  # type: ignore[union-attr]
        card = await client.read_resource("memdir://file/identity/SOUL.md")
        assert card.contents[0].text.startswith("# Soul")  # type: ignore[union-attr]
        odd = await client.read_resource("memdir://file/journal/2025-01-01.md")
        assert "caf\ufffd au lait" in odd.contents[0].text  # type: ignore[union-attr]
        for uri, reason in [  # a refusal reaches the client with memdir's reason
            ("memdir://file/.memdir/index.db", "internal to memdir or hidden"),
            ("memdir://file/nothing-here.md", "no file nothing-here.md in the memory folder"),
        ]:
            with pytest.raises(MCPError, match=reason):
                await client.read_resource(uri)
        prompt = await client.get_prompt("boot_context", {"profile": "reflex"})
        text = prompt.messages[0].content.text  # type: ignore[union-attr]
        assert "I am Wren" in text and "Ship the release notes" in text
        # the reason reaches the client (it was "Internal server error", and a traceback)
        with pytest.raises(MCPError, match="^profile must be one of reflex, default, deep"):
            await client.get_prompt("boot_context", {"profile": "sideways"})

    params = StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], "--dir", str(folder)], env=_env()
    )
    _run(session, params)


def test_an_agent_is_selected_from_the_home_and_created_on_first_use(memdir_home: Path) -> None:
    async def session(client: Client) -> None:
        assert not (await client.call_tool("memory_save", {"content": "Scout note"})).is_error

    params = StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], "--agent", "scout"], env=_env()
    )
    _run(session, params)
    knowledge = memdir_home / "agents" / "scout" / "knowledge.md"
    assert "Scout note" in knowledge.read_text()
    assert not (memdir_home / "agents" / "other").exists()


# -- streamable HTTP ---------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served(NamedTuple):
    url: str
    said: str
    """what the server printed on stderr until it said it listens"""
    process: subprocess.Popen[str]


@pytest.fixture
def http_server(folder: Path) -> Iterator[Callable[..., Served]]:
    """Start ``memdir serve --http``; return once it says, on stderr, where it listens."""
    started: list[tuple[subprocess.Popen[str], threading.Thread]] = []

    def start(*extra: str) -> Served:
        port = _free_port()
        args = [*SERVE, "--dir", str(folder), "--http", "--port", str(port), *extra]
        process = subprocess.Popen(args, env=_env(), stderr=subprocess.PIPE, text=True)
        lines: queue.Queue[str] = queue.Queue()
        stderr = process.stderr
        assert stderr is not None
        reader = threading.Thread(target=lambda: [lines.put(x) for x in stderr], daemon=True)
        reader.start()
        started.append((process, reader))
        said = ""
        deadline = time.monotonic() + 60
        while "Ctrl-C stops it" not in said:
            try:
                said += lines.get(timeout=0.2)
            except queue.Empty:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the server did not start: {said}") from None
        with socket.create_connection(("127.0.0.1", port), timeout=5):  # it does listen
            pass
        return Served(f"http://127.0.0.1:{port}/mcp", said, process)

    yield start
    for process, reader in started:
        process.terminate()
        process.wait(timeout=20)
        reader.join(timeout=20)
        if process.stderr:
            process.stderr.close()


def test_http_session_with_the_real_client(
    http_server: Callable[..., Served], folder: Path
) -> None:
    """The 2025 protocol, as Claude Code speaks it: the session's activity ends when the
    client deletes the session, with the server still running; a server that starts
    meanwhile on the folder leaves the live session alone."""
    served = http_server()
    assert served.said == (
        f"memdir: serving the folder {folder} over MCP at {served.url}\n"
        "memdir: no token is required (only this machine can connect: --token sets one); "
        "Ctrl-C stops it\n"
    )

    async def session(client: Client) -> None:
        await _one_session(client)
        with memdir.open(folder, embedder="none") as memory:  # another server starts
            SessionRecorder(memory, "stdio").close()
        [live] = _recalled(folder)
        _check_recorded(live, ended=False)

    _run(session, served.url, mode="legacy")
    [activity] = _recalled(folder)
    _check_recorded(activity)
    assert activity["logs"][0]["metadata"]["transport"] == "http"
    assert served.process.poll() is None  # ended by the client's DELETE, not a shutdown


def test_http_with_a_token_refuses_requests_without_it(
    http_server: Callable[..., Served], folder: Path
) -> None:
    """Also: a server killed mid-session leaves its activity open, and the next server
    to start ends it, as ended (not failed), with the calls it had."""
    served = http_server("--token", "s3cret")
    url = served.url
    assert "memdir: a token is required: send 'Authorization: Bearer <token>'" in served.said
    assert "s3cret" not in served.said
    response = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 401
    wrong = httpx2.post(url, json={}, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401

    async def main() -> None:
        headers = {"Authorization": "Bearer s3cret"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            saved = await client.call_tool("memory_save", {"content": "Token works"})
            assert not saved.is_error
            served.process.send_signal(signal.SIGKILL)
            served.process.wait(timeout=20)

    anyio.run(main)
    [open_one] = _recalled(folder)
    assert open_one["endedAt"] is None and open_one["totalTools"] == 1
    with memdir.open(folder, embedder="none") as memory:  # the next start
        SessionRecorder(memory, "stdio").close()
    [ended] = _recalled(folder)
    assert ended["endedAt"] is not None and ended["success"] is True
    assert ended["summary"].endswith("The server stopped before the session ended.")
    assert "memory_save" in ended["keywords"]
    assert not list((folder / ".memdir" / "mcp").iterdir())  # no lock left behind


def test_http_stopped_by_sigterm_ends_its_sessions_as_ctrl_c_does(
    http_server: Callable[..., Served], folder: Path
) -> None:
    """systemd, docker and timeout stop a server with SIGTERM: its open session ends
    then (uvicorn re-raised the signal after its shutdown, which killed the process
    before memdir could end the session or let go of its lock)."""
    served = http_server()

    async def main() -> None:
        async with Client(streamable_http_client(served.url)) as client:
            assert not (await client.call_tool("memory_save", {"content": "Term"})).is_error
            served.process.send_signal(signal.SIGTERM)
            served.process.wait(timeout=20)

    anyio.run(main)
    [ended] = _recalled(folder)
    assert ended["endedAt"] is not None and ended["success"] is True
    assert "stopped before" not in ended["summary"] and "memory_save" in ended["keywords"]
    assert not list((folder / ".memdir" / "mcp").iterdir())  # no lock left behind


def test_a_server_killed_with_no_session_open_leaves_no_lock_to_pile_up(
    http_server: Callable[..., Served], folder: Path
) -> None:
    """Its lock file stayed for good: only a killed server's open session, ended by the
    next start, took its lock away. The next start removes it; a live server's lock, as
    old, stays (the lock is what says it lives, not its pid), and so does its session."""
    locks = folder / ".memdir" / "mcp"
    killed = http_server()
    [gone] = list(locks.iterdir())
    killed.process.send_signal(signal.SIGKILL)
    killed.process.wait(timeout=20)
    live = http_server()
    [held] = [path for path in locks.iterdir() if path != gone]
    for path in (gone, held):  # as old as a server running for an hour
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    starting = locks / "4242-0a1b2c3d.lock"  # a server's just made, not yet held
    starting.touch()

    async def main() -> None:
        async with Client(streamable_http_client(live.url)) as client:
            assert not (await client.call_tool("memory_save", {"content": "Live"})).is_error
            done = subprocess.run(  # the next start: a stdio server, its input at an end
                [*SERVE, "--dir", str(folder), "--maintain-every", "0"],
                env=_env(), input="", capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert sorted(locks.iterdir()) == sorted([held, starting])
            [open_one] = _recalled(folder)
            assert open_one["endedAt"] is None  # the live server's session is not ended

    anyio.run(main)
    assert live.process.poll() is None


def test_a_call_the_client_hung_up_on_is_still_recorded(folder: Path) -> None:
    """A client that closed stdin right after a call: the call ran on, and the server
    closed the history under it ('could not record the memory_save call in the
    history: Cannot operate on a closed database'), so a write that happened left no
    trace in the history."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "test-host", "version": "1.2"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "memory_save", "arguments": {"content": "Deploys happen on Tuesdays"}}},
    ]  # fmt: skip
    done = subprocess.run(
        [*SERVE, "--dir", str(folder)],
        input="".join(json.dumps(line) + "\n" for line in lines),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "could not record" not in done.stderr
    assert "Deploys happen on Tuesdays" in (folder / "knowledge.md").read_text()
    [ended] = _recalled(folder)
    assert "memory_save" in ended["keywords"], ended


def test_http_beyond_loopback_requires_a_token(folder: Path) -> None:
    done = subprocess.run(
        [*SERVE, "--dir", str(folder), "--http", "--host", "0.0.0.0", "--port", "9"],
        env={k: v for k, v in _env().items() if k != "MEMDIR_TOKEN"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "give --token" in done.stderr


@pytest.mark.parametrize("command", [["serve", "--http"], ["ui"]])
def test_a_port_in_use_is_one_error_line_and_exit_1(folder: Path, command: list[str]) -> None:
    """uvicorn logged its own error and exited with 3, a code the CLI does not have."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*SERVE[:-1], *command, "--dir", str(folder), "--port", str(port)],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_host_config_snippet(folder: Path) -> None:
    config = host_config(folder)
    server = config["mcpServers"]["memdir"]
    assert server["args"][-3:] == ["serve", "--dir", str(folder.resolve())]
    assert host_config(agent="scout")["mcpServers"]["memdir"]["args"][-2:] == ["--agent", "scout"]


def test_legacy_tool_names_are_offered_only_when_asked(folder: Path) -> None:
    async def session(client: Client) -> None:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert "memory_list" in names and "update_working_memory" in names
        listed = await client.call_tool("memory_list", {})
        assert not listed.is_error and _payload(listed)["store"] == "knowledge.md"

    args = [*SERVE[1:], "--dir", str(folder), "--legacy-tools"]
    _run(session, StdioServerParameters(command=SERVE[0], args=args, env=_env()))


def test_the_server_keeps_the_folder_tidy_by_itself(folder: Path) -> None:
    """``--maintain-every``: maintain runs beside the server (a dream here), and the
    stdio channel stays clean while it does."""
    with memdir.open(folder, embedder="hashing") as memory:
        for i in range(50):
            assert memory.knowledge.save(f"Crate {i} sits on shelf {i * 7} in aisle {i}.").ok
        assert memory.knowledge.save("crate 0 sits on shelf 0 in aisle 0").ok  # a duplicate

    def observations() -> int:
        return (folder / "knowledge.md").read_text(encoding="utf-8").count("\n### obs_")

    async def session(client: Client) -> None:
        deadline = time.monotonic() + 60
        while observations() == 51 and time.monotonic() < deadline:
            await anyio.sleep(0.2)
        assert observations() < 51  # the dream ran while the client was connected
        found = _payload(await client.call_tool("memory_search", {"query": "crate shelf aisle"}))
        assert found["hits"]

    args = [*SERVE[1:], "--dir", str(folder), "--maintain-every", "1"]
    _run(session, StdioServerParameters(command=SERVE[0], args=args, env=_env()))
    with memdir.open(folder, embedder="hashing") as memory:
        assert memory.history.search("dream")


# -- the session recorder, without a server ------------------------------------------------


def test_an_http_session_idle_past_the_timeout_is_ended(memory: memdir.Memory) -> None:
    """Two sessions of one client are two activities; one idle past the timeout ends, the
    other goes on; stopping the server ends the rest."""
    now = [0.0]
    sessions = SessionRecorder(memory, "http", idle_seconds=60, monotonic=lambda: now[0])
    ok = {"ok": True, "status": "ok", "store": "knowledge.md"}
    client = ("test-host", "1.2")
    sessions.call("http:a", client, "memory_save", {"content": "x"}, lambda: ok)
    sessions.call("http:b", client, "memory_save", {"content": "y"}, lambda: ok)
    now[0] = 45.0
    sessions.call("http:b", client, "memory_get", {"path": "knowledge.md"}, lambda: ok)
    now[0] = 61.0
    sessions.end_idle()
    assert sessions.sessions() == ["http:b"]
    chats = {a.id: a for a in memory.history.recent(10, type="chat")}
    assert sorted(a.ended_at is not None for a in chats.values()) == [False, True]
    sessions.close()
    assert all(a.ended_at is not None for a in memory.history.recent(10, type="chat"))
    assert sorted(a.total_tools for a in memory.history.recent(10, type="chat")) == [1, 2]


def test_a_call_runs_where_nothing_can_be_recorded(tmp_path: Path) -> None:
    """The vault layout keeps no history: the calls run, unrecorded."""
    memdir.init(tmp_path / "v", layout="vault")
    with memdir.open(tmp_path / "v", embedder="none") as memory:
        sessions = SessionRecorder(memory, "stdio")
        result = sessions.call("stdio", None, "memory_get", {}, lambda: {"ok": True})
        assert result == {"ok": True} and sessions.history is None
        sessions.close()
    assert not (tmp_path / "v" / ".memdir" / "history.db").exists()


def test_the_log_keeps_no_secret_and_no_long_text() -> None:
    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2 + "T3BlbkFJ" + "k1L2m3N4o5P6q7R8s9T0"
    shown = summarise_arguments(
        {
            "content": f"Deploy with OPENAI_API_KEY={key} tonight",
            "text": "word " * 2000,
            "tags": [str(n) for n in range(9)],
            "fields": {"a": {"b": {"c": "deep"}}},
            "k": 3,
        }
    )
    assert key not in json.dumps(shown) and "redacted" in shown["content"]
    assert shown["content"].startswith("Deploy with OPENAI_API_KEY=")
    assert shown["text"].endswith("... (10,000 characters)") and len(shown["text"]) < 160
    assert shown["tags"] == ["0", "1", "2", "3", "4", "... 4 more"]
    assert shown["fields"] == {"a": {"b": "<dict>"}} and shown["k"] == 3


@pytest.mark.parametrize("layout", ["default", "notebook", "vault", "workspace"])
def test_the_instructions_name_only_the_tools_offered(tmp_path: Path, layout: str) -> None:
    folder = tmp_path / layout
    init = CliRunner().invoke(app, ["init", "--dir", str(folder), "--layout", layout])
    assert init.exit_code == 0, init.output
    memory = memdir.open(folder, embedder="none")
    every = {"update_notebook", "memory_save", "card_write", "working_state_start"}
    every |= {"working_state_finish", "journal_append", "lesson_add", "memory_search"}
    every |= {"memory_get", "memory_update"}

    async def session(client: Client) -> None:
        offered = {tool.name for tool in (await client.list_tools()).tools}
        said = client.instructions or ""
        assert "memory_search" in said and "memdir://context" in said
        for name in every:
            assert bool(re.search(rf"\b{name}\b", said)) is (name in offered), (name, said)

    _run(session, MemdirMCP(memory))


def test_a_refusal_reaches_the_client_with_its_reason(memory: memdir.Memory) -> None:
    """Refusals of bad input, through the real client: a card named out of the vault (it
    was written as vault/tmp/x.md), ids with mode replace (ignored, and ok), a window
    that ends before it starts (an empty answer). Nothing is written."""
    memory.knowledge.save("The storm report is due")
    before = {p: p.read_bytes() for p in sorted(memory.root.rglob("*.md"))}
    calls = [
        ("card_write", {"card": "/tmp/x", "body": "Body."}, "the card '/tmp/x' is a path on"),
        (
            "memory_update",
            {"section": "conventions", "content": "Tabs.", "mode": "replace", "ids": ["obs_1"]},
            "ids go with mode 'delete'",
        ),
        (
            "memory_search",
            {"query": "storm", "since": "2026-12-01", "until": "2026-11-01"},
            "memory_search: since (2026-12-01) is later than until (2026-11-01)",
        ),
    ]

    async def session(client: Client) -> None:
        for tool, arguments, reason in calls:
            done = await client.call_tool(tool, arguments)
            assert done.is_error and done.structured_content is not None, tool
            assert done.structured_content["reason"].startswith(reason), tool

    _run(session, MemdirMCP(memory))
    assert {p: p.read_bytes() for p in sorted(memory.root.rglob("*.md"))} == before
    assert not (memory.root / "vault" / "tmp").exists()


def test_an_unknown_prompt_is_refused_with_the_prompts_there_are_and_logs_nothing(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    memory = memdir.open(folder, embedder="none")

    async def session(client: Client) -> None:
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("nope")
        assert refused.value.error.code == types.INVALID_PARAMS
        assert refused.value.error.message == "no prompt 'nope' here; the prompts are: boot_context"

    with caplog.at_level("ERROR"):
        _run(session, MemdirMCP(memory))
    assert [r for r in caplog.records if r.levelname == "ERROR"] == []
