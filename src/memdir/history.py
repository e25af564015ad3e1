"""The activity history: what the agent has lived through, in ``.memdir/history.db``.

Tables as the notebook specification draws them (section 5, "Past Episodes"):

    agent_activities     one row per action: id act-{agent}-{ms}-{rand}, type, label,
                         task_id, summary, keywords, started/ended, tokens, tools, success
    agent_activity_logs  its ordered events: status | text | tool_start | tool_end |
                         error | llm_request, content, metadata (JSON)
    mailbox_items        what the agent received
    agent_decisions      what it decided about it

Not derived from any file, so never rebuilt: it is backed up (``memdir backup``)
and exported (``export_jsonl``) from a consistent snapshot taken with SQLite's
backup API while other processes write. Never deleted; it grows for years, so
recall is indexed: by time, type and task, and FTS5 over label, summary and
keywords. Schema changes are named migrations recorded in the database.

A damaged file (truncated, overwritten, a bad page, a schema its migrations cannot
read) must not stop the agent: every public method runs through ``History.guard``,
which, when SQLite says so (``memdir.sqlite.damage_reason``), renames the file to
``history.db.corrupt-<UTC stamp>`` under the folder lock, starts a fresh history,
records the restart in its ``history_restarts`` table, sends a ``Notice`` and runs
the call again. A process whose file another process set aside follows it to the
fresh one and moves nothing (the inode at the path changed: checked before every
write, since SQLite in WAL mode would write on to the old file, and before a read at
most once a second). The rows
of the damaged file are not lost with it: ``memdir doctor`` keeps reporting it and
``memdir doctor --repair`` reads them back (``memdir.salvage``). An activity being
run across the restart is not in the fresh file: logging to it raises ``HistoryError``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import secrets
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from memdir import sqlite
from memdir.digest import LogEvent, summarise
from memdir.digest import keywords as find_keywords
from memdir.errors import MemdirError, ReadOnlyFolder
from memdir.readonly import read_only_connection
from memdir.results import Notice
from memdir.sqlite import run_script, transaction
from memdir.timeutil import Clock, format_ts, parse_ts

ACTIVITY_TYPES = ("task", "chat", "heartbeat", "a2a", "internal", "respond_in_session")
LOG_TYPES = ("status", "text", "tool_start", "tool_end", "error", "llm_request")
_WORD_RE = re.compile(r"\w+", re.UNICODE)
FOLLOW_SECONDS = 1.0  # how stale a read may be after another process set the file aside
P = ParamSpec("P")
T = TypeVar("T")


class HistoryError(MemdirError, ValueError):
    """A bad call on the history: unknown activity, bad type, an activity ended twice."""


def _m001_activities(db: sqlite3.Connection) -> None:
    types = ", ".join(f"'{t}'" for t in ACTIVITY_TYPES)
    log_types = ", ".join(f"'{t}'" for t in LOG_TYPES)
    run_script(
        db,
        f"""
        CREATE TABLE agent_activities (
            id TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL,
            type TEXT NOT NULL CHECK (type IN ({types})),
            label TEXT NOT NULL,
            task_id TEXT,
            summary TEXT,
            keywords TEXT,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            total_tokens INTEGER NOT NULL DEFAULT 0,
            total_tools INTEGER NOT NULL DEFAULT 0,
            success INTEGER
        );
        CREATE INDEX activities_by_time ON agent_activities (started_at);
        CREATE INDEX activities_by_type ON agent_activities (type, started_at);
        CREATE INDEX activities_by_task ON agent_activities (task_id, started_at);
        CREATE TABLE agent_activity_logs (
            activity_id TEXT NOT NULL REFERENCES agent_activities (id),
            seq INTEGER NOT NULL,
            type TEXT NOT NULL CHECK (type IN ({log_types})),
            content TEXT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{{}}',
            created_at TEXT NOT NULL,
            PRIMARY KEY (activity_id, seq)
        );
        CREATE VIRTUAL TABLE activities_fts USING fts5 (
            label, summary, keywords,
            content = 'agent_activities', content_rowid = 'rowid',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER activities_ai AFTER INSERT ON agent_activities BEGIN
            INSERT INTO activities_fts (rowid, label, summary, keywords)
            VALUES (new.rowid, new.label, coalesce(new.summary, ''), coalesce(new.keywords, ''));
        END;
        CREATE TRIGGER activities_au AFTER UPDATE OF label, summary, keywords
        ON agent_activities BEGIN
            INSERT INTO activities_fts (activities_fts, rowid, label, summary, keywords)
            VALUES ('delete', old.rowid, old.label, coalesce(old.summary, ''),
                    coalesce(old.keywords, ''));
            INSERT INTO activities_fts (rowid, label, summary, keywords)
            VALUES (new.rowid, new.label, coalesce(new.summary, ''), coalesce(new.keywords, ''));
        END;
        CREATE TABLE mailbox_items (
            id TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL,
            source TEXT NOT NULL,
            kind TEXT NOT NULL,
            content TEXT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{{}}',
            received_at TEXT NOT NULL,
            activity_id TEXT REFERENCES agent_activities (id)
        );
        CREATE INDEX mailbox_by_time ON mailbox_items (received_at);
        CREATE TABLE agent_decisions (
            id TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL,
            mailbox_item_id TEXT REFERENCES mailbox_items (id),
            activity_id TEXT REFERENCES agent_activities (id),
            decision TEXT NOT NULL,
            reason TEXT,
            metadata TEXT NOT NULL DEFAULT '{{}}',
            decided_at TEXT NOT NULL
        );
        CREATE INDEX decisions_by_time ON agent_decisions (decided_at);
        """,
    )


def _m002_context_usage(db: sqlite3.Connection) -> None:
    db.execute(
        "CREATE TABLE context_usage (session_id TEXT PRIMARY KEY, used_tokens INTEGER NOT NULL, "
        "window_tokens INTEGER NOT NULL, recorded_at TEXT NOT NULL, flushed_at TEXT)"
    )


def _m003_restarts(db: sqlite3.Connection) -> None:
    db.execute(
        "CREATE TABLE history_restarts (moved_to TEXT PRIMARY KEY, reason TEXT NOT NULL, "
        "restarted_at TEXT NOT NULL, salvaged_at TEXT, salvage TEXT)"
    )


MIGRATIONS: list[tuple[str, sqlite.Migration]] = [
    ("001_activities", _m001_activities),
    ("002_context_usage", _m002_context_usage),
    ("003_restarts", _m003_restarts),
]

_ACTIVITY_COLUMNS = (
    "id, agent_id, type, label, task_id, summary, keywords, started_at, ended_at, "
    "total_tokens, total_tools, success"
)


@dataclass(frozen=True)
class Activity:
    id: str
    agent_id: str
    type: str
    label: str
    task_id: str | None
    summary: str | None
    keywords: tuple[str, ...]
    started_at: datetime
    ended_at: datetime | None
    total_tokens: int
    total_tools: int
    success: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agentId": self.agent_id,
            "type": self.type,
            "label": self.label,
            "taskId": self.task_id,
            "summary": self.summary,
            "keywords": list(self.keywords),
            "startedAt": format_ts(self.started_at),
            "endedAt": format_ts(self.ended_at) if self.ended_at else None,
            "totalTokens": self.total_tokens,
            "totalTools": self.total_tools,
            "success": self.success,
        }


@dataclass(frozen=True)
class ActivityDetail:
    activity: Activity
    logs: tuple[LogEvent, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.activity.to_dict(),
            "logs": [
                {"seq": e.seq, "type": e.type, "content": e.content, "metadata": e.metadata}
                for e in self.logs
            ],
        }


def _activity(row: tuple[Any, ...]) -> Activity:
    keys = tuple(k.strip() for k in (row[6] or "").split(",") if k.strip())
    started = parse_ts(row[7])
    assert started is not None
    success = None if row[11] is None else bool(row[11])
    return Activity(
        row[0], row[1], row[2], row[3], row[4], row[5], keys, started, parse_ts(row[8]),
        int(row[9]), int(row[10]), success,
    )  # fmt: skip


class ActivityRun:
    """An activity being run inside ``History.activity(...)``."""

    def __init__(self, history: History, activity_id: str) -> None:
        self.history = history
        self.id = activity_id
        self.summary: str | None = None
        self.keywords: list[str] | None = None

    def log(self, type: str, content: str, metadata: dict[str, Any] | None = None) -> int:
        return self.history.log(self.id, type, content, metadata)


@dataclass(frozen=True)
class Restart:
    """A damaged history moved aside and a fresh one started in its place."""

    moved_to: str
    """the damaged file's name, beside the history (``history.db.corrupt-<stamp>``)"""
    reason: str
    restarted_at: datetime
    salvaged_at: datetime | None
    salvage: dict[str, Any] | None
    """what ``memdir doctor --repair`` recovered from it, table by table"""


def _restarts(db: sqlite3.Connection) -> list[Restart]:
    rows = db.execute(
        "SELECT moved_to, reason, restarted_at, salvaged_at, salvage "
        "FROM history_restarts ORDER BY restarted_at, moved_to"
    ).fetchall()
    found = []
    for moved_to, reason, restarted, salvaged, salvage in rows:
        started = parse_ts(restarted)
        assert started is not None
        report = json.loads(salvage) if salvage else None
        found.append(Restart(moved_to, reason, started, parse_ts(salvaged), report))
    return found


def read_restarts(path: Path) -> list[Restart]:
    """``History.restarts`` of the file at ``path``, read without writing anything (and
    without creating it); none if it cannot be read."""
    if not path.is_file():
        return []
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
        with contextlib.closing(db):
            return _restarts(db)
    except sqlite3.Error:
        return []


def _read_only(path: Path) -> sqlite3.Connection:
    """The history of a folder this process cannot write: the file through an immutable
    connection, or an empty one in memory when there is none (or it cannot be read)."""
    if path.is_file():
        try:
            db = read_only_connection(path)
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.Error:
            pass
    db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    sqlite.migrate(db, MIGRATIONS)
    return db


def _guarded(method: Callable[Concatenate[History, P], T]) -> Callable[Concatenate[History, P], T]:
    """``History.guard`` around a method that reads."""

    @functools.wraps(method)
    def wrapper(history: History, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return history.guard(lambda: method(history, *args, **kwargs))

    return wrapper


def _writing(method: Callable[Concatenate[History, P], T]) -> Callable[Concatenate[History, P], T]:
    """``History.guard`` around a method that writes."""

    @functools.wraps(method)
    def wrapper(history: History, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return history.guard(lambda: method(history, *args, **kwargs), writes=True)

    return wrapper


class History:
    def __init__(
        self,
        path: Path,
        agent_id: str,
        clock: Clock,
        on_end: Callable[[Activity], None] | None = None,
        *,
        lock: AbstractContextManager[object] | None = None,
        on_notice: Callable[[Notice], None] | None = None,
        read_only: str | None = None,
    ) -> None:
        """``lock`` (the memory folder's) is taken to set a damaged file aside;
        ``on_notice`` hears that it was. ``read_only`` (why the folder cannot be
        written) opens the file without writing it: reads work, writes raise
        ``ReadOnlyFolder``."""
        self.read_only = read_only
        self.path = path
        self.agent_id = agent_id
        self.clock = clock
        self.on_end = on_end
        self.folder_lock = lock
        self.on_notice = on_notice
        self._lock = threading.RLock()
        self._guards = threading.local()  # how deep in ``guard`` each thread is
        self._follow_at = time.monotonic() + FOLLOW_SECONDS
        self._file_id = sqlite.file_id(path)
        if read_only is not None:
            self.db = _read_only(path)
            return
        try:
            self.db = sqlite.connect(path, MIGRATIONS)
        except sqlite3.DatabaseError as exc:
            if not self._recover(exc, opening=True):
                raise
        self._file_id = sqlite.file_id(path)

    def close(self) -> None:
        self.db.close()

    # -- a damaged file ----------------------------------------------------------

    def guard(self, operation: Callable[[], T], *, writes: bool = False) -> T:
        """Run ``operation``; if it finds the file damaged, set it aside, start a fresh
        history and run it once more. Every public method runs through here; only a
        thread's outermost call mends. It first checks that the file is still the one it
        opened (another process may have set it aside, and in WAL mode SQLite would go on
        writing to the old file without a word): before every write, and before a read
        at most once every ``FOLLOW_SECONDS``."""
        if writes and self.read_only is not None:
            raise ReadOnlyFolder(self.read_only)
        if self.read_only is not None:
            try:
                return operation()
            except sqlite3.DatabaseError as exc:
                if not sqlite.is_damage(exc):
                    raise
                self._read_as_empty(str(exc))
            return operation()
        depth = getattr(self._guards, "depth", 0)
        self._guards.depth = depth + 1
        try:
            if not depth and (writes or time.monotonic() >= self._follow_at):
                self._follow_at = time.monotonic() + FOLLOW_SECONDS
                if sqlite.file_id(self.path) != self._file_id:
                    self._recover(sqlite3.DatabaseError(sqlite.MOVED))
            return operation()
        except sqlite3.DatabaseError as exc:
            if depth or not self._recover(exc):
                raise
        finally:
            self._guards.depth = depth
        return operation()

    def _read_as_empty(self, reason: str) -> None:
        """A damaged file in a folder this process cannot write: it cannot be set aside,
        so this process reads an empty history in memory instead."""
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self.db.close()
            self.db = _read_only(Path(os.devnull) / "none")
        if self.on_notice is not None:
            where = f"{self.path.parent.name}/{self.path.name}"
            self.on_notice(
                Notice(
                    "history",
                    f"{where} is damaged ({reason}) and the folder is read-only: it reads as "
                    "empty here; `memdir doctor --repair` where the folder can be written",
                )
            )

    def _recover(self, exc: sqlite3.DatabaseError, *, opening: bool = False) -> bool:
        """True if ``exc`` came from a damaged (or moved) file and a sound one is open now."""
        db = None if opening else self.db
        reason = sqlite.damage_reason(exc, db, self.path, self._file_id, MIGRATIONS)
        if reason is None:
            return False
        self._mend(reason, db)
        return True

    def mend(self, reason: str) -> Path | None:
        """Set the file aside as damaged (``reason``: what ``memdir doctor`` found) and
        start a fresh history; the moved file's path (``memdir doctor --repair``)."""
        return self._mend(reason, self.db)

    def _mend(self, reason: str, db: sqlite3.Connection | None) -> Path | None:
        with self.folder_lock or contextlib.nullcontext(), self._lock:
            if db is not None:
                with contextlib.suppress(sqlite3.Error):
                    db.close()
            moved = sqlite.set_aside(self.path, reason, self._file_id, self.clock(), None)
            self.db = sqlite.connect(self.path, MIGRATIONS)
            self._file_id = sqlite.file_id(self.path)
            if moved is not None:
                self.db.execute(
                    "INSERT OR IGNORE INTO history_restarts (moved_to, reason, restarted_at) "
                    "VALUES (?, ?, ?)",
                    (moved.name, reason, format_ts(self.clock())),
                )
        if moved is not None and self.on_notice is not None:
            where = f"{self.path.parent.name}/{self.path.name}"
            self.on_notice(
                Notice(
                    "history",
                    f"{where} was damaged ({reason}); moved aside to "
                    f"{self.path.parent.name}/{moved.name} and started a fresh one: "
                    "`memdir doctor --repair` recovers what it can",
                )
            )
        return moved

    @_guarded
    def restarts(self) -> list[Restart]:
        """Every time a damaged history was set aside for this one, oldest first."""
        with self._lock:
            return _restarts(self.db)

    # -- writing ---------------------------------------------------------------

    @_writing
    def start_activity(self, type: str, label: str, task_id: str | None = None) -> str:
        if type not in ACTIVITY_TYPES:
            raise HistoryError(f"activity type must be one of {', '.join(ACTIVITY_TYPES)}")
        if not isinstance(label, str) or not label.strip():
            raise HistoryError("an activity needs a label saying what it is")
        now = self.clock()
        activity_id = f"act-{self.agent_id}-{int(now.timestamp() * 1000)}-{secrets.token_hex(3)}"
        with self._lock:
            self.db.execute(
                "INSERT INTO agent_activities (id, agent_id, type, label, task_id, started_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    activity_id,
                    self.agent_id,
                    type,
                    " ".join(label.split()),
                    task_id,
                    format_ts(now),
                ),
            )
        return activity_id

    @_writing
    def log(
        self, activity_id: str, type: str, content: str, metadata: dict[str, Any] | None = None
    ) -> int:
        """Append one event to an activity's log; returns its sequence number."""
        if type not in LOG_TYPES:
            raise HistoryError(f"log type must be one of {', '.join(LOG_TYPES)}")
        meta = dict(metadata or {})
        tokens = meta.get("tokensUsed", meta.get("tokens", 0))
        tokens = int(tokens) if isinstance(tokens, (int, float)) else 0
        with self._lock, transaction(self.db):
            row = self.db.execute(
                "SELECT ended_at FROM agent_activities WHERE id = ?", (activity_id,)
            ).fetchone()
            if row is None:
                raise HistoryError(f"no activity {activity_id!r}")
            seq = self.db.execute(
                "SELECT coalesce(max(seq), 0) + 1 FROM agent_activity_logs WHERE activity_id = ?",
                (activity_id,),
            ).fetchone()[0]
            self.db.execute(
                "INSERT INTO agent_activity_logs (activity_id, seq, type, content, metadata, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (activity_id, seq, type, str(content), json.dumps(meta, default=str),
                 format_ts(self.clock())),
            )  # fmt: skip
            self.db.execute(
                "UPDATE agent_activities SET total_tokens = total_tokens + ?, "
                "total_tools = total_tools + ? WHERE id = ?",
                (tokens, 1 if type == "tool_start" else 0, activity_id),
            )
        return int(seq)

    @_writing
    def end_activity(
        self,
        activity_id: str,
        summary: str | None = None,
        keywords: list[str] | None = None,
        success: bool = True,
    ) -> Activity:
        """Close an activity; summary and keywords are computed from its logs if not given."""
        with self._lock:
            detail = self.get(activity_id)
            if detail is None:
                raise HistoryError(f"no activity {activity_id!r}")
            if detail.activity.ended_at is not None:
                raise HistoryError(f"activity {activity_id!r} has already ended")
            found = list(keywords) if keywords is not None else find_keywords(detail.logs)
            text = summary if summary is not None else summarise(
                detail.activity.type, detail.activity.label, detail.logs, success
            )  # fmt: skip
            self.db.execute(
                "UPDATE agent_activities SET summary = ?, keywords = ?, ended_at = ?, success = ? "
                "WHERE id = ?",
                (" ".join(text.split()), ", ".join(found), format_ts(self.clock()), int(success),
                 activity_id),
            )  # fmt: skip
            ended = self.get(activity_id)
        assert ended is not None
        if self.on_end is not None:
            self.on_end(ended.activity)
        return ended.activity

    @contextmanager
    def activity(self, type: str, label: str, task_id: str | None = None) -> Iterator[ActivityRun]:
        """``with history.activity("task", "Refactor billing") as run: run.log(...)``.

        Ends the activity when the block leaves: as failed, with the exception
        logged, if the block raised (the exception goes on up)."""
        run = ActivityRun(self, self.start_activity(type, label, task_id))
        try:
            yield run
        except BaseException as exc:
            self.log(run.id, "error", f"{exc.__class__.__name__}: {exc}")
            self.end_activity(run.id, run.summary, run.keywords, success=False)
            raise
        self.end_activity(run.id, run.summary, run.keywords, success=True)

    @_writing
    def receive(
        self,
        source: str,
        content: str,
        kind: str = "message",
        metadata: dict[str, Any] | None = None,
        activity_id: str | None = None,
    ) -> str:
        """Record a mailbox item (what the agent received); returns its id."""
        item_id = f"mail-{int(self.clock().timestamp() * 1000)}-{secrets.token_hex(3)}"
        with self._lock:
            self.db.execute(
                "INSERT INTO mailbox_items (id, agent_id, source, kind, content, metadata, "
                "received_at, activity_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (item_id, self.agent_id, source, kind, content, json.dumps(metadata or {}),
                 format_ts(self.clock()), activity_id),
            )  # fmt: skip
        return item_id

    @_writing
    def decide(
        self, decision: str, reason: str | None = None, *, mailbox_item_id: str | None = None,
        activity_id: str | None = None, metadata: dict[str, Any] | None = None,
    ) -> str:  # fmt: skip
        """Record what the agent decided (about a mailbox item, in an activity)."""
        decision_id = f"dec-{int(self.clock().timestamp() * 1000)}-{secrets.token_hex(3)}"
        with self._lock:
            self.db.execute(
                "INSERT INTO agent_decisions (id, agent_id, mailbox_item_id, activity_id, "
                "decision, reason, metadata, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (decision_id, self.agent_id, mailbox_item_id, activity_id, decision, reason,
                 json.dumps(metadata or {}), format_ts(self.clock())),
            )  # fmt: skip
        return decision_id

    # -- context usage (for the memory flush) ----------------------------------

    @_writing
    def record_usage(self, session_id: str, used_tokens: int, window_tokens: int) -> None:
        """How full a session's context was on its last turn."""
        if window_tokens <= 0 or used_tokens < 0:
            raise HistoryError("window_tokens must be positive and used_tokens not negative")
        with self._lock:
            self.db.execute(
                "INSERT INTO context_usage (session_id, used_tokens, window_tokens, recorded_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
                "used_tokens = excluded.used_tokens, window_tokens = excluded.window_tokens, "
                "recorded_at = excluded.recorded_at",
                (session_id, used_tokens, window_tokens, format_ts(self.clock())),
            )

    @_guarded
    def usage(self, session_id: str) -> tuple[float | None, bool]:
        """The last recorded usage ratio (None if never recorded) and whether a flush ran."""
        with self._lock:
            row = self.db.execute(
                "SELECT used_tokens, window_tokens, flushed_at FROM context_usage "
                "WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        if row is None:
            return None, False
        return row[0] / row[1], row[2] is not None

    @_writing
    def claim_flush(self, session_id: str) -> bool:
        """Mark the session flushed; False if it already was (one flush per session)."""
        with self._lock:
            cursor = self.db.execute(
                "UPDATE context_usage SET flushed_at = ? WHERE session_id = ? "
                "AND flushed_at IS NULL",
                (format_ts(self.clock()), session_id),
            )
        return cursor.rowcount == 1

    # -- recall ----------------------------------------------------------------

    @_guarded
    def recent(
        self,
        limit: int = 20,
        *,
        type: str | None = None,
        task_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[Activity]:
        """Recent activities, newest first (recall_activity list)."""
        clauses, params = self._filters(type, task_id, since, until)
        sql = (
            f"SELECT {_ACTIVITY_COLUMNS} FROM agent_activities WHERE {clauses} "
            "ORDER BY started_at DESC, rowid DESC LIMIT ?"
        )
        with self._lock:
            return [_activity(row) for row in self.db.execute(sql, [*params, limit])]

    @_guarded
    def search(
        self, query: str, limit: int = 10, *, type: str | None = None, since: datetime | None = None
    ) -> list[Activity]:
        """Activities whose label, summary or keywords match ``query``, best first."""
        words = list(dict.fromkeys(w.lower() for w in _WORD_RE.findall(query)))
        if not words:
            return self.recent(limit, type=type, since=since)
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        clauses, params = self._filters(type, None, since, None, alias="a")
        columns = ", ".join("a." + c.strip() for c in _ACTIVITY_COLUMNS.split(","))
        # Rank inside FTS first (a join before the sort costs twice as much on common
        # words); with filters, rank a wider slice, and all of it if that is not enough.
        filtered = clauses != "1"
        for pool in (limit * 20, -1) if filtered else (limit,):
            sql = (
                f"SELECT {columns} FROM (SELECT rowid AS r, bm25(activities_fts, 2.0, 1.0, 1.5) "
                "AS score FROM activities_fts WHERE activities_fts MATCH ? ORDER BY score "
                "LIMIT ?) AS s JOIN agent_activities AS a ON a.rowid = s.r "
                f"WHERE {clauses} ORDER BY s.score, a.started_at DESC LIMIT ?"
            )
            with self._lock:
                found = [
                    _activity(row) for row in self.db.execute(sql, [match, pool, *params, limit])
                ]
            if len(found) >= limit or pool == -1:
                break
        return found

    @_guarded
    def get(self, activity_id: str) -> ActivityDetail | None:
        """One activity with its ordered event logs (recall_activity get)."""
        with self._lock:
            row = self.db.execute(
                f"SELECT {_ACTIVITY_COLUMNS} FROM agent_activities WHERE id = ?", (activity_id,)
            ).fetchone()
            if row is None:
                return None
            logs = self.db.execute(
                "SELECT seq, type, content, metadata FROM agent_activity_logs "
                "WHERE activity_id = ? ORDER BY seq",
                (activity_id,),
            ).fetchall()
        events = tuple(
            LogEvent(seq, t, content, json.loads(meta)) for seq, t, content, meta in logs
        )
        return ActivityDetail(_activity(row), events)

    def _filters(
        self,
        type: str | None,
        task_id: str | None,
        since: datetime | None,
        until: datetime | None,
        alias: str = "",
    ) -> tuple[str, list[object]]:
        prefix = f"{alias}." if alias else ""
        clauses: list[str] = ["1"]
        params: list[object] = []
        for column, value in (("type", type), ("task_id", task_id)):
            if value is not None:
                clauses.append(f"{prefix}{column} = ?")
                params.append(value)
        if since is not None:
            clauses.append(f"{prefix}started_at >= ?")
            params.append(format_ts(since))
        if until is not None:
            clauses.append(f"{prefix}started_at <= ?")
            params.append(format_ts(until))
        return " AND ".join(clauses), params

    # -- copies ----------------------------------------------------------------

    @_guarded
    def snapshot(self, destination: Path) -> None:
        """A consistent copy of the database while others write (SQLite backup API)."""
        destination.parent.mkdir(parents=True, exist_ok=True)
        copy = sqlite3.connect(destination)
        try:
            with self._lock:
                self.db.backup(copy)
        finally:
            copy.close()

    def export_jsonl(self, out: Path) -> int:
        """Every activity (with its logs), mailbox item and decision as JSON Lines, from a
        snapshot; returns how many lines were written."""
        with tempfile.TemporaryDirectory() as tmp:
            snap_path = Path(tmp) / "history.db"
            self.snapshot(snap_path)
            snap = History(snap_path, self.agent_id, self.clock)
            try:
                return _write_jsonl(snap, out)
            finally:
                snap.close()


def _write_jsonl(history: History, out: Path) -> int:
    count = 0
    with out.open("w", encoding="utf-8") as handle:
        ids = [
            row[0] for row in history.db.execute("SELECT id FROM agent_activities ORDER BY rowid")
        ]
        for activity_id in ids:
            detail = history.get(activity_id)
            assert detail is not None
            handle.write(json.dumps({"kind": "activity", **detail.to_dict()}) + "\n")
            count += 1
        for table, kind in (("mailbox_items", "mailbox_item"), ("agent_decisions", "decision")):
            cursor = history.db.execute(f"SELECT * FROM {table} ORDER BY rowid")
            names = [d[0] for d in cursor.description]
            for row in cursor:
                record = dict(zip(names, row, strict=True))
                record["metadata"] = json.loads(record["metadata"])
                handle.write(json.dumps({"kind": kind, **record}) + "\n")
                count += 1
    return count
