"""The activity history in PostgreSQL, answering as the SQLite one does, and one write's
file, index rows and history row committed together (or not at all)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir.config import MANIFEST_NAME, load_manifest
from memdir.storage import HistoryStore
from memdir.storage.postgres.db import Database, Folder
from memdir.storage.postgres.files import PgFiles
from memdir.storage.postgres.history import PgHistory
from memdir.storage.postgres.index import PgIndex, index_text
from memdir.stores.history import History, HistoryError
from memdir.testing import FakeClock


@pytest.fixture(params=["sqlite", "postgres"])
def history(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> HistoryStore:
    if request.param == "sqlite":
        opened = History(tmp_path / "history.db", "agent-a", clock)
        request.addfinalizer(opened.close)
        return opened
    return PgHistory(request.getfixturevalue("pg_db"), "agent-a", clock=clock)


def test_both_fulfil_the_protocol(history: HistoryStore) -> None:
    assert isinstance(history, HistoryStore)


def test_an_activity_with_its_logs(history: HistoryStore, clock: FakeClock) -> None:
    activity_id = history.start_activity("task", "  Refactor   billing ", task_id="T-1")
    assert activity_id.startswith("act-agent-a-")
    assert history.log(activity_id, "tool_start", "grep", {"tool": "grep", "tokens": 12}) == 1
    assert history.log(activity_id, "text", "found the invoice code") == 2
    clock.advance(minutes=5)
    ended = history.end_activity(activity_id, keywords=["billing", "invoice"])
    assert (ended.label, ended.task_id, ended.total_tokens, ended.total_tools) == (
        "Refactor billing", "T-1", 12, 1,
    )  # fmt: skip
    assert ended.success is True and ended.keywords == ("billing", "invoice")
    assert ended.summary
    assert ended.ended_at is not None and (ended.ended_at - ended.started_at).seconds == 300
    detail = history.get(activity_id)
    assert detail is not None
    assert [(e.seq, e.type, e.metadata) for e in detail.logs] == [
        (1, "tool_start", {"tool": "grep", "tokens": 12}),
        (2, "text", {}),
    ]
    with pytest.raises(HistoryError):
        history.end_activity(activity_id)
    with pytest.raises(HistoryError):
        history.log("act-none", "text", "x")
    with pytest.raises(HistoryError):
        history.start_activity("nap", "not a type")


def test_several_logs_in_one_write(history: HistoryStore) -> None:
    activity_id = history.start_activity("chat", "a host (MCP)")
    assert history.log(activity_id, "status", "connected") == 1
    seqs = history.log_many(
        activity_id,
        [
            ("tool_start", "memory_save content=...", {"tool": "memory_save", "tokens": 5}),
            ("tool_end", "memory_save ok", {"tool": "memory_save", "ok": True}),
        ],
    )
    assert seqs == [2, 3]
    assert history.log_many(activity_id, [("tool_start", "memory_get", None)]) == [4]
    detail = history.get(activity_id)
    assert detail is not None
    assert [(e.seq, e.type, e.content) for e in detail.logs] == [
        (1, "status", "connected"),
        (2, "tool_start", "memory_save content=..."),
        (3, "tool_end", "memory_save ok"),
        (4, "tool_start", "memory_get"),
    ]
    assert detail.logs[2].metadata == {"tool": "memory_save", "ok": True}
    assert (detail.activity.total_tools, detail.activity.total_tokens) == (2, 5)
    # a bad type anywhere, or no such activity: nothing written
    with pytest.raises(HistoryError, match="log type must be one of"):
        history.log_many(activity_id, [("text", "fine", None), ("nap", "bad", None)])
    with pytest.raises(HistoryError, match="no activity"):
        history.log_many("act-none", [("text", "x", None)])
    with pytest.raises(HistoryError):
        history.log_many(activity_id, [])
    after = history.get(activity_id)
    assert after is not None and len(after.logs) == 4


def test_recall_recent_search_unended(history: HistoryStore, clock: FakeClock) -> None:
    first = history.start_activity("task", "Plan the harbour painting")
    clock.advance(minutes=1)
    second = history.start_activity("chat", "Talk about sailing")
    history.end_activity(second, summary="Melanie sails with her kids")
    assert [a.id for a in history.recent()] == [second, first]
    assert [a.id for a in history.recent(type="task")] == [first]
    assert [a.id for a in history.unended()] == [first]
    assert [a.id for a in history.search("sailing kids")] == [second]
    assert [a.id for a in history.search("painting")] == [first]
    assert history.search("nothing-like-it") == []


def test_usage_and_one_flush(history: HistoryStore) -> None:
    assert history.usage("s1") == (None, False)
    history.record_usage("s1", 600, 1000)
    assert history.usage("s1") == (0.6, False)
    assert history.claim_flush("s1") is True
    assert history.claim_flush("s1") is False
    assert history.usage("s1") == (0.6, True)
    assert history.receive("user", "hello").startswith("mail-")
    assert history.decide("reply", "asked a question").startswith("dec-")


def test_a_file_its_rows_and_a_history_row_commit_as_one(
    pg_db: Database, folder: Path, clock: FakeClock
) -> None:
    manifest = load_manifest(folder / MANIFEST_NAME)
    shared = Folder(pg_db, "agent-a")
    files = PgFiles(pg_db, "agent-a", folder=shared)
    index = PgIndex(pg_db, "agent-a", folder=shared)
    history = PgHistory(pg_db, "agent-a", clock=clock, folder=shared)
    relpath = manifest.path_of("knowledge")
    assert relpath is not None
    name, layer = next((n, la) for n, la in manifest.layers.items() if la.store == "knowledge")
    text = "# Knowledge\n\n## Harbour\nCaroline paints sunrises over the harbour.\n"

    def write(fail: bool) -> None:
        with shared.lock:
            stat = files.write(relpath, text.encode())
            index_text(index, relpath, text, name, layer, mtime_ns=stat.mtime_ns, size=stat.size)
            history.start_activity("internal", "saved the harbour note")
            if fail:
                raise RuntimeError("the server died before the commit")

    with pytest.raises(RuntimeError):
        write(fail=True)
    assert files.read(relpath) is None and index.count() == 0 and history.recent() == []
    write(fail=False)
    assert files.read(relpath) == text.encode()
    assert index.count() == 1 and len(history.recent()) == 1
