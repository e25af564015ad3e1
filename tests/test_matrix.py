"""The vector matrix on disk: a new process reads it, and never a stale or damaged one.

Each case compares what a process holds (item id -> vector) with what SQLite holds;
a matrix file that was read when it should not have been gives other rows.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import memdir
from memdir.files.atomic import TMP_SUFFIX
from memdir.index import matrix
from memdir.index.embedders import HashingEmbedder
from memdir.index.sync import Index
from memdir.index.vectors import VectorCache
from memdir.testing import FakeClock


def _open(folder: Path, clock: FakeClock) -> memdir.Memory:
    return memdir.open(folder, clock=clock, embedder=HashingEmbedder())


def _held(cache: VectorCache) -> dict[int, bytes]:
    live = np.flatnonzero(cache.alive[: cache.size])
    return {int(cache.ids[row]): cache.matrix[row].tobytes() for row in live}


def _truth(memory: memdir.Memory) -> dict[int, bytes]:
    """What a process that never saw a matrix file loads: SQLite's rows."""
    index = memory.index
    assert index.embedder is not None
    cache = VectorCache(index.embedder.id, index.embedder.dim)
    cache.refresh(index.db)
    return _held(cache)


def _fresh(memory: memdir.Memory, folder: Path, clock: FakeClock) -> dict[int, bytes]:
    """What a new process holds once its first search has loaded the vectors."""
    other = _open(folder, clock)
    other.search("anything at all")
    assert other.index.vectors is not None
    held = _held(other.index.vectors)
    other.close()
    return held


def _file(memory: memdir.Memory) -> Path:
    assert memory.index.vectors is not None and memory.index.vectors.path is not None
    memory.index.vectors.flush()  # written in a thread of its own
    return memory.index.vectors.path


@pytest.fixture
def filled(folder: Path, clock: FakeClock) -> memdir.Memory:
    memory = _open(folder, clock)
    for n in range(40):
        memory.knowledge.save(f"observation {n} about the harbour crane {n % 7}")
    memory.search("harbour crane")  # embeds, loads, writes the matrix file
    return memory


def test_a_new_process_reads_the_file_and_holds_what_sqlite_holds(
    filled: memdir.Memory, folder: Path, clock: FakeClock
) -> None:
    path = _file(filled)
    assert path.is_file()
    assert path.parent == folder / ".memdir"
    assert not list(path.parent.glob(f"*{TMP_SUFFIX}"))  # written through a temp file
    assert _fresh(filled, folder, clock) == _truth(filled)
    hits = [(h.path, h.anchor) for h in filled.search("crane 3")]
    other = _open(folder, clock)
    assert [(h.path, h.anchor) for h in other.search("crane 3")] == hits


def test_a_file_behind_the_log_is_caught_up(
    filled: memdir.Memory, folder: Path, clock: FakeClock
) -> None:
    before = _file(filled).read_bytes()
    keys = [filled.knowledge.save(f"new crane note {n}").key for n in range(5)]
    filled.knowledge.update(mode="delete", ids=keys[:2])
    filled.index.ensure_vectors()
    assert _file(filled).read_bytes() == before  # a few rows behind: not rewritten
    assert _fresh(filled, folder, clock) == _truth(filled)


@pytest.mark.parametrize("where", ["ids", "rows", "header", "cut"])
def test_a_damaged_file_is_never_read_and_is_written_afresh(
    filled: memdir.Memory, folder: Path, clock: FakeClock, where: str
) -> None:
    path = _file(filled)
    data = bytearray(path.read_bytes())
    if where == "cut":
        del data[-100:]
    else:
        offset = {"ids": matrix.HEADER_BYTES + 3, "rows": len(data) - 5, "header": 40}[where]
        data[offset] ^= 0x10
    path.write_bytes(bytes(data))
    assert _fresh(filled, folder, clock) == _truth(filled)
    assert matrix.read(path, *_names(filled), 1.0) is not None  # rewritten, sound again


def _names(memory: memdir.Memory) -> tuple[str, str, int]:
    row = memory.index.db.execute("SELECT value FROM meta WHERE key = 'database_id'").fetchone()
    embedder = memory.index.embedder
    assert embedder is not None
    return str(row[0]), embedder.id, embedder.dim


def test_another_databases_file_is_never_read(
    filled: memdir.Memory, folder: Path, clock: FakeClock, tmp_path: Path
) -> None:
    other_root = tmp_path / "other"
    memdir.init(other_root)
    other = _open(other_root, clock)
    other.knowledge.save("a single note about ferries")
    other.search("ferries")
    shutil.copyfile(_file(filled), _file(other))  # the same model, another database
    assert _fresh(other, other_root, clock) == _truth(other)
    index_db = folder / ".memdir" / "index.db"
    filled.close()
    for path in folder.joinpath(".memdir").glob("index.db*"):
        if path.name.startswith("index.db.vectors"):
            continue
        path.unlink()  # the index is deleted; the matrix file is left behind
    rebuilt = _open(folder, clock)
    rebuilt.knowledge.save("one more note about the crane")
    assert index_db.exists()
    assert _fresh(rebuilt, folder, clock) == _truth(rebuilt)


def test_a_reindex_or_a_trimmed_log_makes_the_file_stale(
    filled: memdir.Memory, folder: Path, clock: FakeClock
) -> None:
    filled.reindex()  # item ids start over: the file's are someone else's now
    assert _fresh(filled, folder, clock) == _truth(filled)
    gone = [obs.id for obs in filled.knowledge.observations()[:5]]
    filled.knowledge.update(mode="delete", ids=gone)  # logged after the file was written
    filled.knowledge.save("a note after the reindex")
    filled.index.ensure_vectors()
    db = filled.index.db
    db.execute("DELETE FROM item_log WHERE seq < (SELECT max(seq) FROM item_log)")
    assert _fresh(filled, folder, clock) == _truth(filled)


def test_an_older_copy_of_the_database_never_reads_a_newer_file(
    filled: memdir.Memory, folder: Path, clock: FakeClock, tmp_path: Path
) -> None:
    db = filled.index.db
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    index_db = folder / ".memdir" / "index.db"
    shutil.copyfile(index_db, tmp_path / "old.db")  # the same database id, an older log
    filled.knowledge.update(mode="delete", ids=[filled.knowledge.observations()[0].id])
    filled.knowledge.save("a later note about the crane")
    filled.search("crane")
    filled.reindex()
    assert _fresh(filled, folder, clock) == _truth(filled)  # the file: the reindexed rows
    filled.close()
    for sidecar in ("-wal", "-shm"):
        Path(f"{index_db}{sidecar}").unlink(missing_ok=True)
    shutil.copyfile(tmp_path / "old.db", index_db)  # put back: its log goes another way
    restored = _open(folder, clock)
    for n in range(60):
        restored.knowledge.save(f"another history {n}")
    restored.index.ensure_vectors()
    assert _fresh(restored, folder, clock) == _truth(restored)


def test_a_folder_that_refuses_the_file_still_searches(
    folder: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as a read-only or full disk would: the temp file cannot be made
    monkeypatch.setattr(matrix, "temp_path", lambda path: path.parent / "gone" / "x.memdir-tmp")
    memory = _open(folder, clock)
    memory.knowledge.save("the crane inspection is on Tuesday")
    assert [h.anchor for h in memory.search("crane inspection")]
    assert not list((folder / ".memdir").glob("index.db.vectors*"))
    assert not list((folder / ".memdir").glob(f"*{TMP_SUFFIX}"))
    assert _fresh(memory, folder, clock) == _truth(memory)


def test_the_checksum_sees_every_word() -> None:
    rows = np.arange(12, dtype=np.float32).reshape(4, 3)
    base = matrix.checksum(rows)
    for n in range(rows.size):
        changed = rows.copy()
        changed.reshape(-1)[n] += 1
        assert matrix.checksum(changed) != base
    assert matrix.checksum(rows[:3]) != base


def test_a_database_that_lost_its_last_writes_never_reads_the_file(
    filled: memdir.Memory, folder: Path, clock: FakeClock, tmp_path: Path
) -> None:
    index_db, knowledge = folder / ".memdir" / "index.db", folder / "knowledge.md"
    filled.index.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copyfile(index_db, tmp_path / "before.db")
    shutil.copyfile(knowledge, tmp_path / "knowledge.md")
    filled.knowledge.save("the crane was repainted blue")  # lost below, with its vector
    filled.search("repainted")
    assert filled.index.vectors is not None
    filled.index.vectors._write(filled.index.db)  # the file knows the lost write
    filled.close()
    for sidecar in ("-wal", "-shm"):
        Path(f"{index_db}{sidecar}").unlink(missing_ok=True)
    shutil.copyfile(tmp_path / "before.db", index_db)  # the index and the note both lost
    shutil.copyfile(tmp_path / "knowledge.md", knowledge)
    again = _open(folder, clock)
    again.knowledge.save("the ferry timetable changes in May")  # same id, same log entries
    again.search("ferry")
    last = "SELECT seq, item_id, op FROM item_log ORDER BY seq DESC LIMIT 2"
    assert again.index.db.execute(last).fetchall()[1][2] == "add"
    assert _fresh(again, folder, clock) == _truth(again)


def test_a_private_copy_of_the_index_reads_the_file_and_never_writes_it(
    filled: memdir.Memory, folder: Path, clock: FakeClock, tmp_path: Path
) -> None:
    """As a read-only folder opens: its index copied elsewhere, the same database."""
    path = _file(filled)
    before = path.read_bytes()
    filled.index.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    private = tmp_path / "private" / "index.db"
    private.parent.mkdir()
    shutil.copyfile(folder / ".memdir" / "index.db", private)
    filled.knowledge.save("a note the copy never saw")  # the folder's index moves on
    index = Index(folder, filled.manifest, embedder=HashingEmbedder(), clock=clock, path=private)
    assert index.vectors is not None
    index.vectors.refresh(index.db)
    held = _held(index.vectors)
    cache = VectorCache(index.vectors.model, index.vectors.dim)  # the copy's own rows
    cache.refresh(index.db)
    index.close()
    assert held == _held(cache)
    assert path.read_bytes() == before
    path.unlink()  # nothing to read: the rows come from the copy, and no file is written
    index = Index(folder, filled.manifest, embedder=HashingEmbedder(), clock=clock, path=private)
    assert index.vectors is not None
    index.vectors.refresh(index.db)
    index.close()
    assert not path.exists()
    assert [p.name for p in private.parent.iterdir()] == ["index.db"]
