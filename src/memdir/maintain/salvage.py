"""Rows read back from a damaged history file into the live one (``memdir doctor --repair``).

Python's ``sqlite3`` has no ``.recover``, and ``iterdump`` stops at the first bad page,
so a table is read by rowid windows (``WINDOW`` rows a query); a window that fails is
halved until the rows that cannot be read are found one by one, and skipped. Runs of
failed windows (a truncated file's missing half) are not halved again after
``GIVE_UP_SPLITTING``. The schema is read with ``writable_schema`` on, so one broken
entry does not hide the tables beside it.

Invariants:
- The damaged file is never written: it is copied (with its ``-wal``, whose committed
  frames count) to a temporary folder and read there.
- Rows go in with ``INSERT OR IGNORE`` on each table's primary key, without their old
  rowids, so a second run adds nothing and rows the fresh history gained since keep
  theirs. A log whose activity could not be read is lost (its activity is required);
  a mailbox item's or decision's dangling reference is set to NULL so the row is kept.
- What was recovered and what was lost, table by table, is returned and recorded in
  the live history's ``history_restarts``.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.sqlite import SIDECARS, transaction
from memdir.timeutil import format_ts

if TYPE_CHECKING:
    from memdir.stores.history import History

# In the order they refer to each other; FTS tables are rebuilt by the triggers.
TABLES = (
    "agent_activities",
    "agent_activity_logs",
    "mailbox_items",
    "agent_decisions",
    "context_usage",
    "history_restarts",
)
NULLABLE_REFERENCES = {
    "mailbox_items": ("activity_id",),
    "agent_decisions": ("mailbox_item_id", "activity_id"),
}
WINDOW = 256
GIVE_UP_SPLITTING = 4  # whole windows failed in a row: the rest of the run is not halved
TAIL_WINDOWS = 64  # with no readable max(rowid): windows tried past the last row found


@dataclass
class TableSalvage:
    table: str
    read: int = 0
    """rows read from the damaged file"""
    recovered: int = 0
    """rows added to the live history by this run"""
    present: int = 0
    """rows the live history already had (an earlier run, or written since)"""
    lost: int = 0
    """rows that could not be read, or could not be put back"""
    note: str = ""

    def summary(self) -> str:
        text = f"{self.table}: {self.recovered} recovered"
        if self.present:
            text += f", {self.present} already there"
        text += f", {self.lost} lost"
        return text + (f" ({self.note})" if self.note else "")


@dataclass
class Salvage:
    source: str
    tables: list[TableSalvage] = field(default_factory=list)
    error: str | None = None
    """why nothing could be read at all (the file's first page is gone), or None"""

    @property
    def recovered(self) -> int:
        return sum(t.recovered for t in self.tables)

    @property
    def lost(self) -> int:
        return sum(t.lost for t in self.tables)

    def table(self, name: str) -> TableSalvage | None:
        return next((t for t in self.tables if t.table == name), None)

    def summary(self) -> str:
        if self.error is not None:
            return f"{self.source}: nothing could be read ({self.error})"
        shown = [t.summary() for t in self.tables if t.read or t.lost]
        return f"{self.source}: " + ("; ".join(shown) or "no rows in it could be read")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@contextlib.contextmanager
def opened_copy(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to a copy of ``path`` (and its ``-wal``) in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="memdir-salvage-") as tmp:
        copy = Path(tmp) / "damaged.db"
        shutil.copyfile(path, copy)
        for suffix in SIDECARS[:1]:  # -wal only: SQLite rebuilds the -shm index from it
            sidecar = path.with_name(path.name + suffix)
            if sidecar.is_file():
                shutil.copyfile(sidecar, copy.with_name(copy.name + suffix))
        db = sqlite3.connect(copy, isolation_level=None)
        try:
            db.execute("PRAGMA writable_schema = ON")  # a broken entry hides only itself
            yield db
        finally:
            db.close()


def _one(db: sqlite3.Connection, sql: str, empty: int = 0) -> int | None:
    """The one number ``sql`` selects (``empty`` if NULL), or None if it cannot be read."""
    try:
        value = db.execute(sql).fetchone()[0]
    except sqlite3.DatabaseError:
        return None
    return int(value) if value is not None else empty


class TableReader:
    """One table of a damaged file, read window by window: iterate ``rows()``, then
    ``failed`` is how many rowids could not be read and ``note`` says if its end was lost."""

    def __init__(self, db: sqlite3.Connection, table: str, columns: list[str]) -> None:
        self.db = db
        self.table = table
        names = ", ".join(f'"{c}"' for c in columns)
        self.sql = (
            f'SELECT rowid, {names} FROM "{table}" WHERE rowid BETWEEN ? AND ? ORDER BY rowid'
        )
        self.failed = 0
        self.note = ""
        self._failed_windows = 0

    def _read(self, low: int, high: int, split: bool) -> list[tuple[Any, ...]]:
        try:
            return self.db.execute(self.sql, (low, high)).fetchall()
        except sqlite3.DatabaseError:
            if low == high or not split:
                self.failed += high - low + 1
                return []
            middle = (low + high) // 2
            return self._read(low, middle, True) + self._read(middle + 1, high, True)

    def _window(self, low: int) -> list[tuple[Any, ...]]:
        before = self.failed
        rows = self._read(low, low + WINDOW - 1, self._failed_windows < GIVE_UP_SPLITTING)
        whole = not rows and self.failed - before == WINDOW
        self._failed_windows = self._failed_windows + 1 if whole else 0
        return rows

    def rows(self) -> Iterator[tuple[Any, ...]]:
        """Every readable row (its columns, without the rowid), in rowid order."""
        top = _one(self.db, f'SELECT max(rowid) FROM "{self.table}"')
        low = _one(self.db, f'SELECT min(rowid) FROM "{self.table}"', 1) or 1
        last_found = low - 1
        while top is None or low <= top:
            if top is None and low > last_found + TAIL_WINDOWS * WINDOW:
                # The rowids tried past the last row found were probably never there.
                self.failed = max(0, self.failed - (low - 1 - last_found))
                self.note = f"its end could not be read: nothing after rowid {last_found}"
                return
            for row in self._window(low):
                last_found = max(last_found, int(row[0]))
                yield row[1:]
            low += WINDOW


def _columns(db: sqlite3.Connection, table: str) -> list[str]:
    return [str(row[1]) for row in db.execute(f'PRAGMA table_info("{table}")').fetchall()]


def count_readable(path: Path, table: str = "agent_activities") -> int | None:
    """How many rows of ``table`` can be read from the damaged file (None: none at all)."""
    try:
        with opened_copy(path) as db:
            columns = _columns(db, table)
            if not columns:
                return None
            return sum(1 for _ in TableReader(db, table, columns[:1]).rows())
    except (sqlite3.DatabaseError, OSError):
        return None


def salvage_history(history: History, source: Path, *, label: str | None = None) -> Salvage:
    """Read what can be read from the damaged history file ``source`` into ``history``."""
    report = Salvage(label or source.name)
    try:
        with opened_copy(source) as damaged:
            for table in TABLES:
                report.tables.append(_salvage_table(damaged, history, table))
    except (sqlite3.DatabaseError, OSError) as exc:
        report.error = str(exc)
        report.tables = []
    return report


def _salvage_table(damaged: sqlite3.Connection, history: History, table: str) -> TableSalvage:
    result = TableSalvage(table)
    live = _columns(history.db, table)
    try:
        have = set(_columns(damaged, table))
    except sqlite3.DatabaseError as exc:
        result.note = f"its schema could not be read: {exc}"
        return result
    if not have:
        result.note = "not in the damaged file"
        return result
    columns = [c for c in live if c in have]
    total = _one(damaged, f'SELECT count(*) FROM "{table}"')  # an index may still count them
    names = ", ".join(f'"{c}"' for c in columns)
    insert = f'INSERT OR IGNORE INTO "{table}" ({names}) VALUES ({", ".join("?" * len(columns))})'
    nullable = [columns.index(c) for c in NULLABLE_REFERENCES.get(table, ()) if c in columns]
    reader = TableReader(damaged, table, columns)
    with history._lock, transaction(history.db):
        for row in reader.rows():
            result.read += 1
            try:
                added = history.db.execute(insert, row).rowcount
            except sqlite3.IntegrityError:
                if not nullable:
                    result.lost += 1  # a log whose activity is gone
                    continue
                kept = list(row)
                for position in nullable:
                    kept[position] = None
                added = history.db.execute(insert, kept).rowcount
            if added:
                result.recovered += 1
            else:
                result.present += 1
    known = total is not None and total >= result.read
    result.lost += total - result.read if total is not None and known else reader.failed
    result.note = reader.note
    return result


def record(history: History, salvage: Salvage, moved_to: str, reason: str) -> None:
    """Mark ``moved_to`` salvaged in the live history (adding its restart if missing)."""
    now = format_ts(history.clock())
    with history._lock, transaction(history.db):
        history.db.execute(
            "INSERT OR IGNORE INTO history_restarts (moved_to, reason, restarted_at) "
            "VALUES (?, ?, ?)",
            (moved_to, reason, now),
        )
        history.db.execute(
            "UPDATE history_restarts SET salvaged_at = ?, salvage = ? WHERE moved_to = ?",
            (now, json.dumps(salvage.to_dict(), sort_keys=True), moved_to),
        )
