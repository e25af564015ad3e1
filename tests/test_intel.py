"""Research intel: weekly files, rotation into compressed bullets, the archive."""

from __future__ import annotations

import threading
from datetime import date
from pathlib import Path

import pytest

import memdir
from memdir.llm.chat import LLMError, Message
from memdir.results import WriteResult
from memdir.stores.intel import ExtractiveSummariser, IntelStore, parse_week
from memdir.testing import ChatServer, FakeChat, FakeClock

SPEC = """\
# Project Alpha Research Intel

## Current Week (Feb 10-16, 2025)
### Competitor Analysis
- CompetitorX launched new pricing: $49/mo (down from $79)
- CompetitorY acquired StartupZ for data pipeline tech
- Market trend: consolidation in the API middleware space

### Key Findings
- [Detailed findings for this week...]

---

## Previous Weeks (Compressed)
- **Feb 3-9:** CompetitorX beta launched with 3 integrations. Market report showed 15% growth in sector.
- **Jan 27-Feb 2:** Initial competitor scan. Identified 5 key players. CompetitorY raised Series B.
"""  # noqa: E501 (the spec's example, verbatim)
SOURCES = "## Sources  \n<!-- kept: by hand -->\n* https://example.com/report\t\n\n"


@pytest.fixture
def intel(memory: memdir.Memory) -> IntelStore:
    return IntelStore(memory._ctx, "intel/{project}.md")


def workspace(tmp_path: Path, clock: FakeClock) -> tuple[Path, IntelStore]:
    root = tmp_path / "ws"
    memdir.init(root, layout="workspace")
    memory = memdir.open(root, clock=clock, embedder="hashing")
    return root, IntelStore(memory._ctx, "memory/{project}-research-intel.md")


def test_add_creates_the_file_in_the_spec_shape(intel: IntelStore, folder: Path) -> None:
    result = intel.add("Project Alpha", "CompetitorX cut prices to $49/mo", "Competitor Analysis")
    assert result.ok and result.action == "created" and result.key == "Competitor Analysis"
    assert result.store == "intel/project-alpha.md" == intel.path("Project Alpha")
    assert (folder / result.store).read_text() == (
        "# Project Alpha Research Intel\n\n"
        "## Current Week (Nov 30-Dec 6, 2026)\n"
        "### Competitor Analysis\n"
        "- CompetitorX cut prices to $49/mo\n\n"
        "---\n"
    )
    assert intel.projects() == ["project-alpha"]


def test_adds_in_the_same_week_accumulate_under_topics(
    intel: IntelStore, folder: Path, clock: FakeClock
) -> None:
    intel.add("alpha", "First finding")
    clock.advance(days=3)
    intel.add("alpha", "Rival shipped v2", "Competitors")
    assert intel.add("alpha", "- Second finding\n  with detail", "key findings").action == "updated"
    assert intel.add("alpha", "Rival shipped v2", "Competitors").action == "unchanged"
    assert intel.current_week("alpha") == (
        "### Key Findings\n- First finding\n- Second finding\n  with detail\n\n"
        "### Competitors\n- Rival shipped v2"
    )
    text = (folder / "intel/alpha.md").read_text()
    assert text.startswith("# Alpha Research Intel\n\n## Current Week (Nov 30-Dec 6, 2026)\n")
    assert text.endswith("- Rival shipped v2\n\n---\n") and text.count("## Current Week") == 1


def test_rotate_compresses_last_week_and_archives_it(
    intel: IntelStore, folder: Path, clock: FakeClock
) -> None:
    notes = [
        "Acme raised prices by 20% for enterprise plans.",
        "Acme lost two enterprise customers to Globex after the price change.",
        "The office coffee machine broke.",
        "Globex launched an API with 12 integrations and Acme plans to follow.",
    ]
    for note in notes:
        intel.add("alpha", note)
    original = (folder / "intel/alpha.md").read_text()
    clock.advance(days=7)
    report = intel.rotate()
    assert report.rotated == [("alpha", "Nov 30-Dec 6, 2026")] and report.unchanged == 0
    assert report.to_dict()["archives"] == ["archive/intel/2026-12.md"]
    text = (folder / "intel/alpha.md").read_text()
    assert text.startswith(
        "# Alpha Research Intel\n\n## Current Week (Dec 7-13, 2026)\n---\n\n"
        "## Previous Weeks (Compressed)\n- **Nov 30-Dec 6:** "
    )
    summary = text.split("**Nov 30-Dec 6:** ")[1].rstrip("\n")
    assert "\n" not in summary and len(summary) <= 300 and summary.endswith(".")
    assert 1 <= summary.count(". ") + 1 <= 3 and "coffee" not in summary
    archive = (folder / "archive/intel/2026-12.md").read_text()
    assert all(line in archive for line in original.splitlines()[2:])
    assert "reason: rotated; from: intel/alpha.md" in archive
    assert intel.current_week("alpha") == ""


def test_second_rotate_in_the_same_week_changes_nothing(
    intel: IntelStore, folder: Path, clock: FakeClock
) -> None:
    intel.add("alpha", "Something happened")
    clock.advance(days=8)
    assert intel.rotate().rotated
    before = (folder / "intel/alpha.md").read_bytes()
    archive = (folder / "archive/intel/2026-12.md").read_bytes()
    clock.advance(days=5)  # Sunday of the same week
    report = intel.rotate()
    assert report.rotated == [] and report.unchanged == 1 and report.archives == []
    assert (folder / "intel/alpha.md").read_bytes() == before
    assert (folder / "archive/intel/2026-12.md").read_bytes() == archive


def test_rotating_across_skipped_weeks(intel: IntelStore, folder: Path, clock: FakeClock) -> None:
    intel.add("alpha", "Week one note")
    clock.advance(days=22)  # Tuesday Dec 22: weeks of Dec 7 and Dec 14 had no notes
    assert intel.rotate("Alpha").rotated == [("alpha", "Nov 30-Dec 6, 2026")]
    clock.advance(days=14)  # the empty week of Dec 21 leaves no bullet
    assert intel.rotate("alpha").rotated == []
    text = (folder / "intel/alpha.md").read_text()
    assert "## Current Week (Jan 4-10, 2027)" in text and text.count("- **") == 1
    assert [week.week for week in intel.previous_weeks("alpha")] == [
        (date(2026, 11, 30), date(2026, 12, 6))
    ]


def test_hand_written_spec_file_parses_and_rotates(tmp_path: Path) -> None:
    clock = FakeClock("2025-02-12T09:00:00Z")
    root, intel = workspace(tmp_path, clock)
    path = root / "memory/project-alpha-research-intel.md"
    path.write_text(SPEC + "\n" + SOURCES)
    assert intel.projects() == ["project-alpha"]  # lessons-learned.md is not a project
    assert [(w.label, w.week) for w in intel.previous_weeks("Project Alpha")] == [
        ("Feb 3-9", (date(2025, 2, 3), date(2025, 2, 9))),
        ("Jan 27-Feb 2", (date(2025, 1, 27), date(2025, 2, 2))),
    ]
    assert intel.current_week("project-alpha").startswith("### Competitor Analysis\n- Comp")
    assert intel.rotate().unchanged == 1 and path.read_text() == SPEC + "\n" + SOURCES
    clock.advance(days=6)  # Tuesday Feb 18
    assert intel.rotate().rotated == [("project-alpha", "Feb 10-16, 2025")]
    text = path.read_text()
    head, previous = text.split("## Previous Weeks (Compressed)\n")
    assert head == "# Project Alpha Research Intel\n\n## Current Week (Feb 17-23, 2025)\n---\n\n"
    bullet, rest = previous.split("\n", 1)
    assert bullet.startswith("- **Feb 10-16:** CompetitorX launched new pricing: $49/mo")
    assert "Detailed findings" not in bullet
    assert rest == SPEC.split("(Compressed)\n")[1] + "\n" + SOURCES  # byte for byte
    archive = (root / "archive/intel/2025-02.md").read_text()
    assert all(line in archive for line in SPEC.split("---")[0].splitlines()[3:])


def test_year_boundary_labels(intel: IntelStore, folder: Path, clock: FakeClock) -> None:
    clock.now = clock.now.replace(year=2025, month=12, day=31)
    intel.add("alpha", "Year-end review done")
    text = (folder / "intel/alpha.md").read_text()
    assert "## Current Week (Dec 29, 2025-Jan 4, 2026)" in text
    clock.advance(days=7)
    assert intel.rotate().rotated == [("alpha", "Dec 29, 2025-Jan 4, 2026")]
    text = (folder / "intel/alpha.md").read_text()
    assert "## Current Week (Jan 5-11, 2026)" in text and "- **Dec 29-Jan 4:** Year-end" in text
    [week] = intel.previous_weeks("alpha")
    assert week.week == (date(2025, 12, 29), date(2026, 1, 4))
    jan = date(2026, 1, 10)
    assert parse_week("Dec 29-Jan 4", jan) == parse_week("Dec 29-Jan 4, 2026", jan) == week.week
    assert parse_week("Feb 10-16, 2025", jan) == (date(2025, 2, 10), date(2025, 2, 16))
    assert parse_week("Feb 10-16", jan) == (date(2025, 2, 10), date(2025, 2, 16))
    assert parse_week("soon", jan) is None


def test_add_after_a_gap_rotates_first(intel: IntelStore, folder: Path, clock: FakeClock) -> None:
    intel.add("alpha", "Old news about Acme")
    clock.advance(days=10)
    result = intel.add("alpha", "Fresh news", "Competitors")
    assert result.ok and result.archived == ("Nov 30-Dec 6, 2026",)
    assert result.archive == "archive/intel/2026-12.md" and result.notes
    text = (folder / "intel/alpha.md").read_text()
    assert text == (
        "# Alpha Research Intel\n\n## Current Week (Dec 7-13, 2026)\n"
        "### Competitors\n- Fresh news\n\n---\n\n"
        "## Previous Weeks (Compressed)\n- **Nov 30-Dec 6:** Old news about Acme.\n"
    )


def test_refusals_change_no_file(intel: IntelStore, folder: Path) -> None:
    intel.add("alpha", "kept")
    before = (folder / "intel/alpha.md").read_bytes()
    bad = [
        intel.add("alpha", ""),
        intel.add("alpha", "  \n <think>hmm</think> "),
        intel.add("alpha", 42),  # type: ignore[arg-type]
        intel.add("alpha", "x" * 3000),
        intel.add("alpha", "text", ""),
        intel.add("", "text"),
        intel.add("!!!", "text"),
        intel.add(None, "text"),  # type: ignore[arg-type]
    ]
    assert all(not r.ok and r.action == "refused" and r.reason for r in bad)
    assert bad[0].store == "intel/alpha.md"
    assert (folder / "intel/alpha.md").read_bytes() == before
    assert sorted(p.name for p in (folder / "intel").iterdir()) == ["alpha.md"]


def test_rotate_gives_a_file_without_a_current_week_one(intel: IntelStore, folder: Path) -> None:
    (folder / "intel/beta.md").write_text("# Beta\n\n## Notes\nhand written\n")
    assert intel.rotate().to_dict() == {"rotated": [], "archives": [], "unchanged": 0}
    assert (folder / "intel/beta.md").read_text() == (
        "# Beta\n\n## Current Week (Nov 30-Dec 6, 2026)\n---\n\n## Notes\nhand written\n"
    )
    assert intel.rotate().unchanged == 1
    with pytest.raises(ValueError, match=r"no intel on 'gamma' \(intel/gamma.md\); projects: beta"):
        intel.rotate("gamma")  # a project named that has no file: said, not an empty report
    assert not (folder / "intel/gamma.md").exists()


def test_the_summariser_can_be_swapped(
    memory: memdir.Memory, folder: Path, clock: FakeClock
) -> None:
    class Fake:
        def __init__(self) -> None:
            self.calls: list[tuple[list[str], int]] = []

        def summarise(self, texts: list[str], max_sentences: int) -> str:
            self.calls.append((texts, max_sentences))
            return "A model wrote\nthis."

    fake = Fake()
    intel = IntelStore(memory._ctx, "intel/{project}.md", summariser=fake)
    intel.add("alpha", "One", "A")
    intel.add("alpha", "Two\ncontinued", "B")
    clock.advance(days=7)
    intel.rotate()
    assert fake.calls == [(["One", "Two continued"], 3)]
    assert "- **Nov 30-Dec 6:** A model wrote this.\n" in (folder / "intel/alpha.md").read_text()


def test_extractive_summariser_keeps_the_best_sentences_in_order() -> None:
    texts = [
        "Weather was nice.",
        "Acme cut prices by 30% to win Globex customers. Acme also hired staff",
        "Globex answered Acme with a $10 discount",
        "lunch",
    ]
    summary = ExtractiveSummariser().summarise(texts, 2)
    assert summary == (
        "Acme cut prices by 30% to win Globex customers. Globex answered Acme with a $10 discount."
    )
    assert ExtractiveSummariser().summarise(texts, 2) == summary
    assert ExtractiveSummariser().summarise([], 3) == ""
    long = ExtractiveSummariser().summarise(["word " * 200], 3)
    assert len(long) <= 300 and long.endswith("…")


# -- summaries by the LLM ----------------------------------------------------------

ACME = [
    "Acme raised prices by 20% for enterprise plans.",
    "Acme lost two enterprise customers to Globex after the price change.",
    "The office coffee machine broke.",
]
ACME_SUMMARY = "Acme raised enterprise prices 20% and lost two customers to Globex."


def _last_week(memory: memdir.Memory, clock: FakeClock) -> None:
    for note in ACME:
        memory.intel.add("alpha", note)
    clock.advance(days=7)


def test_rotation_keeps_the_llms_checked_summary(
    memory: memdir.Memory, folder: Path, clock: FakeClock
) -> None:
    memory.llm = FakeChat([ACME_SUMMARY])
    _last_week(memory, clock)
    report = memory.intel.rotate()
    assert report.rotated == [("alpha", "Nov 30-Dec 6, 2026")] and report.notes == []
    assert "notes" not in report.to_dict()
    text = (folder / "intel/alpha.md").read_text()
    assert f"- **Nov 30-Dec 6:** {ACME_SUMMARY}\n" in text
    archive = (folder / "archive/intel/2026-12.md").read_text()
    assert all(note in archive for note in ACME)


def test_a_rejected_llm_summary_falls_back_and_is_reported(
    memory: memdir.Memory, folder: Path, clock: FakeClock
) -> None:
    chat = FakeChat(["# Weekly summary\nAcme raised prices.", "Acme. Globex. Acme. Globex."])
    memory.llm = chat
    _last_week(memory, clock)
    report = memory.intel.rotate()
    offline = ExtractiveSummariser().summarise(ACME, 3)
    assert f"- **Nov 30-Dec 6:** {offline}\n" in (folder / "intel/alpha.md").read_text()
    note = "LLM summary rejected: it has 4 sentences; at most 3; used the offline summary"
    assert report.notes == [note] and report.to_dict()["notes"] == [note]
    assert memdir.Notice("intel", note) in memory.check()
    assert "That answer was rejected: it holds a markdown heading" in chat.calls[1].prompt


def test_an_add_that_rotates_says_when_the_llm_failed(
    memory: memdir.Memory, clock: FakeClock
) -> None:
    memory.llm = FakeChat([LLMError("cannot reach the LLM: connection refused")])
    _last_week(memory, clock)
    result = memory.intel.add("alpha", "Globex hired a new CTO")
    assert result.ok and result.archived == ("Nov 30-Dec 6, 2026",)
    assert result.notes == (
        "rotated week Nov 30-Dec 6, 2026 into Previous Weeks (Compressed)",
        "LLM summary failed: cannot reach the LLM: connection refused; used the offline summary",
    )


def test_the_llm_is_asked_outside_the_folder_lock(
    memory: memdir.Memory, folder: Path, clock: FakeClock
) -> None:
    written: list[WriteResult] = []

    def answer(messages: list[Message]) -> str:  # another thread writes while the model thinks
        writer = threading.Thread(
            target=lambda: written.append(memory.intel.add("beta", "Globex hired a CTO"))
        )
        writer.start()
        writer.join()
        return ACME_SUMMARY

    memory.llm = FakeChat([answer])
    _last_week(memory, clock)
    assert memory.intel.rotate().rotated == [("alpha", "Nov 30-Dec 6, 2026")]
    assert written[0].ok and ACME_SUMMARY in (folder / "intel/alpha.md").read_text()


def test_rotation_through_the_manifests_llm_over_http(
    folder: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("MEMDIR_LLM_BASE_URL", "MEMDIR_LLM_MODEL", "MEMDIR_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with ChatServer([ACME_SUMMARY]) as server:
        with (folder / "memdir.toml").open("a") as toml:
            toml.write(f'\n[llm]\nbase_url = "{server.base_url}"\nmodel = "summariser"\n')
        with memdir.open(folder, clock=clock, embedder="hashing") as memory:
            _last_week(memory, clock)
            assert memory.intel.rotate().notes == []
    assert ACME_SUMMARY in (folder / "intel/alpha.md").read_text()
    [request] = server.requests
    assert request.body["model"] == "summariser" and "Acme lost two" in str(request.messages)
