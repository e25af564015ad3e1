"""The team server under load: three ``memdir serve --http --database-url`` processes,
16 clients over 100 agents, against the same workload on folders on disk.

    .venv/bin/python bench/team.py [--quick] [--seconds 60] [--items 100000]
                                   [--agents 100] [--clients 16] [--servers 3]
                                   [--rate 4,8,16,24,32] [--paced-seconds 20]
                                   [--no-closed | --no-open]

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

Two loads, each against both backends. The closed loop (``--seconds``): each client
sends its next call as soon as the last is answered, so 16 calls are always in flight
and the figure is the saturated one (throughput, and latency that is mostly queue).
The open loop (``--rate``, a bounded load): the clients together send ``rate`` calls
a second, each client one every ``clients / rate`` seconds from a random phase,
whether or not its last call is answered, each call timed from when it was due (so a
queue, on the servers or in this process, shows in the times rather than slowing the
load down); run at each rate given, it prints p50/p95 per operation against the
targets and the highest rate tried at which both p95 targets hold.

Printed: per backend and operation, count, p50 and p95 (ms, at the client), refused
or failed calls, throughput; each acknowledged save looked for in the files
afterwards (acknowledged vs present: 0 lost); the ratio PostgreSQL / disk; the
database's size, its index bytes per item and history rows per call.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
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


def settle(url: str) -> None:
    """``VACUUM ANALYZE`` the tables, as autovacuum does to a database in steady state:
    straight after the fill the planner still has an empty table's row counts, and the
    BM25 statement then reads every item of the agent instead of the GIN index's
    matches (bench/RESULTS.md: 6-15 ms a statement instead of 0.5)."""
    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("items", "files", "index_files", "index_stats", "activities"):
            conn.execute(f"VACUUM ANALYZE memdir.{table}")


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
    span: float = 0.0
    """seconds from the start until the last call was answered (open loop: past
    ``seconds`` by the queue left at the end)"""
    late: list[float] = field(default_factory=list)
    """open loop: ms each call went out after it was due (the load's own lag)"""

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


async def open_sessions(
    stack: contextlib.AsyncExitStack, fleet: Fleet, number: int, mine: list[str]
) -> dict[str, Client]:
    """Client ``number``'s sessions, one per agent it serves, each warmed (the agent
    opened in its server) before the clock starts."""
    opened: dict[str, Client] = {}
    for n, agent in enumerate(mine):
        base = fleet.bases[(number + n) % len(fleet.bases)]
        url = f"{base}/agents/{agent}/mcp"
        for attempt in range(3):  # a keep-alive connection the server just closed
            try:
                client = await stack.enter_async_context(session(url, fleet.token))
                await client.list_tools()
                await client.call_tool("memory_search", {"query": "warm"})
                opened[agent] = client
                break
            except Exception as exc:
                log(f"  {fleet.name}: warming {agent} failed ({exc!r}), attempt {attempt}")
    return opened


async def run_load(
    fleet: Fleet,
    agents: list[str],
    clients: int,
    seconds: float,
    seed: int,
    tally: Tally,
    rate: float | None = None,
) -> None:
    """``clients`` clients for ``seconds``. Closed loop (``rate`` None): each sends its
    next call when the last is answered, so the load is whatever the servers take.
    Open loop (``rate``: calls a second in all): each client sends a call every
    ``clients / rate`` seconds from a random phase, whether or not the last is
    answered, and a call's time runs from when it was due, so a queue shows in it."""
    queries = Corpus(seed).queries(500, seed)
    names = [op for op, _ in OPS]
    weights = [w for _, w in OPS]
    began = [0.0]
    ready = anyio.Event()
    warm = [0]

    async def client(number: int) -> None:
        rng = random.Random(seed * 1000 + number)
        mine = [a for j, a in enumerate(agents) if j % clients == number]
        mine = mine or [agents[number % len(agents)]]  # fewer agents than clients: share
        with contextlib.suppress(Exception):  # a session broken at its close: logged above
            async with contextlib.AsyncExitStack() as stack:
                open_ = await open_sessions(stack, fleet, number, mine)
                warm[0] += 1
                await ready.wait()
                if rate is None:
                    while time.monotonic() < began[0] + seconds:
                        await one_call(rng, open_, time.perf_counter())
                    return
                every = clients / rate
                due = began[0] + rng.random() * every
                async with anyio.create_task_group() as calls:
                    while due < began[0] + seconds:
                        await anyio.sleep_until(due)
                        late = time.monotonic() - due
                        tally.late.append(late * 1000)
                        # the call's clock starts when it was due, not when it went
                        calls.start_soon(one_call, rng, open_, time.perf_counter() - late)
                        due += every

    async def one_call(rng: random.Random, open_: dict[str, Client], since: float) -> None:
        agent = rng.choice(sorted(open_))
        op = rng.choices(names, weights)[0]
        tool, args = call_for(op, rng, queries)
        try:
            result = await open_[agent].call_tool(tool, args)
            ok = not result.is_error
        except Exception as exc:
            log(f"  {fleet.name} {op} failed: {type(exc).__name__}: {exc}")
            ok = False
        tally.add(op, (time.perf_counter() - since) * 1000, ok)
        if ok and op == "save":
            tally.saved.setdefault(agent, []).append(args["content"])

    async def start() -> None:
        waited = time.monotonic() + 600  # a client whose warming failed whole never counts
        while warm[0] < clients and time.monotonic() < waited:
            await anyio.sleep(0.05)
        began[0] = time.monotonic()
        ready.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(start)
        for number in range(clients):
            tasks.start_soon(client, number)
    tally.seconds += seconds
    tally.span += time.monotonic() - began[0]


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
    """The nearest-rank 95th percentile (of 2 samples, the larger)."""
    ordered = sorted(samples)
    return ordered[max(math.ceil(len(ordered) * 0.95) - 1, 0)]


def index_probe(
    url: str, home: Path, agents: list[str], items: int, runs: int, seed: int
) -> dict[str, Any]:
    """The search primitives over PostgreSQL's index at scale, beside SQLite's.

    The agents' files are indexed into the database's ``items`` (``PgIndex``, the rows
    ``storage.postgres.index`` keeps; the vectors copied by content), up to ``items``
    items, all agents in one table as a team's database holds them. Then ``runs``
    queries, each on a random agent, run the keyword (BM25) and the vector (cosine)
    primitive of a deep search (depth 200) on SQLite and on PostgreSQL in turn."""

    from pg_search import copy_index

    from memdir.index.search import Filters, _floor, _keyword, _semantic
    from memdir.index.words import query_words
    from memdir.storage.agents import database
    from memdir.storage.postgres.index import PgIndex
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
        copy_index(memory, pg)
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


def report(tallies: dict[str, Tally]) -> None:
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
        print(
            f"{name}: {calls} calls in {tally.seconds:.1f} s = {calls / tally.seconds:.1f} calls/s"
        )
    disk = tallies.get("disk")
    for name in ("postgres", "postgres-baseline"):
        pg = tallies.get(name)
        if not (pg and disk):
            continue
        print()
        print(f"| op | p50 {name} / disk | p95 {name} / disk | p95 target ({name}) |")
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


def report_paced(runs: dict[float, dict[str, Tally]]) -> None:
    """The open-loop runs: per rate, backend and operation, p50/p95 from when each call
    was due, against the targets; then the highest rate tried at which both hold."""
    print("| rate /s | backend | op | calls | p50 ms | p95 ms | target | failed |")
    print("|---:|---|---|---:|---:|---:|---|---:|")
    held: dict[str, list[float]] = {}
    for rate, tallies in runs.items():
        for name, tally in tallies.items():
            met = True
            for op, _ in OPS:
                samples = tally.samples.get(op, [])
                if not samples:
                    continue
                target = TARGETS.get(op)
                said = ""
                if target is not None:
                    ok = p95(samples) <= target
                    met = met and ok
                    said = f"<= {target:.0f}: {'met' if ok else 'missed'}"
                print(
                    f"| {rate:g} | {name} | {op} | {len(samples)} | "
                    f"{statistics.median(samples):.1f} | {p95(samples):.1f} | {said} | "
                    f"{tally.failed.get(op, 0)} |"
                )
            if met and all(op in tally.samples for op in TARGETS):
                held.setdefault(name, []).append(rate)
    print()
    for rate, tallies in runs.items():
        for name, tally in tallies.items():
            calls = sum(len(s) for s in tally.samples.values())
            late = p95(tally.late) if tally.late else 0.0
            print(
                f"rate {rate:g}/s {name}: {calls} calls answered in {tally.span:.1f} s "
                f"({calls / tally.seconds:.1f} calls/s over the {tally.seconds:g} s scheduled); "
                f"sent late by the load itself p95 {late:.1f} ms"
            )
    print()
    names = {name for tallies in runs.values() for name in tallies}
    for name in sorted(names):
        rates = held.get(name, [])
        tried = ", ".join(f"{r:g}" for r in runs)
        best = f"{max(rates):g} calls/s" if rates else "none of the rates tried"
        print(f"{name}: both p95 targets hold up to {best} (tried {tried})")


def _rates(text: str) -> list[float]:
    rates = [float(part) for part in text.split(",") if part.strip()]
    if not rates or any(rate <= 0 for rate in rates):
        raise argparse.ArgumentTypeError("--rate takes calls a second, > 0, comma-separated")
    return rates


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
    parser.add_argument(
        "--rate", type=_rates, default=None,
        help="open loop: calls a second in all, comma-separated for several "
        "(default 4,8,16,24,32; --quick 4,8,16)",
    )  # fmt: skip
    parser.add_argument("--paced-seconds", type=float, help="per backend and rate (20)")
    parser.add_argument("--no-closed", action="store_true", help="the open loop only")
    parser.add_argument("--no-open", action="store_true", help="the closed loop only")
    parser.add_argument(
        "--baseline-src", type=Path, action="append",
        help="also serve PostgreSQL from this source tree (its src/ folder), in the same "
        "slices: a before/after of a change on one fill and one machine load (repeatable)",
    )  # fmt: skip
    parser.add_argument("--serve-local", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_local is not None:
        serve_local(args.serve_local, args.port)
        return
    defaults = (
        (20, 5_000, 16.0, 2, [4.0, 8.0, 16.0], 8.0)
        if args.quick
        else (100, 100_000, 60.0, 3, [4.0, 8.0, 16.0, 24.0, 32.0], 20.0)
    )
    chosen = ("agents", "items", "seconds", "slices", "rate", "paced_seconds")
    for name, value in zip(chosen, defaults, strict=True):
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
        began = time.perf_counter()
        settle(url)
        spent["vacuum analyze (postgres)"] = time.perf_counter() - began
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
        for n, tree in enumerate(args.baseline_src or []):  # other trees: before/after
            older = dict(env, PYTHONPATH=str(tree.resolve()))
            name = "postgres-baseline" + (f"-{n + 1}" if n else "")
            fleets.append(start_fleet(name, [serve] * args.servers, older, logs))
            fleets[-1].token = token
            log(f"{name}: {tree}")
        tallies = {fleet.name: Tally() for fleet in fleets}
        per_slice = args.seconds / args.slices
        for n in range(0 if args.no_closed else args.slices):
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
        paced: dict[float, dict[str, Tally]] = {}
        for n, rate in enumerate([] if args.no_open else args.rate):
            paced[rate] = {fleet.name: Tally() for fleet in fleets}
            for fleet in fleets if n % 2 == 0 else reversed(fleets):
                log(f"open loop on {fleet.name}, {rate:g} calls/s ({args.paced_seconds:g} s) ...")
                anyio.run(
                    partial(run_load, rate=rate),
                    fleet,
                    agents,
                    args.clients,
                    args.paced_seconds,
                    args.seed + 100 + n,
                    paced[rate][fleet.name],
                )
        for fleet in fleets:
            fleet.stop()
        every = {name: Tally() for name in tallies}  # each save of both loops, looked for
        for name in every:
            for each in [tallies[name], *(run[name] for run in paced.values())]:
                for agent, saved in each.saved.items():
                    every[name].saved.setdefault(agent, []).extend(saved)
        checks = {
            name: present_disk(home, found) if name == "disk" else present_pg(url, found)
            for name, found in every.items()
        }
        print(
            f"bench/team.py: {args.servers} servers per backend, {args.clients} clients, "
            f"{args.agents} agents, {args.items:,} items, {args.seconds:g} s per backend in "
            f"{args.slices} alternating slices"
        )
        print("fill: " + ", ".join(f"{k} {v:.1f} s" for k, v in spent.items()))
        if not args.no_closed:
            print()
            print("closed loop (each client sends its next call when the last is answered):")
            report(tallies)
        if paced:
            print()
            print(
                f"open loop ({args.clients} clients, each a call every clients/rate s, "
                "timed from when it was due):"
            )
            report_paced(paced)
        print()
        for name, (acked, present) in checks.items():
            print(
                f"{name}, both loops: saves acknowledged {acked}, present exactly once "
                f"{present}, lost {acked - present}"
            )
        calls = sum(
            len(s)
            for tally in [tallies["postgres"], *(run["postgres"] for run in paced.values())]
            for s in tally.samples.values()
        )
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
