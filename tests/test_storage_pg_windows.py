"""Window vectors in PostgreSQL (``storage.postgres.window_vectors``): the same folder
gets the same keys and vectors as on SQLite (``index.windows``), an append moves no
earlier vector, an incremental index is a rebuild, and a search finds a short turn by
the turns before it. On the session's real PostgreSQL (``pg_fixture``)."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memdir
from memdir.index import windows
from memdir.index.embedders import Embedder, HashingEmbedder, MiniLMEmbedder
from memdir.index.sync import Index
from memdir.memory import Memory
from memdir.storage.postgres import writes
from memdir.storage.postgres.db import Database
from memdir.storage.postgres.index import PgIndex, postgres_index
from memdir.storage.postgres.window_vectors import META_KEY
from memdir.testing import FakeClock

LONG = "A long turn that says a great deal about the plan for the trip. " * 4
TURNS = [
    ("Caroline", "Booked the flight to Lisbon"),
    ("Mel", "For the 14th?"),
    ("Caroline", "Yes, and a window seat"),
    ("Mel", LONG),
    ("Caroline", "Nice."),
    ("Mel", "What about the hotel?"),
    ("Caroline", "Near the river, three nights"),
    ("Mel", "x" * 700),  # a window of its own
    ("Caroline", "And the car?"),
    ("Mel", "Picked up at the airport"),
]
DAY = "journal/2026-11-30.md"
CLOCK = "2026-11-30T10:00:00Z"


def _write(root: Path, turns: list[tuple[str, str]], day: str = DAY) -> None:
    """A conversation's day as bench/locomo.py writes one: a section a turn."""
    body = "".join(f"## {who}\n{said}\n\n" for who, said in turns)
    (root / day).write_text(f"# {Path(day).stem}\n\n{body}")


def _folder(root: Path, manifest: str = "") -> Path:
    memdir.init(root)
    if manifest:
        with (root / "memdir.toml").open("a") as file:
            file.write(manifest)
    _write(root, TURNS)
    _write(root, TURNS[5:] + TURNS[:3], "journal/2026-11-29.md")
    return root


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def _pg(memory: Memory, db: Database, embedder: Embedder | None, agent: str = "w") -> Index:
    return postgres_index(
        memory.root, memory.manifest, db, embedder=embedder, clock=memory.clock, agent=agent
    )


@pytest.fixture
def both(tmp_path: Path, pg_db: Database, model: MiniLMEmbedder) -> Iterator[tuple[Memory, Index]]:
    """The folder indexed and embedded on SQLite by MiniLM, and scanned on PostgreSQL
    (its index, agent ``w``)."""
    root = _folder(tmp_path / "mem")
    with memdir.open(root, clock=FakeClock(CLOCK), embedder=model) as memory:
        memory.scan()
        memory.index.ensure_vectors()
        pg = _pg(memory, pg_db, model)
        pg.scan()
        yield memory, pg


def _rows(index: Index) -> PgIndex:
    rows = index.rows
    assert isinstance(rows, PgIndex)
    return rows


def _pg_keys(db: Database, agent: str = "w") -> list[tuple[str, str, str]]:
    return [
        (str(p), str(a), str(k))
        for p, a, k in db.reader().execute(
            "SELECT path, anchor, vector_key FROM items WHERE agent = %s ORDER BY path, ordinal",
            (agent,),
        )
    ]


def _sqlite_keys(memory: Memory) -> list[tuple[str, str, str]]:
    return [
        (str(p), str(a), str(k))
        for p, a, k in memory.index.db.execute(
            "SELECT i.path, i.anchor, i.vector_key FROM items AS i JOIN places AS p "
            "ON p.id = i.id ORDER BY i.path, p.ordinal"
        )
    ]


def _pg_vectors(db: Database, agent: str = "w") -> dict[str, Any]:
    return {
        str(key): vector.to_numpy()
        for key, vector in db.reader().execute(
            "SELECT vector_key, embedding FROM items WHERE agent = %s", (agent,)
        )
        if vector is not None
    }


def _sqlite_vectors(memory: Memory) -> dict[str, Any]:
    return {
        str(key): np.frombuffer(blob, dtype=np.float32)
        for key, blob in memory.index.db.execute("SELECT vector_key, vector FROM vectors")
    }


def _same_vectors(mine: dict[str, Any], theirs: dict[str, Any]) -> None:
    assert set(mine) == set(theirs)
    for key, vector in mine.items():
        assert np.allclose(vector, theirs[key], atol=1e-5), key


def test_the_keys_are_sqlites_and_name_the_windows(tmp_path: Path, pg_db: Database) -> None:
    root = _folder(tmp_path / "mem")
    with memdir.open(root, clock=FakeClock(CLOCK), embedder="hashing") as memory:
        memory.scan()
        pg = _pg(memory, pg_db, None)
        pg.scan()  # a first scan: every file's rows at once (``refill``)
        keys = _pg_keys(pg_db)
        assert keys == _sqlite_keys(memory)
        entries = windows.file_entries(memory.index.db, DAY)
        assert any(key != windows.own_key(text) for _, text, key in entries)  # windowed
        # a file written alone (``write``) keys as a first scan does
        _write(root, [*TURNS, ("Mel", "Aisle is better")], "journal/2026-11-28.md")
        memory.scan()
        pg.scan()
        assert _pg_keys(pg_db) == _sqlite_keys(memory)


def test_window_vectors_are_sqlites_and_an_append_moves_none(
    both: tuple[Memory, Index], pg_db: Database, model: MiniLMEmbedder
) -> None:
    memory, pg = both
    root = memory.root
    pg.ensure_vectors()
    before = _pg_vectors(pg_db)
    _same_vectors(before, _sqlite_vectors(memory))
    assert any(
        float(before[key] @ model.embed([text])[0]) < 0.999
        for _, text, key in windows.file_entries(memory.index.db, DAY)
    ), "some turn's vector reads the turns before it"
    _write(root, [*TURNS, ("Mel", "Aisle is better")])  # an append
    memory.scan()
    memory.index.ensure_vectors()
    pg.scan()
    assert _rows(pg).ensure_vectors(model) == 1  # the new turn only
    after = _pg_vectors(pg_db)
    for key, vector in before.items():
        assert np.array_equal(after[key], vector)  # not even re-made
    _same_vectors(after, _sqlite_vectors(memory))


def test_batches_cutting_windows_make_the_same_vectors(
    both: tuple[Memory, Index], pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two keys a batch: a window the batch's end cuts is run for its keys and gives the
    later ones theirs; the vectors are the ones a pass over whole files makes."""
    monkeypatch.setattr(writes, "EMBED_BATCH", 2)
    memory, pg = both
    assert pg.ensure_vectors() == len(set(_sqlite_vectors(memory)))
    _same_vectors(_pg_vectors(pg_db), _sqlite_vectors(memory))


def test_an_incremental_index_is_a_rebuild(
    tmp_path: Path, pg_db: Database, model: MiniLMEmbedder
) -> None:
    root = _folder(tmp_path / "mem")
    with memdir.open(root, clock=FakeClock(CLOCK), embedder=model) as memory:
        pg = _pg(memory, pg_db, model)
        pg.scan()
        pg.ensure_vectors()
        # an edit before short turns (re-keys them), an append, a file removed, a new one
        edited = [("Caroline", "Booked the train to Porto"), *TURNS[1:], ("Mel", "Aisle!")]
        _write(root, edited)
        (root / "journal" / "2026-11-29.md").unlink()
        _write(root, TURNS[:4], "journal/2026-12-01.md")
        pg.scan()
        pg.ensure_vectors()
        keys, vectors = _pg_keys(pg_db), _pg_vectors(pg_db)
        pg.reindex()  # every row made again, each embedded before it is inserted
        assert _pg_keys(pg_db) == keys
        _same_vectors(_pg_vectors(pg_db), vectors)
        assert _rows(pg).ensure_vectors(model) == 0
        memory.scan()  # and SQLite's rebuild agrees
        memory.index.ensure_vectors()
        assert _sqlite_keys(memory) == keys
        _same_vectors(_sqlite_vectors(memory), vectors)


def test_windows_false_keeps_the_keys_and_embeds_each_item_alone(
    tmp_path: Path, pg_db: Database
) -> None:
    """``[index.embedder_options] windows = false``: the keys are the windows' (as on
    SQLite, so the same folder has the same keys), every vector the item's lone one."""
    root = _folder(tmp_path / "mem", "\n[index.embedder_options]\nwindows = false\n")
    with memdir.open(root, clock=FakeClock(CLOCK)) as memory:
        embedder = memory.index.embedder
        assert isinstance(embedder, MiniLMEmbedder) and not embedder.windows
        memory.scan()
        memory.index.ensure_vectors()
        pg = _pg(memory, pg_db, embedder)
        pg.scan()
        pg.ensure_vectors()
        assert _pg_keys(pg_db) == _sqlite_keys(memory)
        entries = windows.file_entries(memory.index.db, DAY)
        assert any(key != windows.own_key(text) for _, text, key in entries)
        stored = _pg_vectors(pg_db)
        lone = embedder.embed([text for _, text, _ in entries])
        for (_, _, key), vector in zip(entries, lone, strict=True):
            assert float(stored[key] @ vector) > 0.9999
        _same_vectors(stored, _sqlite_vectors(memory))


class Counting(HashingEmbedder):
    """The hashing embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.asked.extend(texts)
        return super().embed(texts)


def test_an_embedder_without_windows_embeds_a_moved_turn_no_more(
    tmp_path: Path, pg_db: Database
) -> None:
    """The hashing embedder: a windowed key's vector is its text's own, so a turn moved
    to another window in a bulk job (a reindex) keeps it: only the new turn is embedded."""
    embedder = Counting()
    assert not windows.embeds_windows(embedder)
    root = _folder(tmp_path / "mem")
    with memdir.open(root, clock=FakeClock(CLOCK), embedder="hashing") as memory:
        pg = _pg(memory, pg_db, embedder)
        pg.scan()
        pg.ensure_vectors()
        keys = _pg_keys(pg_db)
        _write(root, [("Mel", "Hello again"), *TURNS])  # every later turn re-keyed
        embedder.asked.clear()
        pg.reindex()
        assert len(embedder.asked) == 1 and "Hello again" in embedder.asked[0]
        assert {k for *_, k in _pg_keys(pg_db)} - {k for *_, k in keys}  # (re-keyed)
        rows = pg_db.reader().execute(
            "SELECT heading, meta, body, embedding FROM items WHERE agent = 'w' AND path = %s",
            (DAY,),
        )
        for heading, meta, body, vector in rows:
            text = windows.embed_text(heading, meta, body)
            assert np.allclose(vector.to_numpy(), embedder.embed([text])[0], atol=1e-6)


def test_another_window_version_rekeys_the_agent(tmp_path: Path, pg_db: Database) -> None:
    """An index whose keys another window version made (here: none, every item keyed by
    its own text, as before the windows) is re-keyed once, by the next write or search."""
    root = _folder(tmp_path / "mem")
    with memdir.open(root, clock=FakeClock(CLOCK), embedder="hashing") as memory:
        embedder = memory.index.embedder
        pg = _pg(memory, pg_db, embedder)
        pg.scan()
        pg.ensure_vectors()
        keys = _pg_keys(pg_db)
        conn = pg_db.reader()
        own = [
            (windows.own_key(windows.embed_text(heading, meta, body)), item_id)
            for item_id, heading, meta, body in conn.execute(
                "SELECT id, heading, meta, body FROM items WHERE agent = 'w'"
            )
        ]
        with conn.cursor() as cursor:
            cursor.executemany("UPDATE items SET vector_key = %s WHERE id = %s", own)
        conn.execute("DELETE FROM index_meta WHERE agent = 'w' AND key = %s", (META_KEY,))
        assert _pg_keys(pg_db) != keys
        assert embedder is not None
        again = _pg(memory, pg_db, embedder)  # another process
        assert _rows(again).ensure_vectors(embedder) > 0  # the windowed keys re-made
        assert _pg_keys(pg_db) == keys
        (version,) = conn.execute(
            "SELECT value FROM index_meta WHERE agent = 'w' AND key = %s", (META_KEY,)
        ).fetchone()
        assert version == windows.VERSION
        assert _rows(_pg(memory, pg_db, embedder)).ensure_vectors(embedder) == 0


@pytest.fixture
def pg_memory(monkeypatch: pytest.MonkeyPatch, pg_db: Database) -> Iterator[None]:
    """Every ``Memory`` opened keeps its index rows in PostgreSQL (an agent a folder)."""

    def index(self: Memory) -> object:
        return _pg(self, pg_db, self._embedder(), agent=self.root.parent.name)

    prop = functools.cached_property(index)
    prop.__set_name__(Memory, "index")
    monkeypatch.setattr(Memory, "index", prop)
    yield


OTHER = [("Mel", "The garden is full of tomatoes this year"), ("Caroline", "Lucky you!"),
         ("Mel", "Want some?"), ("Caroline", "Please, a basket."),
         ("Mel", "My cousin got married on Saturday"), ("Caroline", "Congratulations to them"),
         ("Mel", "The cake was lemon"), ("Caroline", "Yum.")]  # fmt: skip


@pytest.mark.usefixtures("pg_memory")
def test_a_search_finds_a_short_turn_by_its_window(tmp_path: Path, model: MiniLMEmbedder) -> None:
    """ "For the 14th?" answers the query only with the turn before it: found in its
    window, not alone (``windows = false``: below the floor)."""
    found = {}
    for name, embedder in (("windows", model), ("alone", MiniLMEmbedder(windows=False))):
        root = tmp_path / name / "mem"
        memdir.init(root)
        _write(root, TURNS[:3])
        _write(root, OTHER, "journal/2026-11-29.md")
        with memdir.open(root, clock=FakeClock(CLOCK), embedder=embedder) as memory:
            assert isinstance(memory.index.rows, PgIndex)
            memory.scan()
            memory.index.ensure_vectors()
            hits = memory.search("what date is the flight to Lisbon", k=3)
            found[name] = [(hit.path, hit.anchor) for hit in hits]
    assert found["windows"][:2] == [(DAY, "Caroline"), (DAY, "Mel")]
    assert (DAY, "Mel") not in found["alone"]
