"""NOTEBOOK.md: upsert, caps, eviction to the archive, persistence."""

from __future__ import annotations

from pathlib import Path

import memdir
from memdir.files.sections import SectionDocument
from memdir.testing import FakeClock
from memdir.tools import Tools


def _archive_text(folder: Path) -> str:
    return "".join(p.read_text() for p in sorted((folder / "archive" / "notebook").glob("*.md")))


def test_update_creates_then_updates(memory: memdir.Memory) -> None:
    created = memory.notebook.update("task", "Write the parser")
    updated = memory.notebook.update("task", "Write the renderer")
    assert (created.ok, created.action, created.store) == (True, "created", "NOTEBOOK.md")
    assert (updated.ok, updated.action) == (True, "updated")
    entry = memory.notebook.get("task")
    assert entry is not None
    assert (entry.text, entry.managed) == ("Write the renderer", "agent")
    assert entry.updated_at == memory.clock()


def test_entries_survive_a_restart(folder: Path, clock: FakeClock) -> None:
    with memdir.open(folder, clock=clock) as first:
        first.notebook.update("task", "Persist me", managed="system")
    reopened = memdir.open(folder)
    entry = reopened.notebook.get("task")
    assert entry is not None and entry.text == "Persist me" and entry.managed == "system"


def test_fifth_agent_key_evicts_the_oldest_to_the_archive(
    memory: memdir.Memory, clock: FakeClock, folder: Path
) -> None:
    for n in range(4):
        memory.notebook.update(f"k{n}", f"entry {n}")
        clock.advance(minutes=1)
    memory.notebook.update("k0", "touched again")  # k0 is now the newest
    clock.advance(minutes=1)
    result = memory.notebook.update("k4", "entry 4")
    assert result.ok and result.archived == ("k1",)
    assert result.archive == "archive/notebook/2026-11.md"
    assert [e.key for e in memory.notebook.entries()] == ["k0", "k2", "k3", "k4"]
    assert "## k1" in _archive_text(folder) and "entry 1" in _archive_text(folder)


def test_an_eviction_a_kill_cut_short_is_not_archived_twice(
    memory: memdir.Memory, clock: FakeClock, folder: Path
) -> None:
    """Killed after the archive write and before NOTEBOOK.md's: the evicted entry is in
    both; the next write evicts it again, and the archive keeps it once."""
    for n in range(4):
        memory.notebook.update(f"k{n}", f"entry {n}")
        clock.advance(minutes=1)
    before = (folder / "NOTEBOOK.md").read_bytes()
    assert memory.notebook.update("k4", "entry 4").archived == ("k0",)
    (folder / "NOTEBOOK.md").write_bytes(before)  # the rewrite the kill prevented
    clock.advance(minutes=1)
    assert memory.notebook.update("k5", "entry 5").archived == ("k0",)
    assert _archive_text(folder).count("entry 0") == 1
    assert memory.notebook.update("k6", "entry 6").archived == ("k1",)
    assert _archive_text(folder).count("entry 1") == 1


def test_system_and_cpp_entries_do_not_count(memory: memdir.Memory) -> None:
    memory.notebook.update("triage-decision", "route to billing", managed="system")
    memory.notebook.update("situation", "user is on mobile", managed="cpp")
    for n in range(4):
        assert memory.notebook.update(f"k{n}", f"entry {n}").archived == ()
    assert len(memory.notebook.entries()) == 6
    evicting = memory.notebook.update("k4", "one too many")
    assert evicting.archived == ("k0",)
    keys = [e.key for e in memory.notebook.entries()]
    assert "triage-decision" in keys and "situation" in keys


def test_clear_one_and_clear_all_agent_entries(memory: memdir.Memory, folder: Path) -> None:
    memory.notebook.update("a", "alpha")
    memory.notebook.update("b", "beta")
    memory.notebook.update("sys", "kept", managed="system")
    one = memory.notebook.clear("a")
    assert one.ok and one.removed == ("a",)
    everything = memory.notebook.clear()
    assert everything.ok and everything.removed == ("b",)
    assert [e.key for e in memory.notebook.entries()] == ["sys"]
    assert "alpha" in _archive_text(folder) and "beta" in _archive_text(folder)


def test_clear_unknown_key_is_refused_and_changes_nothing(
    memory: memdir.Memory, folder: Path
) -> None:
    memory.notebook.update("a", "alpha")
    before = (folder / "NOTEBOOK.md").read_bytes()
    result = memory.notebook.clear("nope")
    assert not result.ok and "no notebook entry 'nope'" in (result.reason or "")
    assert (folder / "NOTEBOOK.md").read_bytes() == before


def test_a_key_typed_decomposed_is_the_same_entry(memory: memdir.Memory) -> None:
    """'café' sent as c-a-f-e + U+0301 (as some keyboards and tokenizers give it) was a
    second entry that looks the same, counting against the cap of 4."""
    tools = Tools(memory)
    assert tools.call("update_notebook", {"key": "café", "text": "one"})["action"] == "created"
    again = tools.call("update_notebook", {"key": "cafe\u0301", "text": "two"})
    assert (again["action"], again["key"]) == ("updated", "café")
    assert [(e.key, e.text) for e in memory.notebook.entries()] == [("café", "two")]
    assert memory.state.set("café", "a").ok and memory.state.set("cafe\u0301", "b").ok
    assert [(e.key, e.text) for e in memory.state.entries()] == [("café", "b")]
    assert memory.knowledge.update("café", "- x").ok
    assert memory.knowledge.update("cafe\u0301", "- y", mode="replace").action == "updated"


def test_bad_input_is_refused_with_a_reason(memory: memdir.Memory, folder: Path) -> None:
    before = (folder / "NOTEBOOK.md").read_bytes()
    cases = [
        memory.notebook.update("", "text"),
        memory.notebook.update("k", "   "),
        memory.notebook.update("k", "x" * 6001),
        memory.notebook.update("k", "text", managed="human"),
        memory.notebook.update("k", ["not", "a", "string"]),  # type: ignore[arg-type]
    ]
    for result in cases:
        assert not result.ok and result.action == "refused" and result.reason
        assert result.to_dict()["status"] == "error"
    assert (folder / "NOTEBOOK.md").read_bytes() == before


def test_hand_edited_notebook_with_26_entries_loads_under_the_cap(
    folder: Path, clock: FakeClock
) -> None:
    doc = SectionDocument("# Notebook\n")
    for n in range(26):
        stamp = f"2026-11-{n + 1:02d}T00:00:00Z"
        doc.append(doc.new_section(f"k{n:02d}", f"hand entry {n}", {"updated": stamp}))
    (folder / "NOTEBOOK.md").write_text(doc.render())
    memory = memdir.open(folder, clock=clock)
    # Reading caps the view to the 4 newest, and the file is not rewritten by a read.
    assert [e.key for e in memory.notebook.entries()] == ["k22", "k23", "k24", "k25"]
    assert memory.notebook.render().count("### ") == 4
    assert any("22 agent entries over the cap" in str(n) for n in memory.check())
    assert (folder / "NOTEBOOK.md").read_text().count("## k") == 26
    # The next write moves the overflow to the archive, and says so.
    result = memory.notebook.update("k25", "edited")
    assert result.ok and len(result.archived) == 22
    assert (folder / "NOTEBOOK.md").read_text().count("## k") == 4
    archived = _archive_text(folder)
    assert all(f"hand entry {n}\n" in archived for n in range(22))


def test_over_long_hand_edited_entry_reads_cut_and_is_archived_whole(
    folder: Path, clock: FakeClock
) -> None:
    long_text = " ".join(f"word{n}." for n in range(2000))  # ~14k chars
    (folder / "NOTEBOOK.md").write_text(f"# Notebook\n\n## big\n{long_text}\n")
    memory = memdir.open(folder, clock=clock)
    entry = memory.notebook.get("big")
    assert entry is not None and len(entry.text) <= 6000 and entry.text.endswith(".")
    result = memory.notebook.update("other", "small")
    assert "big" in result.archived
    assert long_text in _archive_text(folder)
    assert len((folder / "NOTEBOOK.md").read_text()) < 7000


def test_render_is_the_prompt_block(memory: memdir.Memory) -> None:
    assert memory.notebook.render() == ""
    memory.notebook.update("task", "Ship it")
    assert memory.notebook.render() == "## Notebook\n\n### task\nShip it\n"


def test_entry_text_cannot_break_the_file(memory: memdir.Memory) -> None:
    memory.notebook.update("a", "first\n## injected\nmore")
    memory.notebook.update("b", "<think>private reasoning</think>second")
    keys = [e.key for e in memory.notebook.entries()]
    assert keys == ["a", "b"]
    entry_a, entry_b = memory.notebook.get("a"), memory.notebook.get("b")
    assert entry_a is not None and "### injected" in entry_a.text
    assert entry_b is not None and entry_b.text == "second"
