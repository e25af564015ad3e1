"""A search's vectors on PostgreSQL while a write holds rows (``storage.postgres.unstored``):
``ensure_vectors`` passes over the rows another transaction holds (``FOR UPDATE SKIP
LOCKED``), counts only the texts it stored, and keeps the vectors it made for those it
passed over, so the next search stores them without embedding them again."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import psycopg
import pytest
from psycopg import sql

import memdir
from memdir.index.embedders import HashingEmbedder, Vectors
from memdir.index.search import EMBED_SECONDS
from memdir.storage.postgres.db import Database
from memdir.storage.postgres.index import PgIndex
from memdir.storage.postgres.unstored import Unstored
from pg_vector_fixtures import PATH, write_journal

pytestmark = pytest.mark.usefixtures("fresh_vector_cache")

NOTES = (
    "sailing on the lake with the kids",
    "baking rye bread on sunday",
    "a train to the mountains",
    "learning the violin slowly",
)


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, noting every text it is given."""

    def __init__(self, dim: int = 256) -> None:
        super().__init__(dim)
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.asked += list(texts)
        return super().embed(texts)


def _journal(*notes: str) -> str:
    lines = ["# Journal 2026-11-29", ""]
    for note in notes:
        lines += [f"## {note}", "<!-- date: 2026-11-29T09:00:00Z -->", note, ""]
    return "\n".join(lines)


def _ids(db: Database) -> dict[str, int]:
    """Each item's id, by its heading (its note)."""
    rows = db.reader().execute("SELECT id, heading FROM items WHERE agent = 'agent-a'")
    return {str(heading): int(item_id) for item_id, heading in rows}


def _stored(db: Database, model: str) -> dict[int, Vectors]:
    """The vectors from ``model`` the items have, by id."""
    rows = db.reader().execute(
        "SELECT id, embedding FROM items WHERE agent = 'agent-a' AND model = %s", (model,)
    )
    return {int(item_id): np.asarray(vector.to_numpy()) for item_id, vector in rows}


@pytest.fixture
def pg(memory: memdir.Memory, pg_db: Database) -> PgIndex:
    """Agent a's index, with a journal of ``NOTES`` and no vector yet."""
    index = PgIndex(pg_db, "agent-a")
    write_journal(memory, index, _journal(*NOTES))
    return index


@contextmanager
def _row_held(url: str, schema: str, item_id: int) -> Iterator[None]:
    """Another connection's transaction holding the item's row (as a locked write's does)
    until the block ends."""
    with psycopg.connect(url) as conn:  # not autocommit: the lock lasts to the rollback
        table = sql.Identifier(schema, "items")
        conn.execute(sql.SQL("SELECT 1 FROM {} WHERE id = %s FOR UPDATE").format(table), (item_id,))
        try:
            yield
        finally:
            conn.rollback()


def test_the_count_is_of_the_texts_stored_not_those_embedded(
    pg: PgIndex, pg_db: Database, pg_url: str, pg_schema: str
) -> None:
    ids = _ids(pg_db)
    held = ids[NOTES[0]]
    embedder = CountingEmbedder()
    with _row_held(pg_url, pg_schema, held):
        assert pg.ensure_vectors(embedder, seconds=EMBED_SECONDS) == len(NOTES) - 1
        assert len(embedder.asked) == len(NOTES)  # every text embedded, one passed over
    assert set(_stored(pg_db, embedder.id)) == set(ids.values()) - {held}


def test_a_search_during_a_held_row_does_not_embed_it_again_and_stores_it_after(
    pg: PgIndex, pg_db: Database, pg_url: str, pg_schema: str
) -> None:
    ids = _ids(pg_db)
    held = {ids[NOTES[0]], ids[NOTES[2]]}
    embedder = CountingEmbedder()
    with _row_held(pg_url, pg_schema, ids[NOTES[0]]), _row_held(pg_url, pg_schema, ids[NOTES[2]]):
        assert pg.ensure_vectors(embedder, seconds=EMBED_SECONDS) == len(NOTES) - 2
        asked = list(embedder.asked)
        assert len(asked) == len(NOTES)
        for _ in range(2):  # the next searches while the rows are held
            assert pg.ensure_vectors(embedder, seconds=EMBED_SECONDS) == 0
            assert embedder.asked == asked  # nothing embedded again
        assert set(_stored(pg_db, embedder.id)) == set(ids.values()) - held
    assert pg.ensure_vectors(embedder, seconds=EMBED_SECONDS) == 2  # the rows free: stored
    assert embedder.asked == asked  # with the vectors the first search made
    stored = _stored(pg_db, embedder.id)
    assert set(stored) == set(ids.values())
    fresh = HashingEmbedder()  # the vectors kept are the texts' own
    for note in (NOTES[0], NOTES[2]):
        expected = fresh.embed([f"{note}\n{note}"])[0]
        assert np.allclose(stored[ids[note]], expected, atol=1e-6)
    assert len(pg._unstored) == 0  # dropped once stored
    assert pg.ensure_vectors(embedder) == 0


def test_a_row_whose_text_changed_is_embedded_afresh(
    memory: memdir.Memory, pg: PgIndex, pg_db: Database, pg_url: str, pg_schema: str
) -> None:
    """What is kept is by the text embedded: a row rewritten while its old text's vector
    is kept gets its new text's vector, never the old one. (The last note: a short
    turn's key names the turns before it, so a first one rewritten re-keys the rest.)"""
    embedder = CountingEmbedder()
    with _row_held(pg_url, pg_schema, _ids(pg_db)[NOTES[-1]]):
        pg.ensure_vectors(embedder, seconds=EMBED_SECONDS)
    assert len(pg._unstored) == 1
    rewritten = "sailing on the sea with the kids"
    write_journal(memory, pg, _journal(*NOTES[:-1], rewritten))
    embedder.asked.clear()
    assert pg.ensure_vectors(embedder, seconds=EMBED_SECONDS) == 1
    assert embedder.asked == [f"{rewritten}\n{rewritten}"]
    vector = _stored(pg_db, embedder.id)[_ids(pg_db)[rewritten]]
    assert np.allclose(vector, HashingEmbedder().embed([f"{rewritten}\n{rewritten}"])[0])


def _searched_in_another_thread(pg: PgIndex, embedder: CountingEmbedder) -> int:
    """``ensure_vectors`` as a search runs it, on a thread of its own (its own
    connection, outside the folder lock this thread may hold); how many it stored."""
    stored: list[int] = []
    search = threading.Thread(
        target=lambda: stored.append(pg.ensure_vectors(embedder, seconds=EMBED_SECONDS))
    )
    search.start()
    search.join(timeout=60)
    assert stored, "the search did not finish"
    return stored[0]


def test_a_locked_write_inserts_the_vectors_a_search_kept_and_embeds_only_the_rest(
    memory: memdir.Memory, pg: PgIndex, pg_db: Database
) -> None:
    """A push moving the journal to another file: its write holds the old rows (deleted,
    not yet committed) while a search embeds their texts and cannot store them; the
    write then inserts the moved texts with the vectors the search kept, and embeds
    only the text that is new."""
    embedder = CountingEmbedder()
    added = "planting tulips in the autumn"
    moved = "journal/2026-11-30.md"
    with pg.bulk(embedder):
        pg.remove_file(PATH)  # the old rows held by this write until it commits
        assert _searched_in_another_thread(pg, embedder) == 0  # all of them passed over
        assert len(embedder.asked) == len(NOTES) and len(pg._unstored) == len(NOTES)
        embedder.asked.clear()
        write_journal(memory, pg, _journal(*NOTES, added), path=moved)
    assert embedder.asked == [f"{added}\n{added}"]  # none of the texts the search made
    assert len(pg._unstored) == 0  # what the write stored is dropped
    ids = _ids(pg_db)
    stored = _stored(pg_db, embedder.id)
    assert set(stored) == set(ids.values())
    fresh = HashingEmbedder()  # each row has its own text's vector
    for note in (*NOTES, added):
        assert np.allclose(stored[ids[note]], fresh.embed([f"{note}\n{note}"])[0], atol=1e-6)
    assert pg.ensure_vectors(embedder) == 0
    assert embedder.asked == [f"{added}\n{added}"]


def test_a_failed_write_gives_back_the_vectors_it_took_from_what_a_search_kept(
    memory: memdir.Memory, pg: PgIndex, pg_db: Database
) -> None:
    """The write above, failing after it inserted the moved texts with the search's
    vectors: its rows are rolled back, and so the vectors go back to be stored by the
    next search, not made again."""
    embedder = CountingEmbedder()
    with pytest.raises(RuntimeError), pg.bulk(embedder):
        pg.remove_file(PATH)
        assert _searched_in_another_thread(pg, embedder) == 0
        embedder.asked.clear()
        with pg.bulk():  # an inner block that succeeds: its take is the outer block's
            write_journal(memory, pg, _journal(*NOTES), path="journal/2026-11-30.md")
        assert embedder.asked == [] and len(pg._unstored) == 0  # taken, none embedded
        raise RuntimeError("killed mid-push")
    assert len(pg._unstored) == len(NOTES)  # given back with the rollback
    assert set(_ids(pg_db)) == set(NOTES) and not _stored(pg_db, embedder.id)
    assert pg.ensure_vectors(embedder) == len(NOTES)  # stored from what was kept
    assert embedder.asked == [] and len(pg._unstored) == 0
    assert set(_stored(pg_db, embedder.id)) == set(_ids(pg_db).values())


def test_a_write_takes_only_its_own_embedders_vectors_from_what_a_search_kept(
    memory: memdir.Memory, pg: PgIndex, pg_db: Database, pg_url: str, pg_schema: str
) -> None:
    """What a search kept is by model: a write embedding with another embedder embeds
    every text itself, and leaves the search's vectors kept."""
    searched = CountingEmbedder()
    with _row_held(pg_url, pg_schema, _ids(pg_db)[NOTES[0]]):
        pg.ensure_vectors(searched, seconds=EMBED_SECONDS)
    assert len(pg._unstored) == 1
    other = CountingEmbedder(dim=128)  # another model: hashing-v1-128
    with pg.bulk(other):
        write_journal(memory, pg, _journal(NOTES[0]), path="journal/2026-11-30.md")
    assert other.asked == [f"{NOTES[0]}\n{NOTES[0]}"]
    assert len(pg._unstored) == 1


def test_the_vectors_kept_are_bounded_oldest_first() -> None:
    vectors = HashingEmbedder().embed([f"text {i}" for i in range(10)])
    unstored = Unstored(limit=4 * vectors[0].nbytes)
    unstored.keep("m", {f"k{i}": vectors[i] for i in range(10)})
    assert len(unstored) == 4
    assert unstored.take("m", ["k0", "k5"]) == {}  # the oldest went first
    found = unstored.take("m", ["k6", "k9"])
    assert set(found) == {"k6", "k9"} and np.array_equal(found["k9"], vectors[9])
    assert unstored.take("other model", ["k7"]) == {}
    assert len(unstored) == 2  # what was taken is gone
