"""The rows searches read, kept in memory: never older than the database."""

from __future__ import annotations

from pathlib import Path

import memdir
from memdir.index.row_cache import RowCache
from memdir.index.sqlite_rows import COLUMNS
from memdir.testing import FakeClock

TURNS = "# Monday\n\n## ana\nthe kayak trip\n\n## ben\nwhich river?\n"


def _lines(memory: memdir.Memory) -> dict[str, int]:
    """Each journal turn's first line, as the index's rows say."""
    db = memory.index.db
    ids = [row[0] for row in db.execute("SELECT id FROM items WHERE path LIKE 'journal/%'")]
    rows = memory.index.rows.rows(ids)
    return {row["anchor"]: row["line_start"] for row in rows.values()}


def test_a_write_through_this_index_is_read_at_once(folder: Path, clock: FakeClock) -> None:
    day = folder / "journal" / "2026-11-30.md"
    day.write_text(TURNS)
    with memdir.open(folder, clock=clock, embedder="none") as memory:
        memory.scan()
        before = _lines(memory)
        day.write_text("# Monday\n\n\n\n" + TURNS[len("# Monday\n") :])
        memory.scan()  # the turns' rows move down (kept by identity, their places updated)
        assert _lines(memory) == {anchor: line + 3 for anchor, line in before.items()}


def test_another_writer_s_commit_is_read_at_once(folder: Path, clock: FakeClock) -> None:
    day = folder / "journal" / "2026-11-30.md"
    day.write_text(TURNS)
    with memdir.open(folder, clock=clock, embedder="none") as memory:
        memory.scan()
        before = _lines(memory)
        with memdir.open(folder, clock=clock, embedder="none") as other:
            day.write_text("# Monday\n\n\n\n" + TURNS[len("# Monday\n") :])
            other.scan()
        assert _lines(memory) == {anchor: line + 3 for anchor, line in before.items()}


def test_each_caller_gets_its_own_rows(folder: Path, clock: FakeClock) -> None:
    (folder / "journal" / "2026-11-30.md").write_text(TURNS)
    with memdir.open(folder, clock=clock, embedder="none") as memory:
        memory.scan()
        ids = [row[0] for row in memory.index.db.execute("SELECT id FROM items")]
        first = memory.index.rows.rows(ids)
        for row in first.values():
            row["body"] = "changed by a caller"
        assert all(
            row["body"] != "changed by a caller" for row in memory.index.rows.rows(ids).values()
        )


def test_only_the_most_recently_read_rows_are_kept(folder: Path, clock: FakeClock) -> None:
    (folder / "journal" / "2026-11-30.md").write_text(TURNS + "\n## ana\nthe Wye\n")
    with memdir.open(folder, clock=clock, embedder="none") as memory:
        memory.scan()
        db = memory.index.db
        ids = [row[0] for row in db.execute("SELECT id FROM items WHERE path LIKE 'journal/%'")]
        cache = RowCache(COLUMNS, size=2)
        assert sorted(cache.rows(db, ids)) == sorted(ids)  # all asked for are answered
        assert len(cache) == 2
        assert list(cache.rows(db, [ids[0], 10**9])) == [ids[0]]  # a missing id: left out
