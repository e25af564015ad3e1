"""The MCP server through the real MCP client SDK: over stdio and over streamable HTTP,
with the server started as a separate process by the real ``memdir serve`` command."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

import memdir
from memdir.mcp_server import host_config

SERVE = [sys.executable, "-m", "memdir", "serve"]


def _env() -> dict[str, str]:
    env = dict(os.environ)  # carries the test's MEMDIR_HOME
    env["MEMDIR_EMBEDDER"] = "hashing"
    return env


def _run(session: Callable[[Client], Awaitable[None]], server: Any) -> None:
    async def main() -> None:
        async with Client(server, read_timeout_seconds=60) as client:
            await session(client)

    anyio.run(main)


def _payload(result: Any) -> dict[str, Any]:
    data = result.structured_content
    assert data == json.loads(result.content[0].text)
    return dict(data)


async def _one_session(client: Client) -> None:
    """Initialise (done by Client), list tools, save, search, get, refuse a bad call."""
    listed = await client.list_tools()
    names = [tool.name for tool in listed.tools]
    assert names[:4] == ["update_notebook", "clear_notebook", "memory_save", "memory_search"]
    search = next(tool for tool in listed.tools if tool.name == "memory_search")
    assert search.annotations is not None and search.annotations.read_only_hint is True
    assert search.input_schema["properties"]["query"]["type"] == "string"

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

    refused = await client.call_tool("memory_save", {"content": ["one", "two"]})
    assert refused.is_error
    assert "call it once per item" in _payload(refused)["reason"]
    outside = await client.call_tool("memory_get", {"path": "../other-agent/knowledge.md"})
    assert outside.is_error and "leaves the memory folder" in _payload(outside)["reason"]


def test_stdio_session_with_the_real_client(folder: Path) -> None:
    params = StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], "--dir", str(folder)], env=_env()
    )
    _run(_one_session, params)
    assert "Dana keeps the release checklist" in (folder / "knowledge.md").read_text()


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


@pytest.fixture
def http_server(folder: Path) -> Iterator[Callable[..., str]]:
    """Start ``memdir serve --http`` and return its URL once it answers."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*extra: str) -> str:
        port = _free_port()
        args = [*SERVE, "--dir", str(folder), "--http", "--port", str(port), *extra]
        process = subprocess.Popen(args, env=_env(), stderr=subprocess.PIPE)
        started.append(process)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(process.stderr.read().decode() if process.stderr else "")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return f"http://127.0.0.1:{port}/mcp"
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the server did not start")

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=20)
        if process.stderr:
            process.stderr.close()


def test_http_session_with_the_real_client(http_server: Callable[..., str]) -> None:
    _run(_one_session, http_server())


def test_http_with_a_token_refuses_requests_without_it(http_server: Callable[..., str]) -> None:
    url = http_server("--token", "s3cret")
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

    anyio.run(main)


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
