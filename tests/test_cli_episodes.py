"""``memdir recall`` (and its alias ``history``), ``ingest`` and ``sessions``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import memdir
from memdir.cli import app


@pytest.fixture(autouse=True)
def hashing_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")


def invoke(folder: Path, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--dir", str(folder)])


def ok_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return json.loads(result.stdout)


@pytest.fixture
def activities(memory: memdir.Memory) -> tuple[str, str]:
    """Two finished activities at the fake clock's 2026-11-30T10:00:00Z."""
    history = memory.history
    task = history.start_activity("task", "Refactor billing module", task_id="T-1")
    history.log(task, "tool_start", "grep billing", {"tokens": 10})
    history.end_activity(task, "Split billing into two modules", ["billing", "refactor"])
    chat = history.start_activity("chat", "Answer Alice about invoices")
    history.end_activity(chat, "Told Alice invoices go out monthly", ["invoices"])
    return task, chat


def test_recall_list(folder: Path, activities: tuple[str, str]) -> None:
    task, chat = activities
    result = invoke(folder, "recall", "list")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"{chat} 2026-11-30T10:00:00Z chat Answer Alice about invoices (ok)",
        "   Told Alice invoices go out monthly",
        f"{task} 2026-11-30T10:00:00Z task Refactor billing module (ok)",
        "   Split billing into two modules",
    ]
    assert invoke(folder, "history", "list").stdout == result.stdout  # the alias


def test_recall_list_json_and_filters(
    folder: Path, memory: memdir.Memory, activities: tuple[str, str]
) -> None:
    task, _ = activities
    only_tasks = ok_json(invoke(folder, "recall", "list", "--type", "task", "--json"))
    assert only_tasks == [memory.history.recent(1, type="task")[0].to_dict()]
    assert only_tasks[0]["id"] == task
    by_task = ok_json(invoke(folder, "recall", "list", "--task", "T-1", "--json"))
    assert [item["id"] for item in by_task] == [task]
    assert ok_json(invoke(folder, "recall", "list", "-n", "1", "--json"))[0]["type"] == "chat"
    later = invoke(folder, "recall", "list", "--since", "2026-12-01")
    assert (later.exit_code, later.stdout) == (0, "No activities.\n")


def test_a_count_past_what_a_database_counts_lists_everything(
    folder: Path, activities: tuple[str, str]
) -> None:
    """``-n 10**30`` asks for every activity (it was an OverflowError's traceback)."""
    huge = str(10**30)
    listed = ok_json(invoke(folder, "recall", "list", "-n", huge, "--json"))
    assert [item["id"] for item in listed] == list(reversed(activities))
    found = ok_json(invoke(folder, "recall", "search", "invoices", "-n", huge, "--json"))
    assert [item["id"] for item in found] == [activities[1]]
    typed = ok_json(
        invoke(folder, "recall", "search", "billing", "-n", huge, "--type", "task", "--json")
    )
    assert [item["id"] for item in typed] == [activities[0]]


def test_recall_search(folder: Path, activities: tuple[str, str]) -> None:
    _, chat = activities
    found = ok_json(invoke(folder, "recall", "search", "invoices", "--json"))
    assert [item["id"] for item in found] == [chat]
    none = invoke(folder, "history", "search", "kubernetes")
    assert (none.exit_code, none.stdout) == (0, "No activities.\n")


def test_recall_get(folder: Path, memory: memdir.Memory, activities: tuple[str, str]) -> None:
    task, _ = activities
    result = invoke(folder, "recall", "get", task)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"{task} 2026-11-30T10:00:00Z task Refactor billing module (ok)",
        "   Split billing into two modules",
        "   ended 2026-11-30T10:00:00Z; 10 tokens, 1 tool call; task T-1; "
        "keywords: billing, refactor",
        "     1 tool_start: grep billing",
    ]
    detail = memory.history.get(task)
    assert detail is not None
    assert ok_json(invoke(folder, "history", "get", task, "--json")) == detail.to_dict()


def test_recall_get_unknown_exits_1(folder: Path) -> None:
    result = invoke(folder, "recall", "get", "act-nope")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "error: no activity 'act-nope'; `memdir recall list` shows recent ones\n"
    )


def test_recall_export(folder: Path, tmp_path: Path, activities: tuple[str, str]) -> None:
    out = tmp_path / "history.jsonl"
    data = ok_json(invoke(folder, "recall", "export", "--out", str(out), "--json"))
    records = out.read_text().splitlines()
    assert data == {"out": str(out), "records": len(records)}
    assert {json.loads(line)["id"] for line in records} >= set(activities)
    text = invoke(folder, "history", "export", "-o", str(out))
    assert text.stdout == f"Wrote {len(records)} records to {out}.\n"


def test_recall_export_of_one_record(folder: Path, tmp_path: Path) -> None:
    with memdir.open(folder, embedder="hashing") as memory:
        memory.history.end_activity(memory.history.start_activity("chat", "Hi"), "Said hi")
    out = tmp_path / "history.jsonl"
    text = invoke(folder, "recall", "export", "--out", str(out))
    assert len(out.read_text().splitlines()) == 1
    assert text.stdout == f"Wrote 1 record to {out}.\n"


@pytest.mark.parametrize(
    "place", ["knowledge.md", "memdir.toml", ".memdir/history.db", "vault/crm/new.md"]
)
def test_recall_export_never_writes_over_the_memory(
    folder: Path, activities: tuple[str, str], place: str
) -> None:
    """``-o knowledge.md`` replaced the knowledge with the history, and said it had."""
    target = folder / place
    before = target.read_bytes() if target.exists() else None
    result = invoke(folder, "recall", "export", "-o", str(target))
    assert (result.exit_code, result.stdout) == (1, ""), result.output
    assert result.stderr == (
        f"error: {target} would be {place} in the memory folder; name another --out file\n"
    )
    assert (target.read_bytes() if target.exists() else None) == before
    beside = ok_json(
        invoke(folder, "recall", "export", "-o", str(folder / "history.jsonl"), "--json")
    )
    assert beside["records"] >= 2  # a file no layer owns, such as the default, is fine


# -- ingest and sessions ---------------------------------------------------------------------

CHAT = [
    {"role": "user", "content": "When do invoices go out?", "timestamp": "2026-11-02T09:00:00Z"},
    {"role": "assistant", "content": "On the first.", "timestamp": "2026-11-02T09:00:05Z"},
]


def test_ingest_and_sessions(folder: Path, tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(CHAT))
    report = ok_json(invoke(folder, "ingest", str(chat), "--json"))
    assert {key: report[key] for key in ("format", "conversations", "imported", "messages")} == {
        "format": "generic-json", "conversations": 1, "imported": 1, "messages": 2,
    }  # fmt: skip
    assert report["journal"] == ["journal/2026-11-02.md"]
    (session,) = report["sessions"]

    again = invoke(folder, "ingest", str(chat), "--format", "generic-json")
    assert again.exit_code == 0, again.output
    assert again.stdout == (
        "Imported 0 of 1 conversations (0 messages, format generic-json); 1 already imported.\n"
    )

    listed = ok_json(invoke(folder, "sessions", "list", "--json"))
    assert [(s["id"], s["kind"], s["messages"]) for s in listed] == [(session, "sess", 2)]
    text = invoke(folder, "sessions", "list", "--kind", "sess")
    assert text.stdout.startswith(f"{session} sess 2 messages, last active ")
    assert invoke(folder, "sessions", "list", "--kind", "hb").stdout == "No sessions.\n"

    exported = ok_json(invoke(folder, "sessions", "export", session))
    assert exported["id"] == session
    assert [m["content"] for m in exported["messages"]] == [m["content"] for m in CHAT]


def test_ingest_a_malformed_file_exits_1_and_writes_nothing(folder: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "user"}]')
    result = invoke(folder, "ingest", str(bad))
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith("error: ")
    assert not list((folder / "sessions").glob("*.jsonl"))


def test_ingest_shows_a_progress_bar_on_a_terminal_and_keeps_stdout_json(
    folder: Path, tmp_path: Path
) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(CHAT))
    env = {**os.environ, "TTY_COMPATIBLE": "1", "COLUMNS": "100"}  # rich: stderr is a terminal
    done = subprocess.run(
        [sys.executable, "-m", "memdir", "ingest", str(chat), "--dir", str(folder), "--json"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["imported"] == 1
    assert "importing" in done.stderr  # the bar, drawn on stderr and cleared at the end
    piped = subprocess.run(
        [sys.executable, "-m", "memdir", "ingest", str(chat), "--dir", str(folder)],
        capture_output=True, text=True, env={**os.environ, "TTY_COMPATIBLE": "0"}, timeout=60,
    )  # fmt: skip
    assert (piped.returncode, piped.stderr) == (0, "")  # no bar, not even a blank line
