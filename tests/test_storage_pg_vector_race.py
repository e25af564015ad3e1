"""Two real processes on one agent: one writing under the folder lock (rewrites, deletes,
re-embeds), one searching, which stores the vectors it makes for items without one
outside the lock (``item_log.logged``), on the session's PostgreSQL. Neither may fail
(a deadlock is an error PostgreSQL raises in one of them), the searcher's vectors in
memory never answer an item deleted before the version they are at, and at the end
they are the database's: each live vector once, at its version, searching as a
fresh process's do. Before the store passed over the rows a write holds
(``bulk._STORE_FREE``), PostgreSQL found a deadlock here at every run."""

from __future__ import annotations

import multiprocessing
import os
import random
import time
import traceback
from typing import Any

import numpy as np
import pytest

import memdir
from memdir.index.embedders import Embedder, load_embedder
from memdir.index.search import Filters
from memdir.index.words import query_words
from memdir.storage.postgres import vector_cache
from memdir.storage.postgres.db import Database
from memdir.storage.postgres.index import PgIndex
from memdir.storage.seam import Scope
from pg_vector_fixtures import same_candidates, write_journal

pytestmark = pytest.mark.usefixtures("fresh_vector_cache")

AGENT = "racer"
FILES = 3
SLOTS = 24
SHARED = 3  # slots whose text is the same in every file: one vector key, several rows
ROUNDS = 24
QUERIES = ("sailing on the lake", "rye bread", "the violin", "a train to the mountains")
TOPICS = (
    "sailing on the lake", "baking rye bread", "a train to the mountains",
    "learning the violin", "the garden's tomatoes", "fixing the bicycle chain",
)  # fmt: skip
DEPTH = 10
FLOOR = 0.01
SECONDS = 60.0  # how long either side may take before the test calls it hung


def _journal(round_: int, file: int) -> str:
    """File ``file`` at round ``round_``: its sections in an order of the round's, each
    rewritten every few rounds (slot ``s`` every ``1 + s % 4``): rows moved (their
    placements rewritten), deleted and inserted with no vector."""
    slots = list(range(SLOTS))
    random.Random(round_ * 31 + file).shuffle(slots)
    lines = [f"# Journal {file}", ""]
    for slot in slots:
        shared = slot < SHARED
        era = round_ // (1 + slot % 4)
        owner = "all" if shared else str(file)
        topic = TOPICS[(slot + era) % len(TOPICS)]
        lines += [f"## Note {owner} {slot}", "<!-- date: 2026-11-29T09:00:00Z -->",
                  f"{topic}, note {owner}-{slot} in era {era}.", ""]  # fmt: skip
    return "\n".join(lines)


def _scopes(memory: memdir.Memory) -> list[Scope]:
    now, decay = memory.clock(), memory.manifest.decay
    return [
        Scope(Filters(mode="deep"), decay, now),
        Scope(Filters(mode="deep", kinds=("observation",)), decay, now),
    ]


def _held(pg: PgIndex, embedder: Embedder) -> vector_cache.Held | None:
    db = pg.folder.db
    key = (db.url, db.schema, pg.agent, embedder.id, embedder.dim)
    return vector_cache.REGISTRY._held.get(key)


def _search(
    memory: memdir.Memory, pg: PgIndex, embedder: Embedder, queries: tuple[str, ...] = QUERIES
) -> list[Any]:
    scopes = _scopes(memory)
    return [
        pg.candidates(query_words(q), embedder.embed([q])[0], embedder.id, scopes, DEPTH, FLOOR)
        for q in queries
    ]


def _side(url: str, schema: str, folder: str) -> tuple[Embedder, memdir.Memory, Database, PgIndex]:
    """What each process works with: the hashing embedder, the folder, the database and
    the agent's index on it."""
    embedder = load_embedder("hashing")
    assert embedder is not None
    db = Database(url, schema=schema)
    return embedder, memdir.open(folder, embedder="hashing"), db, PgIndex(db, AGENT)


def _writer(
    url: str, schema: str, folder: str, barrier: Any, done: Any, out: Any
) -> None:  # runs in a process of its own
    try:
        embedder, memory, db, pg = _side(url, schema, folder)
        barrier.wait(SECONDS)
        rng = random.Random(7)
        for round_ in range(1, ROUNDS + 1):
            with pg.folder.lock:  # one transaction: every file, then the bump
                for file in range(FILES):
                    if file == FILES - 1 and round_ % 5 == 0:
                        pg.remove_file(f"journal/{file}.md")  # (back next round)
                    else:
                        write_journal(memory, pg, _journal(round_, file), f"journal/{file}.md")
                    time.sleep(0.005)  # a slow write: its rows stay locked meanwhile
                conn = pg.folder.lock.connection()
                keys = [
                    str(k)
                    for (k,) in conn.execute(
                        "SELECT DISTINCT vector_key FROM items WHERE agent = %s", (AGENT,)
                    )
                ]
                chosen = rng.sample(keys, min(4, len(keys)))
                # re-embedded under the lock: two by this model (another vector), two
                # by another (which the searcher's next store replaces)
                made = [(k, embedder.embed([f"{k} again {round_}"])[0]) for k in chosen]
                pg.store_vectors(embedder.id, embedder.dim, made[:2])
                pg.store_vectors("other", embedder.dim, made[2:])
        db.close()
        memory.close()
        out.put(("writer", None, {}))
    except BaseException:
        out.put(("writer", traceback.format_exc(), {}))
    finally:
        done.set()


def _searcher(
    url: str, schema: str, folder: str, barrier: Any, done: Any, out: Any
) -> None:  # runs in a process of its own
    try:
        embedder, memory, db, pg = _side(url, schema, folder)
        conn = db.reader()
        stats = {"searches": 0, "stored_while_writing": 0, "caught_up": 0, "stale": []}
        barrier.wait(SECONDS)
        last = -1
        while not done.is_set():
            if pg.ensure_vectors(embedder, seconds=0.05) and not done.is_set():
                stats["stored_while_writing"] += 1
            for query in QUERIES:
                found = _search(memory, pg, embedder, (query,))[0]
                held = _held(pg, embedder)  # at the version the search was answered at
                assert held is not None
                if 0 <= last < held.version:
                    stats["caught_up"] += 1
                last = held.version
                stats["searches"] += 1
                # a semantic hit gone from the database now was deleted after the
                # version the matrix is at, and so logged past it
                ids = {i for _, semantic in found for i, _ in semantic}
                gone = ids - {
                    int(i)
                    for (i,) in conn.execute(
                        "SELECT id FROM items WHERE id = ANY(%s)", (sorted(ids),)
                    )
                }
                later = {
                    int(i)
                    for (i,) in conn.execute(
                        "SELECT item_id FROM item_log WHERE agent = %s AND version > %s "
                        "AND item_id = ANY(%s)",
                        (AGENT, held.version, sorted(gone)),
                    )
                }
                stats["stale"] += sorted(gone - later)
        while pg.ensure_vectors(embedder):
            pass
        final = _search(memory, pg, embedder)
        held = _held(pg, embedder)
        assert held is not None
        vectors = held.vectors
        alive = vectors.ids[: vectors.size][vectors.alive[: vectors.size]].tolist()
        stats.update(final=final, alive=alive, version=held.version)
        db.close()
        memory.close()
        out.put(("searcher", None, stats))
    except BaseException:
        out.put(("searcher", traceback.format_exc(), {}))


def test_a_search_storing_vectors_races_a_locked_write(
    memory: memdir.Memory, pg_url: str, pg_schema: str, embedder: Embedder
) -> None:
    db = Database(pg_url, schema=pg_schema)
    pg = PgIndex(db, AGENT)
    try:
        for file in range(FILES):  # round 0, every vector made: the searcher holds them
            write_journal(memory, pg, _journal(0, file), f"journal/{file}.md")
        pg.ensure_vectors(embedder)
        context = multiprocessing.get_context("spawn")  # (no connection shared by a fork)
        barrier, done, out = context.Barrier(2), context.Event(), context.Queue()
        args = (pg_url, pg_schema, str(memory.root), barrier, done, out)
        workers = [context.Process(target=t, args=args) for t in (_writer, _searcher)]
        for worker in workers:
            worker.start()
        reports: dict[str, tuple[str | None, dict[str, Any]]] = {}
        try:
            for _ in workers:
                name, error, stats = out.get(timeout=SECONDS)
                reports[name] = (error, stats)
        finally:
            for worker in workers:
                worker.join(SECONDS if len(reports) == 2 else 1)
                if worker.is_alive() and worker.pid is not None:
                    os.kill(worker.pid, 9)  # hung: ours, by its pid
        assert reports["writer"][0] is None, reports["writer"][0]
        assert reports["searcher"][0] is None, reports["searcher"][0]
        stats = reports["searcher"][1]
        # they overlapped: vectors stored and the matrix caught up while the writer wrote
        assert stats["stored_while_writing"] >= 3, stats
        assert stats["caught_up"] >= 3, stats
        assert stats["stale"] == []
        conn = db.reader()
        live = sorted(
            int(i)
            for (i,) in conn.execute(
                "SELECT id FROM items WHERE agent = %s AND model = %s "
                "AND vector_dims(embedding) = %s",
                (AGENT, embedder.id, embedder.dim),
            )
        )
        assert conn.execute(
            "SELECT count(*) FROM items WHERE agent = %s AND model IS DISTINCT FROM %s",
            (AGENT, embedder.id),
        ).fetchone() == (0,)  # every item has this model's vector now
        assert sorted(stats["alive"]) == live  # each live vector, once
        (version,) = conn.execute(
            "SELECT version FROM item_versions WHERE agent = %s", (AGENT,)
        ).fetchone()
        assert stats["version"] == version
        assert version > ROUNDS  # (the writer's rounds and the searcher's stores)
        vector_cache.REGISTRY.clear()  # this process as a fresh one: loads the agent whole
        fresh = _search(memory, pg, embedder)
        fresh_held = _held(pg, embedder)
        assert fresh_held is not None and fresh_held.version == version
        for theirs, mine in zip(stats["final"], fresh, strict=True):
            same_candidates(theirs, mine)
        for found in fresh:
            assert {i for _, semantic in found for i, _ in semantic} <= set(live)
        assert np.isfinite(fresh_held.vectors.matrix[: fresh_held.vectors.size]).all()
    finally:
        db.close()
