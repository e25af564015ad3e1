"""state.md: dated snapshots, TTL prune to the archive, reflex lines."""

from __future__ import annotations

from pathlib import Path

import memdir
from memdir.testing import FakeClock


def test_set_upserts_a_dated_snapshot(memory: memdir.Memory, clock: FakeClock) -> None:
    assert memory.state.set("deploy", "v2.1 at 10%").action == "created"
    clock.advance(hours=2)
    result = memory.state.set("deploy", "v2.1 at 60%")
    assert result.ok and result.action == "updated" and result.store == "state.md"
    entry = memory.state.get("deploy")
    assert entry is not None and entry.text == "v2.1 at 60%" and entry.updated_at == clock()


def test_prune_removes_entries_past_the_ttl_and_archives_them(
    memory: memdir.Memory, clock: FakeClock, folder: Path
) -> None:
    memory.state.set("old", "stale snapshot")
    clock.advance(days=5)
    memory.state.set("recent", "fresh snapshot")
    clock.advance(days=3)  # old is 8 days, recent is 3 days
    assert [e.key for e in memory.state.expired()] == ["old"]
    pruned = memory.state.prune()
    assert [e.key for e in pruned] == ["old"] and pruned[0].text == "stale snapshot"
    assert [e.key for e in memory.state.entries()] == ["recent"]
    archive = (folder / "archive" / "state" / "2026-12.md").read_text()
    assert "## old" in archive and "stale snapshot" in archive and "reason: expired" in archive
    assert memory.state.prune() == []  # idempotent


def test_prune_honours_the_manifest_ttl(folder: Path, clock: FakeClock) -> None:
    manifest = (folder / "memdir.toml").read_text()
    (folder / "memdir.toml").write_text(
        manifest.replace("state_ttl_days = 7", "state_ttl_days = 1")
    )
    memory = memdir.open(folder, clock=clock)
    memory.state.set("a", "x")
    clock.advance(hours=23)
    assert memory.state.prune() == []
    clock.advance(hours=2)
    assert [e.key for e in memory.state.prune()] == ["a"]


def test_reflex_lines_are_short_newest_first_and_capped(
    memory: memdir.Memory, clock: FakeClock
) -> None:
    for n in range(7):
        memory.state.set(f"k{n}", f"snapshot {n} " + "detail " * 50)
        clock.advance(minutes=1)
    lines = memory.state.reflex_lines()
    assert len(lines) == 5  # STATE_PROMPT_MAX_LINES_REFLEX
    assert lines[0].startswith("k6: snapshot 6") and lines[-1].startswith("k2:")
    assert all(len(line) <= 160 and "\n" not in line for line in lines)
    assert memory.state.reflex_lines(2) == lines[:2]
    assert memory.state.reflex_lines(0) == []


def test_bad_snapshots_are_refused(memory: memdir.Memory, folder: Path) -> None:
    before = (folder / "state.md").read_bytes()
    assert not memory.state.set("", "x").ok
    assert not memory.state.set("k", "").ok
    assert not memory.state.set("k", "x" * 2001).ok
    assert not memory.state.remove("missing").ok
    assert (folder / "state.md").read_bytes() == before


def test_remove_archives_the_snapshot(memory: memdir.Memory, folder: Path) -> None:
    memory.state.set("k", "text")
    result = memory.state.remove("k")
    assert result.ok and result.removed == ("k",)
    assert memory.state.entries() == []
    assert "text" in (folder / "archive" / "state" / "2026-11.md").read_text()


def test_undated_hand_written_entry_counts_from_the_file_mtime(
    folder: Path, clock: FakeClock
) -> None:
    (folder / "state.md").write_text("# State\n\n## manual\nwritten by hand\n")
    memory = memdir.open(folder, clock=FakeClock("2099-01-01T00:00:00Z"))
    [entry] = memory.state.entries()
    assert entry.text == "written by hand" and entry.updated_at.year < 2099
    assert [e.key for e in memory.state.prune()] == ["manual"]
