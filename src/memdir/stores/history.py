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

A damaged file must not stop the agent: every public method runs through
``HistoryFile.guard`` (``memdir.stores.history_file``), which sets the file aside and
starts a fresh one; the records (``Activity`` and its kin) are in
``memdir.stores.activities``, the export in ``memdir.stores.history_export``, all
re-exported here. An activity being run across a restart is not in the fresh file:
logging to it raises ``HistoryError``.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from memdir.errors import MemdirError
from memdir.results import Notice
from memdir.sqlite import transaction
from memdir.stores.activities import ACTIVITY_COLUMNS, activity_from_row
from memdir.stores.activities import Activity as Activity
from memdir.stores.activities import ActivityDetail as ActivityDetail
from memdir.stores.activities import ActivityRun as ActivityRun
from memdir.stores.activities import run_activity as run_activity
from memdir.stores.history_digest import LogEvent, summarise
from memdir.stores.history_digest import keywords as find_keywords
from memdir.stores.history_export import sqlite_records
from memdir.stores.history_export import write_jsonl as write_jsonl
from memdir.stores.history_file import FOLLOW_SECONDS as FOLLOW_SECONDS
from memdir.stores.history_file import HistoryFile, guarded, writing
from memdir.stores.history_schema import ACTIVITY_TYPES as ACTIVITY_TYPES
from memdir.stores.history_schema import LOG_TYPES as LOG_TYPES
from memdir.stores.history_schema import MIGRATIONS as MIGRATIONS
from memdir.stores.history_schema import Restart as Restart
from memdir.stores.history_schema import read_restarts as read_restarts
from memdir.timeutil import Clock, check_window, format_ts

_WORD_RE = re.compile(r"\w+", re.UNICODE)


class HistoryError(MemdirError, ValueError):
    """A bad call on the history: unknown activity, bad type, an activity ended twice."""


LogEntry = tuple[str, str, "dict[str, Any] | None"]
"""one event for ``log_many``: its type, content and metadata"""


def check_log_entries(events: Sequence[LogEntry]) -> list[tuple[str, str, dict[str, Any], int]]:
    """Each event's type, content (as text), metadata (a copy) and the tokens it spent,
    or a ``HistoryError`` naming a bad type before anything is written."""
    if not events:
        raise HistoryError("log_many needs at least one event")
    checked = []
    for type, content, metadata in events:
        if type not in LOG_TYPES:
            raise HistoryError(f"log type must be one of {', '.join(LOG_TYPES)}")
        meta = dict(metadata or {})
        tokens = meta.get("tokensUsed", meta.get("tokens", 0))
        spent = int(tokens) if isinstance(tokens, (int, float)) else 0
        checked.append((type, str(content), meta, spent))
    return checked


# -- what every backend's history checks and makes (``History``, PostgreSQL's ``PgHistory``)


def log_totals(checked: Sequence[tuple[str, str, dict[str, Any], int]]) -> tuple[int, int]:
    """What checked events add to their activity's totals: the tokens they spent and
    the tool calls they started."""
    tokens = sum(spent for _, _, _, spent in checked)
    tools = sum(1 for type, _, _, _ in checked if type == "tool_start")
    return tokens, tools


def check_activity(type: str, label: str) -> str:
    """A new activity's label, its white space folded, or a ``HistoryError`` naming a
    bad type or a missing label."""
    if type not in ACTIVITY_TYPES:
        raise HistoryError(f"activity type must be one of {', '.join(ACTIVITY_TYPES)}")
    if not isinstance(label, str) or not label.strip():
        raise HistoryError("an activity needs a label saying what it is")
    return " ".join(label.split())


def stamped_id(prefix: str, moment: datetime) -> str:
    """A new record's id: ``prefix-{ms}-{6 hex}`` (``act-{agent}``, ``mail``, ``dec``)."""
    return f"{prefix}-{int(moment.timestamp() * 1000)}-{secrets.token_hex(3)}"


def activity_ending(
    detail: ActivityDetail | None,
    activity_id: str,
    summary: str | None,
    keywords: list[str] | None,
    success: bool,
) -> tuple[str, str]:
    """What ending an activity writes: its summary (white space folded) and keywords
    (comma-separated), made from its logs when not given; a ``HistoryError`` if there
    is no such activity or it has already ended."""
    if detail is None:
        raise HistoryError(f"no activity {activity_id!r}")
    if detail.activity.ended_at is not None:
        raise HistoryError(f"activity {activity_id!r} has already ended")
    found = list(keywords) if keywords is not None else find_keywords(detail.logs)
    text = summary if summary is not None else summarise(
        detail.activity.type, detail.activity.label, detail.logs, success
    )  # fmt: skip
    return " ".join(text.split()), ", ".join(found)


def announce_end(
    ended: ActivityDetail | None, on_end: Callable[[Activity], None] | None
) -> Activity:
    """The activity just ended (read back after the write), told to ``on_end``."""
    assert ended is not None
    if on_end is not None:
        on_end(ended.activity)
    return ended.activity


def check_usage(used_tokens: int, window_tokens: int) -> None:
    """A context usage to record: a positive window, tokens used not negative."""
    if window_tokens <= 0 or used_tokens < 0:
        raise HistoryError("window_tokens must be positive and used_tokens not negative")


def usage_of(row: Sequence[Any] | None) -> tuple[float | None, bool]:
    """A ``context_usage`` row (used, window, flushed_at) as ``usage`` answers it."""
    if row is None:
        return None, False
    return row[0] / row[1], row[2] is not None


ROWS_MAX = 2**31 - 1
"""The most activities a listing returns: a larger limit (``-n 10**30``) asks for them
all, and a LIMIT must fit SQLite's and PostgreSQL's 64-bit integers (times 20)."""


def row_limit(limit: int) -> int:
    """``limit`` as a LIMIT the database takes: at most ``ROWS_MAX``."""
    return min(limit, ROWS_MAX)


def recall_words(query: str) -> list[str]:
    """The distinct words of a recall query, lower-cased, in order."""
    return list(dict.fromkeys(w.lower() for w in _WORD_RE.findall(query)))


def activity_filters(
    type: str | None,
    task_id: str | None,
    since: datetime | None,
    until: datetime | None,
    *,
    prefix: str,
    mark: str,
    moment: Callable[[datetime], object],
) -> tuple[list[str], list[object]]:
    """Recall's filters as SQL conditions on an activity's columns (named ``prefix`` +
    column, each value a ``mark`` placeholder, times as ``moment`` makes them) and
    their parameters, in order; ValueError if ``since`` is later than ``until``."""
    check_window(since, until)
    clauses: list[str] = []
    params: list[object] = []
    for column, value in (("type", type), ("task_id", task_id)):
        if value is not None:
            clauses.append(f"{prefix}{column} = {mark}")
            params.append(value)
    for op, bound in ((">=", since), ("<=", until)):
        if bound is not None:
            clauses.append(f"{prefix}started_at {op} {mark}")
            params.append(moment(bound))
    return clauses, params


class History(HistoryFile):
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
        self.agent_id = agent_id
        self.on_end = on_end
        super().__init__(path, clock, lock=lock, on_notice=on_notice, read_only=read_only)

    # -- writing ---------------------------------------------------------------

    @writing
    def start_activity(self, type: str, label: str, task_id: str | None = None) -> str:
        label = check_activity(type, label)
        now = self.clock()
        with self._lock:
            for attempt in range(8):  # many in one millisecond: draw the suffix again
                activity_id = stamped_id(f"act-{self.agent_id}", now)
                try:
                    self.db.execute(
                        "INSERT INTO agent_activities (id, agent_id, type, label, task_id, "
                        "started_at) VALUES (?, ?, ?, ?, ?, ?)",
                        (activity_id, self.agent_id, type, label, task_id, format_ts(now)),
                    )
                except sqlite3.IntegrityError:
                    if attempt == 7:
                        raise
                    continue
                return activity_id
        raise AssertionError("unreachable")

    def log(
        self, activity_id: str, type: str, content: str, metadata: dict[str, Any] | None = None
    ) -> int:
        """Append one event to an activity's log; returns its sequence number."""
        return self.log_many(activity_id, [(type, content, metadata)])[0]

    @writing
    def log_many(self, activity_id: str, events: Sequence[LogEntry]) -> list[int]:
        """Append events, each ``(type, content, metadata)``, to an activity's log in one
        transaction, in order; their sequence numbers."""
        checked = check_log_entries(events)
        tokens, tools = log_totals(checked)
        with self._lock, transaction(self.db):
            row = self.db.execute(
                "SELECT ended_at FROM agent_activities WHERE id = ?", (activity_id,)
            ).fetchone()
            if row is None:
                raise HistoryError(f"no activity {activity_id!r}")
            first = self.db.execute(
                "SELECT coalesce(max(seq), 0) + 1 FROM agent_activity_logs WHERE activity_id = ?",
                (activity_id,),
            ).fetchone()[0]
            when = format_ts(self.clock())
            self.db.executemany(
                "INSERT INTO agent_activity_logs (activity_id, seq, type, content, metadata, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?)",
                [(activity_id, first + n, type, content, json.dumps(meta, default=str), when)
                 for n, (type, content, meta, _) in enumerate(checked)],
            )  # fmt: skip
            self.db.execute(
                "UPDATE agent_activities SET total_tokens = total_tokens + ?, "
                "total_tools = total_tools + ? WHERE id = ?",
                (tokens, tools, activity_id),
            )
        return [int(first) + n for n in range(len(checked))]

    @writing
    def end_activity(
        self,
        activity_id: str,
        summary: str | None = None,
        keywords: list[str] | None = None,
        success: bool = True,
    ) -> Activity:
        """Close an activity; summary and keywords are computed from its logs if not given."""
        with self._lock:
            text, found = activity_ending(
                self.get(activity_id), activity_id, summary, keywords, success
            )
            self.db.execute(
                "UPDATE agent_activities SET summary = ?, keywords = ?, ended_at = ?, success = ? "
                "WHERE id = ?",
                (text, found, format_ts(self.clock()), int(success), activity_id),
            )
            ended = self.get(activity_id)
        return announce_end(ended, self.on_end)

    @contextmanager
    def activity(self, type: str, label: str, task_id: str | None = None) -> Iterator[ActivityRun]:
        """``with history.activity("task", "Refactor billing") as run: run.log(...)``.

        Ends the activity when the block leaves: as failed, with the exception
        logged, if the block raised (the exception goes on up)."""
        with run_activity(self, type, label, task_id) as run:
            yield run

    @writing
    def receive(
        self,
        source: str,
        content: str,
        kind: str = "message",
        metadata: dict[str, Any] | None = None,
        activity_id: str | None = None,
    ) -> str:
        """Record a mailbox item (what the agent received); returns its id."""
        item_id = stamped_id("mail", self.clock())
        with self._lock:
            self.db.execute(
                "INSERT INTO mailbox_items (id, agent_id, source, kind, content, metadata, "
                "received_at, activity_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (item_id, self.agent_id, source, kind, content, json.dumps(metadata or {}),
                 format_ts(self.clock()), activity_id),
            )  # fmt: skip
        return item_id

    @writing
    def decide(
        self, decision: str, reason: str | None = None, *, mailbox_item_id: str | None = None,
        activity_id: str | None = None, metadata: dict[str, Any] | None = None,
    ) -> str:  # fmt: skip
        """Record what the agent decided (about a mailbox item, in an activity)."""
        decision_id = stamped_id("dec", self.clock())
        with self._lock:
            self.db.execute(
                "INSERT INTO agent_decisions (id, agent_id, mailbox_item_id, activity_id, "
                "decision, reason, metadata, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (decision_id, self.agent_id, mailbox_item_id, activity_id, decision, reason,
                 json.dumps(metadata or {}), format_ts(self.clock())),
            )  # fmt: skip
        return decision_id

    # -- context usage (for the memory flush) ----------------------------------

    @writing
    def record_usage(self, session_id: str, used_tokens: int, window_tokens: int) -> None:
        """How full a session's context was on its last turn."""
        check_usage(used_tokens, window_tokens)
        with self._lock:
            self.db.execute(
                "INSERT INTO context_usage (session_id, used_tokens, window_tokens, recorded_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
                "used_tokens = excluded.used_tokens, window_tokens = excluded.window_tokens, "
                "recorded_at = excluded.recorded_at",
                (session_id, used_tokens, window_tokens, format_ts(self.clock())),
            )

    @guarded
    def usage(self, session_id: str) -> tuple[float | None, bool]:
        """The last recorded usage ratio (None if never recorded) and whether a flush ran."""
        with self._lock:
            row = self.db.execute(
                "SELECT used_tokens, window_tokens, flushed_at FROM context_usage "
                "WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        return usage_of(row)

    @writing
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

    @guarded
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
            f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities WHERE {clauses} "
            "ORDER BY started_at DESC, rowid DESC LIMIT ?"
        )
        with self._lock:
            rows = self.db.execute(sql, [*params, row_limit(limit)])
            return [activity_from_row(row) for row in rows]

    @guarded
    def search(
        self, query: str, limit: int = 10, *, type: str | None = None, since: datetime | None = None
    ) -> list[Activity]:
        """Activities whose label, summary or keywords match ``query``, best first."""
        words, limit = recall_words(query), row_limit(limit)
        if not words:
            return self.recent(limit, type=type, since=since)
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        clauses, params = self._filters(type, None, since, None, alias="a")
        columns = ", ".join("a." + c.strip() for c in ACTIVITY_COLUMNS.split(","))
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
                    activity_from_row(row)
                    for row in self.db.execute(sql, [match, pool, *params, limit])
                ]
            if len(found) >= limit or pool == -1:
                break
        return found

    @guarded
    def unended(self, type: str | None = None) -> list[Activity]:
        """Activities started and not ended, oldest first: running, or left open by a
        process that died (the MCP server ends its own at its next start)."""
        clauses, params = self._filters(type, None, None, None)
        sql = (
            f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities WHERE ended_at IS NULL "
            f"AND {clauses} ORDER BY started_at, rowid"
        )
        with self._lock:
            return [activity_from_row(row) for row in self.db.execute(sql, params)]

    @guarded
    def get(self, activity_id: str) -> ActivityDetail | None:
        """One activity with its ordered event logs (recall_activity get)."""
        with self._lock:
            row = self.db.execute(
                f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities WHERE id = ?", (activity_id,)
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
        return ActivityDetail(activity_from_row(row), events)

    def _filters(
        self,
        type: str | None,
        task_id: str | None,
        since: datetime | None,
        until: datetime | None,
        alias: str = "",
    ) -> tuple[str, list[object]]:
        prefix = f"{alias}." if alias else ""
        clauses, params = activity_filters(
            type, task_id, since, until, prefix=prefix, mark="?", moment=format_ts
        )
        return " AND ".join(["1", *clauses]), params

    # -- copies ----------------------------------------------------------------

    @guarded
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
                return write_jsonl(snap, out, sqlite_records(snap))
            finally:
                snap.close()
