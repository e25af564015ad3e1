"""Importing chat histories: every format lands in sessions, the journal and the index."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import memdir
from memdir.cli import app
from memdir.index.embedders import HashingEmbedder
from memdir.ingest import IngestError
from memdir.ingest.detect import parse_file
from memdir.ingest.importer import session_id
from memdir.stores.sessions import SessionStore
from memdir.testing import FakeClock
from memdir.tools import Tools

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
        # a RecursionError's traceback, before
        ("[" * 100_000 + "]" * 100_000, "bad.json: nested too deeply to be a chat history$"),
        ('{"role": "user", "content": "a"}\n' + "[" * 100_000, "line 2: nested too deeply"),
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
    from memdir.stores.sessions import SessionStore

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


def test_an_import_stopped_while_embedding_is_embedded_by_the_next_run(
    mem: memdir.Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after the first batch of vectors: the conversations are imported, and the
    same import again imports nothing twice but embeds the rest (it used to embed only
    when it imported something, leaving the rest to searches, a second at a time)."""
    notes = "".join(f"\n## note {n}\nNote {n} about the offsite.\n" for n in range(300))
    (mem.root / "journal" / "2026-09-01.md").write_text(f"# 2026-09-01\n{notes}")
    mem.scan()  # indexed, not embedded yet
    source = tmp_path / "chats.json"
    source.write_text(json.dumps([_chat(n) for n in range(2)]))
    real, calls = HashingEmbedder.embed, []

    def embed(self: HashingEmbedder, texts: list[str]) -> object:
        calls.append(len(texts))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, texts)

    monkeypatch.setattr(HashingEmbedder, "embed", embed)
    with pytest.raises(KeyboardInterrupt):
        mem.ingest(source)
    embedded, texts = mem.index.vector_counts()
    assert embedded == 256 < texts
    monkeypatch.setattr(HashingEmbedder, "embed", real)
    again = mem.ingest(source)
    assert (again.imported, again.skipped) == (0, 2)
    assert mem.index.vector_counts() == (texts, texts)


# -- real exports, end to end through the CLI ---------------------------------------------

EXPORTS = Path(__file__).parent / "data" / "exports"
REPORTS = {
    "chatgpt": [
        "Imported 2 of 4 conversations (10 messages, format chatgpt); 0 already imported.",
        "Left out 2 conversations:",
        '  #3 "New chat": empty: no message with text',
        '  #4 "Half-synced chat": malformed: conversations[3].mapping.x1.message.author: '
        "expected an object, found null",
    ],
    "claude": [
        "Imported 2 of 4 conversations (5 messages, format claude); 0 already imported.",
        "Left out 2 conversations:",
        "  #3 (no title): empty: no message with text",
        '  #4 "Odd sender": malformed: conversations[3].chat_messages[0].sender: '
        "unknown role 'narrator': expected one of assistant, human",
    ],
}
# A word of an old conversation (years before today: archive tier), and its journal day.
FOUND = {
    "chatgpt": ("levain", "journal/2023-03-14.md"),
    "claude": ("varroa", "journal/2023-11-02.md"),
}


def cli(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def export_file(tmp_path: Path, kind: str, form: str) -> Path:
    """The export as downloaded: its conversations.json, or the whole zip (claude.ai's
    holds a data-... folder)."""
    if form == "json":
        return EXPORTS / kind / "conversations.json"
    path, folder = tmp_path / f"{kind}-export.zip", "data-2023-12-05/" if kind == "claude" else ""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted((EXPORTS / kind).iterdir()):
            archive.write(file, folder + file.name)
        archive.writestr(folder + "file-Kq81starterjar-IMG_2041.png", b"\x89PNG\r\n\x1a\n")
    return path


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new default folder, made by `memdir init` (the hashing embedder: nothing to load)."""
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")
    folder = tmp_path / "fresh"
    assert cli("init", folder).exit_code == 0
    return folder


def _first_hit(output: str) -> str | None:
    """The path of hit 1 in `memdir search`'s text (after any line saying how it searched)."""
    first = next((line for line in output.splitlines() if line.startswith("1. ")), "")
    return first[3:].split(":")[0] or None


EXPORT_CASES = [(kind, form) for kind in ("chatgpt", "claude") for form in ("json", "zip")]


@pytest.mark.parametrize(("kind", "form"), EXPORT_CASES)
def test_a_real_export_imports_and_deep_search_finds_it(
    fresh: Path, tmp_path: Path, kind: str, form: str
) -> None:
    result = cli("ingest", export_file(tmp_path, kind, form), "--dir", fresh)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.splitlines() == REPORTS[kind]
    word, day = FOUND[kind]
    found = cli("search", word, "--dir", fresh, "--mode", "deep")
    assert found.exit_code == 0 and _first_hit(found.stdout) == day, found.stdout
    with memdir.open(fresh, embedder="hashing") as memory:
        called = Tools(memory).call("memory_search", {"query": word, "mode": "deep"})
    assert called["ok"] and called["hits"][0]["path"] == day


@pytest.mark.parametrize("kind", ["chatgpt", "claude"])
def test_a_plain_search_finds_an_old_import(fresh: Path, tmp_path: Path, kind: str) -> None:
    """The conversation is from 2023, archive tier: a plain search widens to reach it."""
    assert cli("ingest", export_file(tmp_path, kind, "zip"), "--dir", fresh).exit_code == 0
    word, day = FOUND[kind]
    found = cli("search", word, "--dir", fresh)
    assert found.exit_code == 0 and _first_hit(found.stdout) == day, found.stdout
    with memdir.open(fresh, embedder="hashing") as memory:
        called = Tools(memory).call("memory_search", {"query": word})
    assert called["ok"] and called["hits"][0]["path"] == day


def test_the_zip_and_its_json_are_the_same_import(fresh: Path, tmp_path: Path) -> None:
    assert cli("ingest", export_file(tmp_path, "chatgpt", "json"), "--dir", fresh).exit_code == 0
    again = cli("ingest", export_file(tmp_path, "chatgpt", "zip"), "--dir", fresh, "--json")
    assert again.exit_code == 0
    report = json.loads(again.stdout)
    assert (report["imported"], report["skipped"], report["conversations"]) == (0, 2, 4)
    assert report["left_out"] == [
        {"position": 3, "title": "New chat", "kind": "empty", "reason": "no message with text",
         "at": ""},
        {"position": 4, "title": "Half-synced chat", "kind": "malformed",
         "reason": "expected an object, found null",
         "at": "conversations[3].mapping.x1.message.author"},
    ]  # fmt: skip


def test_a_conversation_the_store_refuses_is_left_out_and_the_others_import(
    mem: memdir.Memory, tmp_path: Path
) -> None:
    """A credential where memdir does not redact (an author's name): that conversation is
    refused before anything of it is written, and reported; the next one imports."""
    leaky = {"title": "Leaky", "messages": [{"role": "user", "name": KEY, "content": "hi"}]}
    source = tmp_path / "chats.json"
    source.write_text(json.dumps([leaky, _chat(1)]))
    report = mem.ingest(source)
    assert (report.imported, report.conversations) == (1, 2)
    [left] = report.left_out
    assert (left.position, left.title, left.kind) == (1, "Leaky", "refused")
    assert "OpenAI API key" in left.reason and "nothing was written" in left.reason
    assert [s.id for s in mem.sessions.list()] == report.sessions
    assert "Leaky" not in "".join(p.read_text() for p in (mem.root / "journal").glob("*.md"))


def test_when_nothing_can_be_imported_the_cli_exits_1_and_writes_nothing(
    fresh: Path, tmp_path: Path
) -> None:
    data = json.loads((EXPORTS / "claude" / "conversations.json").read_text())
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps(data[2:]))  # the empty one and the malformed one
    before = _files(fresh)
    result = cli("ingest", source, "--dir", fresh)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith(f"error: {source}: conversations[1].chat_messages[0].sender")
    assert "(conversation #2 'Odd sender'; nothing to import; 1 empty)" in result.stderr
    assert _files(fresh) == before


def test_a_timestamp_in_the_future_is_refused_and_writes_nothing(
    mem: memdir.Memory, tmp_path: Path, clock: FakeClock
) -> None:
    """A year 3026 (an export's clock gone wrong) would make a journal day that sorts
    after everything real; a day ahead of the memory's clock is allowed (time zones)."""
    now = clock()
    tomorrow = (now + timedelta(hours=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    source = tmp_path / "chat.jsonl"
    source.write_text(
        '{"role": "user", "content": "book the flights", "timestamp": "2026-01-01T09:00:00Z"}\n'
        '{"role": "assistant", "content": "booked", "timestamp": "3026-01-01T09:00:00Z"}\n'
    )
    before = _files(mem.root)
    with pytest.raises(IngestError, match=r"has a timestamp in the future, 3026-01-01T09:00:00"):
        mem.ingest(source)
    assert _files(mem.root) == before
    source.write_text(
        f'{{"role": "user", "content": "book the flights", "timestamp": "{tomorrow}"}}\n'
    )
    assert mem.ingest(source).imported == 1
