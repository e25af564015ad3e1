"""Sessions: append-only JSON Lines, crash-safe tails, compaction into the archive."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import memdir
from memdir.errors import WriteRefused
from memdir.files import atomic as atomic_module
from memdir.stores.sessions import SESSION_KINDS, SessionStore, UnknownSession
from memdir.testing import FakeClock


@pytest.fixture
def store(memory: memdir.Memory) -> SessionStore:
    return SessionStore(memory._ctx)


@pytest.fixture
def small(memory: memdir.Memory) -> SessionStore:
    """Compaction at 20 messages keeping 10, shrinking above 1,000 chars."""
    return SessionStore(memory._ctx, compact_trigger=20, compact_keep=10, shrink_chars=1000)


def _say(store: SessionStore, sid: str, count: int, start: int = 0) -> list[str]:
    notes: list[str] = []
    for n in range(start, start + count):
        result = store.append_message(sid, {"role": "user", "content": f"message {n}"})
        assert result.ok, result
        notes += result.notes
    return notes


def _contents(session: dict[str, Any]) -> list[str]:
    return [message["content"] for message in session["messages"]]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and ".memdir" not in path.parts
    }


def test_round_trip_has_the_spec_shape(store: SessionStore, clock: FakeClock, folder: Path) -> None:
    sid = store.create(agent_id="agent-7")
    empty = store.load(sid)
    start = "2026-11-30T10:00:00Z"
    assert empty == {"id": sid, "agentId": "agent-7", "messages": [],
                     "startedAt": start, "lastActivityAt": start}  # fmt: skip
    clock.advance(minutes=1)
    assert store.append_message(sid, {"role": "user", "content": "deploy v2?"}).ok
    parts = [{"type": "text", "text": "Deploying."}, {"type": "tool_use", "name": "deploy"}]
    given = {"role": "assistant", "content": parts, "timestamp": "2026-11-30T10:02:00Z"}
    assert store.append_message(sid, given).ok
    assert store.load(sid) == {
        "id": sid,
        "agentId": "agent-7",
        "messages": [
            {"role": "user", "content": "deploy v2?", "timestamp": "2026-11-30T10:01:00Z"},
            given,
        ],
        "startedAt": "2026-11-30T10:00:00Z",
        "lastActivityAt": "2026-11-30T10:02:00Z",
    }
    lines = (folder / "sessions" / f"{sid}.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"id": sid, "agentId": "agent-7", "kind": "sess",
                                    "startedAt": start, "format": "memdir-session-1"}  # fmt: skip
    assert [json.loads(line)["role"] for line in lines[1:]] == ["user", "assistant"]
    assert store.create().startswith("sess_") and store.load(store.create())["agentId"] == "default"


def test_appends_never_rewrite_the_file(store: SessionStore, folder: Path) -> None:
    sid = store.create()
    path = folder / "sessions" / f"{sid}.jsonl"
    inode, first = path.stat().st_ino, path.read_bytes()
    for n in range(100):
        size = path.stat().st_size
        assert store.append_message(sid, {"role": "assistant", "content": f"reply {n} é"}).ok
        data = path.read_bytes()
        line = data[size:]
        assert path.stat().st_ino == inode and data.startswith(first)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert json.loads(line)["content"] == f"reply {n} é"
    assert len(store.load(sid)["messages"]) == 100


def test_a_partial_last_line_is_ignored_then_truncated(
    store: SessionStore, memory: memdir.Memory, folder: Path
) -> None:
    sid = store.create()
    _say(store, sid, 3)
    path = folder / "sessions" / f"{sid}.jsonl"
    whole = path.read_bytes()
    with path.open("ab") as handle:  # a crash half way through an append
        handle.write(b'{"role":"user","content":"never ackno')
    assert _contents(store.load(sid)) == ["message 0", "message 1", "message 2"]
    assert [s.messages for s in store.list()] == [3]
    fresh = SessionStore(memory._ctx)  # another process: no cached count
    result = fresh.append_message(sid, {"role": "user", "content": "message 3"})
    assert result.ok and "unfinished line" in result.notes[0]
    data = path.read_bytes()
    assert data.startswith(whole) and b"ackno" not in data
    assert _contents(store.load(sid)) == [f"message {n}" for n in range(4)]


def test_compaction_happens_exactly_at_the_trigger(small: SessionStore, folder: Path) -> None:
    sid = small.create()
    assert not any("compacted" in note for note in _say(small, sid, 19))
    assert len(small.load(sid)["messages"]) == 19
    assert not (folder / "archive" / "sessions").exists()
    result = small.append_message(sid, {"role": "user", "content": "message 19"})
    assert result.ok and "compacted: the oldest 10 messages" in result.notes[0]
    assert result.archive == f"archive/sessions/{sid}.jsonl"
    assert _contents(small.load(sid)) == [f"message {n}" for n in range(10, 20)]
    archive = (folder / "archive" / "sessions" / f"{sid}.jsonl").read_text().splitlines()
    assert json.loads(archive[0])["id"] == sid and "archived" not in json.loads(archive[0])
    assert [json.loads(line)["content"] for line in archive[1:]] == [
        f"message {n}" for n in range(10)
    ]
    everything = small.export(sid, include_archived=True)
    assert _contents(everything) == [f"message {n}" for n in range(20)]
    assert _contents(small.export(sid)) == [f"message {n}" for n in range(10, 20)]
    _say(small, sid, 10, start=20)  # a second compaction appends to the archive
    assert _contents(small.load(sid)) == [f"message {n}" for n in range(20, 30)]
    assert _contents(small.export(sid, include_archived=True)) == [
        f"message {n}" for n in range(30)
    ]
    assert [(s.messages, s.archived) for s in small.list()] == [(10, 20)]


def test_a_store_notices_another_store_compacting(
    small: SessionStore, memory: memdir.Memory
) -> None:
    sid = small.create()
    _say(small, sid, 15)
    other = SessionStore(memory._ctx, compact_trigger=20, compact_keep=10, shrink_chars=1000)
    assert "compacted" in _say(other, sid, 5, start=15)[-1]
    assert not any("compacted" in note for note in _say(small, sid, 9, start=20))  # 19 live
    assert "compacted" in _say(small, sid, 1, start=29)[0]
    assert _contents(small.export(sid, include_archived=True)) == [
        f"message {n}" for n in range(30)
    ]


def test_compaction_at_the_real_2000(store: SessionStore) -> None:
    """Every message kept across the real trigger (how long it takes: bench/sessions.py)."""
    sid = store.create()
    assert not any("compacted" in note for note in _say(store, sid, 1999))
    notes = _say(store, sid, 1, start=1999)
    assert "compacted: the oldest 1000 messages" in notes[0]
    assert _contents(store.load(sid)) == [f"message {n}" for n in range(1000, 2000)]
    assert _contents(store.export(sid, include_archived=True)) == [
        f"message {n}" for n in range(2000)
    ]


@pytest.mark.parametrize("crash_at", [1, 2])
def test_a_compaction_cut_short_neither_loses_nor_doubles(
    small: SessionStore, folder: Path, monkeypatch: pytest.MonkeyPatch, crash_at: int
) -> None:
    """The archive got the oldest lines but the session was not rewritten yet."""
    sid = small.create()
    _say(small, sid, 10 * crash_at + 9)
    real = atomic_module.atomic_write  # the one write of a file on disk, behind Files

    def crash(path: Path, data: bytes) -> None:
        if path.parent == folder / "sessions":  # the archive is written, the rewrite is not
            raise OSError("power cut")
        real(path, data)

    monkeypatch.setattr(atomic_module, "atomic_write", crash)
    with pytest.raises(OSError, match="power cut"):
        small.append_message(sid, {"role": "user", "content": f"message {10 * crash_at + 9}"})
    monkeypatch.setattr(atomic_module, "atomic_write", real)
    total = 10 * crash_at + 10
    assert _contents(small.export(sid, include_archived=True)) == [
        f"message {n}" for n in range(total)
    ]
    _say(small, sid, 1, start=total)  # the next append compacts again
    assert _contents(small.export(sid, include_archived=True)) == [
        f"message {n}" for n in range(total + 1)
    ]


def test_big_tool_output_is_shrunk_and_recoverable(
    store: SessionStore, small: SessionStore, folder: Path
) -> None:
    sid = small.create("task")
    _say(small, sid, 2)
    output = "".join(f"row {n}: café ✓ 🚀\n" for n in range(300))
    result = small.append_message(sid, {"role": "tool", "content": output, "toolCallId": "t1"})
    ref = f"tool-outputs/{sid}-2.txt"
    assert result.ok and ref in result.notes[0]
    assert (folder / ref).read_bytes() == output.encode()
    stored = small.load(sid)["messages"][-1]
    assert stored["contentRef"] == ref and len(stored["content"]) < len(output)
    assert re.search(rf"\[\.\.\. \d+ chars moved to {re.escape(ref)} \.\.\.\]", stored["content"])
    assert output.startswith(stored["content"].split("\n[...")[0])
    restored = small.export(sid)["messages"][-1]
    assert restored == {"role": "tool", "content": output, "toolCallId": "t1",
                        "timestamp": stored["timestamp"]}  # fmt: skip
    assert small.append_message(sid, {"role": "user", "content": "x" * 1000}).notes == ()
    real = store.create()  # the spec's 100k limit: over it shrinks, at it does not
    assert store.append_message(real, {"role": "tool", "content": "y" * 100_000}).notes == ()
    assert store.append_message(real, {"role": "tool", "content": "z" * 150_000}).ok
    kept = store.load(real)["messages"][-1]["content"]
    assert kept.startswith("z" * 4000 + "\n[... 144000 chars moved to tool-outputs/")
    assert kept.endswith("...]\n" + "z" * 2000)


@pytest.mark.parametrize(
    ("session", "message", "reason"),
    [
        ("sess_1_unknown", {"role": "user", "content": "hi"}, "no session"),
        ("../../etc/passwd", {"role": "user", "content": "hi"}, "not a session id"),
        (None, ["role", "user"], "must be an object"),
        (None, {"content": "hi"}, "role must be one of"),
        (None, {"role": "robot", "content": "hi"}, "role must be one of"),
        (None, {"role": "user", "content": 42}, "content must be a string"),
        (None, {"role": "user", "content": "hi", "timestamp": "yesterday"}, "not an ISO time"),
        (None, {"role": "user", "content": "key: sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"}, "OpenAI"),
        (None, {"role": "tool", "content": [{"type": "text", "text": "AKIAQWERTYUIOPASDFGH"}]},
         "AWS access key"),
        (None, {"role": "tool", "content": "x" * 2000 + " DB_PASSWORD=Xk29vLq8pT"}, "credentials"),
        (None, {"role": "user", "content": "hi", "extra": {1, 2}}, "not JSON"),
    ],
)  # fmt: skip
def test_refusals_leave_files_untouched(
    small: SessionStore, folder: Path, session: str | None, message: Any, reason: str
) -> None:
    sid = small.create()
    _say(small, sid, 2)
    before = _snapshot(folder)
    result = small.append_message(session or sid, message)
    assert not result.ok and result.action == "refused" and reason in (result.reason or "")
    assert _snapshot(folder) == before


def test_id_prefixes_and_kinds(store: SessionStore, clock: FakeClock) -> None:
    for kind, prefix in SESSION_KINDS.items():
        sid = store.create(kind)
        assert re.fullmatch(rf"{prefix}1796032800000_[0-9a-f]{{8}}", sid)
        assert store.kind_of(sid) == kind
    assert store.kind_of(store.create("hb")) == "heartbeat"
    chosen = store.create("a2a", session_id="a2a_20261130_import-1")
    assert chosen == "a2a_20261130_import-1" and store.kind_of(chosen) == "a2a"
    with pytest.raises(WriteRefused, match="already exists"):
        store.create(session_id=chosen)
    with pytest.raises(WriteRefused, match="not a valid session id"):
        store.create(session_id="sess_../../x")
    with pytest.raises(WriteRefused, match="not a task session id"):
        store.create("task", session_id="sess_1_x")
    with pytest.raises(ValueError, match="unknown session kind"):
        store.create("chat")
    with pytest.raises(ValueError, match="not a session id"):
        store.kind_of("chat_1_x")
    with pytest.raises(UnknownSession):
        store.load("sess_1_missing")


def test_list_is_newest_activity_first(store: SessionStore, clock: FakeClock) -> None:
    old = store.create("task")
    clock.advance(minutes=1)
    quiet = store.create("heartbeat")
    clock.advance(minutes=1)
    busy = store.create()
    _say(store, busy, 2)
    clock.advance(minutes=5)
    _say(store, old, 1)  # the oldest session has the newest activity
    listed = store.list()
    assert [s.id for s in listed] == [old, busy, quiet]
    assert [s.messages for s in listed] == [1, 2, 0]
    assert listed[0].to_dict() == {"id": old, "kind": "task", "agentId": "default",
                                   "startedAt": "2026-11-30T10:00:00Z", "messages": 1,
                                   "lastActivityAt": "2026-11-30T10:07:00Z",
                                   "archived": 0}  # fmt: skip
    assert listed[2].last_activity_at == listed[2].started_at == "2026-11-30T10:01:00Z"
    assert [s.id for s in store.list("task")] == [old]
    assert [s.id for s in store.list("hb")] == [quiet]


def test_two_processes_appending_lose_nothing(store: SessionStore, folder: Path) -> None:
    sid = store.create()
    code = """
        import sys, memdir
        from memdir.stores.sessions import SessionStore
        store = SessionStore(memdir.open(sys.argv[1], embedder="none")._ctx)
        for n in range(200):
            message = {"role": "user", "content": f"{sys.argv[3]} {n}"}
            assert store.append_message(sys.argv[2], message).ok
    """
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code), str(folder), sid, f"p{p}"],
            stderr=subprocess.PIPE,
        )
        for p in range(2)
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err.decode()
    lines = (folder / "sessions" / f"{sid}.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 402
    contents = [json.loads(line)["content"] for line in lines[1:-1]]
    for p in ("p0", "p1"):
        assert [c for c in contents if c.startswith(p)] == [f"{p} {n}" for n in range(200)]
    assert store.list()[0].messages == 400
    assert os.path.getsize(folder / "sessions" / f"{sid}.jsonl") == sum(map(len, lines)) + 401
