"""The vectors a process keeps in memory for semantic search on PostgreSQL
(``storage.postgres.vector_cache``): the same candidates as pgvector's statement, kept
in step with writes from other connections, bounded, and off when told."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import pytest

import memdir
from memdir.index.embedders import Embedder
from memdir.index.search import Filters, _floor
from memdir.index.words import query_words
from memdir.storage.postgres import vector_cache
from memdir.storage.postgres.db import Database
from memdir.storage.postgres.index import PgIndex, index_text
from memdir.storage.seam import Scope
from pg_vector_fixtures import same_candidates, tied_blocks, write_journal

TOPICS = (
    "sailing on the lake", "painting the harbour", "a charity race in the rain",
    "baking bread with rye", "the garden's tomatoes", "a train to the mountains",
    "reading about old maps", "fixing the bicycle chain", "a concert by the river",
    "learning the violin",
)  # fmt: skip
QUERIES = (
    "sailing with kids",
    "bread and rye flour",
    "mountain train",
    "violin lessons",
    "sailing on the lake, then sailing on the lake",  # note 0's: ties among its copies
)

pytestmark = pytest.mark.usefixtures("fresh_vector_cache")


WORDS = tuple(
    [
        "amber",
        "basil",
        "cedar",
        "dune",
        "ember",
        "fjord",
        "grove",
        "heron",
        "iris",
        "juniper",
        "kelp",
        "lark",
        "moss",
        "nectar",
        "onyx",
        "pine",
        "quartz",
        "reed",
        "sage",
        "thistle",
        "umber",
        "vale",
        "willow",
        "yarrow",
        "zephyr",
        "acorn",
        "birch",
        "clover",
        "delta",
        "elm",
        "fern",
        "glade",
        "hazel",
        "ivy",
        "jade",
        "kestrel",
        "linden",
        "maple",
        "nettle",
        "oak",
    ]
)


def _text(n: int) -> str:
    """Note ``n``'s words: two topics and words of its own (no two alike but by design:
    every 50th repeats note 0's, whose vectors then tie exactly)."""
    n = 0 if n % 50 == 0 else n
    rng = random.Random(n)
    own = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
    return f"{TOPICS[n % len(TOPICS)]}, then {TOPICS[(n * 7) % len(TOPICS)]}: {own}."


def _journal(sections: int, *, skip: int | None = None, extra: str | None = None) -> str:
    lines = ["# Journal 2026-11-29", ""]
    for n in range(sections):
        if n == skip:
            continue
        lines += [f"## Note {n}", f"<!-- date: 2026-11-{1 + n % 28:02d}T09:00:00Z -->",
                  _text(n), ""]  # fmt: skip
    if extra is not None:
        lines += ["## Newest", "<!-- date: 2026-11-29T10:00:00Z -->", extra, ""]
    return "\n".join(lines)


@pytest.fixture
def filled(memory: memdir.Memory, pg_db: Database, embedder: Embedder) -> PgIndex:
    """An agent of 300 journal notes (and the starter layout's items), every vector made."""
    pg = PgIndex(pg_db, memory.manifest.agent)
    memory.knowledge.save("Caroline paints sunrises over the harbour", tags=["art"])
    for relpath, (name, layer) in memory.index.files_on_disk().items():
        text = (memory.root / relpath).read_text()
        index_text(pg, relpath, text, name, layer, mtime_ns=1, size=len(text))
    write_journal(memory, pg, _journal(300))
    assert pg.ensure_vectors(embedder) > 300
    return pg


def _scopes(memory: memdir.Memory) -> list[Scope]:
    now, decay = memory.clock(), memory.manifest.decay
    return [
        Scope(Filters(mode="deep"), decay, now),
        Scope(Filters(mode="normal"), decay, now),
        Scope(Filters(mode="normal"), decay, now, wide=True),
        Scope(Filters(mode="deep", kinds=("observation",)), decay, now),
        Scope(Filters(mode="deep", tags=("art",)), decay, now),
        Scope(Filters(mode="deep", layers=("journal",), since=datetime(2026, 11, 20)), decay, now),
        Scope(Filters(mode="deep", until=datetime(2026, 11, 3)), decay, now),
    ]


def _search(
    memory: memdir.Memory, pg: PgIndex, embedder: Embedder, query: str, depth: int = 20
) -> list[tuple[list[int], list[int]]]:
    """Each scope's (keyword ids, semantic ids), in order."""
    found = pg.candidates(
        query_words(query), embedder.embed([query])[0], embedder.id, _scopes(memory), depth,
        _floor(memory.index),
    )  # fmt: skip
    return [([i for i, _ in kw], [i for i, _ in sem]) for kw, sem in found]


FLOOR = 0.01
"""(an orthogonal text's cosine is 0 in numpy, and a rounding either side of it in
pgvector: a floor of exactly 0 would split them)"""


@contextmanager
def _sent(pg: PgIndex) -> Iterator[list[str]]:
    """The statements ``pg``'s searches send inside (its connection's ``execute``
    watched; PostgreSQL answers them)."""
    conn = pg._conn()
    sent: list[str] = []
    execute = conn.execute

    def watched(query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return execute(query, *args, **kwargs)

    conn.execute = watched  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        del conn.execute


def test_below_the_crossover_a_search_is_the_sql_path(
    memory: memdir.Memory, filled: PgIndex, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    (items,) = filled._conn().execute(vector_cache.SIZE_SQL, (filled.agent,)).fetchone()
    monkeypatch.setenv(vector_cache.MIN_ITEMS_ENV, str(items + 1))
    scopes, query = _scopes(memory), "sailing with kids"
    words, vector = query_words(query), embedder.embed([query])[0]
    with _sent(filled) as sent:
        first = filled.candidates(words, vector, embedder.id, scopes, 20, FLOOR)
    assert sent[-1] == vector_cache.SIZE_SQL  # the count read with them, once a minute
    assert vector_cache.SIZE_SQL not in sent[:-1]
    with _sent(filled) as searched:
        second = filled.candidates(words, vector, embedder.id, scopes, 20, FLOOR)
    monkeypatch.setenv(vector_cache.ENV, "off")
    with _sent(filled) as off:
        sql = filled.candidates(words, vector, embedder.id, scopes, 20, FLOOR)
    assert searched == off  # the statements of the SQL path, and those only
    assert len(searched) == 2 * len(scopes)  # a keyword and a vector statement each
    assert first == second == sql
    assert vector_cache.REGISTRY.held_keys() == []


def test_from_the_crossover_on_the_cache_answers_what_sql_answers(
    memory: memdir.Memory, filled: PgIndex, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    (items,) = filled._conn().execute(vector_cache.SIZE_SQL, (filled.agent,)).fetchone()
    monkeypatch.setenv(vector_cache.MIN_ITEMS_ENV, str(items))
    scopes = _scopes(memory)
    for query in QUERIES:
        words, vector = query_words(query), embedder.embed([query])[0]
        monkeypatch.setenv(vector_cache.ENV, "off")
        sql = filled.candidates(words, vector, embedder.id, scopes, 20, FLOOR)
        monkeypatch.delenv(vector_cache.ENV)
        if query == QUERIES[0]:  # the agent's count not known yet: SQL, and the count read
            with _sent(filled) as sent:
                first = filled.candidates(words, vector, embedder.id, scopes, 20, FLOOR)
            assert vector_cache.CHECK_SQL not in sent and sent[-1] == vector_cache.SIZE_SQL
            assert vector_cache.REGISTRY.held_keys() == []
            assert first == sql
        with _sent(filled) as sent:
            held = filled.candidates(words, vector, embedder.id, scopes, 20, FLOOR)
        assert vector_cache.CHECK_SQL in sent  # the matrix's, checked by version
        assert len(vector_cache.REGISTRY.held_keys()) == 1
        same_candidates(held, sql)
    # an agent that shrank below it is dropped once its count is read again
    monkeypatch.setenv(vector_cache.MIN_ITEMS_ENV, str(items + 1))
    monkeypatch.setattr(vector_cache, "RECHECK_SECONDS", 0.0)
    filled.candidates([], embedder.embed(["violin"])[0], embedder.id, scopes, 20, FLOOR)
    assert vector_cache.REGISTRY.held_keys() == []


def test_the_cache_finds_what_sql_finds(
    memory: memdir.Memory, filled: PgIndex, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    scopes = _scopes(memory)
    for query in QUERIES:
        vector = embedder.embed([query])[0]
        for depth in (5, 20, 200):
            monkeypatch.setenv(vector_cache.ENV, "off")
            vector_cache.REGISTRY.clear()
            sql = filled.candidates(query_words(query), vector, embedder.id, scopes, depth, FLOOR)
            assert vector_cache.REGISTRY.held_keys() == []  # off: nothing held
            monkeypatch.delenv(vector_cache.ENV)
            held = filled.candidates(query_words(query), vector, embedder.id, scopes, depth, FLOOR)
            assert len(vector_cache.REGISTRY.held_keys()) == 1
            for (kw_sql, sem_sql), (kw_held, sem_held) in zip(sql, held, strict=True):
                assert kw_held == kw_sql
                if query == QUERIES[-1] and depth <= 20:  # exact ties: by id, as in SQL
                    assert [i for i, _ in sem_held] == [i for i, _ in sem_sql], (query, depth)
                assert tied_blocks(sem_held) == tied_blocks(sem_sql), (query, depth)
                for (_, mine), (_, theirs) in zip(sem_held, sem_sql, strict=True):
                    assert mine == pytest.approx(theirs, abs=1e-5)
    assert any(sem for _, sem in held[3:]), "some filtered scope found something"
    assert filled.semantic(vector, embedder.id, scopes[1], 10, FLOOR) == [
        pair for pair in held[1][1][:10]
    ]


def test_a_write_from_another_connection_is_seen_by_the_next_search(
    memory: memdir.Memory, filled: PgIndex, embedder: Embedder, pg_url: str, pg_schema: str
) -> None:
    query = "sailing with kids"
    first = _search(memory, filled, embedder, query)
    best = first[0][1][0]
    (best_text,) = (
        filled.folder.conn().execute("SELECT heading FROM items WHERE id = %s", (best,)).fetchone()
    )
    number = int(str(best_text).split()[-1])
    other_db = Database(pg_url, schema=pg_schema)  # another process's connections
    try:
        other = PgIndex(other_db, filled.agent)
        keys = "SELECT DISTINCT vector_key FROM items WHERE agent = %s"
        before = set(other_db.reader().execute(keys, (filled.agent,)).fetchall())
        write_journal(
            memory, other, _journal(300, skip=number, extra="Sailing with kids, sailing!")
        )
        # the new note, and the notes after the one gone in their windows (each short
        # note's key names the notes before it: ``index.windows``)
        new = set(other_db.reader().execute(keys, (filled.agent,)).fetchall()) - before
        assert other.ensure_vectors(embedder) == len(new) >= 1
        after = _search(memory, filled, embedder, query)
        (newest,) = (
            other_db.reader()
            .execute(
                "SELECT id FROM items WHERE agent = %s AND heading = 'Newest'", (filled.agent,)
            )
            .fetchone()
        )
        for _, semantic in after:
            assert best not in semantic  # deleted: never a hit
        assert after[0][1][0] == newest  # new: found first
        # and a vector re-made in place (another model's first, then this one's)
        (key,) = (
            other_db.reader()
            .execute("SELECT vector_key FROM items WHERE id = %s", (newest,))
            .fetchone()
        )
        other.store_vectors("other", embedder.dim, [(str(key), embedder.embed(["x"])[0])])
        assert all(newest not in sem for _, sem in _search(memory, filled, embedder, query))
        assert other.ensure_vectors(embedder) == 1
        assert _search(memory, filled, embedder, query)[0][1][0] == newest
    finally:
        other_db.close()
    vectors = vector_cache.REGISTRY._held[vector_cache.REGISTRY.held_keys()[0]]
    assert vectors.version > 0
    assert 300 <= len(vectors.vectors) <= filled.vector_counts(embedder.id)[0]


def test_a_matrix_older_than_the_log_is_loaded_again(
    memory: memdir.Memory, filled: PgIndex, embedder: Embedder
) -> None:
    _search(memory, filled, embedder, "violin")
    (held,) = vector_cache.REGISTRY._held.values()
    conn = filled.folder.conn()
    conn.execute(
        "UPDATE item_versions SET version = version + %s WHERE agent = %s",
        (vector_cache.ITEM_LOG_KEEP, filled.agent),
    )
    conn.execute("DELETE FROM item_log WHERE agent = %s", (filled.agent,))
    conn.execute("DELETE FROM items WHERE agent = %s AND heading = 'Note 9'", (filled.agent,))
    found = _search(memory, filled, embedder, "learning the violin")
    (gone,) = [row for row in conn.execute("SELECT 1")]  # (the statement above committed)
    assert gone == (1,)
    assert (
        held.version
        == conn.execute(
            "SELECT version FROM item_versions WHERE agent = %s", (filled.agent,)
        ).fetchone()[0]
    )
    headings = {int(i): str(h) for i, h in conn.execute("SELECT id, heading FROM items").fetchall()}
    assert all(headings.get(i) not in (None, "Note 9") for i in found[0][1])


def test_the_least_recently_searched_agent_is_dropped_past_the_bound(
    memory: memdir.Memory,
    filled: PgIndex,
    embedder: Embedder,
    pg_db: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    per_agent = len(filled.folder.conn().execute("SELECT 1 FROM items").fetchall())
    bytes_each = per_agent * vector_cache.row_bytes(embedder.dim)
    monkeypatch.setenv(vector_cache.ENV, f"{(bytes_each * 3 // 2) // 1024}k")  # 1.5 agents
    other = PgIndex(pg_db, "second")
    layer = memory.manifest.layers["journal"]
    text = _journal(300)
    index_text(other, "journal/x.md", text, "journal", layer, mtime_ns=1, size=len(text))
    other.ensure_vectors(embedder)
    expected = _search(memory, filled, embedder, "violin")
    assert [key[2] for key in vector_cache.REGISTRY.held_keys()] == [filled.agent]
    _search(memory, other, embedder, "violin")
    assert [key[2] for key in vector_cache.REGISTRY.held_keys()] == ["second"]
    assert _search(memory, filled, embedder, "violin") == expected  # loaded again
    assert [key[2] for key in vector_cache.REGISTRY.held_keys()] == [filled.agent]


def test_an_agent_over_the_bound_is_searched_in_sql(
    memory: memdir.Memory, filled: PgIndex, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(vector_cache.ENV, "off")
    expected = _search(memory, filled, embedder, "bread")
    monkeypatch.setenv(vector_cache.ENV, "64k")  # under 300 rows of 256 floats
    assert _search(memory, filled, embedder, "bread") == expected
    assert vector_cache.REGISTRY.held_keys() == []
    assert (
        vector_cache.REGISTRY.held(
            (filled.folder.db.url, filled.folder.db.schema, filled.agent, embedder.id, embedder.dim)
        )[0]
        is None
    )  # remembered as too big, looked at again later


def test_the_crossover_setting() -> None:
    assert vector_cache.min_items("") == vector_cache.MIN_ITEMS
    assert vector_cache.min_items("0") == 0  # every agent
    assert vector_cache.min_items("12000") == 12000
    assert vector_cache.min_items("many") == vector_cache.MIN_ITEMS


def test_the_setting_reads_sizes_and_off() -> None:
    assert vector_cache.limit_bytes("off") == 0
    assert vector_cache.limit_bytes("0") == 0
    assert vector_cache.limit_bytes("") == vector_cache.DEFAULT_MB * 2**20
    assert vector_cache.limit_bytes("64") == 64 * 2**20
    assert vector_cache.limit_bytes("512k") == 512 * 2**10
    assert vector_cache.limit_bytes("2G") == 2 * 2**30
    assert vector_cache.limit_bytes("lots") == vector_cache.DEFAULT_MB * 2**20
