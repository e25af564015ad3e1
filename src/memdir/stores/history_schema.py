"""The activity history's schema (named migrations, in order, recorded in the
database) and its record of restarts: each damaged file moved aside, read without
writing anything (``read_restarts``), as ``memdir doctor`` does.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memdir import sqlite
from memdir.readonly import read_only_connection
from memdir.sqlite import run_script
from memdir.timeutil import parse_ts

ACTIVITY_TYPES = ("task", "chat", "heartbeat", "a2a", "internal", "respond_in_session")
LOG_TYPES = ("status", "text", "tool_start", "tool_end", "error", "llm_request")


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


def restarts_in(db: sqlite3.Connection) -> list[Restart]:
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
            return restarts_in(db)
    except sqlite3.Error:
        return []


def read_only_history(path: Path) -> sqlite3.Connection:
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
