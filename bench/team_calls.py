"""One call's cost on the team server, unloaded: in-process and through one server.

    .venv/bin/python bench/team_calls.py [--agents 5] [--items 5000] [--runs 60]

It starts PostgreSQL (pgserver), fills ``--agents`` agents with ``--items`` items in
all (bench/team.py's fill: the same files pushed into the database and indexed on
disk, every vector made on both), then measures, with the two backends taken in turn
call by call so the machine's load falls on both alike:

- in-process (no server): ``Memory.search`` over ``open_agent`` (PostgreSQL) and over
  the folder on disk, p50 each and their ratio, and the PostgreSQL round trips a
  search makes (each statement or transaction command sent on its own, plus one per
  pipeline: a pipeline sends its statements together and waits once); and the round
  trips of each operation as the team server runs it (the tool and its log rows);
- through one server of each backend (``memdir serve --http --database-url`` and the
  same ``TeamApp`` over the folders on disk), one client, a warm agent: search, save,
  get, notebook p50 at the client, and their ratio.

PostgreSQL is measured twice: with the settings as shipped (``storage.postgres.
vector_cache``: an agent's vectors held in memory from ``MEMDIR_PG_VECTOR_CACHE_ITEMS``
items on, 5,000 unless set: agents smaller than that are searched in SQL either way)
and with ``MEMDIR_PG_VECTOR_CACHE=off`` (pgvector's cosine in SQL): in-process the
same ``Memory`` in turn, through servers a second fleet started with the setting off.

Times swing with the machine's load; the ratios are measured in the same run.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import psycopg
from scale import Corpus
from team import (
    LOCAL_TOKEN,
    call_for,
    fill,
    log,
    session,
    settle,
    start_fleet,
    start_postgres,
)

import memdir


class RoundTrips:
    """Counts the times psycopg waits for PostgreSQL: each statement or transaction
    command (BEGIN, SAVEPOINT, COMMIT) sent on its own waits for its answer; a pipeline
    (``Connection.pipeline``, and ``executemany``'s own) sends what it holds together
    and counts once."""

    def __init__(self) -> None:
        self.count = 0

    @contextmanager
    def watching(self) -> Iterator[None]:
        wait = psycopg.Connection.wait
        pipeline = psycopg.Connection.pipeline
        nolock = psycopg.Connection._pipeline_nolock
        counter = self

        def waited(conn: Any, *args: Any, **kwargs: Any) -> Any:
            if conn._pipeline is None:
                counter.count += 1
            return wait(conn, *args, **kwargs)

        def piped(original: Callable[..., Any]) -> Callable[..., Any]:
            @contextmanager
            def wrapper(conn: Any) -> Iterator[Any]:
                if conn._pipeline is None:
                    counter.count += 1
                with original(conn) as p:
                    yield p

            return wrapper

        psycopg.Connection.wait = waited  # type: ignore[method-assign]
        psycopg.Connection.pipeline = piped(pipeline)  # type: ignore[method-assign]
        psycopg.Connection._pipeline_nolock = piped(nolock)  # type: ignore[method-assign]
        try:
            yield
        finally:
            psycopg.Connection.wait = wait  # type: ignore[method-assign]
            psycopg.Connection.pipeline = pipeline  # type: ignore[method-assign]
            psycopg.Connection._pipeline_nolock = nolock  # type: ignore[method-assign]


def in_process(url: str, home: Path, agents: list[str], runs: int, seed: int) -> dict[str, Any]:
    from memdir.storage.agents import open_agent

    queries = Corpus(seed).queries(runs, seed)
    rng = random.Random(seed)
    pg = {a: open_agent(url, a, embedder="hashing") for a in agents}
    disk = {a: memdir.open(home / "agents" / a, embedder="hashing") for a in agents}
    times: dict[str, list[float]] = {"postgres": [], "postgres sql": [], "disk": []}
    trips: list[int] = []
    counter = RoundTrips()
    try:
        for agent in agents:  # warm: caches filled, connections open
            pg[agent].search("warm")
            disk[agent].search("warm")
        for query in queries:
            agent = rng.choice(agents)
            before = counter.count
            with counter.watching():
                t0 = time.perf_counter()
                pg[agent].search(query)
                times["postgres"].append((time.perf_counter() - t0) * 1000)
            trips.append(counter.count - before)
            with cache_off():  # the same search with pgvector's cosine in SQL
                t0 = time.perf_counter()
                pg[agent].search(query)
                times["postgres sql"].append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            disk[agent].search(query)
            times["disk"].append((time.perf_counter() - t0) * 1000)
    finally:
        for memory in (*pg.values(), *disk.values()):
            memory.close()
    pg50, disk50 = statistics.median(times["postgres"]), statistics.median(times["disk"])
    sql50 = statistics.median(times["postgres sql"])
    return {
        "search p50 ms postgres": round(pg50, 2),
        "search p50 ms postgres, cache off": round(sql50, 2),
        "search p50 ms disk": round(disk50, 2),
        "postgres / disk": round(pg50 / disk50, 2),
        "cache off / disk": round(sql50 / disk50, 2),
        "cache on / off": round(pg50 / sql50, 2),
        "round trips per search (postgres, median)": statistics.median(trips),
        "round trips per search (max)": max(trips),
    }


@contextmanager
def cache_off() -> Iterator[None]:
    """``MEMDIR_PG_VECTOR_CACHE=off`` for the calls inside (read at each search)."""
    import os

    from memdir.storage.postgres.vector_cache import ENV

    before = os.environ.get(ENV)
    os.environ[ENV] = "off"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before


def call_trips(url: str, agent: str, runs: int, seed: int) -> dict[str, float]:
    """Round trips of one tool call as the team server runs it (``TeamMCP.call_now``:
    the tool and the session's log rows; no HTTP), median per operation."""
    from memdir.server.team import PgAgents, TeamMCP

    queries = Corpus(seed).queries(200, seed)
    rng = random.Random(seed)
    source = PgAgents(url)
    memory = source.open(agent, read_only=False)
    mcp = TeamMCP(memory, read_only=False, run=lambda call: call())
    counter = RoundTrips()
    trips: dict[str, list[int]] = {}
    try:
        for op in ("search", "save", "get", "notebook", "journal"):
            mcp.call_now(*call_for(op, rng, queries), None)  # the session's activity made
        for _ in range(runs):
            for op in ("search", "save", "get", "notebook", "journal"):
                tool, args = call_for(op, rng, queries)
                before = counter.count
                with counter.watching():
                    mcp.call_now(tool, args, None)
                trips.setdefault(op, []).append(counter.count - before)
    finally:
        mcp.sessions.close()
        memory.close()
    return {op: statistics.median(found) for op, found in trips.items()}


async def through_servers(
    fleets: dict[str, Any], agents: list[str], runs: int, seed: int
) -> dict[str, dict[str, float]]:
    queries = Corpus(seed).queries(200, seed)
    rng = random.Random(seed)
    agent = agents[0]
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in fleets}
    async with (
        session(f"{fleets['postgres'].bases[0]}/agents/{agent}/mcp", fleets["postgres"].token)
        as on_pg,
        session(f"{fleets['postgres sql'].bases[0]}/agents/{agent}/mcp", fleets["postgres"].token)
        as on_sql,
        session(f"{fleets['disk'].bases[0]}/agents/{agent}/mcp", LOCAL_TOKEN) as on_disk,
    ):  # fmt: skip
        clients = {"postgres": on_pg, "postgres sql": on_sql, "disk": on_disk}
        for client in clients.values():
            await client.list_tools()
            for op in ("search", "save", "get", "notebook"):
                tool, args = call_for(op, rng, queries)
                await client.call_tool(tool, args)
        for _ in range(runs):
            for op in ("search", "save", "get", "notebook"):
                tool, args = call_for(op, rng, queries)
                for name, client in clients.items():
                    t0 = time.perf_counter()
                    result = await client.call_tool(tool, args)
                    ms = (time.perf_counter() - t0) * 1000
                    if result.is_error:
                        raise SystemExit(f"{name} {op} refused: {result.content}")
                    samples[name].setdefault(op, []).append(ms)
    return {
        name: {op: round(statistics.median(v), 2) for op, v in ops.items()}
        for name, ops in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=5)
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    import os

    work = Path(tempfile.mkdtemp(prefix="memdir-bench-calls-"))
    os.chmod(work, 0o777)  # pgserver, run as root, runs PostgreSQL as a user of its own
    home = work / "home"
    agents = [f"agent-{n:03d}" for n in range(args.agents)]
    env = dict(os.environ, MEMDIR_HOME=str(home), MEMDIR_EMBEDDER="hashing")
    env.pop("MEMDIR_DATABASE_URL", None)
    os.environ.update(MEMDIR_HOME=str(home), MEMDIR_EMBEDDER="hashing")
    pg, url = start_postgres(work)
    fleets: dict[str, Any] = {}
    try:
        log(f"filling {args.agents} agents with {args.items:,} items ...")
        fill(url, home, agents, args.items, args.seed)
        log("in-process searches ...")
        found = in_process(url, home, agents, args.runs, args.seed)
        print("in-process, as filled: " + ", ".join(f"{k} {v}" for k, v in found.items()))
        settle(url)
        found = in_process(url, home, agents, args.runs, args.seed)
        print(
            "in-process, after VACUUM ANALYZE: " + ", ".join(f"{k} {v}" for k, v in found.items())
        )
        trips = call_trips(url, agents[-1], max(args.runs // 4, 5), args.seed)
        print(
            "round trips of one call (TeamMCP.call_now: the tool and its log rows, median): "
            + ", ".join(f"{op} {n:g}" for op, n in trips.items())
        )
        from memdir.storage.agents import database
        from memdir.storage.postgres.tokens import Tokens

        token, _ = Tokens(database(url)).create(agents)
        logs = work / "logs"
        logs.mkdir()
        serve = [sys.executable, "-m", "memdir", "serve", "--http", "--database-url", url]
        here = Path(__file__).resolve().parent / "team.py"
        local = [sys.executable, str(here), "--serve-local", str(home)]
        fleets["postgres"] = start_fleet("postgres", [serve], env, logs)
        fleets["postgres"].token = token
        off = dict(env, MEMDIR_PG_VECTOR_CACHE="off")
        fleets["postgres sql"] = start_fleet("postgres-sql", [serve], off, logs)
        fleets["disk"] = start_fleet("disk", [local], env, logs)
        log("calls through one server each ...")
        medians = anyio.run(through_servers, fleets, agents, args.runs, args.seed)
        print("| op | postgres p50 ms | cache off | disk p50 ms | postgres / disk | off / disk |")
        print("|---|---:|---:|---:|---:|---:|")
        for op, ms in medians["postgres"].items():
            other, sql = medians["disk"][op], medians["postgres sql"][op]
            print(
                f"| {op} | {ms:.1f} | {sql:.1f} | {other:.1f} | {ms / other:.2f}x "
                f"| {sql / other:.2f}x |"
            )
    finally:
        for fleet in fleets.values():
            fleet.stop()
        from memdir.storage.agents import close_databases

        close_databases()
        pg.cleanup()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
