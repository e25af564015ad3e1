"""The per-agent version and item log the write path keeps on PostgreSQL
(``storage.postgres.item_log``): every write that changes items' vectors bumps its
agent's version in its own transaction (once, just before the commit), so the bump
commits and rolls back with the write, and a process's vectors in memory
(``vector_cache``) stay right either way."""

from __future__ import annotations

import threading

import psycopg
import pytest

import memdir
from memdir.index.embedders import Embedder
from memdir.index.search import Filters
from memdir.index.words import query_words
from memdir.storage.postgres import item_log, vector_cache
from memdir.storage.postgres.db import Connection, Database
from memdir.storage.postgres.index import PgIndex
from memdir.storage.seam import Scope
from pg_vector_fixtures import write_journal

pytestmark = pytest.mark.usefixtures("fresh_vector_cache")


def _journal(*notes: str) -> str:
    lines = ["# Journal 2026-11-29", ""]
    for note in notes:  # (headed by their text: moved, a section keeps its anchor)
        lines += [f"## {note}", "<!-- date: 2026-11-29T09:00:00Z -->", note, ""]
    return "\n".join(lines)


NOTES = (
    "sailing on the lake with the kids",
    "baking rye bread on sunday",
    "a train to the mountains",
    "learning the violin slowly",
)


def _version(db: Database, agent: str) -> int:
    row = (
        db.reader()
        .execute("SELECT version FROM item_versions WHERE agent = %s", (agent,))
        .fetchone()
    )
    return int(row[0]) if row else 0


def _logged(db: Database, agent: str, version: int) -> set[int]:
    rows = db.reader().execute(
        "SELECT item_id FROM item_log WHERE agent = %s AND version = %s", (agent, version)
    )
    return {int(row[0]) for row in rows}


def _ids(db: Database, agent: str, *, with_vector: bool = True) -> set[int]:
    rows = db.reader().execute(
        "SELECT id FROM items WHERE agent = %s AND (embedding IS NOT NULL OR NOT %s)",
        (agent, with_vector),
    )
    return {int(row[0]) for row in rows}


def test_each_write_of_vectors_bumps_the_version_and_logs_its_ids(
    memory: memdir.Memory, pg_db: Database, embedder: Embedder
) -> None:
    pg = PgIndex(pg_db, "agent-a")
    write_journal(memory, pg, _journal(*NOTES))  # rows with no vector yet: nothing to log
    assert _version(pg_db, "agent-a") == 0
    pg.ensure_vectors(embedder)  # new vectors (``store_vectors``)
    assert _version(pg_db, "agent-a") == 1
    assert _logged(pg_db, "agent-a", 1) == _ids(pg_db, "agent-a") != set()

    before = _ids(pg_db, "agent-a")
    write_journal(memory, pg, _journal(*NOTES[:3]))  # a section gone: its row deleted
    (gone,) = before - _ids(pg_db, "agent-a")
    assert _version(pg_db, "agent-a") == 2
    assert _logged(pg_db, "agent-a", 2) == {gone}

    with pg.bulk(embedder):  # rows inserted with their vector (a push, a reindex)
        write_journal(memory, pg, _journal("a concert by the river"), "journal/2026-11-30.md")
    assert _version(pg_db, "agent-a") == 3
    assert _logged(pg_db, "agent-a", 3) == _ids(pg_db, "agent-a") - before

    # moved down a line each: placements only (turns reordered would re-key: each short
    # turn's vector reads the turns before it, ``index.windows``)
    moved = _journal(*NOTES[:3]).replace("\n\n## ", "\n\n\n## ")
    write_journal(memory, pg, moved)
    assert _version(pg_db, "agent-a") == 3

    kept = _ids(pg_db, "agent-a")
    pg.remove_file("journal/2026-11-30.md")
    assert _version(pg_db, "agent-a") == 4
    assert _logged(pg_db, "agent-a", 4) == kept - _ids(pg_db, "agent-a") != set()

    kept = _ids(pg_db, "agent-a")
    with pg.folder.lock:  # many writes in one transaction: one version
        write_journal(memory, pg, _journal(*NOTES[:2]))
        pg.ensure_vectors(embedder)  # (nothing left to embed)
        with pg.bulk(embedder):
            write_journal(memory, pg, _journal("a concert by the river"), "journal/2026-12-01.md")
        assert _version(pg_db, "agent-a") == 4  # not before the commit
    assert _version(pg_db, "agent-a") == 5
    now = _ids(pg_db, "agent-a")
    assert _logged(pg_db, "agent-a", 5) == (kept - now) | (now - kept)
    assert kept - now and now - kept  # one deleted, one inserted

    PgIndex(pg_db, "agent-b").store_vectors(embedder.id, embedder.dim, [])  # no change
    pg.clear()  # every holder reloads: the version moved past the log
    assert _version(pg_db, "agent-a") == 5 + item_log.KEEP
    assert _version(pg_db, "agent-b") == 0  # another agent's version is its own


def test_the_bump_is_in_the_writes_transaction(
    memory: memdir.Memory,
    pg_db: Database,
    pg_url: str,
    pg_schema: str,
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pg = PgIndex(pg_db, "agent-a")
    write_journal(memory, pg, _journal(*NOTES))
    pg.ensure_vectors(embedder)
    scope = [Scope(Filters(mode="deep"), memory.manifest.decay, memory.clock())]
    query = "rye bread"
    vector = embedder.embed([query])[0]
    before = pg.candidates(query_words(query), vector, embedder.id, scope, 10, 0.01)
    assert len(vector_cache.REGISTRY.held_keys()) == 1
    version = _version(pg_db, "agent-a")
    other = Database(pg_url, schema=pg_schema)  # another process
    try:
        with pytest.raises(RuntimeError), pg.folder.lock:  # fails before the bump
            with pg.bulk(embedder):
                write_journal(memory, pg, _journal(*NOTES, "rye bread and rye flour, rye"))
            raise RuntimeError("the write fails after its rows were sent")
        assert _version(pg_db, "agent-a") == version
        seen: list[int] = []

        def fail(conn: Connection) -> None:  # after the bump, before the commit
            (found,) = conn.execute(
                "SELECT version FROM item_versions WHERE agent = 'agent-a'"
            ).fetchone()
            seen.extend([int(found), _version(other, "agent-a")])
            raise RuntimeError("the commit never comes")

        with pytest.raises(RuntimeError), pg.folder.lock:
            with pg.bulk(embedder):
                write_journal(memory, pg, _journal(*NOTES, "rye bread and rye flour, rye"))
            pg.folder.lock.before_commit("fail", fail)
        assert seen == [version + 1, version]  # bumped in the write's transaction, unseen
        assert _version(pg_db, "agent-a") == _version(other, "agent-a") == version
        assert _logged(pg_db, "agent-a", version + 1) == set()
        after = pg.candidates(query_words(query), vector, embedder.id, scope, 10, 0.01)
        assert after == before  # the matrix held is still right
        writer = PgIndex(other, "agent-a")
        with writer.bulk(embedder):  # the same write committed: seen at the next search
            write_journal(memory, writer, _journal(*NOTES, "rye bread and rye flour, rye"))
        assert _version(pg_db, "agent-a") == version + 1
        (new,) = _logged(pg_db, "agent-a", version + 1)
        found = pg.candidates(query_words(query), vector, embedder.id, scope, 10, 0.01)
        assert new in [i for i, _ in found[0][1]]
        monkeypatch.setenv(vector_cache.ENV, "off")
        sql = pg.candidates(query_words(query), vector, embedder.id, scope, 10, 0.01)
        assert [i for i, _ in found[0][1]] == [i for i, _ in sql[0][1]]
    finally:
        other.close()


def test_a_statement_failing_before_the_commit_rolls_the_write_back(
    memory: memdir.Memory, pg_db: Database, embedder: Embedder
) -> None:
    pg = PgIndex(pg_db, "agent-a")
    with pytest.raises(psycopg.Error), pg.folder.lock:
        with pg.bulk(embedder):
            write_journal(memory, pg, _journal(*NOTES))
        # sent after the bump, with the commit (one pipeline): it fails on the server
        pg.folder.lock.before_commit("fails", lambda conn: conn.execute("SELECT 1 / 0"))
    assert _ids(pg_db, "agent-a", with_vector=False) == set()
    assert _version(pg_db, "agent-a") == 0
    with pg.bulk(embedder):  # the lock and its connection work on
        write_journal(memory, pg, _journal(*NOTES))
    assert _logged(pg_db, "agent-a", 1) == _ids(pg_db, "agent-a") != set()


def test_the_log_keeps_the_last_versions(
    memory: memdir.Memory, pg_db: Database, embedder: Embedder
) -> None:
    pg = PgIndex(pg_db, "agent-a")
    write_journal(memory, pg, _journal(*NOTES))
    conn = pg_db.reader()
    every = item_log.TRIM_EVERY  # the next bump trims, to KEEP versions
    last = (item_log.KEEP // every + 1) * every - 1
    conn.execute("INSERT INTO item_versions VALUES ('agent-a', %s)", (last,))
    conn.execute(
        "INSERT INTO item_log SELECT 'agent-a', v, v FROM generate_series(1, %s) AS v", (last,)
    )
    pg.ensure_vectors(embedder)  # the bump to a multiple of TRIM_EVERY: trimmed
    (low, high) = conn.execute(
        "SELECT min(version), max(version) FROM item_log WHERE agent = 'agent-a'"
    ).fetchone()
    assert (low, high) == (last + 1 - item_log.KEEP + 1, last + 1)
    assert low > 1
    assert _logged(pg_db, "agent-a", last + 1) == _ids(pg_db, "agent-a")


def test_a_store_outside_the_lock_skips_the_rows_a_locked_write_holds(
    memory: memdir.Memory, pg_db: Database, pg_url: str, pg_schema: str, embedder: Embedder
) -> None:
    """A search's store (``item_log.logged``) waits for no row a locked write holds: it
    stores the others and leaves those for the next search. Were it to wait holding the
    rows it had locked, a locked write wanting one of them next is a deadlock."""
    pg = PgIndex(pg_db, "agent-a")
    write_journal(memory, pg, _journal(*NOTES))  # no vectors yet
    ids = {str(h): int(i) for i, h in pg_db.reader().execute("SELECT id, heading FROM items")}
    # the last two swapped: their rows re-keyed (a short turn's key names the turns
    # before it, ``index.windows``), so deleted and inserted anew, locked by the write
    moved = {ids[NOTES[2]], ids[NOTES[3]]}
    other = Database(pg_url, schema=pg_schema)  # the searching process's connections
    searcher = PgIndex(other, "agent-a")
    stored: list[int] = []
    store = threading.Thread(target=lambda: stored.append(searcher.ensure_vectors(embedder)))
    try:
        with pg.folder.lock:  # the last two sections swapped: their rows locked
            write_journal(memory, pg, _journal(*NOTES[:2], NOTES[3], NOTES[2]))
            store.start()
            store.join(5)
            assert not store.is_alive(), "the store waited for the locked write's rows"
            assert _version(other, "agent-a") == 1  # committed while the write goes on
            assert _logged(other, "agent-a", 1) == set(ids.values()) - moved
            # the write wants a row the store had (a vector re-made under the lock)
            (key,) = (
                pg.folder.lock.connection()
                .execute("SELECT vector_key FROM items WHERE id = %s", (ids[NOTES[0]],))
                .fetchone()
            )
            pg.store_vectors(embedder.id, embedder.dim, [(str(key), embedder.embed(["x"])[0])])
        assert _version(pg_db, "agent-a") == 2
        assert _ids(pg_db, "agent-a") == set(ids.values()) - moved
        new = _ids(pg_db, "agent-a", with_vector=False) - set(ids.values())
        assert len(new) == 2
        assert searcher.ensure_vectors(embedder) == 2  # the rows skipped: the next search's
        assert _logged(pg_db, "agent-a", 3) == new
        assert _ids(pg_db, "agent-a") == set(ids.values()) - moved | new
    finally:
        if store.ident is not None:
            store.join(30)
        other.close()
    assert stored == [len(NOTES) - len(moved)]  # (the texts stored: not the locked ones)
