"""The semantic side on PostgreSQL with the agent's vectors in memory and without.

    .venv/bin/python bench/pg_vector_cache.py --items 1000,3000,5000,10000,20000 --runs 30

For each size, one agent of that many journal items (bench/scale.py's corpus, the
hashing embedder, 256 floats; every vector made as the rows are inserted, then
``VACUUM ANALYZE``) beside four other agents of 1,000 items in the same table, in
PostgreSQL started by pgserver (or ``MEMDIR_TEST_DATABASE_URL``). Then the candidates
a ``normal`` search asks (``PgIndex.candidates``: the keyword and the semantic side of
the radius and of every tier, depth 300) are timed three ways in turn query by query
(``MODES``, each with a ``vector_cache.Registry`` of its own): ``held`` (the matrix
held whatever the agent's size, ``MEMDIR_PG_VECTOR_CACHE_ITEMS=0``), ``default`` (the
settings as shipped: held from ``vector_cache.MIN_ITEMS`` items on) and ``sql``
(``MEMDIR_PG_VECTOR_CACHE=off``, pgvector's cosine in SQL); printed: p50 of each and
their ratios to SQL, and the same with a write by another connection (one file's new
section) before each search, which the held matrix catches up from ``item_log``: the
crossover is the size from which held / SQL is below 1.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from pg_search import start_database
from scale import Corpus

MODES: dict[str, dict[str, str | None]] = {
    "held": {"MEMDIR_PG_VECTOR_CACHE": None, "MEMDIR_PG_VECTOR_CACHE_ITEMS": "0"},
    "default": {"MEMDIR_PG_VECTOR_CACHE": None, "MEMDIR_PG_VECTOR_CACHE_ITEMS": None},
    "sql": {"MEMDIR_PG_VECTOR_CACHE": "off", "MEMDIR_PG_VECTOR_CACHE_ITEMS": None},
}
"""the settings of each column: every agent held; as shipped (held from
``vector_cache.MIN_ITEMS`` items); pgvector's statement"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", default="2000,20000")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()

    import memdir
    from memdir.index.embedders import load_embedder
    from memdir.index.search import Filters
    from memdir.index.words import query_words
    from memdir.storage.postgres import vector_cache
    from memdir.storage.postgres.db import Database
    from memdir.storage.postgres.index import PgIndex, index_text
    from memdir.storage.seam import Scope

    embedder = load_embedder("hashing")
    assert embedder is not None
    url, stop = start_database()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:  # one for every schema
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    work = Path(tempfile.mkdtemp(prefix="memdir-bench-pgvc-"))
    root = work / "mem"
    memdir.init(root)
    try:
        for size in (int(n) for n in args.items.split(",")):
            schema = f"bench_vc_{size}"
            db = Database(url, schema=schema)
            with memdir.open(root, embedder="hashing") as memory:
                layer = memory.manifest.layers["journal"]
                decay, now = memory.manifest.decay, memory.clock()
            corpus = Corpus(args.seed)
            t0 = time.perf_counter()
            agents = {"big": size, **{f"other-{n}": 1000 for n in range(4)}}
            for agent, items in agents.items():
                pg = PgIndex(db, agent, embedder=embedder)
                with pg.bulk(embedder):
                    for day in range(items // 10):
                        text = corpus.journal(date(2026, 1, 1) + timedelta(days=day))
                        path = f"journal/{day:05d}.md"
                        index_text(pg, path, text, "journal", layer, mtime_ns=1, size=len(text))
            db.reader().execute("VACUUM ANALYZE items")
            big = PgIndex(db, "big", embedder=embedder)
            writer = PgIndex(Database(url, schema=schema), "big", embedder=embedder)
            (count,) = (
                db.reader().execute("SELECT count(*) FROM items WHERE agent = 'big'").fetchone()
            )
            print(f"{count:,} items in the agent, filled in {time.perf_counter() - t0:.1f} s")
            scopes = [Scope(Filters(mode="normal"), decay, now), Scope(Filters(), decay, now, True)]
            queries = corpus.queries(args.runs, args.seed)
            registries = {name: vector_cache.Registry() for name in MODES}
            for writes in (False, True):
                times: dict[str, list[float]] = {name: [] for name in MODES}
                for n, query in enumerate(queries):
                    words, vector = query_words(query), embedder.embed([query])[0]
                    for name in MODES:
                        if writes:
                            text = corpus.journal(date(2030, 1, 1) + timedelta(days=n))
                            path = f"journal/new-{n:04d}-{name}.md"
                            with writer.bulk(embedder):
                                index_text(
                                    writer, path, text, "journal", layer, mtime_ns=1,
                                    size=len(text),
                                )  # fmt: skip
                        for env, value in MODES[name].items():
                            if value is None:
                                os.environ.pop(env, None)
                            else:
                                os.environ[env] = value
                        vector_cache.REGISTRY = registries[name]
                        t0 = time.perf_counter()
                        big.candidates(words, vector, embedder.id, scopes, 300, 0.0)
                        times[name].append((time.perf_counter() - t0) * 1000)
                held, default, sql = (statistics.median(times[k][1:]) for k in MODES)
                what = "after a write each" if writes else "no write between"
                print(
                    f"  {what}: candidates p50 held {held:.2f} ms, default {default:.2f} ms, "
                    f"SQL {sql:.2f} ms; held / SQL {held / sql:.2f}, "
                    f"default / SQL {default / sql:.2f}"
                )
            for env in (vector_cache.ENV, vector_cache.MIN_ITEMS_ENV):
                os.environ.pop(env, None)
            vector_cache.REGISTRY = vector_cache.Registry()
            db.close()
            writer.folder.db.close()
    finally:
        stop()


if __name__ == "__main__":
    main()
