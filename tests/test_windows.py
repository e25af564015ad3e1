"""Short narrative items embedded in their windows (memdir.index.windows, window_model):
which key each item gets, what a window run gives, and the index keeping both in step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import memdir
from memdir.index import windows
from memdir.index.embedders import MiniLMEmbedder
from memdir.testing import FakeClock

LONG = "A long turn that says a great deal about the plan. " * 6  # over SHORT_CHARS


def test_keys_name_what_each_vector_reads() -> None:
    texts = ["Where did you go?", "Paris, in May!", LONG, "Nice.", "x" * 999, "Why?"]
    keys = windows.keys(texts)
    assert [list(w) for w in windows.pack(texts)] == [[0, 1, 2, 3], [4], [5]]
    own = [windows.own_key(t) for t in texts]
    # the first of a window and a long item read only themselves: their own text's key
    assert keys[0] == own[0] and keys[2] == own[2] and keys[4] == own[4] and keys[5] == own[5]
    # a short item after another names the texts before it in its window
    assert keys[1] != own[1] and keys[3] != own[3]
    # an append moves no earlier key; an edit moves the later keys of its window only
    assert windows.keys([*texts, "And then?"])[:6] == keys
    edited = windows.keys(["Where did you go, then?", *texts[1:]])
    assert edited[1] != keys[1] and edited[3] != keys[3] and edited[4:] == keys[4:]
    # the same short text after other words is another key
    assert windows.keys(["Where were you?", "Paris, in May!"])[1] != keys[1]


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_a_window_run_gives_lone_vectors_to_items_that_read_nothing(
    model: MiniLMEmbedder,
) -> None:
    texts = ["Where did you go last summer?", "Paris, in May!", LONG, "Nice."]
    (framed,) = model.embed_windows([texts])
    lone = model.embed(texts)
    cosines = np.sum(framed * lone, axis=1)
    assert cosines[0] > 0.9999 and cosines[2] > 0.9999  # the first, and the long one
    assert cosines[1] < 0.999 and cosines[3] < 0.999  # these read the block before them
    # what an item reads decides its vector: the same turn after another question
    (other,) = model.embed_windows([["What do you eat for breakfast?", "Paris, in May!"]])
    assert float(other[1] @ framed[1]) < 0.999
    (again,) = model.embed_windows([texts])
    assert np.allclose(again, framed, atol=1e-5)


def test_a_window_over_the_models_positions_runs_in_parts(model: MiniLMEmbedder) -> None:
    # under WINDOW_CHARS of text but over 512 tokens: a character a token
    texts = ["字" * 190 for _ in range(5)]
    assert len(windows.pack(texts)) == 1
    (framed,) = model.embed_windows([texts])
    assert framed.shape == (5, 384)
    assert np.allclose(np.linalg.norm(framed, axis=1), 1.0, atol=1e-5)


TURNS = [("Caroline", "Booked the flight to Lisbon"), ("Mel", "For the 14th?"),
         ("Caroline", "Yes, and a window seat")]  # fmt: skip


def _write(root: Path, turns: list[tuple[str, str]]) -> None:
    """A conversation's day as bench/locomo.py writes one: a section a turn."""
    body = "".join(f"## {who}\n{said}\n\n" for who, said in turns)
    (root / "journal" / "2026-11-30.md").write_text(f"# 2026-11-30\n\n{body}")


def _journal(root: Path, clock: FakeClock, embedder: object) -> memdir.Memory:
    memdir.init(root)
    _write(root, TURNS)
    memory = memdir.open(root, clock=clock, embedder=embedder)  # type: ignore[arg-type]
    memory.scan()
    return memory


def _journal_path(db: object) -> str:
    (path,) = db.execute("SELECT DISTINCT path FROM items WHERE kind = 'journal'").fetchall()  # type: ignore[attr-defined]
    return str(path[0])


def test_the_index_stores_each_windowed_key_its_window_vector(
    tmp_path: Path, model: MiniLMEmbedder
) -> None:
    clock = FakeClock("2026-11-30T10:00:00Z")
    with _journal(tmp_path / "mem", clock, model) as memory:
        memory.index.ensure_vectors()
        db = memory.index.db
        rows = windows.file_entries(db, _journal_path(db))
        texts = [text for _, text, _ in rows]
        assert [key for _, _, key in rows] == windows.keys(texts)
        (expected,) = model.embed_windows([texts])
        stored = {
            key: np.frombuffer(blob, dtype=np.float32)
            for key, blob in db.execute("SELECT vector_key, vector FROM vectors")
        }
        for (_, _, key), vector in zip(rows, expected, strict=True):
            assert float(stored[key] @ vector) > 0.9999
        assert any(key != windows.own_key(text) for _, text, key in rows)
        hits = memory.search("which seat on the flight", k=3)
        assert hits[0].anchor == "Caroline (2)"  # the turn that answers


def test_an_embedder_without_windows_reuses_a_texts_own_vector(tmp_path: Path) -> None:
    """An item moved into a window (an observation archived) keeps its text's vector:
    nothing is embedded twice; and the keys are the ones a rebuild makes."""
    clock = FakeClock("2026-11-30T10:00:00Z")
    with _journal(tmp_path / "mem", clock, "hashing") as memory:
        memory.index.ensure_vectors()
        db = memory.index.db
        before = dict(db.execute("SELECT body, vector_key FROM items"))
        _write(memory.root, [*TURNS, ("Mel", "Aisle is better")])
        memory.scan()
        assert memory.index.ensure_vectors() == 1
        after = dict(db.execute("SELECT body, vector_key FROM items"))
        assert {k: after[k] for k in before} == before  # an append moves no earlier key
        keys = sorted(db.execute("SELECT path, vector_key FROM items"))
        memory.reindex()
        assert sorted(db.execute("SELECT path, vector_key FROM items")) == keys


def test_an_edit_before_a_turn_gives_it_a_new_key_and_vector(tmp_path: Path) -> None:
    """A turn's vector reads the turns before it in its window: editing one of them by
    hand re-keys the later turns (incrementally as a rebuild would) and embeds them."""
    clock = FakeClock("2026-11-30T10:00:00Z")
    with _journal(tmp_path / "mem", clock, "hashing") as memory:
        memory.index.ensure_vectors()
        db = memory.index.db
        keys = dict(db.execute("SELECT anchor, vector_key FROM items WHERE kind = 'journal'"))
        _write(memory.root, [("Caroline", "Booked the train to Porto"), *TURNS[1:]])
        memory.scan()
        after = dict(db.execute("SELECT anchor, vector_key FROM items WHERE kind = 'journal'"))
        assert all(after[anchor] != keys[anchor] for anchor in keys)  # each read the edit
        assert memory.index.ensure_vectors() == 3
        memory.reindex()
        assert (
            dict(db.execute("SELECT anchor, vector_key FROM items WHERE kind = 'journal'")) == after
        )


def test_windows_false_embeds_each_item_alone(tmp_path: Path) -> None:
    """``[index.embedder_options] windows = false``: the keys are the same, every vector
    is the item's lone one."""
    root = tmp_path / "mem"
    memdir.init(root)
    with (root / "memdir.toml").open("a") as manifest:
        manifest.write("\n[index.embedder_options]\nwindows = false\n")
    _write(root, TURNS)
    with memdir.open(root, clock=FakeClock("2026-11-30T10:00:00Z")) as memory:
        memory.scan()
        memory.index.ensure_vectors()
        db = memory.index.db
        rows = windows.file_entries(db, _journal_path(db))
        assert any(key != windows.own_key(text) for _, text, key in rows)
        lone = MiniLMEmbedder().embed([text for _, text, _ in rows])
        stored = dict(db.execute("SELECT vector_key, vector FROM vectors"))
        for (_, _, key), vector in zip(rows, lone, strict=True):
            assert float(np.frombuffer(stored[key], dtype=np.float32) @ vector) > 0.9999


def test_every_store_of_narrative_items_is_rekeyed() -> None:
    """A store left out of ``STORES`` would keep its files' old keys on a write while a
    rebuild gives them their windows'."""
    from memdir.index.extract import _SECTION_KINDS
    from memdir.index.ranking import NARRATIVE_KINDS

    narrative = {store for store, kind in _SECTION_KINDS.items() if kind in NARRATIVE_KINDS}
    assert narrative | {"document"} <= windows.STORES
    assert not windows.STORES & {"knowledge", "notebook", "state", "vault"}
