"""The search primitives on PostgreSQL beside SQLite's, on the LoCoMo dev turns, in one run.

    .venv/bin/python bench/pg_search.py                          # MiniLM, the dev split
    .venv/bin/python bench/pg_search.py --embedder hashing --conversations conv-26

Each conversation is built as bench/locomo.py builds it (a memdir folder, one journal
file per session, ``reindex``), then its files are indexed into PostgreSQL (started by
pgserver in a temporary folder, or ``MEMDIR_TEST_DATABASE_URL``) as one agent per
conversation, all in one table, as a team's database would hold them; the vectors are
copied over by content (the same embedder made both). Every question then runs through
each primitive as ``Memory.search(mode="deep")`` would call it (depth 200):

- keyword: SQLite's FTS5 ``bm25`` (``index.search._keyword``) beside PostgreSQL's BM25
  computed from the weighted tsvector (``PgIndex.keyword``) and ``ts_rank_cd``;
- vector: SQLite's cosine over the matrix (``_semantic``) beside PostgreSQL's exact
  cosine and its HNSW index (ef_search = depth);
- fused: step 2 of the ranking (``index.ranking.fuse``) over each backend's two lists;
- full: the whole ranking of a deep search, ``index.search.search``, on SQLite and on
  PostgreSQL (the real ``Index`` over ``PgIndex``: ``postgres_index``).

Printed: R@5 and R@10 (LoCoMo categories 1-4, the shared scorer), how much of SQLite's
top 10 each PostgreSQL list holds, and each primitive's p50 time as a ratio to SQLite's
measured beside it (interleaved, per question).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("MEMDIR_SHARED_BENCH", HERE.parent.parent / "shared" / "bench"))
DEPTH = 200


def start_database() -> tuple[str, Callable[[], None]]:
    url = os.environ.get("MEMDIR_TEST_DATABASE_URL")
    if url:
        return url, lambda: None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver  # type: ignore[import-untyped]

        base = Path(tempfile.mkdtemp(prefix="memdir-pg-bench-"))
        server = pgserver.get_server(base / "pgdata", cleanup_mode="delete")

    def stop() -> None:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)

    return str(server.get_uri()), stop


def copy_index(memory: Any, pg: Any) -> None:
    """Index ``memory``'s files into ``pg`` (a ``PgIndex``) and copy the vectors its
    SQLite index already made, by content: the same items on both, embedded once."""
    from memdir.storage.postgres.index import index_text

    for relpath, (name, layer) in sorted(memory.index.files_on_disk().items()):
        path = memory.root / relpath
        text = path.read_bytes().decode("utf-8", "surrogateescape")
        stat = path.stat()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", default=os.environ.get("MEMDIR_BENCH_EMBEDDER", "minilm"))
    parser.add_argument("--conversations", default="")
    args = parser.parse_args()
    os.environ["MEMDIR_BENCH_EMBEDDER"] = args.embedder
    sys.path.insert(0, str(SHARED))
    sys.path.insert(0, str(HERE))
    import locomo_bench  # type: ignore[import-not-found]
    from locomo import MemdirRetriever  # type: ignore[import-not-found]

    from memdir.index.ranking import fuse
    from memdir.index.search import Filters, _floor, _keyword, _semantic
    from memdir.index.search import search as run_search
    from memdir.index.words import query_words
    from memdir.storage.postgres.db import Database
    from memdir.storage.postgres.index import PgIndex, postgres_index
    from memdir.storage.seam import Scope

    convs, questions, _ = locomo_bench.load_locomo(locomo_bench.DEFAULT_DATA)
    wanted = args.conversations.split(",") if args.conversations else locomo_bench.SPLITS["dev"]
    questions = [
        q for q in questions
        if q["conv"] in wanted and q["category"] in (1, 2, 3, 4) and q["evidence"]
    ]  # fmt: skip

    url, stop = start_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("DROP SCHEMA IF EXISTS bench_pg_search CASCADE")
    db = Database(url, schema="bench_pg_search")
    retriever = MemdirRetriever()
    pgs: dict[str, PgIndex] = {}
    began = time.perf_counter()
    build = {"sqlite": 0.0, "postgres": 0.0}
    for conv_id in wanted:
        t0 = time.perf_counter()
        retriever.index(conv_id, convs[conv_id])
        t1 = time.perf_counter()
        memory = retriever.memories[conv_id]
        pg = PgIndex(db, conv_id)
        copy_index(memory, pg)
        build["sqlite"] += t1 - t0
        build["postgres"] += time.perf_counter() - t1
        pgs[conv_id] = pg
    if pgs:  # the walk needs its index: built once, after the vectors are in
        from memdir.storage.postgres.schema import vector_index

        some = next(iter(retriever.memories.values())).index.embedder
        assert some is not None
        conn = db.reader()
        with conn.transaction():
            vector_index(conn, some.id, some.dim)
    with db.reader().cursor() as cur:
        cur.execute("ANALYZE items")
    print(
        f"built {len(wanted)} conversations in {time.perf_counter() - began:.1f}s "
        f"(SQLite with embedding {build['sqlite']:.1f}s, PostgreSQL rows {build['postgres']:.1f}s)",
        file=sys.stderr,
    )

    methods = ["kw_sqlite", "kw_pg_bm25", "kw_pg_ts_rank_cd", "vec_sqlite", "vec_pg_exact",
               "vec_pg_hnsw", "fused_sqlite", "fused_pg", "full_sqlite", "full_pg"]  # fmt: skip
    scores: dict[str, list[dict[str, float]]] = {m: [] for m in methods}
    overlap: dict[str, list[float]] = {m: [] for m in methods}
    times: dict[str, list[float]] = {m: [] for m in methods}
    lengths: dict[str, list[int]] = {m: [] for m in methods}
    wholes: dict[str, Any] = {}  # the real Index over each conversation's PgIndex
    for question in questions:
        memory = retriever.memories[question["conv"]]
        index = memory.index
        pg = pgs[question["conv"]]
        mapping = retriever.ids[question["conv"]]
        embedder = index.embedder
        assert embedder is not None and index.vectors is not None
        index.vectors.refresh(index.db)
        scope = Scope(Filters(mode="deep"), memory.manifest.decay, memory.clock())
        words = query_words(question["question"])
        vector = embedder.embed([question["question"]])[0]
        floor = _floor(index)
        calls: dict[str, Callable[[], list[tuple[int, float]]]] = {
            "kw_sqlite": partial(_keyword, index, words, scope, DEPTH),
            "kw_pg_bm25": partial(pg.keyword, words, scope, DEPTH),
            "kw_pg_ts_rank_cd": partial(pg.keyword, words, scope, DEPTH, scorer="ts_rank_cd"),
            "vec_sqlite": partial(_semantic, index, vector, scope, DEPTH),
            "vec_pg_exact": partial(pg.semantic, vector, embedder.id, scope, DEPTH, floor),
            "vec_pg_hnsw": partial(
                pg.semantic, vector, embedder.id, scope, DEPTH, floor, method="hnsw"
            ),
        }
        lists: dict[str, list[tuple[int, float]]] = {}
        for name, call in calls.items():
            t0 = time.perf_counter()
            lists[name] = call() if words or not name.startswith("kw") else []
            times[name].append(time.perf_counter() - t0)
        for backend, kw, vec in (
            ("sqlite", "kw_sqlite", "vec_sqlite"),
            ("pg", "kw_pg_bm25", "vec_pg_exact"),
        ):
            fused = fuse(lists[kw], lists[vec], floor)
            lists[f"fused_{backend}"] = sorted(fused.items(), key=lambda p: (-p[1], p[0]))
        full = run_search(index, question["question"], scope.filters, k=DEPTH,
                          decay=scope.decay, now=scope.now)  # fmt: skip
        lists["full_sqlite"] = [(_id_of(index, hit.path, hit.anchor), hit.score) for hit in full]
        if question["conv"] not in wholes:
            wholes[question["conv"]] = postgres_index(
                memory.root, memory.manifest, db, embedder=embedder, clock=memory.clock,
                agent=question["conv"],
            )  # fmt: skip
        whole = wholes[question["conv"]]
        full_pg = run_search(whole, question["question"], scope.filters, k=DEPTH,
                             decay=scope.decay, now=scope.now)  # fmt: skip
        lists["full_pg"] = [(_pg_id_of(pg, hit.path, hit.anchor), hit.score) for hit in full_pg]
        places = _places(index, pg, lists)
        for name in methods:
            lengths[name].append(len(places[name]))
            ranked = [mapping[p] for p in places[name] if p in mapping]
            scores[name].append(locomo_bench.score_ranking(ranked, question["evidence"]))
            base = {"kw": "kw_sqlite", "vec": "vec_sqlite", "fused": "fused_sqlite",
                    "full": "full_sqlite"}[name.split("_")[0]]  # fmt: skip
            top = set(places[base][:10])
            overlap[name].append(len(top & set(places[name][:10])) / len(top) if top else 1.0)
    db.close()
    stop()
    _report(methods, scores, overlap, times, lengths, len(questions), args.embedder, wanted)


def _pg_id_of(pg: Any, path: str, anchor: str) -> int:
    row = (
        pg.folder.conn()
        .execute(
            "SELECT id FROM items WHERE agent = %s AND path = %s AND anchor = %s",
            (pg.agent, path, anchor),
        )
        .fetchone()
    )
    return int(row[0])


def _id_of(index: Any, path: str, anchor: str) -> int:
    row = index.db.execute(
        "SELECT id FROM items WHERE path = ? AND anchor = ?", (path, anchor)
    ).fetchone()
    return int(row[0])


def _places(
    index: Any, pg: Any, lists: dict[str, list[tuple[int, float]]]
) -> dict[str, list[tuple[str, str]]]:
    """Each list as (path, anchor) places: the two backends' ids differ."""
    out: dict[str, list[tuple[str, str]]] = {}
    for name, pairs in lists.items():
        ids = [item_id for item_id, _ in pairs]
        if "sqlite" in name:
            marks = ",".join("?" * len(ids)) or "NULL"
            sql = f"SELECT id, path, anchor FROM items WHERE id IN ({marks})"
            rows = {i: (p, a) for i, p, a in index.db.execute(sql, ids).fetchall()}
        else:
            rows = {i: (r["path"], r["anchor"]) for i, r in pg.rows(ids).items()}
        out[name] = [rows[i] for i in ids]
    return out


def _report(
    methods: list[str],
    scores: dict[str, list[dict[str, float]]],
    overlap: dict[str, list[float]],
    times: dict[str, list[float]],
    lengths: dict[str, list[int]],
    n: int,
    embedder: str,
    convs: list[str],
) -> None:
    print(f"\nLoCoMo {', '.join(convs)}: {n} questions (categories 1-4), embedder {embedder}\n")
    print("| primitive | R@5 | R@10 | SQLite's top 10 held | mean list | p50 ms | p50 / SQLite's |")
    print("|---|---|---|---|---|---|---|")
    for name in methods:
        r5 = statistics.fmean(s["recall@5"] for s in scores[name])
        r10 = statistics.fmean(s["recall@10"] for s in scores[name])
        held = statistics.fmean(overlap[name])
        size = statistics.fmean(lengths[name])
        if name.startswith(("fused", "full")):
            print(f"| {name} | {r5:.4f} | {r10:.4f} | {held:.3f} | {size:.0f} | | |")
            continue
        base = "kw_sqlite" if name.startswith("kw") else "vec_sqlite"
        p50 = statistics.median(times[name]) * 1000
        ratio = p50 / (statistics.median(times[base]) * 1000)
        print(
            f"| {name} | {r5:.4f} | {r10:.4f} | {held:.3f} | {size:.0f} | {p50:.2f} | "
            f"{ratio:.2f}x |"
        )


if __name__ == "__main__":
    main()
