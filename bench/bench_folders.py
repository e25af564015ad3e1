"""Memory folders the retrieval benchmarks build (bench/locomo.py, bench/realmem.py).

A benchmark writes its files into a fresh folder and reindexes it; with a kept root
(``--keep DIR`` or ``MEMDIR_BENCH_KEEP``) a folder built before from the same files
with the same embedder is opened as it is, its index and vectors included, so a rerun
spends its time on the searches only.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import memdir

BUILT = ".bench-built"
"""a file in a kept folder naming what it was built from (the files' hash, the embedder)"""


def built_folder(
    folder: Path, files: dict[str, str], embedder: str, open_it: Callable[[Path], memdir.Memory]
) -> memdir.Memory:
    """The memory in ``folder`` holding ``files`` (relpath -> text), indexed."""
    joined = "\x00".join(f"{relpath}\x00{text}" for relpath, text in sorted(files.items()))
    stamp = f"{hashlib.sha256(joined.encode()).hexdigest()[:16]} {embedder}"
    marker = folder / ".memdir" / BUILT
    if marker.is_file() and marker.read_text() == stamp:
        return open_it(folder)
    if folder.exists():
        shutil.rmtree(folder)
    memdir.init(folder)
    for relpath, text in files.items():
        (folder / relpath).write_text(text, encoding="utf-8")
    memory = open_it(folder)
    memory.reindex()
    marker.write_text(stamp)
    return memory


# -- the index on PostgreSQL (``--backend postgres``) ------------------------------------

BACKEND = "MEMDIR_BENCH_BACKEND"
"""``sqlite`` (the default) or ``postgres``: where a benchmark's folders keep their rows"""
DATABASE_URL = "MEMDIR_BENCH_DATABASE_URL"
_databases: dict[tuple[str, str], Any] = {}


def backend() -> str:
    return os.environ.get(BACKEND, "sqlite")


def _database(schema: str) -> Any:
    from memdir.storage.postgres.db import Database

    key = (os.environ[DATABASE_URL], schema)
    if key not in _databases:
        _databases[key] = Database(key[0], schema=schema)
    return _databases[key]


def on_backend(memory: memdir.Memory, agent: str, schema: str) -> memdir.Memory:
    """``memory`` with its index rows in PostgreSQL (``postgres_index``: the real
    ``Index`` and search, one agent per folder) when the backend is ``postgres``,
    reindexed there (its files' rows, then every text embedded); as it is otherwise."""
    if backend() != "postgres":
        return memory
    from memdir.storage.postgres.index import postgres_index

    embedder = memory.index.embedder
    memory.index.close()
    memory.index = postgres_index(
        memory.root, memory.manifest, _database(schema), embedder=embedder,
        clock=memory.clock, agent=agent, lock=memory.lock,
    )  # fmt: skip
    memory.reindex()
    return memory


def index_size(memories: Iterable[memdir.Memory], schema: str) -> tuple[int, int]:
    """(bytes the index takes, items) over ``memories``: on SQLite their ``index.db``
    files (with the WAL and the vector matrix's copy); on PostgreSQL the tables with
    their indexes (GIN, HNSW, b-trees) and TOAST."""
    memories = list(memories)
    items = sum(memory.index.rows.count() for memory in memories)
    if backend() != "postgres":
        size = sum(
            path.stat().st_size
            for memory in memories
            for path in (memory.root / ".memdir").glob("index.db*")
        )
        return size, items
    row = (
        _database(schema)
        .reader()
        .execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class AS c JOIN pg_namespace "
            "AS n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r' "
            "AND c.relname IN ('items', 'index_files', 'index_stats')",
            (schema,),
        )
        .fetchone()
    )
    return int(row[0] or 0), items


def both_backends(
    run: Callable[[], dict[str, Any]],
    plugin_module: str,
    schema: str,
    overall: Callable[[dict[str, Any]], dict[str, float]],
    interleaved: Callable[[Any, Any], float],
) -> None:
    """``run`` (one pass of a benchmark, returning its plugin's summary) on SQLite, then
    on PostgreSQL over the same folders (a kept root shared by both), in this process;
    then both printed: R@5, R@10, p50, index bytes per item, R@10's difference, and the
    search p50 ratio measured with the two interleaved per question (``interleaved``)."""
    import tempfile

    import psycopg
    from pg_search import start_database  # type: ignore[import-not-found]

    url = os.environ.get("MEMDIR_DATABASE_URL")
    stop = None
    if not url:
        url, stop = start_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    os.environ[DATABASE_URL] = url
    keep = None
    if not os.environ.get("MEMDIR_BENCH_KEEP"):
        keep = tempfile.mkdtemp(prefix="memdir-bench-both-")
        os.environ["MEMDIR_BENCH_KEEP"] = keep
    results: dict[str, tuple[dict[str, Any], tuple[int, int]]] = {}
    passes: dict[str, Any] = {}
    try:
        for name in ("sqlite", "postgres"):
            os.environ[BACKEND] = name
            sys.modules.pop(plugin_module, None)  # the plugin module again, with this backend
            summary = run()
            retriever = sys.modules[plugin_module].RETRIEVERS[-1]
            passes[name] = retriever
            results[name] = (summary, index_size(retriever.memories.values(), schema))
        ratio = interleaved(passes["sqlite"], passes["postgres"])
    finally:
        for retriever in passes.values():
            for memory in retriever.memories.values():
                memory.close()
        for database in _databases.values():
            database.close()
        _databases.clear()
        if stop is not None:
            stop()
        if keep is not None:
            shutil.rmtree(keep, ignore_errors=True)
    print("\n### SQLite and PostgreSQL, one run\n")
    print("| backend | R@5 | R@10 | query p50 ms | p95 ms | index bytes/item | items |")
    print("|---|---|---|---|---|---|---|")
    for name, (summary, (size, items)) in results.items():
        scores = overall(summary)
        print(
            f"| {name} | {scores['recall@5']:.4f} | {scores['recall@10']:.4f} | "
            f"{summary['latency_ms']['p50']:.2f} | {summary['latency_ms']['p95']:.2f} | "
            f"{size / max(items, 1):.0f} | {items} |"
        )
    difference = (
        overall(results["postgres"][0])["recall@10"] - overall(results["sqlite"][0])["recall@10"]
    )
    verdict = "within" if abs(difference) <= 0.02 else "NOT within"
    print(
        f"\nR@10 PostgreSQL - SQLite: {difference:+.4f} ({verdict} 0.02); search p50 "
        f"PostgreSQL / SQLite, the two interleaved per question: {ratio:.2f}x"
    )


def p50_ratio(pairs: Iterable[tuple[Callable[[], object], Callable[[], object]]]) -> float:
    """The p50 of the second calls over the p50 of the first, each pair run in turn."""
    import statistics
    import time

    first: list[float] = []
    second: list[float] = []
    for one, two in pairs:
        for call, times in ((one, first), (two, second)):
            began = time.perf_counter()
            call()
            times.append(time.perf_counter() - began)
    return statistics.median(second) / statistics.median(first)
