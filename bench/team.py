"""The team server under load: three ``memdir serve --http --database-url`` processes,
16 clients over 100 agents, against the same workload on folders on disk.

    .venv/bin/python bench/team.py [--quick] [--seconds 60] [--items 100000]
                                   [--agents 100] [--clients 16] [--servers 3]

It starts PostgreSQL (pgserver, in a temporary folder), makes ``--agents`` agents
from the default layout and fills them with ``--items`` items (journal files of ten
sections each, bench/scale.py's seeded synthetic text): each agent's folder is
written on disk, pushed into the database in one transaction (``memdir push``'s
path, reindexed as it goes) and indexed on disk as well (``memory.reindex()``), so
both backends hold the same files. Then it starts ``--servers`` team servers over
the database and as many over the folders on disk (the same ``TeamApp``, its agents
opened from ``$MEMDIR_HOME/agents`` with SQLite beside each: the single-machine
default), and runs the load against each set in turn, in alternating slices, so
the machine's load falls on both alike. Each client is a real MCP client (the SDK's,
the 2026 protocol) with a session per agent it serves; each operation picks one of
its agents: search 50%, save 20%, get 10%, notebook 10%, journal 10%. The embedder
is ``hashing`` on both (no model to load; MiniLM would add its ~10 ms per query and
save on both alike).

Printed: per backend and operation, count, p50 and p95 (ms, at the client), refused
or failed calls, throughput; each acknowledged save looked for in the files
afterwards (acknowledged vs present: 0 lost); the ratio PostgreSQL / disk; the
database's size, its index bytes per item and history rows per call.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psycopg
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from psycopg.conninfo import make_conninfo
from scale import Corpus, write_journal

import memdir

OPS = (("search", 50), ("save", 20), ("get", 10), ("notebook", 10), ("journal", 10))
TARGETS = {"search": 100.0, "save": 150.0}
"""p95 targets (ms) on PostgreSQL, issue 15"""
LOCAL_TOKEN = "mdt_000000000000_" + "b" * 43


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the local comparison: the same TeamApp over folders on disk ----------------------------


class LocalAgents:
    """``AgentSource`` over ``$MEMDIR_HOME/agents``: the single-machine default."""

    def __init__(self, home: Path) -> None:
        self.home = home

    def exists(self, agent: str) -> bool:
        return (self.home / "agents" / agent / "memdir.toml").is_file()

    def open(self, agent: str, *, read_only: bool) -> memdir.Memory:
        return memdir.open(self.home / "agents" / agent)

    def check(self) -> None:
        pass

    def close(self) -> None:
        pass


class OneToken:
    """A gate with one token for every agent (the local servers have no database)."""

    def verify(self, presented: str, agent: str) -> Any:
        from memdir.storage.postgres.tokens import Token, TokenRefused

        if presented != LOCAL_TOKEN:
            raise TokenRefused(401, "not the bench's token")
        return Token("000000000000", (agent,), False, datetime.now(UTC), None, None, None)

    def remembered(self, presented: str, agent: str) -> Any:
        return self.verify(presented, agent)


def serve_local(home: Path, port: int) -> None:
    import logging

    from memdir.server.mcp import run_http
    from memdir.server.team import TeamApp

    logging.getLogger("memdir.team").setLevel(logging.WARNING)
    app = TeamApp(LocalAgents(home), OneToken())
    run_http(app, "127.0.0.1", port, lambda bound: log(f"local team server on {bound}"))


# -- setting up -------------------------------------------------------------------------------


def start_postgres(base: Path) -> tuple[Any, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        server = pgserver.get_server(base / "pgdata", cleanup_mode="stop")
    url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE DATABASE bench")
    return server, make_conninfo(url, dbname="bench")


def fill(url: str, home: Path, agents: list[str], items: int, seed: int) -> dict[str, float]:
    """Write, push and index each agent, every vector made on both (a push indexes the
    words; the vectors follow, here at once as ``reindex`` makes them on disk, else the
    first searches would pay for them); seconds spent on each."""
    from memdir.storage.transfer import push

    corpus = Corpus(seed)
    files = max(items // len(agents) // 10, 1)
    from memdir.storage.agents import open_agent

    spent = {"write": 0.0, "push (postgres)": 0.0, "embed (postgres)": 0.0, "reindex (disk)": 0.0}
    for n, agent in enumerate(agents):
        folder = home / "agents" / agent
        began = time.perf_counter()
        memdir.init(folder)
        write_journal(folder, corpus, files)
        spent["write"] += time.perf_counter() - began
        began = time.perf_counter()
        push(url, agent, folder, force=True, create=True)
        spent["push (postgres)"] += time.perf_counter() - began
        began = time.perf_counter()  # as reindex does on disk: every vector made now
        with open_agent(url, agent, embedder="hashing") as memory:
            memory.index.ensure_vectors()
        spent["embed (postgres)"] += time.perf_counter() - began
        began = time.perf_counter()
        with memdir.open(folder, embedder="hashing") as memory:
            memory.reindex()
        spent["reindex (disk)"] += time.perf_counter() - began
        if n % 10 == 9:
            log(f"  filled {n + 1}/{len(agents)} agents")
    return spent


@dataclass
class Fleet:
    name: str
    bases: list[str]
    token: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def start_fleet(name: str, commands: list[list[str]], env: dict[str, str], logs: Path) -> Fleet:
    bases, processes = [], []
    for n, command in enumerate(commands):
        port = free_port()
        out = (logs / f"{name}-{n}.log").open("wb")
        processes.append(
            subprocess.Popen([*command, "--port", str(port)], env=env, stderr=out, stdout=out)
        )
        bases.append(f"http://127.0.0.1:{port}")
    fleet = Fleet(name, bases, "", processes)
    deadline = time.monotonic() + 120
    for base in bases:
        while True:
            with contextlib.suppress(httpx2.HTTPError):
                if httpx2.get(f"{base}/healthz", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                fleet.stop()
                raise SystemExit(f"the {name} servers did not start: see {logs}")
            time.sleep(0.2)
    return fleet


# -- the load ---------------------------------------------------------------------------------


@dataclass
class Tally:
    samples: dict[str, list[float]] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    saved: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, op: str, ms: float, ok: bool) -> None:
        self.samples.setdefault(op, []).append(ms)
        if not ok:
            self.failed[op] = self.failed.get(op, 0) + 1


@contextlib.asynccontextmanager
async def session(url: str, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client,
    ):
        yield client


async def run_load(
    fleet: Fleet, agents: list[str], clients: int, seconds: float, seed: int, tally: Tally
) -> None:
    queries = Corpus(seed).queries(500, seed)
    names = [op for op, _ in OPS]
    weights = [w for _, w in OPS]
    deadline = [0.0]
    ready = anyio.Event()
    warm = [0]

    async def client(number: int) -> None:
        rng = random.Random(seed * 1000 + number)
        mine = [a for j, a in enumerate(agents) if j % clients == number]
        with contextlib.suppress(Exception):  # a session broken at its close: logged above
            await client_sessions(number, rng, mine)

    async def client_sessions(number: int, rng: random.Random, mine: list[str]) -> None:
        async with contextlib.AsyncExitStack() as stack:
            open_: dict[str, Client] = {}
            for n, agent in enumerate(mine):  # warm: each session open, each agent opened
                base = fleet.bases[(number + n) % len(fleet.bases)]
                url = f"{base}/agents/{agent}/mcp"
                for attempt in range(3):  # a keep-alive connection the server just closed
                    try:
                        opened = await stack.enter_async_context(session(url, fleet.token))
                        await opened.list_tools()
                        await opened.call_tool("memory_search", {"query": "warm"})
                        open_[agent] = opened
                        break
                    except Exception as exc:
                        log(f"  {fleet.name}: warming {agent} failed ({exc!r}), attempt {attempt}")
            warm[0] += 1
            await ready.wait()
            while time.monotonic() < deadline[0]:
                agent = rng.choice(sorted(open_))
                op = rng.choices(names, weights)[0]
                tool, args = call_for(op, rng, queries)
                began = time.perf_counter()
                try:
                    result = await open_[agent].call_tool(tool, args)
                    ok = not result.is_error
                except Exception as exc:
                    log(f"  {fleet.name} {op} failed: {type(exc).__name__}: {exc}")
                    ok = False
                tally.add(op, (time.perf_counter() - began) * 1000, ok)
                if ok and op == "save":
                    tally.saved.setdefault(agent, []).append(args["content"])

    async def start() -> None:
        waited = time.monotonic() + 600  # a client whose warming failed whole never counts
        while warm[0] < clients and time.monotonic() < waited:
            await anyio.sleep(0.05)
        deadline[0] = time.monotonic() + seconds
        ready.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(start)
        for number in range(clients):
            tasks.start_soon(client, number)
    tally.seconds += seconds


def call_for(op: str, rng: random.Random, queries: list[str]) -> tuple[str, dict[str, Any]]:
    nonce = os.urandom(5).hex()  # (bench/secrets.py shadows the module)
    if op == "search":
        return "memory_search", {"query": rng.choice(queries)}
    if op == "save":
        return "memory_save", {"content": f"{rng.choice(queries).capitalize()} ({nonce})."}
    if op == "get":
        return "memory_get", {"path": "NOTEBOOK.md"}
    if op == "notebook":
        return "update_notebook", {"key": f"task-{rng.randrange(6)}", "text": f"step {nonce}"}
    return "journal_append", {"kind": "context", "text": f"checked {nonce}"}


# -- checking and reporting ---------------------------------------------------------------------


def present_pg(url: str, tally: Tally) -> tuple[int, int]:
    acknowledged = present = 0
    with psycopg.connect(url) as conn:
        for agent, saved in tally.saved.items():
            row = conn.execute(
                "SELECT data FROM memdir.files WHERE agent = %s AND path = 'knowledge.md'",
                (agent,),
            ).fetchone()
            text = bytes(row[0]).decode("utf-8") if row else ""
            acknowledged += len(saved)
            present += sum(1 for s in saved if text.count(s) == 1)
    return acknowledged, present


def present_disk(home: Path, tally: Tally) -> tuple[int, int]:
    acknowledged = present = 0
    for agent, saved in tally.saved.items():
        text = (home / "agents" / agent / "knowledge.md").read_text("utf-8")
        acknowledged += len(saved)
        present += sum(1 for s in saved if text.count(s) == 1)
    return acknowledged, present


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(int(len(ordered) * 0.95) - 1, 0)]


def index_probe(
    url: str, home: Path, agents: list[str], items: int, runs: int, seed: int
) -> dict[str, Any]:
    """The search primitives over PostgreSQL's index at scale, beside SQLite's.

    The agents' files are indexed into the database's ``items`` (``PgIndex``, the rows
    ``storage.postgres.index`` keeps; the vectors copied by content), up to ``items``
    items, all agents in one table as a team's database holds them. Then ``runs``
    queries, each on a random agent, run the keyword (BM25) and the vector (cosine)
    primitive of a deep search (depth 200) on SQLite and on PostgreSQL in turn."""
    import numpy as np

    from memdir.index.search import Filters, _floor, _keyword, _semantic
    from memdir.index.words import query_words
    from memdir.storage.agents import database
    from memdir.storage.postgres.index import PgIndex, index_text
    from memdir.storage.seam import Scope

    db = database(url)
    opened: list[tuple[memdir.Memory, PgIndex]] = []
    count = 0
    began = time.perf_counter()
    for agent in agents:
        if count >= items:
            break
        memory = memdir.open(home / "agents" / agent, embedder="hashing")
        pg = PgIndex(db, agent)
        for relpath, (name, layer) in sorted(memory.index.files_on_disk().items()):
            path = memory.root / relpath
            stat = path.stat()
            text = path.read_bytes().decode("utf-8", "surrogateescape")
            index_text(pg, relpath, text, name, layer, mtime_ns=stat.st_mtime_ns, size=stat.st_size)
        embedder = memory.index.embedder
        assert embedder is not None
        vectors = memory.index.db.execute(
            "SELECT vector_key, vector FROM vectors WHERE model = ?", (embedder.id,)
        ).fetchall()
        pg.store_vectors(
            embedder.id,
            embedder.dim,
            [(key, np.frombuffer(blob, dtype=np.float32)) for key, blob in vectors],
        )
        count += int(memory.index.db.execute("SELECT count(*) FROM items").fetchone()[0])
        opened.append((memory, pg))
    filled = time.perf_counter() - began
    db.reader().execute("ANALYZE items")
    rng = random.Random(seed)
    queries = Corpus(seed).queries(runs, seed)
    times: dict[str, list[float]] = {k: [] for k in ("kw_sqlite", "kw_pg", "vec_sqlite", "vec_pg")}
    for query in queries:
        memory, pg = rng.choice(opened)
        index = memory.index
        embedder = index.embedder
        assert embedder is not None and index.vectors is not None
        index.vectors.refresh(index.db)
        scope = Scope(Filters(mode="deep"), memory.manifest.decay, memory.clock())
        words = query_words(query)
        vector = embedder.embed([query])[0]
        floor = _floor(index)
        for name, call in (
            ("kw_sqlite", partial(_keyword, index, words, scope, 200)),
            ("kw_pg", partial(pg.keyword, words, scope, 200)),
            ("vec_sqlite", partial(_semantic, index, vector, scope, 200)),
            ("vec_pg", partial(pg.semantic, vector, embedder.id, scope, 200, floor)),
        ):
            t0 = time.perf_counter()
            call()
            times[name].append((time.perf_counter() - t0) * 1000)
    for memory, _ in opened:
        memory.close()
    found: dict[str, Any] = {"agents": len(opened), "items": count, "fill s": round(filled, 1)}
    for name, samples in times.items():
        found[f"{name} p50/p95 ms"] = f"{statistics.median(samples):.2f} / {p95(samples):.2f}"
    for kind in ("kw", "vec"):
        a, b = times[f"{kind}_pg"], times[f"{kind}_sqlite"]
        found[f"{kind} p50 pg/sqlite"] = round(statistics.median(a) / statistics.median(b), 2)
    return found


def database_figures(url: str, calls: int) -> dict[str, Any]:
    with psycopg.connect(url) as conn:

        def one(query: str) -> Any:
            row = conn.execute(query).fetchone()
            return row[0] if row else None

        items = int(one("SELECT count(*) FROM memdir.items") or 0)
        index_bytes = sum(
            int(one(f"SELECT pg_total_relation_size('memdir.{table}')") or 0)
            for table in ("items", "index_files", "index_meta", "index_stats")
        )
        files_bytes = int(one("SELECT pg_total_relation_size('memdir.files')") or 0)
        logs = int(one("SELECT count(*) FROM memdir.activity_logs") or 0)
        history_bytes = sum(
            int(one(f"SELECT pg_total_relation_size('memdir.{table}')") or 0)
            for table in ("activities", "activity_logs")
        )
        activities = int(one("SELECT count(*) FROM memdir.activities") or 0)
        size = int(one("SELECT pg_database_size(current_database())") or 0)
    return {
        "items": items,
        "index bytes per item": round(index_bytes / items) if items else None,
        "files bytes": files_bytes,
        "database MB": round(size / 2**20, 1),
        "history rows (activities + logs)": activities + logs,
        "history rows per call": round((activities + logs) / calls, 2) if calls else None,
        "history bytes per row": (
            round(history_bytes / (activities + logs)) if activities + logs else None
        ),
    }


def report(tallies: dict[str, Tally], checks: dict[str, tuple[int, int]]) -> None:
    print("| backend | op | calls | p50 ms | p95 ms | failed |")
    print("|---|---|---:|---:|---:|---:|")
    for name, tally in tallies.items():
        for op, _ in OPS:
            samples = tally.samples.get(op, [])
            if not samples:
                continue
            print(
                f"| {name} | {op} | {len(samples)} | {statistics.median(samples):.1f} | "
                f"{p95(samples):.1f} | {tally.failed.get(op, 0)} |"
            )
    print()
    for name, tally in tallies.items():
        calls = sum(len(s) for s in tally.samples.values())
        acked, present = checks[name]
        print(
            f"{name}: {calls} calls in {tally.seconds:.1f} s = "
            f"{calls / tally.seconds:.1f} calls/s; "
            f"saves acknowledged {acked}, present exactly once {present}, lost {acked - present}"
        )
    pg, disk = tallies.get("postgres"), tallies.get("disk")
    if pg and disk:
        print()
        print("| op | p50 postgres / disk | p95 postgres / disk | p95 target (postgres) |")
        print("|---|---:|---:|---|")
        for op, _ in OPS:
            a, b = pg.samples.get(op), disk.samples.get(op)
            if a and b:
                target = TARGETS.get(op)
                met = ""
                if target is not None:
                    met = f"<= {target:.0f} ms: {'met' if p95(a) <= target else 'missed'}"
                print(
                    f"| {op} | {statistics.median(a) / statistics.median(b):.2f}x | "
                    f"{p95(a) / p95(b):.2f}x | {met} |"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 agents, 5k items, 2x8 s")
    parser.add_argument("--seconds", type=float, help="load per backend (60)")
    parser.add_argument("--slices", type=int, help="alternations per backend (3)")
    parser.add_argument("--items", type=int, help="items in all (100000)")
    parser.add_argument("--agents", type=int, help="(100)")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--keep", type=Path, help="keep the work folder here")
    parser.add_argument(
        "--index-items", type=int, default=0,
        help="then index this many items into PostgreSQL and time the search primitives",
    )  # fmt: skip
    parser.add_argument("--serve-local", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_local is not None:
        serve_local(args.serve_local, args.port)
        return
    defaults = (20, 5_000, 16.0, 2) if args.quick else (100, 100_000, 60.0, 3)
    for name, value in zip(("agents", "items", "seconds", "slices"), defaults, strict=True):
        if getattr(args, name) is None:
            setattr(args, name, value)
    work = args.keep or Path(tempfile.mkdtemp(prefix="memdir-bench-team-"))
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o777)  # pgserver, run as root, runs PostgreSQL as a user of its own
    home = work / "home"
    agents = [f"agent-{n:03d}" for n in range(args.agents)]
    env = dict(os.environ, MEMDIR_HOME=str(home), MEMDIR_EMBEDDER="hashing")
    env.pop("MEMDIR_DATABASE_URL", None)
    os.environ.update(MEMDIR_HOME=str(home), MEMDIR_EMBEDDER="hashing")
    pg, url = start_postgres(work)
    fleets: list[Fleet] = []
    try:
        log(f"filling {args.agents} agents with {args.items:,} items ...")
        spent = fill(url, home, agents, args.items, args.seed)
        log("  " + ", ".join(f"{k} {v:.1f} s" for k, v in spent.items()))
        from memdir.storage.agents import database
        from memdir.storage.postgres.tokens import Tokens

        token, _ = Tokens(database(url)).create(agents)
        logs = work / "logs"
        logs.mkdir(exist_ok=True)
        serve = [sys.executable, "-m", "memdir", "serve", "--http", "--database-url", url]
        local = [sys.executable, str(Path(__file__).resolve()), "--serve-local", str(home)]
        fleets.append(start_fleet("postgres", [serve] * args.servers, env, logs))
        fleets[-1].token = token
        fleets.append(start_fleet("disk", [local] * args.servers, env, logs))
        fleets[-1].token = LOCAL_TOKEN
        tallies = {fleet.name: Tally() for fleet in fleets}
        per_slice = args.seconds / args.slices
        for n in range(args.slices):
            for fleet in fleets if n % 2 == 0 else reversed(fleets):
                log(f"load on {fleet.name}, slice {n + 1}/{args.slices} ({per_slice:.0f} s) ...")
                anyio.run(
                    run_load,
                    fleet,
                    agents,
                    args.clients,
                    per_slice,
                    args.seed + n,
                    tallies[fleet.name],
                )
        for fleet in fleets:
            fleet.stop()
        checks = {"postgres": present_pg(url, tallies["postgres"]),
                  "disk": present_disk(home, tallies["disk"])}  # fmt: skip
        print(
            f"bench/team.py: {args.servers} servers per backend, {args.clients} clients, "
            f"{args.agents} agents, {args.items:,} items, {args.seconds:g} s per backend in "
            f"{args.slices} alternating slices"
        )
        print("fill: " + ", ".join(f"{k} {v:.1f} s" for k, v in spent.items()))
        report(tallies, checks)
        calls = sum(len(s) for s in tallies["postgres"].samples.values())
        print()
        print("postgres after the load: " + json.dumps(database_figures(url, calls)))
        if args.index_items:
            log(f"index probe: up to {args.index_items:,} items into PostgreSQL's index ...")
            probe = index_probe(url, home, agents, args.index_items, 200, args.seed)
            print("index probe (deep-search primitives, depth 200): " + json.dumps(probe))
            print("postgres with the index: " + json.dumps(database_figures(url, calls)))
    finally:
        for fleet in fleets:
            fleet.stop()
        from memdir.storage.agents import close_databases

        close_databases()
        pg.cleanup()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
