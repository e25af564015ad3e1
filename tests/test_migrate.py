"""Legacy migration: MEMORY.md split into knowledge.md + state.md, memories.json imported."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import memdir
from memdir.testing import FakeClock

LEGACY = """# Memory

Prefers answers in British English.

## Conventions
- Use snake_case for file names.
- 2026-11-28: deploy freeze until Monday
- Tests live in tests/.

## Current status
Working on the billing migration, 60% done.

## Silence counters
- silent for 3 heartbeats

## _observations
### obs_1
<!-- type: fact; date: 2026-11-01T00:00:00Z -->
The API allows 50 req/s.

### obs_2
<!-- type: note -->

"""


def _adopt(folder: Path, files: dict[str, str], clock: FakeClock) -> memdir.Memory:
    """Write legacy files, adopt the folder (which migrates), and open it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    report = memdir.adopt(folder, "notebook")
    assert report.migration is not None
    memory = memdir.open(folder, clock=clock)
    memory.migration = report.migration
    return memory


def test_memory_md_is_split_into_knowledge_and_state(tmp_path: Path, clock: FakeClock) -> None:
    memory = _adopt(tmp_path / "m", {"MEMORY.md": LEGACY}, clock)
    sections = {s.key: s.text for s in memory.knowledge.sections()}
    assert sections["general"] == "Prefers answers in British English."
    assert sections["Conventions"] == "- Use snake_case for file names.\n- Tests live in tests/."
    assert "Current status" not in sections and "Silence counters" not in sections
    states = {e.key: e.text for e in memory.state.entries()}
    assert states["current-status"] == "Working on the billing migration, 60% done."
    assert states["silence-counters"] == "- silent for 3 heartbeats"
    assert "2026-11-28: deploy freeze until Monday" in states.values()
    assert [o.id for o in memory.knowledge.observations()] == ["obs_1"]


def test_migration_is_idempotent_and_memory_md_is_left_alone(
    tmp_path: Path, clock: FakeClock
) -> None:
    folder = tmp_path / "m"
    _adopt(folder, {"MEMORY.md": LEGACY}, clock)
    legacy = folder / "MEMORY.md"
    stamp = legacy.stat().st_mtime_ns
    knowledge_before = (folder / "knowledge.md").read_bytes()
    again = memdir.open(folder, clock=clock)
    assert again.migration is None
    assert (folder / "knowledge.md").read_bytes() == knowledge_before
    assert legacy.read_text() == LEGACY and legacy.stat().st_mtime_ns == stamp


def test_memories_json_becomes_observations_then_is_deleted(
    tmp_path: Path, clock: FakeClock
) -> None:
    entries = [
        {
            "id": "m1",
            "content": "likes tea",
            "type": "fact",
            "timestamp": 1764460800000,
            "metadata": {"tags": ["prefs"]},
        },
        {"id": "m2", "text": "ships on Fridays"},
        {"id": "m3", "content": "   "},
        "a bare string memory",
    ]
    folder = tmp_path / "m"
    memory = _adopt(folder, {"memories.json": json.dumps(entries)}, clock)
    assert not (folder / "memories.json").exists()
    observations = {o.content: o for o in memory.knowledge.observations()}
    assert set(observations) == {"likes tea", "ships on Fridays", "a bare string memory"}
    assert observations["likes tea"].tags == ("prefs",)
    assert observations["likes tea"].id == "obs_legacy_m1"
    assert observations["likes tea"].date.year == 2025
    assert memory.migration is not None and memory.migration.json_skipped == 1


def test_memories_json_rerun_after_a_crash_does_not_duplicate(
    tmp_path: Path, clock: FakeClock
) -> None:
    folder = tmp_path / "m"
    data = json.dumps([{"id": "m1", "content": "once"}])
    _adopt(folder, {"memories.json": data}, clock)
    (folder / "memories.json").write_text(data)  # as if the delete never happened
    memory = memdir.open(folder, clock=clock)
    assert [o.content for o in memory.knowledge.observations()] == ["once"]


def test_unreadable_memories_json_is_an_error_and_left_in_place(
    tmp_path: Path, clock: FakeClock
) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "memories.json").write_text("{not json")
    with pytest.raises(memdir.MigrationError, match="not valid JSON"):
        memdir.adopt(folder, "notebook")
    assert (folder / "memories.json").read_text() == "{not json"


def test_writes_after_migration_never_touch_memory_md(tmp_path: Path, clock: FakeClock) -> None:
    folder = tmp_path / "m"
    memory = _adopt(folder, {"MEMORY.md": LEGACY}, clock)
    os.utime(folder / "MEMORY.md", ns=(0, 0))
    memory.knowledge.save("new fact")
    memory.knowledge.update("Conventions", "- one more", mode="append")
    memory.state.set("k", "v")
    memory.notebook.update("task", "t")
    assert (folder / "MEMORY.md").read_text() == LEGACY
    assert (folder / "MEMORY.md").stat().st_mtime_ns == 0
