"""The dream cycle: when it is due, what the offline planner merges and promotes, the
safeguards (snapshot, archive, caps, the 25% rule, conservative removals), hygiene,
the state TTL prune, the report in the history, and an LLM planner played by a real
HTTP server on loopback."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import memdir
from memdir.cli import app
from memdir.dream import Entry, Merge, OfflinePlanner, Plan, Promotion, dream_due, parse_plan
from memdir.dream.contrasts import contrast
from memdir.dream.llm_planner import LLMPlanner
from memdir.dream.marks import SUBSTITUTION_MARGIN
from memdir.dream.marks import read_marks as _marks
from memdir.dream.offline import theme_name
from memdir.dream.plan import PlanError
from memdir.errors import MemdirError
from memdir.index.embedders import HashingEmbedder
from memdir.testing import ChatReply, ChatServer, FakeChat, FakeClock


@pytest.fixture
def mem(folder: Path, clock: FakeClock) -> memdir.Memory:
    return memdir.open(folder, clock=clock, embedder="hashing")


def _fill(memory: memdir.Memory, n: int, tag: str | None = None, start: int = 0) -> list[str]:
    """``n`` distinct observations, each about its own subject."""
    ids = []
    for i in range(start, start + n):
        result = memory.knowledge.save(
            f"Vendor number {i} ships order batch {i * 7} from warehouse {i % 5}.",
            "fact",
            [tag] if tag else [],
        )
        assert result.ok
        ids.append(str(result.key))
    return ids


def _contents(memory: memdir.Memory) -> list[str]:
    return [o.content for o in memory.knowledge.observations()]


# -- when it runs ---------------------------------------------------------------------


def test_due_at_50_observations_once_a_day(mem: memdir.Memory, clock: FakeClock) -> None:
    _fill(mem, 49)
    due, why = dream_due(mem)
    assert not due and why == "49 observations, fewer than 50"
    assert not mem.dream().ran
    _fill(mem, 1, start=49)
    assert dream_due(mem) == (True, "50 observations and no dream yet today")
    assert mem.dream().ran
    due, why = dream_due(mem)
    assert not due and why.startswith("already dreamt 1 time today")
    clock.advance(days=1)
    assert dream_due(mem)[0]


def test_up_to_four_dreams_a_day_when_bloated(mem: memdir.Memory) -> None:
    _fill(mem, 500)
    runs = 0
    while mem.dream().ran:
        runs += 1
        assert runs <= 4
    assert runs == 4
    assert dream_due(mem) == (False, "already dreamt 4 times today (500 observations)")
    forced = mem.dream(force=True)
    assert forced.ran and forced.due.startswith("forced (already dreamt 4 times")


def test_a_forced_dream_with_nothing_to_do_says_so(mem: memdir.Memory) -> None:
    _fill(mem, 2)
    report = mem.dream(force=True)
    assert report.ran and report.summary().startswith(
        "offline dream left knowledge.md as it was: 2 -> 2 observations"
    )
    assert "Nothing to merge or promote." in report.summary()


def test_a_folder_without_knowledge_cannot_dream(tmp_path: Path) -> None:
    memdir.init(tmp_path / "v", layout="vault")
    with memdir.open(tmp_path / "v", embedder="hashing") as memory:
        with pytest.raises(MemdirError, match="declares no knowledge layer"):
            memory.dream(force=True)
        assert "no knowledge layer" in memory.maintain(only=["dream"]).jobs[0].summary


@pytest.mark.parametrize("shape", ["a folder", "a link out"])
def test_a_knowledge_file_that_cannot_be_written_stops_the_dream_with_why(
    tmp_path: Path, shape: str
) -> None:
    """It was a traceback (the store's internal Refusal, raised again by the fallback)."""
    root, outside = tmp_path / "m", tmp_path / "outside.md"
    memdir.init(root)
    outside.write_text("# Knowledge\n\n## _observations\n### obs_1_a\nx\n")
    (root / "knowledge.md").unlink()
    if shape == "a folder":
        (root / "knowledge.md").mkdir()
    else:
        (root / "knowledge.md").symlink_to(outside)
    result = CliRunner().invoke(app, ["dream", "--force", "--dir", str(root)])
    assert (result.exit_code, result.stdout) == (1, ""), result.output
    assert result.stderr.startswith(f"error: knowledge.md is {shape[:3]}"), result.stderr
    assert result.stderr.count("\n") == 1
    assert not (root / "archive" / "dreams").exists()
    assert outside.read_text() == "# Knowledge\n\n## _observations\n### obs_1_a\nx\n"


# -- the offline planner ---------------------------------------------------------------


def _entries(*texts: str, tags: tuple[str, ...] = ()) -> list[Entry]:
    clock = FakeClock()
    return [
        Entry(f"obs_{n}", "fact", clock.advance(minutes=1), tags, t) for n, t in enumerate(texts)
    ]


def test_offline_merges_duplicates_and_keeps_different_facts_apart() -> None:
    entries = _entries(
        "Deploys happen on Mondays and Thursdays.",
        "deploys happen on mondays and thursdays",  # exact once folded
        "Deploys happen on Thursdays and Mondays.",  # the same words reordered
        "The billing API allows 50 requests per second.",
        "The billing API allows 100 requests per second.",  # another number
        "Alice prefers email over phone calls.",
        "Bob prefers email over phone calls.",  # another name
        "The staging database restarts every Sunday.",
        "The production database restarts every Sunday.",  # one word swapped
        "The team deploys on Fridays.",
        "The team never deploys on Fridays.",  # negated
    )
    plan = OfflinePlanner(HashingEmbedder(), theme_min=99).plan(entries)
    assert [m.ids for m in plan.merge] == [("obs_0", "obs_1", "obs_2")]
    assert plan.merge[0].text in {e.content for e in entries[:3]}
    assert plan.promote == [] and plan.remove == []


@pytest.mark.parametrize(
    ("one", "other", "merge"),
    [
        ("The user prefers email over phone calls.", "The user prefers phone calls over email.",
         False),
        ("Postgres is faster than MySQL for us.", "MySQL is faster than Postgres for us.", False),
        ("Run the linter before the tests.", "Run the tests before the linter.", False),
        ("Moved from Paris to Berlin in 2020.", "Moved from Berlin to Paris in 2020.", False),
        ("Yara prefers Slack over phone calls.", "Yara prefers Slack over text messages.",
         False),  # what the relation points at, swapped
        ("Use pnpm, not npm, in the frontend repo.", "Use npm, not pnpm, in the frontend repo.",
         False),
        ("The frontend calls the gateway, which calls the auth service.",
         "The auth service calls the gateway, which calls the frontend.", False),
        ("Run the migration before the deploy.", "Run the migration after the deploy.", False),
        ("Reads go to the replica, writes go to the primary.",
         "Writes go to the replica, reads go to the primary.", False),
        # the same relations, pointing at the same things, in another order
        ("Moved to Berlin from Paris in 2020.", "Moved from Paris to Berlin in 2020.", True),
        ("Use tabs over spaces in Python files.", "In Python files, use tabs over spaces.", True),
    ],
)  # fmt: skip
def test_a_reversed_relation_is_another_fact(one: str, other: str, merge: bool) -> None:
    entries = _entries(one, other)
    # every pair is close enough: only the guards tell them apart
    plan = OfflinePlanner(HashingEmbedder(), theme_min=99, threshold=-1.0).plan(entries)
    assert [m.ids for m in plan.merge] == ([("obs_0", "obs_1")] if merge else [])


@pytest.mark.parametrize(
    ("one", "other", "margin"),
    [
        ("The billing database is backed up every Saturday.",
         "Every Saturday the search database gets backed up.", SUBSTITUTION_MARGIN),
        ("The staging database is backed up every Saturday.",
         "Every Saturday the production database gets backed up.", None),  # a contrast set
        ("The billing service listens on port 8080.", "The billing service runs on port 8080.",
         SUBSTITUTION_MARGIN),
        ("For status updates, Alice prefers email.", "Alice prefers email for status updates.",
         0.0),
        ("Alice prefers email.", "Bob prefers email.", None),
    ],
)  # fmt: skip
def test_a_swapped_word_needs_a_closer_match_in_any_order(
    one: str, other: str, margin: float | None
) -> None:
    assert _marks(one).margin(_marks(other)) == margin
    assert _marks(other).margin(_marks(one)) == margin


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Invoices go out on the first day of the month.",
         "Invoices go out on the last day of the month."),
        ("The user works night shifts.", "The user works day shifts."),
        ("Passwords must be at least 12 characters.", "Passwords must be at most 12 characters."),
        ("Python 3.11 is the minimum version.", "Python 3.11 is the maximum version."),
        ("The model is retrained weekly.", "The model is retrained monthly."),
        ("The user is left-handed.", "The user is right-handed."),
        ("The user's favourite editor is Neovim.", "The user's least favourite editor is Neovim."),
        ("The cache expires after 5 minutes.", "The cache expires after 5 hours."),
        ("Maria owns the mobile app.", "Maria owns the web app."),
        ("Images are pushed to the registry.", "Images are pulled from the registry."),
    ],
)  # fmt: skip
def test_contrasting_words_keep_facts_apart(one: str, other: str) -> None:
    """Antonyms and one closed class's members sit closer than synonyms in a sentence
    embedding: the words decide, whatever the cosine."""
    assert contrast(_marks(one).contrasts, _marks(other).contrasts) is not None
    plan = OfflinePlanner(HashingEmbedder(), theme_min=99, threshold=-1.0).plan(
        _entries(one, other)
    )
    assert plan.merge == []


def test_contrast_sets_never_split_the_same_words() -> None:
    one = "Every night at 2am the staging server is reset."
    other = "The staging server is reset at 2am every night."
    assert contrast(_marks(one).contrasts, _marks(other).contrasts) is None
    plan = OfflinePlanner(HashingEmbedder(), theme_min=99, threshold=-1.0).plan(
        _entries(one, other)
    )
    assert [m.ids for m in plan.merge] == [("obs_0", "obs_1")]


def test_offline_promotes_themes_of_three_with_their_ids() -> None:
    entries = _entries(
        "Invoices use integer cents.",
        "Refunds over 500 EUR need approval.",
        "Card fees are 1.4 percent.",
        "Pager rota is weekly.",
    )
    tagged = [("billing",), ("billing",), ("billing",), ("ops",)]
    entries = [
        Entry(e.id, e.type, e.date, t, e.content) for e, t in zip(entries, tagged, strict=True)
    ]
    plan = OfflinePlanner(None, existing_sections=["Billing"]).plan(entries)
    assert len(plan.promote) == 1
    promotion = plan.promote[0]
    assert promotion.section == "Billing"  # an existing section's own spelling
    assert promotion.ids == ("obs_0", "obs_1", "obs_2")
    assert promotion.text.splitlines() == [
        "- Invoices use integer cents. <!-- obs_0 -->",
        "- Refunds over 500 EUR need approval. <!-- obs_1 -->",
        "- Card fees are 1.4 percent. <!-- obs_2 -->",
    ]  # the ops observation stands alone: no theme of one


@pytest.mark.parametrize(
    ("texts", "name"),
    [
        (["Ulla reviewed pull request 56 for search.", "Yara reviewed pull request 10 for auth.",
          "Ulla reviewed pull request 19 for billing."], "pull request"),
        (["The sandbox database is backed up every Friday.",
          "Every Monday the sandbox database gets backed up.",
          "Backups of the sandbox database run on Sundays."], "sandbox database"),
        (["Payment terms for Umbrella: invoices paid within 30 days.",
          "Payment terms for Acme: invoices paid within 60 days.",
          "Payment terms for Globex: invoices paid within 90 days."], "payment terms"),
        (["Ticket 65 was closed by Omar.", "Ticket 52 was closed by Priya.",
          "Ticket 26 was closed by Ines."], "ticket"),
        (["", "   "], "notes"),
    ],
)  # fmt: skip
def test_an_untagged_theme_is_named_by_the_phrase_its_texts_share(
    texts: list[str], name: str
) -> None:
    assert theme_name(texts) == name


def test_a_dream_writes_what_the_plan_says_and_keeps_everything(
    mem: memdir.Memory, folder: Path
) -> None:
    for text in (
        "Deploys happen on Mondays and Thursdays.",
        "Deploys happen on Thursdays and Mondays.",
    ):
        mem.knowledge.save(text, "note", ["ops"])
    for text in (
        "Invoices use integer cents.",
        "Refunds over 500 EUR need approval.",
        "Card fees are 1.4%.",
    ):
        mem.knowledge.save(text, "fact", ["billing"])
    mem.knowledge.save("The office wifi is called Basil.", "note")
    before = (folder / "knowledge.md").read_text()
    report = mem.dream(force=True)
    assert report.ran and report.planner == "offline" and report.rejected is None
    assert [len(m["ids"]) for m in report.merged] == [2]
    assert [(p["section"], len(p["ids"])) for p in report.promoted] == [("billing", 3)]
    assert (report.observations_before, report.observations_after) == (6, 2)
    assert sorted(_contents(mem)) == [
        "Deploys happen on Mondays and Thursdays.",
        "The office wifi is called Basil.",
    ]
    merged = mem.knowledge.observations()[0]
    billing = mem.knowledge.section("billing")
    assert billing is not None and "- Card fees are 1.4%. <!-- obs_" in billing.text
    assert "<!--" not in mem.knowledge.render()  # the prompt never shows the ids
    assert "Card fees are 1.4%." in mem.knowledge.render()
    # nothing lost: the snapshot holds the file as it was, the archive every text taken out
    assert report.snapshot is not None and (folder / report.snapshot).read_text() == before
    archived = (folder / str(report.archive)).read_text()
    for text in ("Deploys happen on Thursdays and Mondays.", "Invoices use integer cents."):
        assert text in archived
    assert merged.id == report.merged[0]["into"]
    # the merged entry names what it replaced, and search finds the promoted facts
    assert report.merged[0]["ids"][0] in (folder / "knowledge.md").read_text()
    assert mem.search("card fees")[0].anchor == "billing"


def test_the_report_goes_to_the_history(mem: memdir.Memory) -> None:
    _fill(mem, 50)
    report = mem.dream()
    activity = mem.history.get(str(report.activity_id))
    assert activity is not None
    assert activity.activity.type == "internal" and activity.activity.label == "dream"
    assert activity.activity.summary == report.summary()
    assert activity.logs[0].metadata["observations_before"] == 50
    assert mem.history.search("dream")[0].id == report.activity_id


def test_a_dry_run_changes_nothing(mem: memdir.Memory, folder: Path) -> None:
    mem.knowledge.save("Same fact.", "fact")
    mem.knowledge.save("same fact", "fact")
    files = {
        p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and ".memdir" not in p.parts
    }
    report = mem.dream(force=True, dry_run=True)
    assert report.ran and report.dry_run and len(report.merged) == 1
    assert report.observations_after == 1 and report.snapshot is None
    after = {
        p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and ".memdir" not in p.parts
    }
    assert after == files
    assert mem.history.recent(5) == []
    # the sizes it reports are the file it would write: the same as a real dream's
    assert report.bytes_before == len((folder / "knowledge.md").read_bytes())
    real = mem.dream(force=True)
    assert real.bytes_after == len((folder / "knowledge.md").read_bytes()) < real.bytes_before
    assert (report.bytes_before, report.bytes_after) == (real.bytes_before, real.bytes_after)


# -- safeguards --------------------------------------------------------------------------


class _Scripted:
    name = "scripted"

    def __init__(self, plan: Plan) -> None:
        self._plan = plan

    def plan(self, entries: list[Entry]) -> Plan:
        return self._plan


class _WhileTheModelThinks:
    """A planner that, while it plans, lets another thread write to the folder (as
    the agent would during a slow LLM call), then answers a plan made before."""

    name = "slow"

    def __init__(self, memory: memdir.Memory, plan: Plan, folder: Path) -> None:
        self.memory, self._plan, self.folder = memory, plan, folder
        self.wrote: list[str] = []

    def plan(self, entries: list[Entry]) -> Plan:
        a, b, c, d = (e.id for e in entries[:4])

        def agent() -> None:
            self.wrote.append(str(self.memory.knowledge.save("A new fact while dreaming.").key))
            assert self.memory.knowledge.delete_observations([b]).ok
            with self.memory.lock:  # a hand edit of c
                path = self.folder / "knowledge.md"
                text = path.read_text(encoding="utf-8")
                old = self.memory.knowledge.get_observation(c)
                assert old is not None
                path.write_text(text.replace(old.content, "Vendor 2 moved.", 1), "utf-8")

        writer = threading.Thread(target=agent)
        writer.start()
        writer.join(timeout=120)  # bounds a deadlock (the lock held by the planner), times nothing
        assert not writer.is_alive(), "a write waited for the dream's planner"
        return self._plan


def test_a_dry_run_whose_plan_is_rejected_writes_no_hygiene(folder: Path) -> None:
    """A rejected plan falls back to the hygiene alone, in a second write: a dry run
    wrote that one (the leaked <think> block stripped from knowledge.md)."""
    with memdir.open(folder, embedder="hashing") as memory:
        for text in [
            "Payment terms for Acme are net 30 days.",
            "Payment terms for Globex are net 45 days.",
            "Payment terms for Initech are net 60 days.",
        ]:
            assert memory.knowledge.save(text, "fact").ok
        assert memory.knowledge.save("Umbrella ships by sea.", "fact").ok
    path = folder / "knowledge.md"
    repeated = "\n".join(["- the same line again"] * 135)  # under the cap, until a promotion
    path.write_text(
        path.read_text()
        .replace("ships by sea.", "ships by sea <think>hmm</think>.")
        .replace("## _observations", f"## payment terms\n{repeated}\n\n## _observations")
    )
    before = path.read_bytes()
    args = ["dream", "--force", "--dry-run", "--json", "--planner", "offline"]
    result = CliRunner().invoke(
        app, [*args, "--dir", str(folder)], env={"MEMDIR_EMBEDDER": "hashing"}
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["dry_run"] and "dropping more than 25%" in report["rejected"]
    assert report["hygiene"] == ["stripped leaked <think> blocks from 1 entries"]
    assert report["archive"] is None and report["activity_id"] is None
    assert path.read_bytes() == before


def test_the_plan_is_made_outside_the_lock_and_skips_what_changed_meanwhile(
    mem: memdir.Memory, folder: Path
) -> None:
    ids = _fill(mem, 6)
    a, b, c, d, e, f = ids
    plan = Plan(
        merge=[Merge((a, b), "Vendors 0 and 1 ship batches 0 and 7 from warehouses 0 and 1."),
               Merge((c, d), "Vendors 2 and 3 ship batches 14 and 21 from warehouses 2 and 3."),
               Merge((e, f), "Vendors 4 and 5 ship batches 28 and 35 from warehouses 4 and 0.")],
    )  # fmt: skip
    planner = _WhileTheModelThinks(mem, plan, folder)
    report = mem.dream(force=True, planner=planner)  # type: ignore[arg-type]
    assert [m["ids"] for m in report.merged] == [[e, f]]  # b was deleted, c was edited
    assert "left out 2 parts of the plan: their observations changed" in " ".join(report.notes)
    left = {o.id: o.content for o in mem.knowledge.observations()}
    assert planner.wrote[0] in left and b not in left
    assert left[c] == "Vendor 2 moved." and a in left and d in left
    assert "Vendors 4 and 5 ship batches 28 and 35 from warehouses 4 and 0." in left.values()


def test_a_promotion_over_the_caps_is_refused_and_its_observations_stay(
    mem: memdir.Memory,
) -> None:
    ids = _fill(mem, 3)
    long_text = "\n".join(f"- A distinct fact number {n} about the vendors." for n in range(80))
    report = mem.dream(
        force=True, planner=_Scripted(Plan(promote=[Promotion("vendors", long_text, tuple(ids))]))
    )  # type: ignore[arg-type]
    assert report.promoted == [] and len(report.refused) == 1
    assert "3000-char cap" in report.refused[0]["reason"]
    assert len(mem.knowledge.observations()) == 3 and mem.knowledge.section("vendors") is None


def test_a_plan_dropping_over_a_quarter_of_curated_text_is_rejected_whole(
    mem: memdir.Memory, folder: Path
) -> None:
    assert mem.knowledge.update("log", "\n".join(["- the same line again"] * 130)).ok
    ids = _fill(mem, 3)
    before = (folder / "knowledge.md").read_text()
    lines = "\n".join(f"- {o.content}" for o in mem.knowledge.observations())
    plan = Plan(promote=[Promotion("log", lines, tuple(ids))])
    report = mem.dream(force=True, planner=_Scripted(plan))  # type: ignore[arg-type]
    assert report.rejected is not None and "dropping more than 25%" in report.rejected
    assert report.promoted == [] and (folder / "knowledge.md").read_text() == before


def test_only_exact_duplicates_may_be_removed(mem: memdir.Memory) -> None:
    first = mem.knowledge.save("Keep me.", "fact").key
    copy = mem.knowledge.save("keep me", "fact").key
    other = mem.knowledge.save("A different fact entirely.", "fact").key
    plan = Plan(remove=[str(copy), str(other)])
    report = mem.dream(force=True, planner=_Scripted(plan))  # type: ignore[arg-type]
    assert report.removed == [copy]
    assert [o.id for o in mem.knowledge.observations()] == [first, other]
    assert any("only exact duplicates" in note for note in report.notes)


def test_parse_plan_names_what_is_wrong() -> None:
    entries = _entries("one", "two", "three")
    with pytest.raises(PlanError) as caught:
        parse_plan({"remove": ["obs_9"], "merge": [{"ids": ["obs_0", "obs_1"], "text": "x"}],
                    "promote": [{"section": "_observations", "text": "t", "ids": ["obs_0"]}]},
                   entries)  # fmt: skip
    problems = " / ".join(caught.value.problems)
    assert "not one of the entries" in problems and "obs_0 is used by both" in problems
    assert "must name a curated section" in problems
    with pytest.raises(PlanError, match="'merge' is a required property"):
        parse_plan({"remove": [], "promote": []}, entries)


# -- hygiene and the state prune -------------------------------------------------------------


def test_hygiene_moves_daily_reports_strips_think_and_drops_empty(
    mem: memdir.Memory, folder: Path
) -> None:
    mem.knowledge.save("Real observation.", "fact")
    path = folder / "knowledge.md"
    text = path.read_text().replace(
        "## _observations",
        "## daily-report-2026-11-29\nShipped the importer.\n\n"
        "## conventions\n<think>private musing</think>Use UTC everywhere.\n\n## _observations",
    )
    text += "\n### obs_1764000000000_abcdef\n<!-- type: note; date: 2026-11-29T10:00:00Z -->\n\n"
    path.write_text(text)
    report = mem.dream(force=True)
    assert any("moved section 'daily-report-2026-11-29'" in n for n in report.hygiene)
    assert "journal/2026-11-29.md" in " ".join(report.hygiene)
    assert "Shipped the importer." in (folder / "journal" / "2026-11-29.md").read_text()
    body = path.read_text()
    assert "daily-report" not in body and "<think>" not in body
    assert "Use UTC everywhere." in body and "obs_1764000000000_abcdef" not in body


# -- the LLM planner, played by a real HTTP server on loopback ------------------------------


def _llm_folder(folder: Path, server: ChatServer) -> None:
    manifest = folder / "memdir.toml"
    manifest.write_text(
        manifest.read_text() + f'\n[llm]\nbase_url = "{server.base_url}"\nmodel = "planner-1"\n'
    )


def _ids(request: Any) -> list[str]:
    payload = json.loads(request.messages[1]["content"])
    return [o["id"] for o in payload["observations"]]


def test_llm_plan_is_checked_and_applied(folder: Path, clock: FakeClock) -> None:
    def answer(request: Any) -> str:
        a, b, c, d = _ids(request)
        return json.dumps(
            {"remove": [], "merge": [{"ids": [a, b], "text": "Dana owns the release checklist."}],
             "promote": [{"section": "ops", "text": "- Releases ship on Tuesdays.", "ids": [c, d]}]}
        )  # fmt: skip

    with ChatServer(answer) as server:
        _llm_folder(folder, server)
        memory = memdir.open(folder, clock=clock, embedder="hashing")
        for text in ("Dana has the release checklist.", "The checklist is Dana's.",
                     "We release on Tuesday.", "Tuesday is release day."):  # fmt: skip
            memory.knowledge.save(text, "fact")
        report = memory.dream(force=True)
        request = server.requests[0]
    assert report.planner == "llm" and report.rejected is None
    assert request.body["model"] == "planner-1" and request.json_mode
    assert _contents(memory) == ["Dana owns the release checklist."]
    section = memory.knowledge.section("ops")
    assert section is not None and section.text.startswith("- Releases ship on Tuesdays.")


def test_a_model_text_that_drops_a_number_or_name_is_left_out(
    folder: Path, clock: FakeClock
) -> None:
    def answer(request: Any) -> str:
        a, b, c, d = _ids(request)
        return json.dumps(
            {"remove": [],
             "merge": [{"ids": [a, b], "text": "The API allows 100 requests per second."}],
             "promote": [{"section": "ops", "text": "- Someone owns deploys.", "ids": [c, d]}]}
        )  # fmt: skip

    with ChatServer(answer) as server:
        _llm_folder(folder, server)
        memory = memdir.open(folder, clock=clock, embedder="hashing")
        for text in ("The API allows 50 requests per second.",
                     "The API allows 100 requests per second.",
                     "Dana owns the deploys.", "Deploys belong to Dana."):  # fmt: skip
            memory.knowledge.save(text, "fact")
        report = memory.dream(force=True)
    assert report.merged == [] and report.promoted == []
    assert len(memory.knowledge.observations()) == 4  # all four stay
    notes = " / ".join(report.notes)
    assert "left out a merge of 2: its text drops 50" in notes
    assert "left out a promotion into 'ops': its text drops dana" in notes


def test_a_model_merge_must_keep_both_sides_of_a_contrast() -> None:
    entries = _entries("Invoices go out on the first day.", "Invoices go out on the last day.")
    one_side = Plan(merge=[Merge(("obs_0", "obs_1"), "Invoices go out on the first day.")])
    kept = one_side.keeping_details(entries)
    assert kept.merge == [] and kept.notes == ["left out a merge of 2: its text drops last"]
    both = Plan(merge=[Merge(("obs_0", "obs_1"), "Invoices go out on the first and last day.")])
    assert both.keeping_details(entries).merge == both.merge


def test_llm_plan_repaired_once_then_rejected(folder: Path, clock: FakeClock) -> None:
    with ChatServer(
        ["not json at all", '{"remove": ["obs_nope"], "merge": [], "promote": []}']
    ) as server:
        _llm_folder(folder, server)
        memory = memdir.open(folder, clock=clock, embedder="hashing")
        memory.knowledge.save("Alpha fact.", "fact")
        memory.knowledge.save("Alpha fact.", "fact")
        before = (folder / "knowledge.md").read_text()
        report = memory.dream(force=True)
        repair = server.requests[1].messages[-1]["content"]
    assert "not a JSON object" in repair and "schema" in repair
    assert report.rejected is not None and "invalid twice" in report.rejected
    assert "not one of the entries" in report.rejected
    assert (folder / "knowledge.md").read_text() == before  # a rejected plan changes nothing


def test_llm_unreachable_falls_back_to_the_offline_planner_under_auto(
    folder: Path, clock: FakeClock
) -> None:
    """The default planner ("auto") with an [llm] whose server is gone ran no plan at all
    and said only why; the offline planner runs now, and the report says the LLM failed."""
    with ChatServer([ChatReply.error(503, "overloaded")]) as server:
        _llm_folder(folder, server)
    memory = memdir.open(folder, clock=clock, embedder="hashing")  # the server is gone now
    memory.knowledge.save("Beta fact.", "fact")
    memory.knowledge.save("beta fact", "fact")
    report = memory.dream(force=True)
    assert report.planner == "offline" and report.rejected is None
    assert any(note.startswith("the LLM planner failed (") for note in report.notes)
    assert len(memory.knowledge.observations()) == 1  # the offline merge of the two


def test_llm_unreachable_changes_nothing_when_the_llm_planner_is_asked_for(
    folder: Path, clock: FakeClock
) -> None:
    with ChatServer([ChatReply.error(503, "overloaded")]) as server:
        _llm_folder(folder, server)
    memory = memdir.open(folder, clock=clock, embedder="hashing")
    memory.knowledge.save("Beta fact.", "fact")
    memory.knowledge.save("beta fact", "fact")
    report = memory.dream(force=True, planner="llm")
    assert report.planner == "llm" and report.rejected is not None
    assert report.rejected.startswith("no usable plan")
    assert len(memory.knowledge.observations()) == 2


# -- the LLM planner in batches -------------------------------------------------------------


ALPHA = [f"The alpha reactor {n} vents coolant through valve {n}." for n in range(6)]
BETA = [f"Beta choir rehearsal {n} sings hymn {n} on stage." for n in range(6)]


def test_batches_fit_the_context_and_keep_similar_observations_together() -> None:
    texts = [t for pair in zip(ALPHA, BETA, strict=True) for t in pair]  # interleaved
    planner = LLMPlanner(FakeChat(), context_tokens=600, embedder=HashingEmbedder())
    batches = planner.batches(_entries(*texts))
    assert len(batches) == 2
    chain = [e.content.split()[0] for batch in batches for e in batch]
    assert chain == ["The"] * 6 + ["Beta"] * 6  # each next to its own kind
    for batch in batches:
        size = sum(len(json.dumps(e.to_dict()).encode()) for e in batch) / 4
        assert size <= 300  # half the context
    assert LLMPlanner(FakeChat(), context_tokens=100_000).batches(_entries(*texts)) == [
        _entries(*texts)
    ]  # one request when it fits


def test_batches_size_a_text_whose_file_is_not_utf8() -> None:
    """A byte not UTF-8 in knowledge.md reads as a lone surrogate; sizing it for the
    request raised UnicodeEncodeError before any request was sent."""
    entries = _entries("The caf\udcff\udcfe menu changed", "Another fact")
    assert LLMPlanner(FakeChat(), context_tokens=1000).batches(entries) == [entries]


def test_the_llm_dream_asks_in_batches_and_keeps_what_each_got_right(
    folder: Path, clock: FakeClock
) -> None:
    def answer(request: Any) -> str:
        ids = _ids(request)
        payload = json.loads(request.messages[1]["content"])
        texts = [o["content"] for o in payload["observations"]]
        if texts[0].startswith("Beta"):  # this batch's answer is broken, twice
            return "Sure! Here is the plan you asked for."
        merged = " ".join(texts)  # keeps every number
        return json.dumps({"remove": [], "merge": [{"ids": ids[:2], "text": merged}],
                           "promote": []})  # fmt: skip

    with ChatServer(answer) as server:
        _llm_folder(folder, server)
        manifest = folder / "memdir.toml"
        manifest.write_text(manifest.read_text() + "context_tokens = 600\n")
        memory = memdir.open(folder, clock=clock, embedder="hashing")
        for alpha, beta in zip(ALPHA, BETA, strict=True):
            memory.knowledge.save(alpha, "fact")
            memory.knowledge.save(beta, "fact")
        report = memory.dream(force=True)
        asked = len(server.requests)
    assert asked == 3  # the alpha batch once, the beta batch twice (repaired once)
    assert report.rejected is None and len(report.merged) == 1
    notes = " / ".join(report.notes)
    assert "no plan for batch 2 of 2" in notes and "over 2 requests" in notes
    assert len(memory.knowledge.observations()) == 11  # the failed batch's all stay
