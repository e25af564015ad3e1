"""The index in PostgreSQL beside the SQLite one, on the same folder: the same rows, the
same BM25 scores, the same cosine neighbours."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import psycopg
import pytest

import memdir
from memdir.index.embedders import load_embedder
from memdir.index.search import _COLUMNS, Filters, _floor, _keyword, _semantic
from memdir.index.words import query_words
from memdir.storage.postgres.db import Database
from memdir.storage.postgres.index import PgIndex, index_text, tokens
from memdir.storage.seam import Scope
from memdir.testing import FakeClock

JOURNAL = (
    "# Journal 2026-11-29\r\n\r\n"
    "## Melanie\r\n<!-- date: 2026-11-29T09:00:00Z -->\r\n"
    "I went sailing on the lake with my kids; the boats were out all day.\r\n\r\n"
    "## Caroline\r\n<!-- date: 2026-11-29T09:01:00Z -->\r\n"
    "Sailing sounds lovely! I painted a sunrise over the harbour last week.\r\n\r\n"
    "## Melanie (2)\r\n<!-- date: 2026-11-29T09:02:00Z -->\r\n"
    "We ran a charity race for the shelter; running in the rain was hard.\r\n"
)


def _fill(memory: memdir.Memory) -> None:
    memory.notebook.update("current-task", "Draft the harbour painting notes for Caroline")
    memory.knowledge.save("Caroline paints sunrises over the harbour", tags=["art"])
    memory.knowledge.save("Melanie sails with her kids on the lake")
    memory.knowledge.save("Melanie ran a charity race for the shelter", type="event")
    memory.knowledge.update("People", "Caroline is an artist; Melanie runs and sails.")
    (memory.root / "journal").mkdir(exist_ok=True)
    (memory.root / "journal" / "2026-11-29.md").write_bytes(JOURNAL.encode())
    memory.scan()


def _copy(memory: memdir.Memory, pg: PgIndex) -> None:
    for relpath, (name, layer) in memory.index.files_on_disk().items():
        path = memory.root / relpath
        stat = path.stat()
        text = path.read_bytes().decode("utf-8", "surrogateescape")
        index_text(pg, relpath, text, name, layer, mtime_ns=stat.st_mtime_ns, size=stat.st_size)


@pytest.fixture
def pair(memory: memdir.Memory, pg_db: Database) -> tuple[memdir.Memory, PgIndex]:
    """A folder of its own, indexed on both (for a test that writes)."""
    _fill(memory)
    pg = PgIndex(pg_db, memory.manifest.agent)
    _copy(memory, pg)
    return memory, pg


@pytest.fixture(scope="module")
def shared(
    tmp_path_factory: pytest.TempPathFactory, pg_url: str
) -> Iterator[tuple[memdir.Memory, PgIndex]]:
    """One folder indexed on both for the tests that only read (built once)."""
    root = tmp_path_factory.mktemp("shared") / "mem"
    memdir.init(root)
    schema = f"t_{secrets.token_hex(6)}"
    db = Database(pg_url, schema=schema)
    with memdir.open(root, clock=FakeClock("2026-11-30T10:00:00Z"), embedder="hashing") as memory:
        _fill(memory)
        pg = PgIndex(db, memory.manifest.agent)
        _copy(memory, pg)
        yield memory, pg
    db.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _scope(memory: memdir.Memory, mode: str = "deep") -> Scope:
    return Scope(Filters(mode=mode), memory.manifest.decay, memory.clock())


def test_the_rows_are_sqlites(shared: tuple[memdir.Memory, PgIndex]) -> None:
    memory, pg = shared
    columns = [c for c in _COLUMNS if c != "id"]
    sqlite_rows = sorted(
        memory.index.db.execute(
            f"SELECT {', '.join(columns)} FROM items JOIN places USING (id)"
        ).fetchall()
    )
    ids = [
        row[0]
        for row in pg.folder.conn().execute("SELECT id FROM items WHERE agent = %s", (pg.agent,))
    ]
    pg_rows = sorted(tuple(row[c] for c in columns) for row in pg.rows(ids).values())
    assert len(pg_rows) >= 7
    assert pg_rows == sqlite_rows


def test_an_unchanged_file_keeps_its_rows_and_an_append_adds_one(
    pair: tuple[memdir.Memory, PgIndex],
) -> None:
    memory, pg = pair
    relpath = memory.manifest.path_of("knowledge")
    assert relpath is not None
    name, layer = memory.index.layer_of(relpath) or ("", None)
    assert layer is not None
    before = {row[0] for row in pg.folder.conn().execute("SELECT id FROM items")}
    text = (memory.root / relpath).read_text()
    assert index_text(pg, relpath, text, name, layer, mtime_ns=1, size=len(text)) == "unchanged"
    memory.knowledge.save("Caroline adopted a grey cat called Oscar")
    text = (memory.root / relpath).read_text()
    assert index_text(pg, relpath, text, name, layer, mtime_ns=2, size=len(text)) == "updated"
    after = {row[0] for row in pg.folder.conn().execute("SELECT id FROM items")}
    assert before < after and len(after - before) == 1


def test_tokens_are_cut_as_fts5_cuts_them() -> None:
    assert tokens("Café-au-lait, naïve_user's 3.14 ÉLAN") == [
        "cafe", "au", "lait", "naive", "user", "s", "3", "14", "elan",
    ]  # fmt: skip


def test_bm25_scores_are_fts5s(shared: tuple[memdir.Memory, PgIndex]) -> None:
    memory, pg = shared
    scope = _scope(memory)
    for query in ("harbour", "sailing kids", "charity race shelter", "Caroline paints", "the"):
        words = query_words(query)
        expected = _keyword(memory.index, words, scope, 50)
        found = pg.keyword(words, scope, 50)
        assert expected, query
        marks = ",".join("?" * len(expected))
        place = {
            item_id: (path, anchor)
            for item_id, path, anchor in memory.index.db.execute(
                f"SELECT id, path, anchor FROM items WHERE id IN ({marks})",
                [item_id for item_id, _ in expected],
            )
        }
        pg_rows = pg.rows([item_id for item_id, _ in found])
        want = sorted((place[i], round(s, 6)) for i, s in expected)
        got = sorted(((pg_rows[i]["path"], pg_rows[i]["anchor"]), round(s, 6)) for i, s in found)
        assert got == want, query


def test_ts_rank_cd_finds_the_same_items_in_another_order(
    shared: tuple[memdir.Memory, PgIndex],
) -> None:
    memory, pg = shared
    scope = _scope(memory)
    words = query_words("sailing harbour")
    assert {i for i, _ in pg.keyword(words, scope, 50, scorer="ts_rank_cd")} == {
        i for i, _ in pg.keyword(words, scope, 50)
    }


def test_filters_apply_on_postgres_as_on_sqlite(shared: tuple[memdir.Memory, PgIndex]) -> None:
    memory, pg = shared
    now = memory.clock()
    cases = [
        Filters(mode="normal"),
        Filters(mode="heartbeat"),
        Filters(mode="deep", kinds=("observation",)),
        Filters(mode="deep", tags=("art",)),
        Filters(mode="deep", since=datetime(2026, 11, 29, 9, 0, 30), layers=("journal",)),
    ]
    for filters in cases:
        for wide in (False, True):
            scope = Scope(filters, memory.manifest.decay, now, wide)
            where, params = filters.sql(scope.decay, now, wide=wide)
            on_sqlite = memory.index.db.execute(
                f"SELECT path, anchor FROM items AS i WHERE {where}", params
            ).fetchall()
            ids = [
                row[0]
                for row in pg.folder.conn().execute(
                    "SELECT id FROM items WHERE agent = %s", (pg.agent,)
                )
            ]
            rows = pg.rows(sorted(pg.allowed(ids, scope))).values()
            assert sorted((r["path"], r["anchor"]) for r in rows) == sorted(on_sqlite), filters


def test_vector_neighbours_are_sqlites(shared: tuple[memdir.Memory, PgIndex]) -> None:
    memory, pg = shared
    embedder = load_embedder("hashing")
    assert embedder is not None
    assert pg.ensure_vectors(embedder) > 0
    assert pg.ensure_vectors(embedder) == 0  # all there: nothing embedded twice
    memory.index.ensure_vectors()
    assert memory.index.vectors is not None
    memory.index.vectors.refresh(memory.index.db)
    scope = _scope(memory)
    floor = _floor(memory.index)
    for query in ("sailing with kids", "a painting of the harbour", "charity race"):
        vector = embedder.embed([query])[0]
        expected = _semantic(memory.index, vector, scope, 20)
        places = dict(
            memory.index.db.execute(
                f"SELECT id, path || '#' || anchor FROM items WHERE id IN "
                f"({','.join('?' * len(expected))})",
                [i for i, _ in expected],
            ).fetchall()
        )
        for method in ("exact", "hnsw"):
            found = pg.semantic(vector, embedder.id, scope, 20, floor, method=method)
            rows = pg.rows([i for i, _ in found])
            got = [f"{rows[i]['path']}#{rows[i]['anchor']}" for i, _ in found]
            assert got == [places[i] for i, _ in expected], (query, method)
            for (_, mine), (_, theirs) in zip(found, expected, strict=True):
                assert mine == pytest.approx(theirs, abs=1e-5)


def test_the_stored_weights_are_the_rankings() -> None:
    from memdir.index.search import COLUMN_WEIGHTS
    from memdir.storage.postgres import schema

    # ``tf`` is stored with these weights: changing search's needs a migration
    assert schema.COLUMN_WEIGHTS == COLUMN_WEIGHTS


def test_migrations_are_recorded_and_applied_once(pg_url: str, pg_schema: str) -> None:
    import threading

    from memdir.storage.postgres.db import migrate
    from memdir.storage.postgres.schema import MIGRATIONS

    opened: list[Database] = []
    threads = [
        threading.Thread(target=lambda: opened.append(Database(pg_url, schema=pg_schema)))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(opened) == 3
    conn = opened[0].reader()
    names = [row[0] for row in conn.execute("SELECT name FROM migrations ORDER BY name")]
    assert names == [name for name, _ in MIGRATIONS]
    assert migrate(conn, pg_schema, MIGRATIONS) == []
    for db in opened:
        db.close()


def test_an_index_over_files_in_postgres_reads_nothing_from_disk(
    memory: memdir.Memory, pg_db: Database, tmp_path: Path
) -> None:
    from memdir.index.search import search
    from memdir.storage.postgres.files import PgFiles
    from memdir.storage.postgres.index import postgres_index

    files = PgFiles(pg_db, "agent-f")
    files.write("journal/2026-11-29.md", JOURNAL.encode())
    empty = tmp_path / "nothing-here"  # no file of the folder is on disk
    index = postgres_index(
        empty, memory.manifest, pg_db, embedder=None, clock=memory.clock, agent="agent-f",
        files=files,
    )  # fmt: skip
    scope = _scope(memory)

    def found(query: str) -> list[tuple[str, str]]:
        hits = search(index, query, Filters(mode="deep"), k=5, decay=scope.decay, now=scope.now)
        return [(hit.path, hit.anchor) for hit in hits]

    assert index.scan().added == ["journal/2026-11-29.md"]
    assert found("charity race") == [("journal/2026-11-29.md", "Melanie (2)")]
    assert index.scan().changed is False  # the same stamp: nothing read again
    files.write("journal/2026-11-29.md", JOURNAL.replace("charity race", "bake sale").encode())
    assert index.scan().updated == ["journal/2026-11-29.md"]
    assert found("charity race") == [] and found("bake sale")
    files.remove("journal/2026-11-29.md")
    assert index.scan().removed == ["journal/2026-11-29.md"] and found("bake sale") == []
    assert not empty.exists()
