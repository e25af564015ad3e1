"""knowledge.md: observations, curated sections, caps, hand-edited files."""

from __future__ import annotations

from pathlib import Path

import pytest

import memdir
from memdir.files.sections import SectionDocument
from memdir.testing import FakeClock
from memdir.tools import Tools


def _archive_text(folder: Path) -> str:
    return "".join(p.read_text() for p in sorted((folder / "archive").rglob("*.md")))


def _lines(count: int, width: int = 80) -> str:
    """``count`` distinct lines that compression cannot shrink."""
    return "\n".join(f"- fact {n:04d} " + "x" * (width - 12) for n in range(count))


def test_save_writes_one_observation(memory: memdir.Memory, folder: Path) -> None:
    result = memory.knowledge.save("The API allows 50 req/s", type="fact", tags=["api", "limits"])
    assert result.ok and result.action == "saved" and result.store == "knowledge.md"
    assert result.key is not None and result.key.startswith("obs_")
    [obs] = memory.knowledge.observations()
    assert (obs.id, obs.content, obs.type, obs.tags) == (
        result.key,
        "The API allows 50 req/s",
        "fact",
        ("api", "limits"),
    )
    assert obs.date == memory.clock()
    text = (folder / "knowledge.md").read_text()
    meta = "<!-- type: fact; date: 2026-11-30T10:00:00Z; tags: api, limits; by: api -->"
    assert f"### {result.key}\n{meta}\nThe API allows 50 req/s\n" in text
    assert text.index("## _observations") < text.index(f"### {result.key}")


def test_save_refuses_non_strings_and_bad_types(memory: memdir.Memory) -> None:
    for content in ({"content": "x"}, 42, None):
        result = memory.knowledge.save(content)
        assert not result.ok and "string" in (result.reason or "")
    assert not memory.knowledge.save("x", type="rumour").ok
    assert not memory.knowledge.save("x", tags=[1, 2]).ok
    assert memory.knowledge.observations() == []


def test_tags_accept_a_comma_separated_string(memory: memdir.Memory) -> None:
    memory.knowledge.save("x", tags="a, b;c, a")
    [obs] = memory.knowledge.observations()
    assert obs.tags == ("a", "b c")


def test_observation_cap_moves_the_oldest_to_the_archive(
    folder: Path, clock: FakeClock, tmp_path: Path
) -> None:
    manifest = (folder / "memdir.toml").read_text()
    (folder / "memdir.toml").write_text(
        manifest.replace("observations_max = 500", "observations_max = 5")
    )
    memory = memdir.open(folder, clock=clock)
    ids = []
    for n in range(7):
        ids.append(memory.knowledge.save(f"observation number {n}").key)
        clock.advance(minutes=1)
    assert [o.id for o in memory.knowledge.observations()] == ids[2:]
    archived = _archive_text(folder)
    assert "observation number 0" in archived and "observation number 1" in archived


def test_update_replace_patch_and_append_alias(memory: memdir.Memory) -> None:
    assert memory.knowledge.update("conventions", "- one").action == "created"
    assert memory.knowledge.update("conventions", "- two", mode="patch").action == "updated"
    appended = memory.knowledge.update("conventions", "- three", mode="append")
    assert appended.ok and appended.action == "updated"
    section = memory.knowledge.section("conventions")
    assert section is not None and section.text == "- one\n- two\n- three"
    again = memory.knowledge.update("conventions", "- two", mode="append")
    assert again.ok and again.action == "unchanged"
    assert memory.knowledge.update("conventions", "- only", mode="replace").ok
    section = memory.knowledge.section("Conventions")  # case-insensitive lookup
    assert section is not None and section.text == "- only"


def test_new_sections_go_above_observations(memory: memdir.Memory, folder: Path) -> None:
    memory.knowledge.save("raw")
    memory.knowledge.update("procedures", "1. test\n2. ship")
    text = (folder / "knowledge.md").read_text()
    assert text.index("## procedures") < text.index("## _observations")


def test_bad_update_modes_and_sections_are_refused(memory: memdir.Memory) -> None:
    assert not memory.knowledge.update("s", "x", mode="merge").ok
    assert not memory.knowledge.update("_observations", "x").ok
    assert not memory.knowledge.update("", "x").ok
    assert not memory.knowledge.update("s", "  ").ok
    assert not memory.knowledge.update("s", None).ok
    assert memory.knowledge.sections() == []


def test_delete_mode_removes_observations_by_id(memory: memdir.Memory, folder: Path) -> None:
    keep = memory.knowledge.save("keep me").key
    drop = memory.knowledge.save("drop me").key
    result = memory.knowledge.update(mode="delete", ids=[drop, "obs_missing"])
    assert result.ok and result.removed == (drop,) and result.missing == ("obs_missing",)
    assert [o.id for o in memory.knowledge.observations()] == [keep]
    assert "drop me" in _archive_text(folder)
    nothing = memory.knowledge.update(mode="delete", ids=["obs_missing"])
    assert not nothing.ok


@pytest.mark.parametrize("mode", ["replace", "patch", "append"])
def test_ids_with_a_writing_mode_are_refused_and_nothing_written(
    memory: memdir.Memory, folder: Path, mode: str
) -> None:
    """The contract: ids go with mode 'delete' only. A replace given ids wrote the section
    and ignored them, answering ok as if the observations were gone too."""
    drop = memory.knowledge.save("drop me").key
    before = (folder / "knowledge.md").read_bytes()
    result = memory.knowledge.update("conventions", "Tabs.", mode=mode, ids=[drop])
    assert not result.ok and (result.reason or "").startswith("ids go with mode 'delete'")
    assert (folder / "knowledge.md").read_bytes() == before
    assert memory.knowledge.update("conventions", "Tabs.", mode=mode, ids=[]).ok  # none given


def test_a_section_with_mode_delete_is_refused(memory: memdir.Memory, folder: Path) -> None:
    """Mode 'delete' removes observations: a section beside it (which it would not remove)
    is refused too, and the observations named stay."""
    assert memory.knowledge.update("conventions", "Tabs.").ok
    drop = memory.knowledge.save("drop me").key
    before = (folder / "knowledge.md").read_bytes()
    result = memory.knowledge.update("conventions", mode="delete", ids=[drop])
    assert not result.ok and "takes no section" in (result.reason or "")
    assert (folder / "knowledge.md").read_bytes() == before


def test_memory_update_refuses_ids_with_replace_as_a_tool(
    memory: memdir.Memory, folder: Path
) -> None:
    """Over MCP too: test_mcp_server.py."""
    drop = memory.knowledge.save("drop me").key
    before = (folder / "knowledge.md").read_bytes()
    call = {"section": "conventions", "content": "Tabs.", "mode": "replace", "ids": [drop]}
    result = Tools(memory).call("memory_update", call)
    assert result["ok"] is False and result["reason"].startswith("ids go with mode 'delete'")
    assert (folder / "knowledge.md").read_bytes() == before


def test_section_cap_compresses_before_refusing(memory: memdir.Memory) -> None:
    body = _lines(20) + "\n\n\n\n" + _lines(20)  # second half repeats the first
    assert len(body) > 3000
    result = memory.knowledge.update("facts", body)
    assert result.ok and any("compressed" in note for note in result.notes)
    section = memory.knowledge.section("facts")
    assert section is not None and section.text == _lines(20)


def test_file_cap_refuses_a_section_that_would_overflow(memory: memdir.Memory) -> None:
    for n in range(5):
        assert memory.knowledge.update(f"s{n}", _lines(36)).ok  # ~2900 chars each
    result = memory.knowledge.update("s5", _lines(36))
    assert not result.ok and "15000" in (result.reason or "")
    assert [s.key for s in memory.knowledge.sections()] == [f"s{n}" for n in range(5)]


def test_over_cap_file_on_disk_is_reported_then_brought_under_without_loss(
    folder: Path, clock: FakeClock
) -> None:
    big = _lines(60)  # ~4800 chars in one section
    doc = SectionDocument("# Knowledge\n")
    doc.append(doc.new_section("big", big, {"updated": "2026-11-01T00:00:00Z"}))
    for n in range(4):
        stamp = f"2026-11-1{n}T00:00:00Z"
        doc.append(doc.new_section(f"s{n}", _lines(36), {"updated": stamp}))
    doc.append(
        doc.new_section("_observations", "### obs_1\n<!-- type: note -->\n\n### obs_2\nkept")
    )
    (folder / "knowledge.md").write_text(doc.render())
    memory = memdir.open(folder, clock=clock)
    messages = " | ".join(str(n) for n in memory.check())
    assert "'big' is 4" in messages and "1 empty observations" in messages
    assert [o.id for o in memory.knowledge.observations()] == ["obs_2"]

    result = memory.knowledge.save("trigger a write")
    assert result.ok and result.archived
    usage = memory.knowledge.usage()
    assert not usage.over_sections and not usage.over_total and usage.empty_observations == 0
    assert big in _archive_text(folder)  # the full original text is kept


def test_think_blocks_and_sibling_headings_are_sanitised(memory: memdir.Memory) -> None:
    memory.knowledge.update("notes", "<think>hmm</think>Visible\n## Not a section\n# Nor this")
    memory.knowledge.save("<think>private</think>fact\n### nested heading")
    assert [s.key for s in memory.knowledge.sections()] == ["notes"]
    section = memory.knowledge.section("notes")
    assert section is not None and section.text == "Visible\n### Not a section\n# Nor this"
    [obs] = memory.knowledge.observations()
    assert obs.content == "fact\n#### nested heading"


def test_render_excludes_observations_and_respects_the_token_cap(memory: memdir.Memory) -> None:
    memory.knowledge.update("a", "alpha " * 100)
    memory.knowledge.update("b", "beta")
    memory.knowledge.save("secret observation")
    text = memory.knowledge.render()
    assert text.startswith("## Your Knowledge\n") and "### a" in text and "### b" in text
    assert "secret observation" not in text and "_observations" not in text
    small = memory.knowledge.render(max_tokens=50)
    assert "### a" not in small and "### b" in small  # whole sections only
    assert memory.knowledge.render(max_tokens=0) == ""


def test_remove_section_archives_it(memory: memdir.Memory, folder: Path) -> None:
    memory.knowledge.update("old", "outdated advice")
    result = memory.knowledge.remove_section("old")
    assert result.ok and result.removed == ("old",)
    assert memory.knowledge.sections() == []
    assert "outdated advice" in _archive_text(folder)
    assert not memory.knowledge.remove_section("old").ok


@pytest.mark.parametrize("crlf", [False, True])
def test_hand_edited_file_round_trips_where_unchanged(
    folder: Path, clock: FakeClock, crlf: bool
) -> None:
    text = (
        "Notes from my human  \n# Knowledge\n\n## prefs\n<!-- updated: 2026-01-01; owner: me -->\n"
        "Likes tea.   \n\n## _observations\n### obs_1\n<!-- type: fact; mood: ok -->\nold fact\n"
    )
    if crlf:
        text = text.replace("\n", "\r\n")
    (folder / "knowledge.md").write_bytes(text.encode())
    memory = memdir.open(folder, clock=clock)
    memory.knowledge.update("new", "fresh")
    after = (folder / "knowledge.md").read_bytes().decode()
    head = text[: text.index("## _observations")]
    assert after.startswith(head)  # preamble and untouched section byte for byte
    newline = "\r\n" if crlf else "\n"
    assert f"## new{newline}<!-- updated: 2026-11-30T10:00:00Z; by: api -->{newline}fresh" in after
    assert after.endswith(text[text.index("## _observations") :])


def test_patch_skips_only_whole_lines_already_present(memory: memdir.Memory) -> None:
    memory.knowledge.update("s", "- twofold")
    assert memory.knowledge.update("s", "- two", mode="patch").action == "updated"
    assert memory.knowledge.update("s", "- two", mode="patch").action == "unchanged"


def test_replacing_a_section_by_another_case_counts_its_old_text_once(
    memory: memdir.Memory,
) -> None:
    for n in range(5):
        assert memory.knowledge.update(f"s{n}", _lines(36)).ok  # ~14.6k chars in all
    result = memory.knowledge.update("S4", _lines(36, width=81))  # same section, a bit longer
    assert result.ok and result.key == "s4"
    assert [s.key for s in memory.knowledge.sections()] == [f"s{n}" for n in range(5)]
