"""LoCoMo evidence retrieval through memdir's own search, scored by the shared scorer.

    .venv/bin/python bench/locomo.py                       # memdir + baselines, dev split
    .venv/bin/python bench/locomo.py --methods plugin      # memdir only
    .venv/bin/python bench/locomo.py --embedder hashing    # any memdir embedder
    .venv/bin/python bench/locomo.py --keep /tmp/lc-keep   # build the folders once, reuse
    .venv/bin/python bench/locomo.py --backend postgres    # SQLite, then PostgreSQL, compared

Each conversation goes into a fresh memdir folder: one journal file per
session (``journal/YYYY-MM-DD-sNN.md``), one ``## speaker`` section per turn
carrying the session's date and time, and an image's caption as the words
"[shares ...]" (what a person reading the log would see). Every question is
run through ``Memory.search(question, k, mode="deep")`` (the sessions are
years old, so their tier is archive). ``../shared/bench/locomo_bench.py``
scores the plugin beside its baselines (FTS5 with Porter, MiniLM dense, their
RRF hybrid) in the same call, so the figures stay comparable.

``--keep DIR`` (or ``MEMDIR_BENCH_KEEP``) builds each folder under DIR once and
reuses it, index and vectors included, while the data and embedder stay the same.

``--backend postgres`` runs memdir twice in one run: on SQLite, then with the same
folders' rows in PostgreSQL (``storage.postgres.index.postgres_index``: the real
``Index`` and ``index.search`` over ``PgIndex``, one agent per conversation in one
table; pgserver started in a temporary folder, or ``MEMDIR_DATABASE_URL``), and prints
both R@10, their difference (the issue's target: at most 0.02), each backend's search
p50 and its index bytes per item.

The baselines need the bench extras: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from bench_folders import built_folder

import memdir
from memdir.files.sections import Section, SectionDocument

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("MEMDIR_SHARED_BENCH", HERE.parent.parent / "shared" / "bench"))
EMBEDDER = os.environ.get("MEMDIR_BENCH_EMBEDDER", "minilm")
KEEP = os.environ.get("MEMDIR_BENCH_KEEP", "")
BACKEND = os.environ.get("MEMDIR_BENCH_BACKEND", "sqlite")
DATABASE_URL = os.environ.get("MEMDIR_BENCH_DATABASE_URL", "")
SCHEMA = "bench_locomo"
RETRIEVERS: list[MemdirRetriever] = []
"""every retriever made in this process (``--backend postgres`` reads their sizes)"""


def session_moment(text: str) -> datetime | None:
    """'1:56 pm on 8 May, 2023' -> a datetime (naive, read as UTC)."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None


def render_session(number: int, date_text: str, turns: list[dict[str, Any]]) -> str:
    moment = session_moment(date_text)
    stamp = moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else ""
    doc = SectionDocument(f"# Session {number}: {date_text}\n")
    for turn in turns:
        body = turn["text"]
        if turn.get("caption"):
            body += f" [shares {turn['caption']}]"
        meta = {"date": stamp} if stamp else {}
        doc.append(Section(turn["speaker"], body, meta))
    return doc.render()


class MemdirRetriever:
    """A locomo_bench plugin: one memdir folder per conversation."""

    name = f"memdir({EMBEDDER})" if BACKEND == "sqlite" else f"memdir({EMBEDDER}, {BACKEND})"

    def __init__(self) -> None:
        RETRIEVERS.append(self)
        self.backend = BACKEND
        self.db: Any = None
        if BACKEND == "postgres":
            from memdir.storage.postgres.db import Database

            self.db = Database(DATABASE_URL, schema=SCHEMA)
        if KEEP:
            self.root = Path(KEEP)
            self.root.mkdir(parents=True, exist_ok=True)
        else:
            self.tmp = tempfile.TemporaryDirectory(prefix="memdir-locomo-")
            self.root = Path(self.tmp.name)
        self.memories: dict[str, memdir.Memory] = {}
        self.dia_ids: dict[str, dict[tuple[str, str], str]] = {}

    def index(self, conv_id: str, docs: list[dict[str, Any]]) -> None:
        folder = self.root / re.sub(r"\W", "_", conv_id)
        sessions: dict[int, list[dict[str, Any]]] = {}
        for doc in docs:
            sessions.setdefault(doc["session"], []).append(doc)
        files: dict[str, str] = {}
        mapping: dict[tuple[str, str], str] = {}
        for number, turns in sorted(sessions.items()):
            moment = session_moment(turns[0]["date"])
            day = moment.strftime("%Y-%m-%d") if moment else "undated"
            relpath = f"journal/{day}-s{number:02d}.md"
            files[relpath] = render_session(number, turns[0]["date"], turns)
            seen: dict[str, int] = {}
            for turn in turns:
                count = seen.get(turn["speaker"], 0) + 1
                seen[turn["speaker"]] = count
                anchor = turn["speaker"] if count == 1 else f"{turn['speaker']} ({count})"
                mapping[(relpath, anchor)] = turn["dia_id"]
        memory = built_folder(folder, files, EMBEDDER, lambda f: memdir.open(f, embedder=EMBEDDER))
        if self.db is not None:
            from memdir.storage.postgres.index import postgres_index

            embedder = memory.index.embedder
            memory.index.close()
            memory.index = postgres_index(
                memory.root, memory.manifest, self.db, embedder=embedder, clock=memory.clock,
                agent=folder.name, lock=memory.lock,
            )  # fmt: skip
            memory.reindex()
        self.memories[conv_id] = memory
        self.dia_ids[conv_id] = mapping

    def search(self, conv_id: str, query: str, k: int) -> list[str]:
        hits = self.memories[conv_id].search(query, k=k, mode="deep")
        mapping = self.dia_ids[conv_id]
        places = [(hit.path, hit.anchor) for hit in hits]
        return [mapping[place] for place in places if place in mapping]

    def bytes_per_item(self) -> tuple[int, int]:
        """(bytes the index takes, items) over every conversation: SQLite's files
        (``index.db`` with its WAL and the vector matrix's copy), PostgreSQL's tables
        with their indexes (GIN, HNSW, b-trees) and TOAST."""
        items = sum(memory.index.rows.count() for memory in self.memories.values())
        if self.db is None:
            size = sum(
                path.stat().st_size
                for memory in self.memories.values()
                for path in (memory.root / ".memdir").glob("index.db*")
            )
            return size, items
        row = (
            self.db.reader()
            .execute(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class AS c JOIN pg_namespace "
                "AS n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r' "
                "AND c.relname IN ('items', 'index_files', 'index_stats')",
                (SCHEMA,),
            )
            .fetchone()
        )
        return int(row[0] or 0), items


def _newest_summary(out: Path) -> dict[str, Any]:
    import json

    newest = max(out.glob("locomo_*.json"), key=lambda path: path.stat().st_mtime)
    summary: dict[str, Any] = json.loads(newest.read_text())["summaries"][-1]
    return summary


def _both_backends(locomo_bench: Any, args: list[str]) -> None:
    """SQLite, then PostgreSQL over the same folders, in this one run; both printed."""
    import time

    from pg_search import start_database  # type: ignore[import-not-found]

    url = os.environ.get("MEMDIR_DATABASE_URL")
    stop = None
    if not url:
        url, stop = start_database()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    os.environ["MEMDIR_BENCH_DATABASE_URL"] = url
    keep = None
    if not os.environ.get("MEMDIR_BENCH_KEEP"):  # both passes read the same folders
        keep = tempfile.TemporaryDirectory(prefix="memdir-locomo-both-")
        os.environ["MEMDIR_BENCH_KEEP"] = keep.name
    out = Path(args[args.index("--out") + 1])
    results: dict[str, tuple[dict[str, Any], tuple[int, int]]] = {}
    passes: dict[str, MemdirRetriever] = {}
    try:
        for backend in ("sqlite", "postgres"):
            os.environ["MEMDIR_BENCH_BACKEND"] = backend
            sys.modules.pop("locomo", None)  # the plugin module again, with this backend
            sys.argv = ["locomo_bench.py", *args]
            locomo_bench.main()
            time.sleep(1.1)  # the next run's result file has a later stamp
            retriever = sys.modules["locomo"].RETRIEVERS[-1]
            results[backend] = (_newest_summary(out), retriever.bytes_per_item())
            passes[backend] = retriever
        ratio = _interleaved(locomo_bench, passes["sqlite"], passes["postgres"])
    finally:
        for retriever in passes.values():
            for memory in retriever.memories.values():
                memory.close()
        if stop is not None:
            stop()
        if keep is not None:
            keep.cleanup()
    print("\n### SQLite and PostgreSQL, one run (LoCoMo dev, categories 1-4)\n")
    print("| backend | R@5 | R@10 | query p50 ms | p95 ms | index bytes/item | items |")
    print("|---|---|---|---|---|---|---|")
    for backend, (summary, (size, items)) in results.items():
        overall = summary["overall_cat1_4"]
        print(
            f"| {backend} | {overall['recall@5']:.4f} | {overall['recall@10']:.4f} | "
            f"{summary['latency_ms']['p50']:.2f} | {summary['latency_ms']['p95']:.2f} | "
            f"{size / max(items, 1):.0f} | {items} |"
        )
    sqlite_r10 = results["sqlite"][0]["overall_cat1_4"]["recall@10"]
    pg_r10 = results["postgres"][0]["overall_cat1_4"]["recall@10"]
    verdict = "within" if abs(pg_r10 - sqlite_r10) <= 0.02 else "NOT within"
    print(
        f"\nR@10 PostgreSQL - SQLite: {pg_r10 - sqlite_r10:+.4f} ({verdict} 0.02); "
        f"search p50 PostgreSQL / SQLite, interleaved per question: {ratio:.2f}x"
    )


def _interleaved(locomo_bench: Any, sqlite: MemdirRetriever, postgres: MemdirRetriever) -> float:
    """Each question searched on SQLite then on PostgreSQL, one after the other (the
    load this machine is under weighs on both alike); the ratio of their p50s."""
    import statistics
    import time

    _, questions, _ = locomo_bench.load_locomo(locomo_bench.DEFAULT_DATA)
    times: dict[str, list[float]] = {"sqlite": [], "postgres": []}
    for question in questions:
        if question["conv"] not in sqlite.memories or not question["evidence"]:
            continue
        for name, retriever in (("sqlite", sqlite), ("postgres", postgres)):
            began = time.perf_counter()
            retriever.search(question["conv"], question["question"], 10)
            times[name].append(time.perf_counter() - began)
    return statistics.median(times["postgres"]) / statistics.median(times["sqlite"])


def main() -> None:
    sys.path.insert(0, str(SHARED))
    sys.path.insert(0, str(HERE))
    import locomo_bench  # type: ignore[import-not-found]

    args = sys.argv[1:]
    for flag, variable in (
        ("--embedder", "MEMDIR_BENCH_EMBEDDER"),
        ("--keep", "MEMDIR_BENCH_KEEP"),
        ("--backend", "MEMDIR_BENCH_BACKEND"),
    ):
        if flag in args:
            at = args.index(flag)
            os.environ[variable] = args[at + 1]
            del args[at : at + 2]
    defaults = {
        "--methods": "fts5_porter,dense,hybrid_porter,plugin",
        "--plugin": "locomo:MemdirRetriever",
        "--split": "dev",
        "--out": str(HERE.parent / "bench-results"),
    }
    for flag, value in defaults.items():
        if flag not in args:
            args += [flag, value]
    if os.environ.get("MEMDIR_BENCH_BACKEND", "sqlite") == "postgres":
        _both_backends(locomo_bench, args)
        return
    sys.argv = ["locomo_bench.py", *args]
    locomo_bench.main()


if __name__ == "__main__":
    main()
