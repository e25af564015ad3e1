"""Storing an imported chat history: sessions, the journal, the index.

Each parsed conversation becomes
- a session ``sess_imp_<content hash>`` with its messages and original
  timestamps (sessions are the episodic record, as they would have been live);
- a section of the journal day it started on, titled after it, holding the
  transcript (so it is searchable, with its date, like any day);
and the index follows the journal writes.

All or nothing per conversation, and a killed import is picked up by the next
run. A conversation is imported when its session file holds all its messages,
and that file is written whole (``SessionStore.write_whole``: one atomic
replace) as its LAST step, after its journal section; so a kill at any moment
leaves it either imported whole or not marked at all. The journal step is
idempotent: a section already there for the same session (a killed run's) is
replaced, never doubled. A session file holding fewer messages than its
conversation (an older memdir's interrupted import) is redone the same way.

What is not imported is reported, never silently dropped: ``ImportReport.left_out``
lists each conversation of the file that was malformed or empty (from the
parse) or that the session store refused (checked before anything of it is
written), with its position and title. A file where no conversation is
imported now or was before (all left out) is refused with IngestError.

Idempotent: the session id comes from the conversation's content hash, so a
second import of the same file finds every session and adds nothing. The whole
file is parsed and checked before anything is written; the folder lock is taken
per conversation (agents write between two), and if a write fails part-way the
run's sessions are removed and the journal days it touched are put back (only
its own sections taken out, if someone wrote the day since). Credentials inside
imported messages are replaced by "[redacted: <kind>]" (the write would be
refused otherwise), and counted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.files.sections import SectionDocument
from memdir.ingest.detect import parse_file
from memdir.ingest.model import Conversation, IngestError, LeftOut, Message
from memdir.results import Progress
from memdir.safety.secrets import find_secrets
from memdir.stores.base import decode, encode
from memdir.stores.validate import as_text
from memdir.timeutil import format_ts

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.stores.journal import JournalStore
    from memdir.stores.sessions import SessionStore

TITLE_MAX = 100
_SESSION_META_RE = re.compile(r"<!--[^\n]*?\bsession: (sess_imp_[0-9a-f]+)")


@dataclass
class ImportReport:
    """What an import did. ``conversations`` counts the file's (left out included);
    ``skipped`` those imported before; ``left_out`` the rest that were not, and why."""

    format: str
    conversations: int = 0
    imported: int = 0
    skipped: int = 0
    messages: int = 0
    redacted: int = 0
    sessions: list[str] = field(default_factory=list)
    journal: list[str] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)

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
            "left_out": [item.to_dict() for item in self.left_out],
        }


def session_id(conversation: Conversation) -> str:
    return f"sess_imp_{conversation.content_hash[:24]}"


def redact(text: str) -> tuple[str, int]:
    """``text`` with every credential replaced by a marker naming its kind (and any
    character a memory file may not hold replaced by U+FFFD: ``as_text``)."""
    text = as_text(text)
    findings = find_secrets(text)
    for finding in reversed(findings):
        text = f"{text[: finding.start]}[redacted: {finding.kind}]{text[finding.end :]}"
    return text, len(findings)


def import_file(
    memory: Memory, path: Path, format: str | None = None, progress: Progress | None = None
) -> ImportReport:
    """Import ``path`` (format detected unless given); see the module docstring."""
    parsed = parse_file(path, format)
    _check_not_ahead(parsed.conversations, memory.clock(), path)
    total = len(parsed.conversations) + len(parsed.left_out)
    report = ImportReport(parsed.format, conversations=total, left_out=list(parsed.left_out))
    store = memory.sessions
    todo = []
    for conversation in parsed.conversations:  # a first look; each is checked again locked
        if _imported(store, conversation):
            report.skipped += 1
        else:
            todo.append(conversation)
    journal = memory.journal if memory.has("journal") else None
    run = _Run()
    try:
        for number, conversation in enumerate(todo, start=1):
            _import_one(memory, conversation, parsed.format, report, run, journal)
            if progress is not None:
                progress(number, len(todo))
    except BaseException:
        with memory.lock:
            run.roll_back(memory)
        raise
    report.left_out.sort(key=lambda item: item.position)
    if not report.imported and not report.skipped:  # every one refused: nothing was written
        more = len(report.left_out) - 1
        also = f" (and {more} more left out)" if more else ""
        raise IngestError(f"nothing imported: {report.left_out[0].describe()}{also}", path=path)
    return report


FUTURE_SLACK = timedelta(days=1)
"""how far past this memory's clock an imported moment may be (time zones, clock skew)"""


def _check_not_ahead(conversations: Sequence[Conversation], now: datetime, path: Path) -> None:
    """Refuse, before anything is written, a file with a moment past ``now`` (and the
    slack): its journal day and sessions would sort after everything that really
    happened (an export's clock gone wrong, or epoch milliseconds read as seconds)."""
    horizon = now + FUTURE_SLACK
    for conversation in conversations:
        moments = [conversation.started_at, *(m.timestamp for m in conversation.messages)]
        ahead = max((m for m in moments if m is not None and m > horizon), default=None)
        if ahead is not None:
            raise IngestError(
                f"conversation {conversation.position} ({conversation.title!r}) has a "
                f"timestamp in the future, {format_ts(ahead)} (this memory's clock says "
                f"{format_ts(now)}); nothing was imported: fix the export's timestamps",
                path=path,
            )


def _imported(store: SessionStore, conversation: Conversation) -> bool:
    held = store.held(session_id(conversation))
    return held is not None and held >= len(conversation.messages)


@dataclass
class _Run:
    """What this run wrote, to take out again if a later conversation fails."""

    sessions: list[str] = field(default_factory=list)
    originals: dict[str, str | None] = field(default_factory=dict)
    """each journal day (its memory-folder path) as it was before this run first wrote it"""
    written: dict[str, str | None] = field(default_factory=dict)
    """each journal day as this run last left it"""
    days: dict[str, date] | None = None
    """session id -> the journal day holding its section, read once when needed"""

    def roll_back(self, memory: Memory) -> None:
        """Under the lock: remove the run's sessions, put its journal days back."""
        files = memory.files
        for sid in self.sessions:
            for path in memory.sessions.session_files(sid):
                files.remove(path)
        ours = set(self.sessions)
        for path, original in self.originals.items():
            now = decode(files.read(path))
            if now != self.written.get(path):  # written since by someone else: keep theirs
                _drop_sections(memory, path, ours)
            elif original is None:
                files.remove(path)
            else:
                files.write_all([(path, encode(original))])
            memory.index.update_file(path)


def _drop_sections(memory: Memory, path: str, sessions: set[str]) -> bool:
    """Take the sections of ``sessions`` out of the journal day ``path``; True if any."""
    text = decode(memory.files.read(path))
    if text is None:
        return False
    doc = SectionDocument.parse(text)
    kept = [section for section in doc if section.meta.get("session") not in sessions]
    if len(kept) == len(doc):
        return False
    doc.sections = kept
    memory.files.write_all([(path, encode(doc.render()))])
    return True


def _import_one(
    memory: Memory,
    conversation: Conversation,
    format: str,
    report: ImportReport,
    run: _Run,
    journal: JournalStore | None,
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
    sid = session_id(conversation)
    reason = memory.sessions.check_messages(sid, messages)
    if reason is not None:  # before anything of it is written: left out, the others go on
        report.left_out.append(LeftOut(conversation.position, title, "refused", reason))
        return
    with memory.lock:  # one conversation at a time: agents write between two
        if _imported(memory.sessions, conversation):  # another import got here first
            report.skipped += 1
            return
        day = None
        if journal is not None:
            day = _journal_section(memory, journal, conversation, format, sid, title, messages, run)
        run.sessions.append(sid)
        result = memory.sessions.write_whole(sid, messages, started_at=started)
        if not result.ok:
            raise IngestError(f"{title!r}: {result.reason}")
    if day is not None:
        report.journal.append(day)
    report.sessions.append(sid)
    report.messages += len(messages)
    report.redacted += redacted
    report.imported += 1


def _journal_section(
    memory: Memory,
    journal: JournalStore,
    conversation: Conversation,
    format: str,
    sid: str,
    title: str,
    messages: list[dict[str, Any]],
    run: _Run,
) -> str:
    """Write the conversation's section of its day, replacing one a killed run left;
    return the day's path."""
    started = _start(conversation)
    day = started.date() if started is not None else _day_holding(memory, journal, sid, run)
    real = journal.path(day)
    run.originals.setdefault(real, decode(memory.files.read(real)))
    _drop_sections(memory, real, {sid})  # a killed run's section: replaced, never doubled
    meta = {"source": conversation.content_hash[:16], "session": sid, "format": format}
    if started is not None:
        meta["time"] = f"{started:%H:%M}"
    body = _transcript(conversation.messages, messages)
    written = journal.add_section(day, title or "Conversation", body, meta)
    run.written[real] = decode(memory.files.read(real))
    if not written.ok:
        raise IngestError(f"{title!r}: {written.reason}")
    return written.store


def _day_holding(memory: Memory, journal: JournalStore, sid: str, run: _Run) -> date:
    """The day of a conversation with no time at all: the one a killed run already
    wrote its section to (the days are read once per run), else today."""
    if run.days is None:
        run.days = {}
        for day in journal.days():
            text = journal.text(day) or ""
            for found in _SESSION_META_RE.findall(text):
                run.days.setdefault(found, day)
    return run.days.get(sid) or memory.clock().date()


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
