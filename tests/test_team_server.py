"""The team server (``memdir serve --http --database-url``) as it runs: real server
processes against a real PostgreSQL (tests/pg_fixture.py), the real MCP client SDK,
tokens made by the real ``memdir token``.

Two servers serve one database for the whole module; the kill test starts (and kills)
a third. Each write the concurrency test's clients are acknowledged is then looked for
in the database's files: present exactly once, every file parsing as its layer says.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from psycopg.conninfo import make_conninfo
from typer.testing import CliRunner

import memdir
from memdir.cli import app
from memdir.files.cards import Card
from memdir.server.team import READS_THAT_TOUCH
from memdir.storage.agents import close_databases, database, init_agent
from memdir.storage.postgres.tokens import CHECK_SECONDS, Tokens

SERVE = [sys.executable, "-m", "memdir", "serve", "--http"]
AGENTS = ("alice", "bob", "team-a", "team-b", "victim")
LOG_LINE = re.compile(
    r"memdir: agent=(\S+) token=(\S+) tool=(\S+) outcome=(\S+) status=(\d+) ms=\d+\.\d"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    base: str
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    def url(self, agent: str) -> str:
        return f"{self.base}/agents/{agent}/mcp"

    def log(self) -> str:
        return "".join(self.lines)

    def said(self, text: str) -> bool:
        """True once ``text`` is in what the server wrote (read by another thread)."""
        deadline = time.monotonic() + 20
        while text not in self.log():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)
        if self.process.stderr:
            self.process.stderr.close()


def start_server(database_url: str, home: Path) -> Server:
    """``memdir serve --http --database-url``, returned once it says it listens."""
    port = _free_port()
    env = dict(os.environ, MEMDIR_HOME=str(home), MEMDIR_EMBEDDER="hashing")
    env.pop("MEMDIR_DATABASE_URL", None)
    process = subprocess.Popen(
        [*SERVE, "--database-url", database_url, "--port", str(port)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = Server(f"http://127.0.0.1:{port}", process)
    said: queue.Queue[str] = queue.Queue()
    stderr = process.stderr
    assert stderr is not None

    def read() -> None:
        for line in stderr:
            server.lines.append(line)
            said.put(line)

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + 90
    while "Ctrl-C stops it" not in server.log():
        try:
            said.get(timeout=0.2)
        except queue.Empty:
            if process.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise AssertionError(f"the team server did not start: {server.log()}") from None
    return server


@dataclass
class Team:
    database: str
    home: Path
    servers: list[Server]
    tokens: Tokens


@pytest.fixture(scope="module")
def team(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    """A database of the module's own with AGENTS in it, and two servers over it."""
    name = f"t_team_{secrets.token_hex(4)}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = make_conninfo(pg_url, dbname=name)
    for agent in AGENTS:
        init_agent(url, agent)
    home = tmp_path_factory.mktemp("team-home")
    servers: list[Server] = []
    try:
        servers.append(start_server(url, home))
        servers.append(start_server(url, home))
        yield Team(url, home, servers, Tokens(database(url)))
    finally:
        for server in servers:
            server.stop()
        close_databases()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextlib.asynccontextmanager
async def connect(url: str, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client,
    ):
        yield client


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    payload = dict(result.structured_content or {})
    assert payload == json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert payload.get("ok") is (not result.is_error)
    return payload


def _post(url: str, token: str | None = None) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    return httpx2.post(url, json=ping, headers=headers, timeout=30)


def _files(team: Team, agent: str) -> dict[str, bytes]:
    """The agent's files as the database holds them, checked whole (hash and size)."""
    rows = (
        database(team.database)
        .reader()
        .execute("SELECT path, data, sha256, size FROM files WHERE agent = %s", (agent,))
        .fetchall()
    )
    import hashlib

    found = {}
    for path, data, sha256, size in rows:
        data = bytes(data)
        assert hashlib.sha256(data).hexdigest() == sha256 and len(data) == size, path
        found[str(path)] = data
    return found


def _token(team: Team, *agents: str, read_only: bool = False) -> str:
    args = ["token", "create", "--json", "--database-url", team.database]
    for agent in agents:
        args += ["--agent", agent]
    if read_only:
        args.append("--read-only")
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    return str(json.loads(done.stdout)["token"])


# -- tokens keep agents apart ----------------------------------------------------------------


def test_a_token_reaches_only_its_agents(team: Team) -> None:
    alice = _token(team, "alice")
    one, two = team.servers
    fact = f"Alice's locker code is {secrets.token_hex(4)}"

    async def main() -> None:
        async with connect(one.url("alice"), alice) as client:
            saved = await call(client, "memory_save", {"content": fact})
            assert saved["store"] == "knowledge.md"
        async with connect(two.url("alice"), alice) as client:  # the other server sees it
            got = await call(client, "memory_get", {"path": "knowledge.md"})
            assert fact in got.get("text", ""), got
            found = await call(client, "memory_search", {"query": "locker code"})
            assert any("locker" in hit["snippet"] for hit in found["hits"]), found

    anyio.run(main)
    refused = _post(one.url("bob"), alice)
    assert refused.status_code == 403
    assert refused.json()["error"].endswith("does not reach agent 'bob'")
    with pytest.raises(Exception):  # noqa: B017 (the client gives up on a 403, however it says so)
        anyio.run(_connect_and_list, one.url("bob"), alice)
    assert fact.encode() not in b"".join(_files(team, "bob").values())
    assert fact.encode() in _files(team, "alice")["knowledge.md"]

    # the log: a line per request, the tool and outcome, never the text or the token
    assert one.said("outcome=forbidden status=403")
    log = one.log()
    lines = [LOG_LINE.search(line) for line in log.splitlines()]
    seen = [m.groups()[:5] for m in lines if m is not None]
    alice_id = alice.split("_")[1]
    assert ("alice", alice_id, "memory_save", "ok", "200") in seen
    assert ("bob", "-", "-", "forbidden", "403") in seen
    assert fact not in log and "locker" not in log and alice not in log
    assert alice.split("_", 2)[2] not in log
    assert two.said("tool=memory_search") and "locker" not in two.log()


async def _connect_and_list(url: str, token: str) -> None:
    async with connect(url, token) as client:
        await client.list_tools()


def test_requests_without_a_valid_token_are_refused_before_any_work(team: Team) -> None:
    server = team.servers[0]
    ghost = server.url("ghost")  # no such agent: a refusal that comes before looking
    assert _post(ghost).status_code == 401
    assert _post(ghost, "mdt_0123456789ab_" + "x" * 43).status_code == 401
    assert _post(ghost, "s3cret").status_code == 401
    assert _post(ghost, _token(team, "alice")).status_code == 403
    missing = _post(ghost, _token(team, "ghost"))
    assert missing.status_code == 404 and "no agent 'ghost'" in missing.json()["error"]
    answer = _post(server.url("alice"))
    assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
    assert "Authorization: Bearer <token>" in answer.json()["error"]
    assert httpx2.get(f"{server.base}/agents/alice/other").status_code == 404

    past = datetime.now(UTC) - timedelta(days=2)
    expired, _ = team.tokens.create(["alice"], expires_days=1, now=past)
    refused = _post(server.url("alice"), expired)
    assert refused.status_code == 401 and "is expired" in refused.json()["error"]

    lasting = _token(team, "alice")
    assert _post(server.url("alice"), lasting).status_code == 200
    done = CliRunner().invoke(
        app, ["token", "revoke", lasting.split("_")[1], "--database-url", team.database]
    )
    assert done.exit_code == 0, done.output
    # every server, within the bound a server trusts a token's row it read (tokens.py)
    deadline = time.monotonic() + CHECK_SECONDS + 5  # + slack for a loaded machine
    for each in team.servers:
        while (refused := _post(each.url("alice"), lasting)).status_code == 200:
            assert time.monotonic() < deadline, "a revoked token still works past the bound"
            time.sleep(0.1)
        assert refused.status_code == 401 and "is revoked" in refused.json()["error"]


def test_a_read_only_token_reads_and_never_writes(team: Team) -> None:
    writer = _token(team, "bob")
    reader = _token(team, "bob", read_only=True)
    server = team.servers[1]

    async def main() -> None:
        async with connect(server.url("bob"), writer) as client:
            await call(client, "memory_save", {"content": "Bob waters the ferns on Fridays"})
            card = {"card": "ferns", "body": "Boston ferns", "type": "idea"}
            await call(client, "card_write", card)
        before = _files(team, "bob")
        async with connect(server.url("bob"), reader) as client:
            found = await call(client, "memory_search", {"query": "ferns"})
            assert {hit["path"] for hit in found["hits"]} >= {"knowledge.md"}, found
            got = await call(client, "memory_get", {"path": "knowledge.md"})
            assert "waters the ferns" in got["text"]
            card = await call(client, "card_read", {"card": "ferns"})
            assert "Boston ferns" in card["body"] and card["touched"] is False
            recalled = await call(client, "recall_activity", {"action": "list"})
            assert recalled["ok"], recalled
            for tool, args in (
                ("memory_save", {"content": "Bob hates ferns"}),
                ("update_notebook", {"key": "task", "text": "pull out the ferns"}),
                ("card_write", {"card": "ferns", "body": "gone"}),
                ("journal_append", {"kind": "decision", "text": "ferns out"}),
                ("card_history", {"card": "ferns", "text": "removed"}),
            ):
                refused = await call(client, tool, args)
                assert "this token is read-only" in refused["reason"], tool
        assert _files(team, "bob") == before  # not a byte moved, not even a touch

    anyio.run(main)
    assert server.said("tool=card_history outcome=read-only")
    lines = [m.groups()[2:4] for m in map(LOG_LINE.search, server.log().splitlines()) if m]
    assert ("memory_save", "read-only") in lines and ("memory_search", "ok") in lines


def test_a_read_only_token_is_refused_every_write_tool(team: Team) -> None:
    reader = _token(team, "bob", read_only=True)

    async def main() -> list[str]:
        refused = []
        async with connect(team.servers[0].url("bob"), reader) as client:
            for tool in (await client.list_tools()).tools:
                hints = tool.annotations
                if (hints is not None and hints.read_only_hint) or tool.name in READS_THAT_TOUCH:
                    continue
                answer = await call(client, tool.name, {})  # refused before its arguments
                assert "this token is read-only" in answer["reason"], tool.name
                refused.append(tool.name)
        return refused

    before = _files(team, "bob")
    refused = anyio.run(main)
    assert {"memory_save", "update_notebook", "card_write", "journal_append"} <= set(refused)
    assert _files(team, "bob") == before


def test_each_call_is_logged_as_a_start_and_an_end(team: Team) -> None:
    writer = _token(team, "alice")
    db = database(team.database)

    def chat_logs() -> list[tuple[Any, ...]]:
        return (
            db.reader()
            .execute(
                "SELECT l.activity_id, l.seq, l.type, l.content, l.metadata "
                "FROM activity_logs AS l "
                "JOIN activities AS a ON a.agent = l.agent AND a.id = l.activity_id "
                "WHERE l.agent = 'alice' AND a.type = 'chat' ORDER BY l.activity_id, l.seq"
            )
            .fetchall()
        )

    before = {(row[0], row[1]) for row in chat_logs()}

    async def main() -> None:
        async with connect(team.servers[1].url("alice"), writer) as client:
            await call(client, "memory_save", {"content": "Alice reads the tide tables"})
            await call(client, "memory_search", {"query": "tide tables"})
            missing = await call(client, "memory_get", {"path": "nope.md"})
            assert missing["ok"] is False

    anyio.run(main)
    new = [row for row in chat_logs() if (row[0], row[1]) not in before]
    calls = [row for row in new if row[2] in ("tool_start", "tool_end")]
    assert [(row[2], row[4]["tool"]) for row in calls] == [
        ("tool_start", "memory_save"), ("tool_end", "memory_save"),
        ("tool_start", "memory_search"), ("tool_end", "memory_search"),
        ("tool_start", "memory_get"), ("tool_end", "memory_get"),
    ]  # fmt: skip
    assert len({row[0] for row in calls}) == 1  # one session's activity
    seqs = [row[1] for row in calls]
    assert seqs == list(range(seqs[0], seqs[0] + 6))
    assert calls[0][4]["arguments"] == {"content": "Alice reads the tide tables"}
    assert [row[4]["ok"] for row in calls if row[2] == "tool_end"] == [True, True, False]
    assert calls[-1][3].startswith("memory_get refused: ")
    total = (
        db.reader()
        .execute(
            "SELECT total_tools FROM activities WHERE agent = 'alice' AND id = %s", (calls[0][0],)
        )
        .fetchone()
    )
    logged = db.reader().execute(
        "SELECT count(*) FROM activity_logs WHERE agent = 'alice' AND activity_id = %s "
        "AND type = 'tool_start'", (calls[0][0],)
    ).fetchone()  # fmt: skip
    assert total is not None and logged is not None and total[0] == logged[0]


def test_healthz(team: Team, pg_url: str) -> None:
    for server in team.servers:
        answer = httpx2.get(f"{server.base}/healthz", timeout=30)
        assert answer.status_code == 200 and answer.json()["ok"] is True
    # a database that goes away takes the server out of the load balancer's pool
    name = f"t_gone_{secrets.token_hex(4)}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    server = start_server(make_conninfo(pg_url, dbname=name), team.home)
    try:
        assert httpx2.get(f"{server.base}/healthz", timeout=30).status_code == 200
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
        gone = httpx2.get(f"{server.base}/healthz", timeout=30)
        assert gone.status_code == 503 and gone.json() == {
            "ok": False,
            "error": "the database does not answer",
        }
        assert server.said("healthz: the database does not answer")
    finally:
        server.stop()


def test_the_server_serves_each_agents_web_page_under_its_tokens(team: Team) -> None:
    one, two = team.servers
    assert f"{one.base}/agents/ID/ui/?token=<token>" in one.log()  # the announcement says
    alice, bob = _token(team, "alice"), _token(team, "bob")
    page = f"{one.base}/agents/alice/ui"
    assert httpx2.get(f"{page}/", timeout=30).status_code == 401
    assert httpx2.get(f"{page}/?token={bob}", timeout=30).status_code == 403
    entered = httpx2.get(f"{page}/memory?token={alice}", timeout=30)
    assert entered.status_code == 303 and entered.headers["location"] == "/agents/alice/ui/memory"
    cookie = entered.cookies["memdir_team_ui"]
    # the cookie is the token, checked against the database: the other server takes it too
    for server in (one, two):
        shown = httpx2.get(
            f"{server.base}/agents/alice/ui/memory", cookies={"memdir_team_ui": cookie}, timeout=30
        )
        assert shown.status_code == 200 and "Working and semantic memory" in shown.text
    token_id = alice.split("_")[1]
    assert one.said(f"agent=alice token={token_id} tool=ui outcome=ok status=200")
    assert alice not in one.log() + two.log()


# -- two servers, four clients: nothing lost -----------------------------------------------

WORDS = [
    "amber",
    "basil",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kelp",
    "lantern",
    "meadow",
    "nutmeg",
    "orchid",
    "pepper",
    "quartz",
    "river",
    "saffron",
    "timber",
    "umber",
    "velvet",
    "willow",
    "xenon",
    "yarrow",
    "zinnia",
    "anchor",
    "bramble",
    "copper",
    "dune",
    "falcon",
    "glacier",
    "heron",
    "iris",
    "jasper",
    "kestrel",
    "lotus",
    "marble",
    "nectar",
    "onyx",
    "pebble",
    "quill",
    "raven",
    "sable",
    "thistle",
    "tundra",
    "vessel",
    "walnut",
]


def _sentence(rng: random.Random, nonce: str) -> str:
    return " ".join(rng.sample(WORDS, 6)).capitalize() + f" ({nonce})."


def _check_parses(files: dict[str, bytes], tmp: Path) -> memdir.Memory:
    """Write the files out byte for byte and open them: every store reads its file."""
    for path, data in files.items():
        target = tmp / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    memory = memdir.open(tmp, embedder="none")
    memory.notebook.entries()
    for path, data in files.items():
        if path.startswith("vault/") and path.endswith(".md"):
            card = Card.parse(data.decode("utf-8"))
            assert isinstance(card.meta, dict), path
        elif path.endswith(".md"):
            assert memory.get(path).ok, path
    return memory


def test_two_servers_four_clients_lose_nothing(team: Team, tmp_path: Path) -> None:
    agents = ("team-a", "team-b")
    token = _token(team, *agents)
    rounds = 5
    acknowledged: dict[str, list[str]] = {agent: [] for agent in agents}
    fields: dict[str, dict[str, str]] = {agent: {} for agent in agents}

    async def client(number: int) -> None:
        rng = random.Random(number)
        async with contextlib.AsyncExitStack() as stack:
            sessions = {
                agent: await stack.enter_async_context(
                    connect(team.servers[(number + i) % 2].url(agent), token)
                )
                for i, agent in enumerate(agents)
            }
            for r in range(rounds):
                for agent, session in sessions.items():
                    nonce = f"c{number}r{r}-{secrets.token_hex(3)}"
                    for tool, args in (
                        ("memory_save", {"content": _sentence(rng, f"save {nonce}")}),
                        ("update_notebook", {"key": f"c{number}-r{r}",
                                             "text": _sentence(rng, f"note {nonce}")}),
                        ("card_history", {"card": "shared",
                                          "text": _sentence(rng, f"history {nonce}")}),
                        ("journal_append", {"kind": "learning",
                                            "text": _sentence(rng, f"journal {nonce}")}),
                    ):  # fmt: skip
                        done = await call(session, tool, args)
                        assert done["ok"], (tool, done)
                        acknowledged[agent].append(args.get("content") or args["text"])
                    key = f"c{number}r{r}"
                    done = await call(session, "card_write", {"card": "shared",
                                                              "fields": {key: nonce}})  # fmt: skip
                    assert done["ok"], done
                    fields[agent][key] = nonce

    async def main() -> None:
        card = {"card": "shared", "type": "project", "body": "Shared by four clients."}
        for agent in agents:  # the shared card, before the clients race on it
            async with connect(team.servers[1].url(agent), token) as session:
                made = await call(session, "card_write", card)
                assert made["ok"], made
        async with anyio.create_task_group() as tasks:
            for number in range(4):
                tasks.start_soon(client, number)

    anyio.run(main)
    for agent in agents:
        files = _files(team, agent)
        text = b"\n".join(data for path, data in files.items()).decode("utf-8")
        assert len(acknowledged[agent]) == 4 * rounds * 4
        for written in acknowledged[agent]:
            assert text.count(written) == 1, (agent, written)
        with _check_parses(files, tmp_path / agent) as memory:
            card = memory.vault.read("shared", touch=False)
            assert card is not None
            for key, nonce in fields[agent].items():
                assert str(card.meta.get(key)) == nonce, (agent, key)
            notebook = [e.key for e in memory.notebook.entries() if e.managed == "agent"]
            assert len(notebook) == 4  # the cap held: the rest were evicted, to the archive
            assert any(p.startswith("archive/notebook") for p in files)


# -- a server killed mid-write -----------------------------------------------------------------


def test_a_server_killed_mid_write_leaves_each_file_whole(team: Team, tmp_path: Path) -> None:
    """SIGKILL while four writers are busy: each write the clients were told of is there
    once; each one in flight is there once or not at all; every file is a whole version
    (its hash and size match its bytes) and parses; the agent's lock is free at once."""
    token = _token(team, "victim")
    server = start_server(team.database, team.home)
    acknowledged: list[str] = []
    in_flight: set[str] = set()
    started = threading.Event()

    async def writer(number: int) -> None:
        rng = random.Random(100 + number)
        with contextlib.suppress(Exception):
            async with connect(server.url("victim"), token) as session:
                for r in range(400):
                    text = _sentence(rng, f"kill c{number}r{r}-{secrets.token_hex(3)}")
                    tool, args = (
                        ("card_history", {"card": "target", "text": text})
                        if r % 2
                        else ("memory_save", {"content": text + " " + "padding " * 400})
                    )
                    in_flight.add(text)
                    done = await call(session, tool, args)
                    in_flight.discard(text)
                    assert done["ok"], done
                    acknowledged.append(text)
                    if len(acknowledged) >= 12:
                        started.set()

    async def killer() -> None:
        while not started.is_set():
            await anyio.sleep(0.01)
        await anyio.sleep(random.uniform(0.0, 0.2))
        server.process.send_signal(signal.SIGKILL)

    async def main() -> None:
        async with connect(server.url("victim"), token) as session:
            assert (await call(session, "card_write", {"card": "target", "body": "x"}))["ok"]
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(killer)
            for number in range(4):
                tasks.start_soon(writer, number)

    try:
        anyio.run(main)
        assert server.process.wait(timeout=30) == -signal.SIGKILL
    finally:
        server.stop()
    assert in_flight, "the kill came between writes; nothing was in flight"
    files = _files(team, "victim")  # each row whole (hash and size match the bytes)
    text = b"\n".join(files.values()).decode("utf-8")
    for written in acknowledged:
        assert text.count(written) == 1, written
    for written in in_flight:
        assert text.count(written) in (0, 1), written
    with _check_parses(files, tmp_path / "victim") as memory:
        assert memory.vault.read("target", touch=False) is not None

    async def after() -> None:  # the lock died with the server: the next write goes through
        async with connect(team.servers[0].url("victim"), token) as session:
            assert (await call(session, "card_history", {"card": "target", "text": "after"}))["ok"]

    anyio.run(after)


def test_memdir_database_schema_is_the_tokens_and_the_servers_schema_too(
    pg_url: str, pg_schema: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``MEMDIR_DATABASE_SCHEMA`` names where ``memdir init --agent`` puts an agent: the
    token made beside it and the server started beside it use that schema as well."""
    monkeypatch.setenv("MEMDIR_DATABASE_SCHEMA", pg_schema)
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")
    run = CliRunner()
    made = run.invoke(app, ["--database-url", pg_url, "init", "--agent", "schemed"])
    assert made.exit_code == 0, made.output
    done = run.invoke(app, ["token", "create", "--agent", "schemed", "--json",
                            "--database-url", pg_url])  # fmt: skip
    assert done.exit_code == 0, done.output
    token = str(json.loads(done.stdout)["token"])
    with psycopg.connect(pg_url) as conn:
        kept = conn.execute(f"SELECT agents FROM {pg_schema}.tokens").fetchall()
    assert [tuple(row[0]) for row in kept] == [("schemed",)]
    server = start_server(pg_url, tmp_path / "home")  # inherits MEMDIR_DATABASE_SCHEMA
    try:
        assert _post(server.url("schemed"), token).status_code == 200
        assert _post(server.url("schemed")).status_code == 401
    finally:
        server.stop()
        close_databases()
