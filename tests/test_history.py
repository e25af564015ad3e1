"""The activity history: data model, context manager, recall, copies, the audit trail."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import pytest

import memdir
from memdir.stores.history import History, HistoryError
from memdir.testing import FakeClock


@pytest.fixture
def history(tmp_path: Path, clock: FakeClock) -> History:
    return History(tmp_path / "history.db", "agent-7", clock)


def test_an_activity_records_the_specification_fields(history: History, clock: FakeClock) -> None:
    activity_id = history.start_activity("task", "Refactor the billing module", task_id="T-12")
    assert re.fullmatch(r"act-agent-7-\d{13}-[0-9a-f]{6}", activity_id)
    assert history.log(activity_id, "status", "started") == 1
    assert history.log(activity_id, "tool_start", "read_file", {"tool": "read_file"}) == 2
    history.log(activity_id, "tool_end", "ok", {"tokensUsed": 120})
    history.log(activity_id, "llm_request", "plan", {"tokensUsed": 880})
    history.log(
        activity_id, "tool_start", "edit_file src/billing/invoice.py", {"tool": "edit_file"}
    )
    history.log(
        activity_id, "error", "ValueError: amount must be integer cents in src/billing/invoice.py"
    )
    clock.advance(minutes=3)
    ended = history.end_activity(activity_id, success=False)
    assert (ended.type, ended.label, ended.task_id, ended.agent_id) == (
        "task", "Refactor the billing module", "T-12", "agent-7",
    )  # fmt: skip
    assert (ended.total_tokens, ended.total_tools, ended.success) == (1000, 2, False)
    assert ended.ended_at == clock() and ended.started_at == clock() - timedelta(minutes=3)
    assert ended.keywords == ("read_file", "edit_file", "ValueError", "src/billing/invoice.py")
    assert ended.summary is not None
    assert ended.summary.startswith("The task 'Refactor the billing module' failed after 6 ")
    assert (
        "read_file" in ended.summary and "ValueError: amount must be integer cents" in ended.summary
    )
    assert 1 <= ended.summary.count(". ") + 1 <= 3


def test_given_summary_and_keywords_are_kept(history: History) -> None:
    activity_id = history.start_activity("chat", "Answer the pricing question")
    ended = history.end_activity(activity_id, summary="Explained tiers.", keywords=["pricing"])
    assert (ended.summary, ended.keywords, ended.success) == (
        "Explained tiers.",
        ("pricing",),
        True,
    )


def test_bad_calls_are_clear_errors(history: History) -> None:
    with pytest.raises(HistoryError, match="activity type"):
        history.start_activity("nap", "x")
    with pytest.raises(HistoryError, match="label"):
        history.start_activity("task", "  ")
    activity_id = history.start_activity("task", "x")
    with pytest.raises(HistoryError, match="log type"):
        history.log(activity_id, "debug", "x")
    with pytest.raises(HistoryError, match="no activity"):
        history.log("act-missing", "text", "x")
    history.end_activity(activity_id)
    with pytest.raises(HistoryError, match="already ended"):
        history.end_activity(activity_id)
    assert isinstance(HistoryError("x"), memdir.MemdirError)


def test_the_context_manager_ends_failed_activities(history: History) -> None:
    with history.activity("task", "Deploy") as run:
        run.log("tool_start", "deploy", {"tool": "deploy"})
    with (
        pytest.raises(RuntimeError, match="disk full"),
        history.activity("task", "Migrate the database") as failing,
    ):
        failing.log("status", "migrating")
        raise RuntimeError("disk full")
    ok, failed = history.get(run.id), history.get(failing.id)
    assert ok is not None and failed is not None
    assert (ok.activity.success, failed.activity.success) == (True, False)
    assert failed.logs[-1].type == "error" and failed.logs[-1].content == "RuntimeError: disk full"
    assert failed.activity.ended_at is not None and "RuntimeError" in failed.activity.keywords


def test_recall_list_search_and_get(history: History, clock: FakeClock) -> None:
    ids = {}
    for n, (type_, label, task) in enumerate([
        ("task", "Fix the login redirect bug", "T-1"),
        ("chat", "Talk about vacation plans", None),
        ("heartbeat", "Hourly check", None),
        ("task", "Write the login page tests", "T-1"),
    ]):  # fmt: skip
        clock.advance(hours=1)
        ids[n] = history.start_activity(type_, label, task_id=task)
        history.log(ids[n], "text", f"step for {label}")
        history.end_activity(ids[n])
    assert [a.id for a in history.recent(2)] == [ids[3], ids[2]]
    assert [a.id for a in history.recent(type="task")] == [ids[3], ids[0]]
    assert [a.id for a in history.recent(task_id="T-1")] == [ids[3], ids[0]]
    since = clock() - timedelta(hours=2, minutes=30)
    assert [a.id for a in history.recent(since=since)] == [ids[3], ids[2], ids[1]]
    until = clock() - timedelta(hours=2, minutes=30)
    assert [a.id for a in history.recent(until=until)] == [ids[0]]
    found = history.search("login bug")
    assert [a.id for a in found][:2] == [ids[0], ids[3]]  # both words first
    assert history.search("vacation")[0].id == ids[1]
    assert history.search("nothing-like-this") == []
    detail = history.get(ids[0])
    assert detail is not None and [e.seq for e in detail.logs] == [1]
    assert history.get("act-missing") is None


def test_mailbox_and_decisions(history: History) -> None:
    activity_id = history.start_activity("a2a", "Handle a request from agent-2")
    item = history.receive(
        "agent-2", "Please review PR 42", kind="request", activity_id=activity_id
    )
    decision = history.decide("review later", "busy with the release", mailbox_item_id=item)
    rows = history.db.execute(
        "SELECT d.decision, d.reason, m.source, m.content FROM agent_decisions AS d "
        "JOIN mailbox_items AS m ON m.id = d.mailbox_item_id WHERE d.id = ?",
        (decision,),
    ).fetchall()
    assert rows == [("review later", "busy with the release", "agent-2", "Please review PR 42")]


def test_schema_migrations_are_recorded(history: History, tmp_path: Path, clock: FakeClock) -> None:
    from memdir.stores.history import MIGRATIONS

    names = [name for (name,) in history.db.execute("SELECT name FROM migrations ORDER BY name")]
    expected = ["001_activities", "002_context_usage", "003_restarts"]
    assert names == [name for name, _ in MIGRATIONS] == expected
    activity_id = history.start_activity("task", "persisted")
    history.close()
    again = History(tmp_path / "history.db", "agent-7", clock)
    assert again.get(activity_id) is not None


WRITER = """
import sys
from pathlib import Path
from memdir.stores.history import History
from memdir.testing import FakeClock
history = History(Path(sys.argv[1]), "writer", FakeClock())
n = 0
while True:
    activity_id = history.start_activity("task", f"activity {n}")
    for step in range(5):
        history.log(activity_id, "text", "x" * 200)
    history.end_activity(activity_id)
    n += 1
    if n == 1:  # ready once there is something to copy, however slow the machine
        print("ready", flush=True)
"""


def test_copies_are_consistent_while_another_process_writes(
    history: History, tmp_path: Path
) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(tmp_path / "history.db")],
        stdout=subprocess.PIPE,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"ready\n"
        time.sleep(0.3)
        before = history.db.execute("SELECT count(*) FROM agent_activities").fetchone()[0]
        history.snapshot(tmp_path / "copy.db")
        lines = history.export_jsonl(tmp_path / "export.jsonl")
        after = history.db.execute("SELECT count(*) FROM agent_activities").fetchone()[0]
    finally:
        writer.kill()
        writer.communicate()
    copy = sqlite3.connect(tmp_path / "copy.db")
    assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    copied = copy.execute("SELECT count(*) FROM agent_activities").fetchone()[0]
    copy.close()
    assert before <= copied <= after and copied > 0
    records = [json.loads(line) for line in (tmp_path / "export.jsonl").read_text().splitlines()]
    assert len(records) == lines and before <= len(records) <= after
    assert all(r["kind"] == "activity" for r in records)
    complete = [r for r in records if r["endedAt"]]
    assert complete and all(len(r["logs"]) == 5 for r in complete)


def test_the_notebook_layout_keeps_an_audit_trail_out_of_search(
    tmp_path: Path, clock: FakeClock
) -> None:
    folder = tmp_path / "agent"
    memdir.init(folder, layout="notebook")
    memory = memdir.open(folder, clock=clock, embedder="hashing")
    with memory.history.activity("task", "Rotate the zebra credentials") as run:
        run.log("tool_start", "vault_cli", {"tool": "vault_cli"})
    audit = (folder / "daily-logs" / "2026-11-30.md").read_text()
    assert audit.startswith('# 2026-11-30\n\n- 10:00 task "Rotate the zebra credentials" (act-')
    assert ": ok; 1 tools, 0 tokens." in audit
    memory.scan()
    assert memory.search("zebra credentials", mode="deep") == []  # never indexed
    default = memdir.open(memdir.init(tmp_path / "plain").root, clock=clock, embedder="none")
    default.history.end_activity(default.history.start_activity("chat", "hello"))
    assert not (tmp_path / "plain" / "daily-logs").exists()


def test_two_activities_in_one_millisecond_with_the_same_suffix_get_two_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frozen = FakeClock("2026-11-30T10:00:00Z")  # the clock never moves: one millisecond
    history = History(tmp_path / "history.db", "agent", frozen)
    drawn = iter(["aaaaaa", "aaaaaa", "bbbbbb"])  # the second draw repeats the first
    monkeypatch.setattr("memdir.stores.history.secrets.token_hex", lambda n: next(drawn))
    first = history.start_activity("task", "one")
    second = history.start_activity("task", "two")
    assert first.endswith("-aaaaaa") and second.endswith("-bbbbbb")
    history.close()
