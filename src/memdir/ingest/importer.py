"""Storing an imported chat history: sessions, the journal, the index.

Each parsed conversation becomes
- a session ``sess_imp_<content hash>`` with its messages and original
  timestamps (sessions are the episodic record, as they would have been live);
- a section of the journal day it started on, titled after it, holding the
  transcript (so it is searchable, with its date, like any day);
and the index follows the journal writes.

Idempotent: the session id comes from the conversation's content hash, so a
second import of the same file finds every session and adds nothing. All or
nothing: the whole file is parsed and checked before anything is written, and
if a write fails part-way, the sessions made are removed and the journal days
touched are restored. Credentials inside imported messages are replaced by
"[redacted: <kind>]" (the write would be refused otherwise), and counted.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.ingest.detect import parse_file
from memdir.ingest.model import Conversation, IngestError, Message
from memdir.results import Progress
from memdir.secrets import find_secrets
from memdir.stores.base import read_text, write_text
from memdir.timeutil import format_ts

if TYPE_CHECKING:
    from memdir.memory import Memory

TITLE_MAX = 100


@dataclass
class ImportReport:
    format: str
    conversations: int = 0
    imported: int = 0
    skipped: int = 0
    messages: int = 0
    redacted: int = 0
    sessions: list[str] = field(default_factory=list)
    journal: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "conversations": self.conversations,
            "imported": self.imported,
            "skipped": self.skipped,
            "messages": self.messages,
            "redacted": self.redacted,
            "sessions": self.sessions,
            "journal": sorted(set(self.journal)),
        }


def session_id(conversation: Conversation) -> str:
    return f"sess_imp_{conversation.content_hash[:24]}"


def redact(text: str) -> tuple[str, int]:
    """``text`` with every credential replaced by a marker naming its kind."""
    findings = find_secrets(text)
    for finding in reversed(findings):
        text = f"{text[: finding.start]}[redacted: {finding.kind}]{text[finding.end :]}"
    return text, len(findings)


def import_file(
    memory: Memory, path: Path, format: str | None = None, progress: Progress | None = None
) -> ImportReport:
    """Import ``path`` (format detected unless given); see the module docstring."""
    parsed = parse_file(path, format)
    report = ImportReport(parsed.format, conversations=len(parsed.conversations))
    store = memory.sessions
    todo = []
    for conversation in parsed.conversations:
        if store.exists(session_id(conversation)):
            report.skipped += 1
        else:
            todo.append(conversation)
    journal = memory.journal if memory.has("journal") else None
    made: list[str] = []
    originals: dict[Path, str | None] = {}
    try:
        for number, conversation in enumerate(todo, start=1):
            _import_one(memory, conversation, parsed.format, report, made, originals, journal)
            if progress is not None:
                progress(number, len(todo))
    except BaseException:
        _roll_back(memory, made, originals)
        raise
    return report


def _import_one(
    memory: Memory,
    conversation: Conversation,
    format: str,
    report: ImportReport,
    made: list[str],
    originals: dict[Path, str | None],
    journal: Any,
) -> None:
    title, _ = redact(" ".join(conversation.title.split())[:TITLE_MAX])  # counted in the messages
    messages, redacted = [], 0
    for message in conversation.messages:
        content, found = redact(message.content)
        redacted += found
        record: dict[str, Any] = {"role": message.role, "content": content}
        if message.timestamp is not None:
            record["timestamp"] = format_ts(message.timestamp)
        if message.name:
            record["name"] = message.name
        messages.append(record)
    started = _start(conversation)
    sid = memory.sessions.create(session_id=session_id(conversation), started_at=started)
    made.append(sid)
    result = memory.sessions.append_messages(sid, messages)
    if not result.ok:
        raise IngestError(f"{title!r}: {result.reason}")
    report.sessions.append(sid)
    report.messages += len(messages)
    report.redacted += redacted
    report.imported += 1
    if journal is None:
        return
    day: date = (started or memory.clock()).date()
    real = memory.root / journal.path(day)
    originals.setdefault(real, read_text(real))
    meta = {"source": conversation.content_hash[:16], "session": sid, "format": format}
    if started is not None:
        meta["time"] = f"{started:%H:%M}"
    body = _transcript(conversation.messages, messages)
    written = journal.add_section(day, title or "Conversation", body, meta)
    if not written.ok:
        raise IngestError(f"{title!r}: {written.reason}")
    report.journal.append(written.store)


def _start(conversation: Conversation) -> datetime | None:
    if conversation.started_at is not None:
        return conversation.started_at
    return next((m.timestamp for m in conversation.messages if m.timestamp), None)


def _transcript(messages: tuple[Message, ...], records: list[dict[str, Any]]) -> str:
    lines = []
    for message, record in zip(messages, records, strict=True):
        who = message.name or message.role
        when = f" ({message.timestamp:%H:%M})" if message.timestamp else ""
        text = str(record["content"]).replace("\n", "\n  ")
        lines.append(f"- **{who}**{when}: {text}")
    return "\n".join(lines)


def _roll_back(memory: Memory, made: list[str], originals: dict[Path, str | None]) -> None:
    """Undo a failed import: remove its sessions, put back the journal days it touched."""
    for sid in made:
        for path in memory.sessions.files(sid):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    for path, text in originals.items():
        if text is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        else:
            write_text(path, text)
        memory.index.update_file(path.relative_to(memory.root).as_posix())
