"""Importing chat histories: every format lands in sessions, the journal and the index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import memdir
from memdir.ingest import IngestError
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
