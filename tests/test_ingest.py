"""Importing chat histories: every format lands in sessions, the journal and the index."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import memdir
from memdir.ingest import IngestError
from memdir.ingest.detect import parse_file
from memdir.ingest.importer import session_id
from memdir.sessions import SessionStore
from memdir.testing import FakeClock

KEY = "sk-proj-" + "Ab3" * 12


@pytest.fixture
def mem(folder: Path, clock: FakeClock) -> memdir.Memory:
    return memdir.open(folder, clock=clock, embedder="hashing")


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and ".memdir" not in p.parts
    }


GENERIC = [
    {
        "role": "user",
        "content": "Where should the offsite be?",
        "timestamp": "2026-10-02T09:00:00Z",
    },
    {"role": "assistant", "content": "Lisbon: cheap flights in October.", "timestamp": 1759395660},
]
CHATGPT = [
    {
        "title": "Pasta recipe",
        "create_time": 1760000000.0,
        "id": "c-1",
        "current_node": "b",
        "mapping": {
            "a": {"id": "a", "parent": None, "children": ["b"], "message": {
                "author": {"role": "user"}, "content": {"content_type": "text",
                "parts": ["How long do I cook fresh tagliatelle?"]}, "create_time": 1760000000.0}},
            "b": {"id": "b", "parent": "a", "children": [], "message": {
                "author": {"role": "assistant"}, "content": {"content_type": "text",
                "parts": ["About 2 to 3 minutes in salted boiling water."]},
                "create_time": 1760000010.0}},
        },
    }
]  # fmt: skip
CLAUDE = [
    {
        "uuid": "u-1",
        "name": "Garden planning",
        "created_at": "2026-04-01T08:00:00Z",
        "updated_at": "2026-04-01T08:05:00Z",
        "chat_messages": [
            {"uuid": "m1", "sender": "human", "text": "When do I plant tomatoes?",
             "created_at": "2026-04-01T08:00:00Z"},
            {"uuid": "m2", "sender": "assistant", "text": "After the last frost, in May.",
             "created_at": "2026-04-01T08:00:30Z"},
        ],
    }
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "data", "query", "day"),
    [
        ("chat.json", GENERIC, "offsite Lisbon", "2026-10-02"),
        ("conversations.json", CHATGPT, "tagliatelle", "2025-10-09"),
        ("claude.json", CLAUDE, "tomatoes frost", "2026-04-01"),
    ],
)
def test_each_format_lands_in_sessions_journal_and_index(
    mem: memdir.Memory, tmp_path: Path, name: str, data: object, query: str, day: str
) -> None:
    source = tmp_path / name
    source.write_text(json.dumps(data))
    report = mem.ingest(source)
    assert (report.imported, report.skipped, report.messages) == (1, 0, 2)
    [session] = mem.sessions.list()
    exported = mem.sessions.export(session.id)
    assert [m["role"] for m in exported["messages"]] == ["user", "assistant"]
    assert exported["startedAt"].startswith(day)
    assert report.to_dict()["journal"] == [f"journal/{day}.md"]
    [hit] = mem.search(query, mode="deep", kinds=["journal"])
    assert hit.path == f"journal/{day}.md" and hit.date is not None


def test_jsonl_import_keeps_names_and_timestamps(mem: memdir.Memory, tmp_path: Path) -> None:
    source = tmp_path / "log.jsonl"
    first = {
        "role": "user",
        "name": "Ana",
        "content": "Ship it Friday?",
        "timestamp": 1764496800000,
    }
    second = {"role": "assistant", "content": "Friday works.", "timestamp": 1764496860000}
    source.write_text(f"{json.dumps(first)}\n\n{json.dumps(second)}\n")
    mem.ingest(source)
    [session] = mem.sessions.list()
    messages = mem.sessions.load(session.id)["messages"]
    assert messages[0]["name"] == "Ana" and messages[0]["timestamp"] == "2025-11-30T10:00:00Z"
    journal = (mem.root / "journal" / "2025-11-30.md").read_text()
    assert "- **Ana** (10:00): Ship it Friday?" in journal


def _locomo_sample(sample_id: str, a: str, b: str, sessions: list[list[str]]) -> dict[str, Any]:
    """A conversation in LoCoMo's shape: speakers, dated sessions of alternating turns."""
    conversation: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    for n, turns in enumerate(sessions, 1):
        conversation[f"session_{n}_date_time"] = f"1:56 pm on {n} May, 2023"
        conversation[f"session_{n}"] = [
            {"speaker": (a, b)[i % 2], "dia_id": f"D{n}:{i + 1}", "text": text}
            for i, text in enumerate(turns)
        ]
    return {"sample_id": sample_id, "conversation": conversation, "qa": []}


def test_locomo_imports_every_session(mem: memdir.Memory, tmp_path: Path) -> None:
    source = tmp_path / "locomo.json"
    samples = [
        _locomo_sample(
            "conv-1",
            "Caroline",
            "Melanie",
            [
                ["I went to an LGBTQ support group yesterday.", "That sounds brave!"],
                ["I am painting a sunrise.", "Show me when it is done.", "I will!"],
            ],
        ),
        _locomo_sample("conv-2", "Jon", "Gina", [["My dance studio opens soon.", "Congrats!"]]),
    ]
    source.write_text(json.dumps(samples))
    report = mem.ingest(source)
    assert report.format == "locomo" and report.imported == 3 and report.messages == 7
    assert len(mem.sessions.list()) == 3
    hits = mem.search("LGBTQ support group", mode="deep", k=3)
    assert hits[0].title == "conv-1 session 1: Caroline and Melanie"


def test_reimport_adds_nothing(mem: memdir.Memory, tmp_path: Path) -> None:
    source = tmp_path / "chat.json"
    source.write_text(json.dumps(GENERIC))
    mem.ingest(source)
    before = _files(mem.root)
    again = mem.ingest(source)
    assert (again.imported, again.skipped) == (0, 1)
    assert _files(mem.root) == before
    source.write_text(json.dumps([{**GENERIC[0], "content": "Where should the offsite be??"}]))
    assert mem.ingest(source).imported == 1  # changed content is a new conversation


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ("", "empty"),
        ('[{"role": "user"}]', "content"),
        ('{"role": "user", "content": "a"}\n{oops\n', "line 2"),
        ('{"nope": 1}', "no known chat format"),
    ],
)
def test_a_malformed_file_is_refused_and_writes_nothing(
    mem: memdir.Memory, tmp_path: Path, text: str, fault: str
) -> None:
    source = tmp_path / "bad.json"
    source.write_text(text)
    before = _files(mem.root)
    with pytest.raises(IngestError, match=fault):
        mem.ingest(source)
    assert _files(mem.root) == before


def test_a_failure_part_way_leaves_nothing_behind(
    mem: memdir.Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (mem.root / "journal" / "2026-04-01.md").write_text("# 2026-04-01\n\n## Context\n- mine\n")
    source = tmp_path / "two.json"
    source.write_text(json.dumps(CLAUDE + [{**CLAUDE[0], "uuid": "u-2", "name": "Second"}]))
    before = _files(mem.root)
    calls = []
    real = mem.journal.add_section

    def failing(*args: object, **kwargs: object) -> object:
        calls.append(args)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(mem.journal, "add_section", failing)
    with pytest.raises(OSError, match="disk full"):
        mem.ingest(source)
    assert _files(mem.root) == before  # first conversation's session and section undone
    assert mem.sessions.list() == []
    assert mem.search("tomatoes", mode="deep") == []


def test_credentials_in_messages_are_redacted(mem: memdir.Memory, tmp_path: Path) -> None:
    source = tmp_path / "leak.json"
    source.write_text(json.dumps([{"role": "user", "content": f"my key is {KEY} ok"}]))
    report = mem.ingest(source)
    assert report.redacted == 1
    stored = "".join(p.read_text() for p in (mem.root / "sessions").glob("*.jsonl"))
    journal = "".join(p.read_text() for p in (mem.root / "journal").glob("*.md"))
    assert KEY not in stored and KEY not in journal
    assert "[redacted: OpenAI API key]" in stored


def _chat(n: int, size: int = 3, timed: bool = True) -> dict[str, Any]:
    messages = []
    for m in range(size):
        message: dict[str, Any] = {"role": ("user", "assistant")[m % 2], "content": f"c{n} m{m}"}
        if timed:
            message["timestamp"] = f"2026-10-0{n + 1}T09:0{m}:00Z"
        messages.append(message)
    return {"title": f"Chat {n}", "id": f"chat-{n}", "messages": messages}


def _sections(mem: memdir.Memory, sid: str) -> int:
    return sum(
        meta.get("session") == sid
        for day in mem.journal.days()
        for _, meta in mem.journal.sections(day)
    )


def _whole(mem: memdir.Memory, data: list[dict[str, Any]]) -> None:
    """Every conversation is there whole: all its messages, one journal section."""
    sessions = {s.id: s for s in mem.sessions.list()}
    assert len(sessions) == len(data)
    for sid in sessions:
        assert _sections(mem, sid) == 1
    contents = sorted(
        [m["content"] for m in mem.sessions.export(sid, include_archived=True)["messages"]]
        for sid in sessions
    )
    assert contents == sorted([m["content"] for m in chat["messages"]] for chat in data)


KILLED_IMPORT = """
    import sys, time, memdir
    from memdir.sessions import SessionStore

    real, calls = SessionStore.write_whole, []

    def write_whole(self, *args, **kwargs):
        calls.append(args[0])
        if len(calls) == int(sys.argv[3]):  # its journal section is written; now the kill
            print("journal written", flush=True)
            time.sleep(60)
        return real(self, *args, **kwargs)

    SessionStore.write_whole = write_whole
    memdir.open(sys.argv[1], embedder="hashing").ingest(sys.argv[2])
"""


@pytest.mark.parametrize("timed", [True, False], ids=["timed", "no-timestamps"])
def test_a_killed_import_is_picked_up_by_the_next_run(
    folder: Path, tmp_path: Path, timed: bool
) -> None:
    """SIGKILL after the second conversation's journal section, before its session:
    the first is imported whole, the second is not marked, and the next run imports
    it whole, replacing its section (the same day, even with no timestamps)."""
    data = [_chat(n, timed=timed) for n in range(3)]
    source = tmp_path / "chats.json"
    source.write_text(json.dumps(data))
    command = [sys.executable, "-c", textwrap.dedent(KILLED_IMPORT), str(folder), str(source), "2"]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"journal written\n"
    os.kill(child.pid, signal.SIGKILL)
    child.communicate()
    mem = memdir.open(folder, embedder="hashing")
    [done] = mem.sessions.list()  # only the first is marked imported
    assert mem.sessions.held(done.id) == 3 and _sections(mem, done.id) == 1
    report = mem.ingest(source)
    assert (report.imported, report.skipped, report.messages) == (2, 1, 6)
    _whole(mem, data)
    again = mem.ingest(source)
    assert (again.imported, again.skipped) == (0, 3)
    _whole(mem, data)


def test_a_partial_session_an_older_memdir_left_is_redone(
    mem: memdir.Memory, tmp_path: Path
) -> None:
    """Older versions created the session first: a kill left its header (and perhaps
    some messages) and the next run said "already imported". Now it is redone."""
    data = [_chat(0, size=4), _chat(1, size=4)]
    source = tmp_path / "chats.json"
    source.write_text(json.dumps(data))
    conversations = parse_file(source).conversations
    header_only, some = (session_id(c) for c in conversations)
    mem.sessions.create(session_id=header_only)
    mem.sessions.create(session_id=some)
    assert mem.sessions.append_messages(some, [{"role": "user", "content": "c1 m0"}]).ok
    assert (mem.sessions.held(header_only), mem.sessions.held(some)) == (0, 1)
    report = mem.ingest(source)
    assert (report.imported, report.skipped) == (2, 0)
    _whole(mem, data)
    assert mem.sessions.held(header_only) == 4


def test_the_lock_is_taken_per_conversation(mem: memdir.Memory, tmp_path: Path) -> None:
    """Between two conversations the folder lock is free: agents write meanwhile."""
    source = tmp_path / "chats.json"
    source.write_text(json.dumps([_chat(n) for n in range(3)]))
    held: list[bool] = []
    mem.ingest(source, progress=lambda done, total: held.append(mem.lock.is_held))
    assert held[:3] == [False, False, False]  # then the embedding of what was imported
    assert not any(held)


def test_a_session_past_the_compaction_trigger_is_written_whole(
    mem: memdir.Memory,
) -> None:
    """write_whole: the archive first, then the session file holding the newest."""
    store = SessionStore(mem.sessions.ctx, compact_trigger=4, compact_keep=2)
    messages = [{"role": "user", "content": f"m{n}"} for n in range(6)]
    result = store.write_whole("sess_imp_abc", messages)
    assert result.ok and result.archive == "archive/sessions/sess_imp_abc.jsonl"
    assert [m["content"] for m in store.load("sess_imp_abc")["messages"]] == ["m4", "m5"]
    exported = store.export("sess_imp_abc", include_archived=True)["messages"]
    assert [m["content"] for m in exported] == [f"m{n}" for n in range(6)]
    assert store.held("sess_imp_abc") == 6
    assert store.write_whole("sess_imp_abc", [{"role": "bad", "content": "x"}]).ok is False
    assert store.held("sess_imp_abc") == 6  # a refusal writes nothing


def test_an_import_is_embedded_before_it_returns(mem: memdir.Memory, tmp_path: Path) -> None:
    source = tmp_path / "chats.json"
    source.write_text(json.dumps([_chat(n) for n in range(3)]))
    mem.ingest(source)
    assert mem.index.ensure_vectors() == 0  # nothing left for a search to embed
