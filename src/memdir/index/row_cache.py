"""The rows searches rank, kept in memory while the database does not change.

A search reads the columns of every candidate, some 400 rows each time at the default
depth, and reading them (the texts most of all) and making their dicts was a third of
a search's own time; an agent's searches of one folder mostly meet the same items
again. ``RowCache`` keeps the last ``ROWS_KEPT`` rows read, by id, and reads only the
ones it lacks.

Invariant: a kept row is the database's. Every row is dropped as soon as the
database may have changed: this connection wrote (its ``total_changes`` moved),
another one committed (``PRAGMA data_version`` moved), or the connection is another
(a damaged file was replaced). Each caller gets its own copy of a row's dict.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

ROWS_KEPT = 20_000
"""rows kept: a few searches' candidates over a large folder, a small folder whole"""
CHUNK = 900
"""ids per statement (SQLite builds allow 999 parameters at least)"""


class RowCache:
    """The last ``size`` rows read, by id, valid while the database is unchanged."""

    def __init__(self, columns: Sequence[str], size: int = ROWS_KEPT) -> None:
        self.columns = tuple(columns)
        self.size = size
        self._kept: OrderedDict[int, dict[str, Any]] = OrderedDict()  # least recent first
        self._version: tuple[object, ...] | None = None
        self._select = (
            f"SELECT {', '.join(self.columns)} FROM items JOIN places USING (id) WHERE id IN "
        )

    def rows(self, db: sqlite3.Connection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Each of ``ids``' columns (an id with no row is left out); the caller holds the
        connection's lock."""
        version = (db, db.total_changes, db.execute("PRAGMA data_version").fetchone()[0])
        kept = self._kept
        if version != self._version:
            kept.clear()
            self._version = version
        missing = [item_id for item_id in dict.fromkeys(ids) if item_id not in kept]
        columns = self.columns
        for start in range(0, len(missing), CHUNK):
            chunk = missing[start : start + CHUNK]
            sql = f"{self._select}({','.join('?' * len(chunk))})"
            for values in db.execute(sql, chunk):
                row = dict(zip(columns, values, strict=True))
                kept[row["id"]] = row
        found: dict[int, dict[str, Any]] = {}
        for item_id in ids:
            hit = kept.get(item_id)
            if hit is not None:
                kept.move_to_end(item_id)
                found[item_id] = hit.copy()
        while len(kept) > self.size:
            kept.popitem(last=False)
        return found

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self) -> None:
        self._kept.clear()
        self._version = None
