"""The notebook specification's test IDs for this layer, one test each, by name.

Each test drives the public API the way the memory tools will, and checks the
rule its ID names (seed 000, sections 3 and 8.8).
"""

from __future__ import annotations

from pathlib import Path

import memdir
from memdir.testing import FakeClock


def test_A_knowledge_cap(memory: memdir.Memory) -> None:
    """Knowledge injection honours KNOWLEDGE_PROMPT_MAX_TOKENS; 0 (reflex) omits it."""
    for n in range(12):
        assert memory.knowledge.update(f"topic-{n}", f"fact {n}: " + "detail " * 150).ok
    cap = memory.manifest.limits.knowledge_prompt_max_tokens
    injected = memory.knowledge.render()
    assert injected and (len(injected.encode()) + 3) // 4 <= cap
    assert injected.count("### topic-") < 12  # something had to stay out
    assert memory.knowledge.render(max_tokens=0) == ""


def test_A_memory_save_rejects_array(memory: memdir.Memory, folder: Path) -> None:
    before = (folder / "knowledge.md").read_bytes()
    result = memory.knowledge.save(["first fact", "second fact"])
    assert result.to_dict() == {
        "ok": False,
        "status": "error",
        "store": "knowledge.md",
        "action": "refused",
        "reason": "memory_save takes one observation, not an array of 2; "
        "call it once per observation",
    }
    assert (folder / "knowledge.md").read_bytes() == before


def test_A_memory_save_no_empty_write(memory: memdir.Memory, folder: Path) -> None:
    before = (folder / "knowledge.md").read_bytes()
    for empty in ("", "   \n\t", "<think>only reasoning</think>"):
        result = memory.knowledge.save(empty)
        assert not result.ok and "empty" in (result.reason or "")
    assert (folder / "knowledge.md").read_bytes() == before
    assert memory.knowledge.observations() == []


def test_A_memory_update_append_alias(memory: memdir.Memory) -> None:
    memory.knowledge.update("patched", "- a")
    memory.knowledge.update("appended", "- a")
    patched = memory.knowledge.update("patched", "- b", mode="patch")
    appended = memory.knowledge.update("appended", "- b", mode="append")
    assert (patched.ok, patched.action) == (appended.ok, appended.action) == (True, "updated")
    texts = {s.key: s.text for s in memory.knowledge.sections()}
    assert texts["patched"] == texts["appended"] == "- a\n- b"


def test_A_section_no_h2_bleed(memory: memdir.Memory, folder: Path) -> None:
    result = memory.knowledge.update("procedures", "Step one\n## Sneaky sibling\nStep two")
    assert result.ok
    assert [s.key for s in memory.knowledge.sections()] == ["procedures"]
    section = memory.knowledge.section("procedures")
    assert section is not None and section.text == "Step one\n### Sneaky sibling\nStep two"
    assert "\n## Sneaky" not in (folder / "knowledge.md").read_text()


def test_A_tool_result_store_path(memory: memdir.Memory) -> None:
    results = {
        "knowledge.md": [
            memory.knowledge.save("fact"),
            memory.knowledge.save(""),
            memory.knowledge.update("s", "text"),
            memory.knowledge.update("s", "x" * 9000),
        ],
        "NOTEBOOK.md": [memory.notebook.update("k", "v"), memory.notebook.clear("missing")],
        "state.md": [memory.state.set("k", "v"), memory.state.set("k", "")],
    }
    for store, outcomes in results.items():
        for result in outcomes:
            assert result.store == store and result.to_dict()["store"] == store


def test_A_legacy_memory_not_written(tmp_path: Path, clock: FakeClock) -> None:
    folder = tmp_path / "agent"
    folder.mkdir()
    legacy = "# Memory\n\n## prefs\nLikes short answers.\n"
    (folder / "MEMORY.md").write_text(legacy)
    memdir.init(folder, "notebook")
    memory = memdir.open(folder, clock=clock)
    assert memory.knowledge.section("prefs") is not None
    memory.knowledge.save("new")
    memory.knowledge.update("prefs", "Likes tea.", mode="append")
    assert memdir.open(folder).migration is None
    assert (folder / "MEMORY.md").read_text() == legacy
    assert "Likes tea." in (folder / "knowledge.md").read_text()


def test_B1_over_cap_write_refused(memory: memdir.Memory, folder: Path) -> None:
    """An over-cap memory_update returns {ok: false, reason}; nothing is written."""
    memory.knowledge.update("notes", "short")
    before = (folder / "knowledge.md").read_bytes()
    distinct = "\n".join(f"line {n}: a distinct finding that will not compress" for n in range(80))
    result = memory.knowledge.update("notes", distinct)
    data = result.to_dict()
    assert data["ok"] is False and data["status"] == "error"
    assert "3000-char cap" in data["reason"] and "nothing was written" in data["reason"]
    assert (folder / "knowledge.md").read_bytes() == before


def test_C_dream_state_ttl(memory: memdir.Memory, clock: FakeClock) -> None:
    """C-dream-state-ttl: the dream expires state entries older than STATE_TTL_DAYS."""
    assert memory.state.set("deploy", "v1 rolling out").ok
    clock.advance(days=3)
    assert memory.state.set("oncall", "Dana this week").ok
    clock.advance(days=5)  # deploy is 8 days old, oncall 5
    for n in range(50):
        assert memory.knowledge.save(f"Distinct fact {n} about item {n * 13}.", "fact").ok
    report = memory.dream()
    assert report.ran and report.state_pruned == ["deploy"]
    assert [entry.key for entry in memory.state.entries()] == ["oncall"]
    assert (
        "v1 rolling out"
        in (memory.root / memory.manifest.archive_dir())
        .joinpath("state", f"{clock():%Y-%m}.md")
        .read_text()
    )
