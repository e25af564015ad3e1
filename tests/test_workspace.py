"""The workspace stores: working state, daily journals, lessons, AGENTS.md blocks, secrets."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from string import Template

import pytest

import memdir
from memdir import Memory, layouts
from memdir.config import STATE_DIR, parse_manifest
from memdir.llm.chat import LLMError, Message
from memdir.results import Notice, WriteResult
from memdir.scaffold import starter_values
from memdir.testing import FakeChat, FakeClock

KEY = "sk-proj-" + "Ab3" * 12  # an OpenAI-style key, built at runtime
DAY = date(2026, 11, 30)
WORKSTATE = {"default": "NOTEBOOK.md", "workspace": "memory/working-state.md"}
JOURNAL = {"default": "journal/2026-11-30.md", "workspace": "memory/2026-11-30.md"}
LESSONS = {"default": "lessons.md", "workspace": "memory/lessons-learned.md"}
WORKSTATE_KEYS = ["right-now", "done", "pending"]  # NOTEBOOK.md entries in the default layout


@pytest.fixture(params=["default", "workspace"])
def mem(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Memory]:
    """A fresh folder of each layout that has the working state, journal and lessons."""
    root = tmp_path / request.param
    memdir.init(root, layout=request.param)
    with memdir.open(root, clock=clock, embedder="hashing") as opened:
        yield opened


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but memdir's own state folder, with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] != STATE_DIR
    }


def read(m: Memory, which: dict[str, str]) -> str:
    return (m.root / which[m.manifest.layout]).read_text(encoding="utf-8")


def rendered(
    layout: str, *lists: list[str], day: str = "2026-11-30", spawned: tuple[str, ...] = ()
) -> str:
    """The working-state file (Right Now, Done, Pending) as each layout writes it at 10:00;
    ``spawned``: the labels whose spawn moment (10:00) the Pending section records."""
    moments = "; ".join(f"spawned.{label}: {day}T10:00:00Z" for label in spawned)
    if layout == "workspace":
        title, heads = "# Working State", ["Right Now", "Today's Done List", "Pending"]
        metas = ["", f"<!-- day: {day} -->", f"<!-- {moments} -->" if moments else ""]
    else:
        title, heads, meta = "# Notebook", ["right-now", "done", "pending"], "managed: system"
        meta += f"; updated: {day}T10:00:00Z"
        pending = f"{meta}; {moments}" if moments else meta
        metas = [f"<!-- {meta} -->", f"<!-- {meta}; day: {day} -->", f"<!-- {pending} -->"]
    blocks = []
    for head, meta_line, items, bullet in zip(
        heads, metas, lists, ["- ", "- [x] ", "- "], strict=True
    ):
        lines = [f"## {head}", *([meta_line] if meta_line else []), *(bullet + i for i in items)]
        blocks.append("\n".join(lines) + "\n")
    return f"{title}\n\n" + "\n".join(blocks)


# -- working state ---------------------------------------------------------------


def test_start_and_finish_keep_right_now_and_the_stamped_done_list(mem: Memory) -> None:
    layout, ws = mem.manifest.layout, mem.workstate
    assert ws.start("Build the landing page").ok and ws.start("Fix the auth bug").ok
    right_now = ["Fix the auth bug", "Build the landing page"]
    assert read(mem, WORKSTATE) == rendered(layout, right_now, [], [])
    assert ws.finish("Fix the auth bug").store == WORKSTATE[layout]
    assert ws.finish().ok  # no task: the first Right Now item
    done = ["Fix the auth bug (2026-11-30 10:00)", "Build the landing page (2026-11-30 10:00)"]
    assert read(mem, WORKSTATE) == rendered(layout, [], done, [])
    before = snapshot(mem.root)
    refused = ws.finish()
    assert not refused.ok and "Right Now is empty" in (refused.reason or "")
    assert snapshot(mem.root) == before


def test_spawn_and_results_mark_what_was_verified(mem: Memory) -> None:
    layout, ws = mem.manifest.layout, mem.workstate
    assert ws.spawn("dec-007", "API work").ok and ws.spawn("dec-008", "docs").ok
    waiting = ["Waiting on sub-agent dec-008 for docs", "Waiting on sub-agent dec-007 for API work"]
    pending = [
        "Sub-agent dec-007 spawned at 10:00 for API work",
        "Sub-agent dec-008 spawned at 10:00 for docs",
    ]
    assert read(mem, WORKSTATE) == rendered(
        layout, waiting, [], pending, spawned=("dec-007", "dec-008")
    )
    assert ws.result("dec-007", "client written", verified=True).ok
    assert ws.result("dec-008", "docs published", verified=False).ok
    done = [
        "Sub-agent dec-007: client written (verified on the filesystem) (2026-11-30 10:00)",
        "Sub-agent dec-008: docs published (UNVERIFIED: the sub-agent's claim, not checked)"
        " (2026-11-30 10:00)",
    ]
    assert read(mem, WORKSTATE) == rendered(layout, [], done, [])
    assert "## Milestones\n- 10:00 — Spawned sub-agent dec-007 for API work\n" in read(mem, JOURNAL)
    before = snapshot(mem.root)
    refused = ws.result("dec-999", "anything", verified=True)
    assert not refused.ok and "no pending sub-agent 'dec-999'" in (refused.reason or "")
    assert snapshot(mem.root) == before


def test_done_list_rolls_into_the_journal_after_midnight(mem: Memory, clock: FakeClock) -> None:
    ws = mem.workstate
    ws.start("Deploy v2.1")
    ws.finish()
    ws.start("Write the changelog")
    clock.advance(days=1)
    result = ws.start("Answer the client")
    assert "rolled 1 done item" in result.notes[0] and "2026-11-30" in result.notes[0]
    assert read(mem, JOURNAL) == "# 2026-11-30\n\n## Milestones\n- 10:00 — Done: Deploy v2.1\n"
    assert read(mem, WORKSTATE) == rendered(
        mem.manifest.layout, ["Answer the client", "Write the changelog"], [], [], day="2026-12-01"
    )


def test_roll_moves_a_stale_done_list_on_its_own(mem: Memory, clock: FakeClock) -> None:
    ws = mem.workstate
    for task in ("Fix the auth bug", "Deploy v2.1"):
        ws.start(task)
        ws.finish(task)
    assert ws.roll() == 0  # still today
    clock.advance(days=1)
    assert ws.roll() == 2
    assert read(mem, JOURNAL).endswith(
        "- 10:00 — Done: Fix the auth bug\n- 10:00 — Done: Deploy v2.1\n"
    )
    assert ws.view().done == [] and ws.view().day == date(2026, 12, 1)
    before = snapshot(mem.root)
    assert ws.roll() == 0 and snapshot(mem.root) == before


def test_refused_op_after_midnight_writes_nothing(mem: Memory, clock: FakeClock) -> None:
    mem.workstate.start("Deploy v2.1")
    mem.workstate.finish()
    clock.advance(days=1)
    before = snapshot(mem.root)
    assert not mem.workstate.finish().ok  # Right Now is empty
    assert snapshot(mem.root) == before


def test_a_result_matches_the_whole_label(mem: Memory) -> None:
    mem.workstate.spawn("research", "market scan")
    mem.workstate.spawn("research-2", "pricing scan")
    mem.workstate.result("research", "scan done", verified=True)
    view = mem.workstate.view()
    assert view.pending == ["Sub-agent research-2 spawned at 10:00 for pricing scan"]
    assert view.right_now == ["Waiting on sub-agent research-2 for pricing scan"]


def test_a_result_does_not_take_a_label_that_holds_it_and_more(mem: Memory) -> None:
    """A label may hold spaces: ``web`` is not ``web scraper``."""
    assert mem.workstate.spawn("web scraper", "scrape the prices").ok
    assert mem.workstate.spawn("web", "check the site").ok
    assert mem.workstate.result("web", "site is up", verified=True).ok
    view = mem.workstate.view()
    assert view.pending == ["Sub-agent web scraper spawned at 10:00 for scrape the prices"]
    assert view.right_now == ["Waiting on sub-agent web scraper for scrape the prices"]
    assert "spawned.web_scraper: 2026-11-30T10:00:00Z" in read(mem, WORKSTATE)


@pytest.mark.parametrize("again", ["dec-007", "DEC-007", "dec 007"])
def test_a_label_still_pending_is_not_spawned_twice(mem: Memory, again: str) -> None:
    assert mem.workstate.spawn("dec_007" if " " in again else "dec-007", "API work").ok
    before = snapshot(mem.root)
    refused = mem.workstate.spawn(again, "other work")
    assert not refused.ok and "is already pending" in str(refused.reason), refused
    assert snapshot(mem.root) == before


# -- a sub-agent's files, checked on disk (never trust its narrative) -----------------

SPAWN = datetime(2026, 11, 30, 10, 0, tzinfo=UTC).timestamp()  # the fake clock's now


def produced(path: Path, text: str = "done\n", *, at: float = SPAWN + 300) -> str:
    """A file a sub-agent wrote, last modified ``at`` (five minutes after the spawn)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (at, at))
    return str(path)


def test_a_result_whose_files_all_hold_is_verified(mem: Memory, tmp_path: Path) -> None:
    assert mem.workstate.spawn("dec-007", "API work").ok
    inside = produced(mem.root / "out" / "client.py")
    outside = produced(tmp_path / "project" / "README.md")  # the project, not the memory
    result = mem.workstate.result(
        "dec-007", "client written", verified=False, files=["out/client.py", outside]
    )
    assert result.ok, result.reason
    assert result.notes == (
        "verified: all 2 files exist, are not empty and were modified after the spawn",
    )
    assert mem.workstate.view().done == [
        "Sub-agent dec-007: client written (verified on the filesystem: 2 files) (2026-11-30 10:00)"
    ]
    assert "spawned." not in read(mem, WORKSTATE)  # the moment goes with the pending line
    assert Path(inside).read_text() == "done\n"


def test_each_file_that_fails_is_named_with_its_check(mem: Memory, tmp_path: Path) -> None:
    assert mem.workstate.spawn("dec-007", "API work").ok
    assert mem.workstate.spawn("dec-008", "docs").ok
    produced(mem.root / "out" / "ok.md")
    produced(mem.root / "out" / "empty.md", "")
    produced(mem.root / "out" / "stale.md", at=SPAWN - 60)  # from before the spawn
    (mem.root / "out" / "folder").mkdir()
    files = ["out/ok.md", "out/missing.md", "out/empty.md", "out/stale.md", "out/folder"]
    result = mem.workstate.result("dec-007", "all five written", verified=True, files=files)
    assert result.ok, result.reason
    assert result.notes == (
        "recorded as UNVERIFIED: 4 of 5 files failed a check",
        "out/missing.md does not exist",
        "out/empty.md is empty (0 bytes)",
        "out/stale.md was last modified at 2026-11-30T09:59:00Z, before the spawn at "
        "2026-11-30T10:00:00Z",
        "out/folder is not a file (name the files in a folder one by one)",
    )
    assert mem.workstate.view().done == [
        "Sub-agent dec-007: all five written (UNVERIFIED: out/missing.md does not exist; "
        "out/empty.md is empty (0 bytes); out/stale.md was last modified at "
        "2026-11-30T09:59:00Z, before the spawn at 2026-11-30T10:00:00Z; and 1 more) "
        "(2026-11-30 10:00)"
    ]
    # the other sub-agent keeps its moment
    assert mem.workstate.view().pending == ["Sub-agent dec-008 spawned at 10:00 for docs"]
    assert "spawned.dec-008: 2026-11-30T10:00:00Z" in read(mem, WORKSTATE)
    assert "spawned.dec-007" not in read(mem, WORKSTATE)


def test_a_file_written_in_the_spawns_second_passes(mem: Memory) -> None:
    assert mem.workstate.spawn("dec-007", "API work").ok
    produced(mem.root / "a.md", at=SPAWN + 0.4)
    result = mem.workstate.result("dec-007", "written", verified=False, files=["a.md"])
    assert result.notes == ("verified: a.md exists, is not empty and was modified after the spawn",)


def test_a_spawn_with_no_recorded_moment_is_not_verified(mem: Memory) -> None:
    """A Pending line written by hand (or before memdir recorded the moment)."""
    mem.workstate.start("Waiting on sub-agent old-1 for scraping")
    path = mem.root / WORKSTATE[mem.manifest.layout]
    assert path.read_text().endswith("## Pending\n" if "memory/" in str(path) else "-->\n")
    with path.open("a") as file:  # Pending is the file's last section
        file.write("- Sub-agent old-1 spawned at 9am\n")
    assert mem.workstate.view().pending == ["Sub-agent old-1 spawned at 9am"]
    produced(mem.root / "scrape.json")
    result = mem.workstate.result("old-1", "scraped", verified=True, files=["scrape.json"])
    assert result.ok and result.notes[1] == (
        "scrape.json cannot be shown newer than the spawn (its time is not recorded)"
    )
    assert "(UNVERIFIED: scrape.json cannot be shown" in mem.workstate.view().done[0]


def test_a_label_given_in_another_case_finds_its_moment(mem: Memory) -> None:
    assert mem.workstate.spawn("Dec-007", "API work").ok
    produced(mem.root / "a.md")
    result = mem.workstate.result("dec-007", "written", verified=False, files=["a.md"])
    assert result.notes[0].startswith("verified: a.md exists")


def test_verified_without_files_is_the_callers_word(mem: Memory) -> None:
    mem.workstate.spawn("dec-007", "API work")
    result = mem.workstate.result("dec-007", "done", verified=True)
    assert result.notes == (
        "verified on your word: name the files it produced and memdir checks them on disk",
    )
    assert (
        mem.workstate.view()
        .done[0]
        .endswith("done (verified on the filesystem) (2026-11-30 10:00)")
    )


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ("out/a.md", "files must be a list of paths"),
        ([3], "a file path must be a string, not int"),
        (["out/\x00a.md"], "a file path holds a control character"),
        (["out/a.md\nout/b.md"], "is not a path: give each file as one line"),
        (["  "], "is not a path"),
        ([f"f{n}" for n in range(101)], "name at most 100 files"),
    ],
)
def test_bad_files_are_refused_and_change_nothing(mem: Memory, files: object, reason: str) -> None:
    mem.workstate.spawn("dec-007", "API work")
    before = snapshot(mem.root)
    result = mem.workstate.result("dec-007", "done", verified=True, files=files)  # type: ignore[arg-type]
    assert not result.ok and reason in (result.reason or ""), result.reason
    assert snapshot(mem.root) == before


def test_the_working_state_does_not_use_the_agent_notebook_slots(memory: Memory) -> None:
    for n in range(4):
        assert memory.notebook.update(f"note-{n}", f"agent note {n}").archived == ()
    memory.workstate.start("Build the landing page")
    memory.workstate.spawn("dec-007", "API work")
    assert memory.notebook.update("note-3", "agent note 3, revised").archived == ()
    entries = memory.notebook.entries()
    assert [e.key for e in entries] == [f"note-{n}" for n in range(4)] + WORKSTATE_KEYS
    assert [e.managed for e in entries] == ["agent"] * 4 + ["system"] * 3
    assert memory.notebook.update("note-4", "a fifth").archived == ("note-0",)
    memory.notebook.clear()  # clears agent entries only
    assert [entry.key for entry in memory.notebook.entries()] == WORKSTATE_KEYS


# -- journal ---------------------------------------------------------------------


def test_journal_sections_keep_their_order_and_decisions_their_reason(mem: Memory) -> None:
    journal = mem.journal
    result = journal.append("context", "Owner travels next week")
    assert result.store == JOURNAL[mem.manifest.layout]
    journal.append("milestone", "Deployed v2.1")
    bare = journal.append("decision", "Chose Redis over Postgres")
    assert bare.ok and any("why=" in note for note in bare.notes)
    assert journal.append("decisions", "Kept Redis", why="reads dominate 50:1").notes == ()
    assert journal.append("Decision", "Rejected X because it is slow").notes == ()
    journal.append("learning", "The Stripe webhook needs HTTPS even in dev")
    assert read(mem, JOURNAL) == (
        "# 2026-11-30\n\n## Decisions\n- Chose Redis over Postgres (why: not recorded)\n"
        "- Kept Redis because reads dominate 50:1\n- Rejected X because it is slow\n\n"
        "## Learnings\n- The Stripe webhook needs HTTPS even in dev\n\n"
        "## Milestones\n- 10:00 — Deployed v2.1\n\n## Context\n- Owner travels next week\n"
    )
    before = snapshot(mem.root)
    for kind, text in (("context", ""), ("learning", "  \n "), ("note", "x"), ("", "x")):
        assert not journal.append(kind, text).ok, (kind, text)
    assert snapshot(mem.root) == before


@pytest.mark.parametrize(
    ("text", "reasoned"),
    [
        ("Chose Redis since reads dominate", True),
        ("Paused the rollout since we lack budget", True),
        ("Use SQLite. Reason: no server to run", True),
        ("Picked B; the reason is latency", True),
        ("Chose B as it is cheaper", True),
        ("Moved to Friday so that QA can finish", True),
        ("Kept the plan since Monday", False),
        ("Stayed on v2 since 2024", False),
        ("Same vendor since last week", False),
        ("We reasoned nothing out", False),
        ("Changed it for no reason", False),
        ("Kept it as it stands", False),
    ],
)
def test_a_decision_s_own_words_give_its_reason_only_when_they_do(
    mem: Memory, text: str, reasoned: bool
) -> None:
    """ "since" before a time and "reason" as any word counted as a reason."""
    result = mem.journal.append("decision", text)
    assert result.ok
    assert bool(result.notes) is not reasoned, result.notes
    assert (f"- {text} (why: not recorded)" in read(mem, JOURNAL)) is not reasoned


def test_a_reason_is_kept_on_any_journal_line(mem: Memory) -> None:
    """A ``why`` given with a learning or a milestone was dropped, and the write said ok."""
    assert mem.journal.append("learning", "Webhooks need HTTPS", why="Stripe refuses http").ok
    assert mem.journal.append("milestone", "Deployed v2.1", why="the fix was urgent").ok
    text = read(mem, JOURNAL)
    assert "- Webhooks need HTTPS because Stripe refuses http\n" in text
    assert "- 10:00 — Deployed v2.1 because the fix was urgent\n" in text


def test_journal_days_are_never_deleted(mem: Memory, clock: FakeClock) -> None:
    for n in range(3):
        mem.journal.append("learning", f"day {n}: " + "a short learning " * 50)
        clock.advance(days=1)
    days = [date(2026, 11, 30), date(2026, 12, 1), date(2026, 12, 2)]
    assert mem.journal.days() == days
    before = snapshot(mem.root)
    for day in days:  # days under 20 KB are left alone
        report = mem.journal.compress(day, to_lesson=lambda line: pytest.fail("called"))
        assert not report.compressed and report.archive is None
    assert mem.journal.days() == days and snapshot(mem.root) == before


def test_a_day_over_20kb_is_compressed_losing_nothing(memory: Memory, folder: Path) -> None:
    memory.vault.write("alice-moreau", "Head of operations at Acme.", type="person")
    path, front = folder / JOURNAL["default"], "---\ntags: [journal]\nmood: busy\n---\n"
    path.write_text(front + "# 2026-11-30\n", encoding="utf-8")
    for n in range(220):
        memory.journal.append("learning", f"Lesson {n}: warm the cache before peak window {n}")
        memory.journal.append("decision", f"Picked rollout plan {n}", why=f"latency stays {n} ms")
    memory.journal.append("decision", "Signed Alice Moreau's renewal", why="she took the new price")
    original = path.read_text(encoding="utf-8")
    assert len(original.encode()) > 20 * 1024
    report = memory.journal.compress(
        DAY,
        to_card=lambda line: (
            memory.vault.append_history("alice-moreau", line).store if "Alice" in line else None
        ),
        to_lesson=lambda line: (
            memory.lessons.add_learning("Learnings", line, source="journal 2026-11-30").ok
        ),
    )
    assert report.compressed and report.archive == "archive/journal/2026-11.md"
    assert (report.to_cards, report.to_lessons) == (["vault/alice-moreau.md"], 220)
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 20 and text.startswith(front + "# 2026-11-30\n\n## Decisions")
    assert "\n## Learnings\n" in text and "archive/journal/2026-11.md" in text
    archive = (folder / report.archive).read_text(encoding="utf-8").splitlines()
    for line in original.splitlines():  # headings nest one level down in the archive
        assert line in archive or "#" + line in archive, line
    card = (folder / "vault" / "alice-moreau.md").read_text(encoding="utf-8")
    history = card.split("## History\n", 1)[1]
    assert "Signed Alice Moreau's renewal because she took the new price" in history
    learned = [e for e in memory.lessons.entries() if e.category == "Learnings"]
    assert len(learned) == 220
    assert "Lesson 219: warm the cache before peak window 219" in learned[-1].rule
    before = snapshot(folder)
    again = memory.journal.compress(DAY, to_card=lambda line: "x", to_lesson=lambda line: True)
    assert not again.compressed and snapshot(folder) == before


def test_compression_hooks_get_the_line_without_its_bullet(memory: Memory) -> None:
    memory.journal.append("learning", "The Stripe webhook needs HTTPS")
    seen: list[str] = []
    memory.journal.compress(DAY, to_lesson=lambda line: seen.append(line) is None, limit=10)
    assert seen == ["The Stripe webhook needs HTTPS"]


def test_a_day_holding_bytes_not_utf8_is_compressed_keeping_them(
    memory: Memory, folder: Path
) -> None:
    """Measuring the summary raised UnicodeEncodeError once the day and its archive were
    written: a job that failed after it had done its work."""
    path = folder / JOURNAL["default"]
    path.write_bytes(b"# 2026-11-30\n\n## Decisions\n- Lunch at the caf\xff\xfe\n- Ship it\n")
    report = memory.journal.compress(DAY, limit=10)
    assert report.compressed and report.bytes_after == len(path.read_bytes())
    assert b"caf\xff\xfe" in path.read_bytes()
    assert b"caf\xff\xfe" in (folder / report.archive).read_bytes()


# -- lessons ---------------------------------------------------------------------

DISCORD = (
    "Discord API",
    "Tried to send an embed with an empty field value",
    "The API returned 400; field values must be non-empty",
    "Validate embed fields are non-empty before sending",
)
CRON = ("Cron Jobs", "Left a 5-minute test cron on", "288 messages in a day", "Expire test crons")


def test_lessons_are_written_in_the_spec_format_once(mem: Memory) -> None:
    assert mem.lessons.add(*DISCORD).action == "updated"
    assert mem.lessons.add(*CRON).key == "Cron Jobs"
    expected = (  # the starter's categories first: Cron Jobs is one, Discord API is new
        "# Lessons Learned\n\n## API\n\n## File Operations\n\n## Sub-agents\n\n## Cron Jobs\n"
        "- **Mistake:** Left a 5-minute test cron on\n  **What happened:** 288 messages in a day\n"
        "  **Rule:** Expire test crons\n\n## Discord API\n"
        "- **Mistake:** Tried to send an embed with an empty field value\n"
        "  **What happened:** The API returned 400; field values must be non-empty\n"
        "  **Rule:** Validate embed fields are non-empty before sending\n"
    )
    assert read(mem, LESSONS) == expected
    assert mem.lessons.add(*DISCORD[:2], "a different account", "a new rule").action == "unchanged"
    for n in range(3):
        parts = list(DISCORD)
        parts[n + 1] = " \n"
        assert not mem.lessons.add(*parts).ok
    assert read(mem, LESSONS) == expected


def test_a_category_named_in_another_case_is_the_files_own(mem: Memory) -> None:
    """``api`` made a second ``## api`` category beside the starter ``## API``."""
    added = mem.lessons.add("api", "Retried a 400", what_happened="Same 400", rule="Read it")
    assert added.ok and added.key == "API"
    text = read(mem, LESSONS)
    assert "## api" not in text and text.count("## API\n") == 1
    assert text.index("## API\n") < text.index("Retried a 400") < text.index("## File Operations")
    assert mem.lessons.add("Api", "Retried a 400", "Same 400", "Read it").action == "unchanged"


def test_an_empty_category_is_refused_with_an_example_of_one(mem: Memory) -> None:
    before = snapshot(mem.root)
    refused = mem.lessons.add("  ", "Retried a 400", "Same 400", "Read it")
    assert refused.reason == "category is empty; give a short name such as 'Discord API'"
    assert snapshot(mem.root) == before


def test_lessons_check_finds_the_discord_lesson_first(mem: Memory) -> None:
    mem.lessons.add(*CRON)
    mem.lessons.add(*DISCORD)
    mem.lessons.add("File Ops", "Trusted a sub-agent", "Files were missing", "Check the disk")
    hits = mem.lessons_check("discord embed")
    assert hits and hits[0].path == LESSONS[mem.manifest.layout] and hits[0].title == "Discord API"


def test_lessons_have_no_delete_and_only_grow(mem: Memory) -> None:
    assert not any(hasattr(mem.lessons, name) for name in ("delete", "remove", "clear", "prune"))
    sizes = []
    for n in range(30):
        mem.lessons.add(f"Area {n % 3}", f"Mistake number {n}", f"Outcome {n}", f"Rule {n}")
        sizes.append(len(read(mem, LESSONS)))
    assert sizes == sorted(set(sizes))
    assert [e.mistake for e in mem.lessons.entries()] == [
        f"Mistake number {n}" for area in range(3) for n in range(area, 30, 3)
    ]


def test_a_different_lesson_is_not_taken_for_a_duplicate(mem: Memory) -> None:
    mem.lessons.add("Discord API", "Sent a message over 2000 chars", "400", "Split at 2000")
    result = mem.lessons.add("Discord API", "Sent a message", "Wrong channel", "Check ids")
    assert result.action == "updated"  # it is "unchanged": "Sent a message" is in the first


# -- AGENTS.md -------------------------------------------------------------------

PATHS = {
    "default": "identity/AGENTS.md NOTEBOOK.md lessons.md journal/YYYY-MM-DD.md",
    "workspace": "AGENTS.md memory/working-state.md memory/lessons-learned.md memory/YYYY-MM-DD.md",
}


def blocks(text: str) -> dict[str, str]:
    return {part.split("\n", 1)[0]: part for part in text.split("\n## ")[1:]}


@pytest.mark.parametrize("layout", ["default", "workspace"])
def test_agents_md_blocks_name_the_layout_paths(tmp_path: Path, layout: str) -> None:
    memdir.init(tmp_path, layout=layout)
    agents, working, lessons, journal = PATHS[layout].split()
    text = (tmp_path / agents).read_text(encoding="utf-8")
    assert "$" not in text
    found = blocks(text)
    crash = found["Crash Recovery: Working State (MANDATORY)"]
    assert f"- **File:** `{working}`" in crash and f"read `{working}` FIRST" in crash
    assert f"- **File:** `{lessons}`" in found["Self-Learning System (MANDATORY)"]
    assert f"- Keep a short daily log at `{journal}`" in found["Daily Memory (MANDATORY)"]
    assert '"Daily backup: YYYY-MM-DD"' in found["Daily Backup"]


def test_agents_md_follows_a_custom_manifest() -> None:
    text = (
        layouts.manifest_text("workspace")
        .replace('"memory/lessons-learned.md"', '"notes/lessons.md"')
        .replace('"memory/working-state.md"', '"notes/now.md"')
        .replace('"memory/[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9].md"', '"logs/daily/*.md"')
    )
    values = starter_values(parse_manifest(text))
    template = layouts.starter_files("workspace")["AGENTS.md"].decode("utf-8")
    found = blocks(Template(template).substitute(values))  # KeyError if a name is unfilled
    assert "- **File:** `notes/now.md`" in found["Crash Recovery: Working State (MANDATORY)"]
    assert "- **File:** `notes/lessons.md`" in found["Self-Learning System (MANDATORY)"]
    assert "daily log at `logs/daily/YYYY-MM-DD.md`" in found["Daily Memory (MANDATORY)"]


# -- secrets ---------------------------------------------------------------------

Write = Callable[[Memory, str], memdir.WriteResult]
WRITES: dict[str, Write] = {
    "notebook.update": lambda m, t: m.notebook.update("task", t),
    "knowledge.save": lambda m, t: m.knowledge.save(t),
    "knowledge.update": lambda m, t: m.knowledge.update("ops", t),
    "state.set": lambda m, t: m.state.set("deploy", t),
    "journal.append": lambda m, t: m.journal.append("context", t),
    "journal.append why": lambda m, t: m.journal.append("decision", "Kept it", why=t),
    "lessons.add": lambda m, t: m.lessons.add("Ops", "Forgot the key", "Outage", t),
    "workstate.start": lambda m, t: m.workstate.start(t),
    "vault.write": lambda m, t: m.vault.write("bob", t),
    "vault.append_history": lambda m, t: m.vault.append_history("alice-moreau", t),
    "intel.add": lambda m, t: m.intel.add("alpha", t),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_writes_refuse_credentials(memory: Memory, folder: Path, write: Write) -> None:
    memory.vault.write("alice-moreau", "Head of operations.")
    before = snapshot(folder)
    refused = write(memory, f"use {KEY} for the nightly job")
    assert not refused.ok and "reference them by name" in (refused.reason or "")
    assert KEY not in (refused.reason or "")
    assert snapshot(folder) == before
    assert write(memory, "rotate the Stripe key in .env monthly").ok
    assert b"rotate the Stripe key in .env monthly" in b"".join(snapshot(folder).values())


SECRET_NAMES: dict[str, Write] = {
    "notebook key": lambda m, k: m.notebook.update(k, "x"),
    "state key": lambda m, k: m.state.set(k, "x"),
    "knowledge section": lambda m, k: m.knowledge.update(k, "x"),
    "lessons category": lambda m, k: m.lessons.add(k, "a", "b", "c"),
    "intel topic": lambda m, k: m.intel.add("alpha", "x", topic=k),
    "vault tags": lambda m, k: m.vault.write("carol", "x", tags=[k]),
}


@pytest.mark.parametrize("write", SECRET_NAMES.values(), ids=SECRET_NAMES.keys())
def test_a_credential_in_a_key_is_refused(memory: Memory, folder: Path, write: Write) -> None:
    before = snapshot(folder)
    assert not write(memory, KEY).ok
    assert snapshot(folder) == before


def test_compress_journals_files_facts_into_cards_and_lessons(
    folder: Path, clock: FakeClock
) -> None:
    memory = memdir.open(folder, clock=clock, embedder="hashing")
    memory.vault.write("Alice Moreau", "Client.", type="person")
    memory.journal.append("decision", "Renew the contract with Alice Moreau because she asked")
    for n in range(400):
        memory.journal.append("learning", f"Learning number {n}: the staging cache needs warming")
    small_day = FakeClock("2026-11-29T09:00:00Z")
    memdir.open(folder, clock=small_day, embedder="hashing").journal.append("context", "quiet")
    reports = memory.compress_journals()
    assert [r.day for r in reports] == ["2026-11-30"]  # the small day is left alone
    assert reports[0].to_cards == ["vault/alice-moreau.md"] and reports[0].to_lessons == 400
    history = (folder / "vault" / "alice-moreau.md").read_text()
    assert "Renew the contract with Alice Moreau because she asked" in history
    lessons = (folder / "lessons.md").read_text()
    assert "- **Learned:** Learning number 399: the staging cache needs warming" in lessons
    assert len((folder / "journal" / "2026-11-30.md").read_text().splitlines()) <= 20
    assert memory.compress_journals() == []  # done: nothing more to compress


# -- journal summaries by the LLM --------------------------------------------------

BIG_DAY = (
    "# 2026-11-30\n\n## Decisions\n"
    "- Renew the contract with Alice Moreau because she asked\n\n## Learnings\n"
    + "".join(f"- Learning number {n}: the staging cache needs warming\n" for n in range(400))
)
DAY_SUMMARY = (
    "## Decisions\n- Renewed Alice Moreau's contract\n## Learnings\n- Warm the staging cache"
)


def _big_day(memory: Memory) -> Path:
    path = memory.root / "journal" / "2026-11-30.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(BIG_DAY, encoding="utf-8")
    return path


def _archived(memory: Memory) -> str:
    return (memory.root / "archive/journal/2026-11.md").read_text(encoding="utf-8")


def test_compress_journals_keeps_the_llms_checked_summary(memory: Memory) -> None:
    chat = FakeChat([DAY_SUMMARY])
    memory.llm = chat
    path = _big_day(memory)
    [report] = memory.compress_journals()
    assert report.compressed and report.notes == [] and report.to_lessons == 400
    assert path.read_text(encoding="utf-8") == (
        "# 2026-11-30\n\n" + DAY_SUMMARY + "\n\n"
        "Compressed: the full day is kept in archive/journal/2026-11.md.\n"
    )
    assert all(line in _archived(memory) for line in BIG_DAY.splitlines()[4:])
    assert "at most 16 lines" in chat.calls[0].prompt
    assert "## Decisions, ## Learnings" in chat.calls[0].prompt


def test_a_rejected_llm_day_summary_falls_back_to_the_first_lines(memory: Memory) -> None:
    memory.llm = FakeChat(["## Ideas\n- Renew Alice Moreau", "## Ideas\n- Renew Alice Moreau"])
    path = _big_day(memory)
    [report] = memory.compress_journals()
    note = (
        "summary of the day rejected: line 1 is a heading the day does not have ('## Ideas'); "
        "use only ## Decisions, ## Learnings, ## Summary; used the offline summary"
    )
    assert report.notes == [note]
    assert Notice("journal/2026-11-30.md", note) in memory.check()
    text = path.read_text(encoding="utf-8")
    assert "## Learnings\n- Learning number 0: the staging cache needs warming" in text
    assert len(text.splitlines()) <= 20 and "Ideas" not in text


def test_an_unreachable_llm_leaves_the_first_lines_summary(memory: Memory) -> None:
    memory.llm = FakeChat([LLMError("cannot reach the LLM: connection refused")])
    path = _big_day(memory)
    [report] = memory.compress_journals()
    assert report.notes == [
        "summary of the day failed: cannot reach the LLM: connection refused; "
        "used the offline summary"
    ]
    assert "- Learning number 0: the staging cache" in path.read_text(encoding="utf-8")


def test_a_day_written_to_while_the_llm_summarises_loses_nothing(memory: Memory) -> None:
    written: list[WriteResult] = []

    def answer(messages: list[Message]) -> str:  # a write from another thread: no lock held
        writer = threading.Thread(
            target=lambda: written.append(memory.journal.append("context", "Alice called back"))
        )
        writer.start()
        writer.join()
        return DAY_SUMMARY

    memory.llm = FakeChat([answer])
    path = _big_day(memory)
    [report] = memory.compress_journals()
    assert written[0].ok and report.compressed
    assert report.notes == ["the day changed while it was summarised; used the offline summary"]
    assert "- Alice called back" in _archived(memory)
    assert "Renewed Alice Moreau's contract" not in path.read_text(encoding="utf-8")


def test_a_journal_line_of_invisible_characters_only_is_empty(mem: Memory) -> None:
    """Zero-width and bidi characters show nothing; the store took them as a line."""
    before = snapshot(mem.root)
    for text in ("\u200b\u200d", "\ufeff \u202e", " \u2060 "):
        result = mem.journal.append("context", text)
        assert not result.ok and "empty" in (result.reason or ""), text
    assert snapshot(mem.root) == before
