"""SQLite plumbing shared by the index and the activity history.

- ``connect``: WAL, a busy timeout, foreign keys, autocommit (transactions are explicit).
- ``transaction``: ``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` when the block raises.
- ``migrate``: named, ordered schema steps, each in its own transaction, recorded in
  a ``migrations`` table; two processes opening a fresh database apply each once.
- ``run_script``: several statements inside the caller's transaction
  (``executescript`` would commit it first).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

Migration = Callable[[sqlite3.Connection], None]


def connect(path: Path, migrations: Sequence[tuple[str, Migration]]) -> sqlite3.Connection:
    """Open (creating if need be) the database at ``path`` with its schema up to date."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA foreign_keys = ON")
    migrate(db, migrations)
    return db


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` if the block raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def run_script(db: sqlite3.Connection, script: str) -> None:
    """Execute each statement of ``script`` inside the caller's transaction."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"incomplete SQL statement: {statement.strip()[:60]}")


def migrate(db: sqlite3.Connection, migrations: Sequence[tuple[str, Migration]]) -> list[str]:
    """Apply the migrations not yet recorded, in order; return their names."""
    db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    applied = {row[0] for row in db.execute("SELECT name FROM migrations")}
    done = []
    for name, step in migrations:
        if name in applied:
            continue
        with transaction(db):
            if db.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchone():
                continue  # another process applied it while we waited for the lock
            step(db)
            db.execute(
                "INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                (name, datetime.now(UTC).isoformat(timespec="seconds")),
            )
            done.append(name)
    return done
