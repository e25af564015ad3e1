"""Vectors in memory: one float32 matrix per process, kept in step with the index.

The matrix holds a row for every item that has a vector from the current
embedder. It is loaded whole once, then caught up from ``item_log`` (items
added or deleted, vectors arrived) by whichever process made the change, so
a search after a write costs the few changed rows, not a reload. Brute-force
cosine over it is exact; the scale benchmark measures when that stops being
cheap enough.

PostgreSQL's index keeps one of these per agent too (``storage.postgres.vector_cache``),
fed by ``load`` and ``update`` from its own log of changed items, with no copy on disk.

Loading whole reads the copy on disk (``index.matrix``) when it is sound and
the log still reaches back to it, and catches up from there: one read, no row by
row. Otherwise the rows come from SQLite, a batch at a time into one array, and
the copy is written afresh; it is rewritten too once catching up from it costs
more than ``_STALE_SHARE`` of its rows.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memdir.index import matrix as disk
from memdir.index.blas import single_thread
from memdir.index.db import log_bounds
from memdir.index.embedders import Vectors

_GROW = 1.5
_BATCH = 4096  # rows fetched at a time by a load from SQLite
_STALE_SHARE = 0.05  # rewrite the copy on disk once this share of rows came from the log
_STALE_MIN = 1000
_CHECKED = 64  # log entries before the file's position whose rows are checked against SQLite


class VectorCache:
    def __init__(
        self, model: str, dim: int, path: Path | None = None, *, keep: bool = True
    ) -> None:
        self.model = model
        self.dim = dim
        self.path = path
        """the copy of the matrix on disk (None: none is read or kept)"""
        self.keep = keep
        """whether to write that copy (a read-only folder's is read, never written)"""
        self.seq = -1
        self.ids = np.zeros(0, dtype=np.int64)
        self.matrix: Vectors = np.zeros((0, dim), dtype=np.float32)
        self.alive = np.zeros(0, dtype=bool)
        self.size = 0
        self._rows: dict[int, int] | None = {}
        self._lock = threading.Lock()
        self._behind = 0  # rows caught up from the log since the copy on disk was made
        self._writer: threading.Thread | None = None

    def refresh(self, db: sqlite3.Connection) -> None:
        """Catch up with the index (a full load the first time, after a reset, or after
        the log was trimmed past what this process saw)."""
        with self._lock:
            low, high = log_bounds(db)
            if (self.seq < 0 or low > self.seq + 1) and not self._read(db, low):
                self._load_all(db, high)
                return
            if high == self.seq:
                return
            changes = db.execute(
                "SELECT item_id, op FROM item_log WHERE seq > ? ORDER BY seq", (self.seq,)
            ).fetchall()
            if any(op == "reset" for _, op in changes):
                self._load_all(db, high)
                return
            wanted: set[int] = set()
            for item_id, op in changes:
                if op == "del":
                    self._drop(item_id)
                    wanted.discard(item_id)
                else:
                    wanted.add(item_id)
            self._add(db, wanted)
            self.seq = high
            self._behind += len(wanted)
            if self._behind > max(_STALE_MIN, int(len(self) * _STALE_SHARE)):
                self._write(db)

    def _load_all(self, db: sqlite3.Connection, seq: int) -> None:
        """Every row from SQLite, a batch at a time into one array; then the copy on disk."""
        (count,) = db.execute("SELECT count(*) FROM items").fetchone()  # at most this many
        capacity = max(int(count * _GROW), 16)  # zero pages: room to grow costs no memory
        self.size = 0
        self._rows = None
        self.ids = np.zeros(capacity, dtype=np.int64)
        self.matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        self.alive = np.zeros(capacity, dtype=bool)
        cursor = db.execute(
            "SELECT items.id, vectors.vector FROM items JOIN vectors "
            "ON vectors.vector_key = items.vector_key AND vectors.model = ?",
            (self.model,),
        )
        while batch := cursor.fetchmany(_BATCH):
            self._append(batch)
        self.seq = seq
        self._write(db)

    @property
    def rows(self) -> dict[int, int]:
        """Item id -> row, built when first needed (a search over every row never does)."""
        if self._rows is None:
            live = np.flatnonzero(self.alive[: self.size])
            self._rows = dict(zip(self.ids[live].tolist(), live.tolist(), strict=True))
        return self._rows

    def _stamp(self, db: sqlite3.Connection, seq: int) -> disk.Stamp | None:
        """What the copy on disk for log position ``seq`` must name (None: keep none)."""
        if self.path is None or seq <= 0:
            return None
        row = db.execute("SELECT value FROM meta WHERE key = 'database_id'").fetchone()
        entry = db.execute("SELECT item_id, op FROM item_log WHERE seq = ?", (seq,)).fetchone()
        if row is None or entry is None:
            return None
        return disk.Stamp(str(row[0]), self.model, self.dim, seq, (int(entry[0]), str(entry[1])))

    def _read(self, db: sqlite3.Connection, low: int) -> bool:
        """Load the copy on disk if it is this index's and the log still reaches back to
        it with no reset since; the caller catches up from its position."""
        if self.path is None:
            return False
        row = db.execute("SELECT value FROM meta WHERE key = 'database_id'").fetchone()
        if row is None:
            return False
        found = disk.read(self.path, str(row[0]), self.model, self.dim, _GROW)
        if (
            found is None
            or found.stamp.seq < low
            or found.stamp != self._stamp(db, found.stamp.seq)
        ):
            return False
        reset = db.execute(
            "SELECT 1 FROM item_log WHERE seq > ? AND op = 'reset' LIMIT 1", (found.stamp.seq,)
        ).fetchone()
        if reset is not None or not self._agrees(db, found):
            return False
        capacity = len(found.matrix)
        self.ids = np.zeros(capacity, dtype=np.int64)
        self.ids[: found.rows] = found.ids
        self.matrix = found.matrix
        self.alive = np.zeros(capacity, dtype=bool)
        self.alive[: found.rows] = True
        self.size = found.rows
        self._rows = None
        self.seq = found.stamp.seq
        self._behind = 0
        return True

    def _agrees(self, db: sqlite3.Connection, found: disk.Loaded) -> bool:
        """Whether the items logged last before the file's position have the rows SQLite
        has. A database that lost its last transactions (a power cut) or was put back
        from a copy can reach the same log position and entry by another history: then
        its latest items are other texts, with other vectors."""
        seq = found.stamp.seq
        recent = [
            int(item_id)
            for (item_id,) in db.execute(
                "SELECT DISTINCT item_id FROM item_log WHERE seq <= ? AND seq > ? "
                "AND op IN ('add', 'vec')",
                (seq, seq - _CHECKED),
            )
        ]
        ids = found.ids
        where = np.flatnonzero(np.isin(ids, np.array(recent, dtype=np.int64)))
        if where.size == 0:
            return True
        held = {int(ids[row]): found.matrix[row].tobytes() for row in where}
        marks = ",".join("?" * len(held))
        rows = db.execute(
            f"SELECT items.id, vectors.vector FROM items JOIN vectors "
            f"ON vectors.vector_key = items.vector_key AND vectors.model = ? "
            f"WHERE items.id IN ({marks})",
            (self.model, *held),
        ).fetchall()
        return all(held.get(int(item_id)) == bytes(blob) for item_id, blob in rows)

    def _write(self, db: sqlite3.Connection) -> None:
        """Write the copy on disk in a thread of its own: the search that loaded the rows
        does not wait for it, and the process does not exit before it is done. The rows
        it writes never change (new ones go after them, a grown matrix is a new array);
        which are alive is copied now."""
        self._behind = 0
        stamp = self._stamp(db, self.seq)
        if stamp is None or self.path is None or not self.keep:
            return
        size = self.size
        rows = (self.path, stamp, self.ids[:size], self.matrix[:size], self.alive[:size].copy())
        self.flush()  # one at a time
        self._writer = threading.Thread(target=disk.write, args=rows, name="memdir-vectors")
        self._writer.start()

    def flush(self) -> None:
        """Wait until the copy on disk being written (if any) is there."""
        if self._writer is not None:
            self._writer.join()
            self._writer = None

    def _add(self, db: sqlite3.Connection, item_ids: Iterable[int]) -> None:
        fresh = [item_id for item_id in item_ids if item_id not in self.rows]
        for start in range(0, len(fresh), 500):
            chunk = fresh[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = db.execute(
                f"SELECT items.id, vectors.vector FROM items JOIN vectors "
                f"ON vectors.vector_key = items.vector_key AND vectors.model = ? "
                f"WHERE items.id IN ({marks})",
                (self.model, *chunk),
            ).fetchall()
            self._append(rows)

    def _append(self, rows: list[tuple[int, bytes]]) -> None:
        width = self.dim * 4
        rows = [row for row in rows if len(row[1]) == width]  # another embedder's: skip
        self._grow(self.size + len(rows))
        if not rows:
            return
        block = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
        self._append_block([item_id for item_id, _ in rows], block.reshape(len(rows), self.dim))

    def _append_block(self, ids: list[int], block: Vectors) -> None:
        """``block``'s rows (of item ``ids``) after the rows held, room made already."""
        start, end = self.size, self.size + len(ids)
        self.matrix[start:end] = block
        self.ids[start:end] = ids
        self.alive[start:end] = True
        if self._rows is not None:
            self._rows.update(zip(ids, range(start, end), strict=True))
        self.size = end

    def load(self, ids: list[int], block: Vectors) -> None:
        """Hold exactly these rows (``block``, of item ``ids``): a whole load from a store
        with no log of its own here (PostgreSQL's ``vector_cache``)."""
        with self._lock:
            capacity = max(int(len(ids) * _GROW), 16)
            self.size = 0
            self._rows = None  # built when first needed
            self.ids = np.zeros(capacity, dtype=np.int64)
            self.matrix = np.zeros((capacity, self.dim), dtype=np.float32)
            self.alive = np.zeros(capacity, dtype=bool)
            self._grow(len(ids))
            self._append_block(ids, block)

    def update(self, gone: Iterable[int], ids: list[int], block: Vectors) -> None:
        """Drop the rows of items ``gone`` and of ``ids``, then add ``block`` (the new
        rows of ``ids``): a catch-up from a store with no log here."""
        with self._lock:
            for item_id in (*gone, *ids):
                self._drop(item_id)
            live = int(self.alive[: self.size].sum())
            if self.size > 2 * live + 64:  # mostly dead rows, which every scan reads: pack
                keep = np.flatnonzero(self.alive[: self.size])
                self.ids[: keep.size] = self.ids[keep]
                self.matrix[: keep.size] = self.matrix[keep]
                self.alive[: self.size] = False
                self.alive[: keep.size] = True
                self.size = int(keep.size)
                self._rows = None
            self._grow(self.size + len(ids))
            if ids:
                self._append_block(ids, block)

    def _grow(self, need: int) -> None:
        if need > len(self.ids):
            capacity = max(int(len(self.ids) * _GROW), need, 16)
            self.ids = np.resize(self.ids, capacity)
            matrix = np.zeros((capacity, self.dim), dtype=np.float32)
            matrix[: self.size] = self.matrix[: self.size]
            self.matrix = matrix
            alive = np.zeros(capacity, dtype=bool)
            alive[: self.size] = self.alive[: self.size]
            self.alive = alive

    @property
    def nbytes(self) -> int:
        """The memory its arrays' rows in use hold (the room to grow is untouched pages)."""
        return self.size * (self.dim * 4 + 8 + 1)

    def _drop(self, item_id: int) -> None:
        row = self.rows.pop(item_id, None)
        if row is not None:
            self.alive[row] = False

    def top(self, query: Vectors, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` best (item id, cosine) pairs among live rows."""
        with self._lock:
            if self.size == 0:
                return []
            single_thread()
            scores: npt.NDArray[np.float32] = self.matrix[: self.size] @ query
            scores = np.where(self.alive[: self.size], scores, -np.inf).astype(np.float32)
            limit = min(limit, int(self.alive[: self.size].sum()))
            if limit <= 0:
                return []
            best = _best(scores, self.ids[: self.size], limit)
            return list(zip(self.ids[best].tolist(), scores[best].tolist(), strict=True))

    def top_among(
        self, query: Vectors, item_ids: Iterable[int], limit: int
    ) -> list[tuple[int, float]]:
        """The ``limit`` best (item id, cosine) pairs among ``item_ids`` only."""
        with self._lock:
            rows = np.fromiter((self.rows[i] for i in item_ids if i in self.rows), dtype=np.int64)
            if rows.size == 0:
                return []
            single_thread()
            scores: npt.NDArray[np.float32] = self.matrix[rows] @ query
            limit = min(limit, rows.size)
            best = _best(scores, self.ids[rows], limit)
            return [(int(self.ids[rows[i]]), float(scores[i])) for i in best]

    def __len__(self) -> int:
        return int(self.alive[: self.size].sum())


def _best(scores: npt.NDArray[np.float32], ids: npt.NDArray[np.int64], limit: int) -> Any:
    """The positions of the ``limit`` best ``scores``, best first, equal scores by item id
    (as PostgreSQL's ``ORDER BY distance, id`` has them, so both backends agree on ties)."""
    kth = scores[np.argpartition(-scores, limit - 1)[:limit]].min()
    pool = np.flatnonzero(scores >= kth)  # the best, and every tie at the last place
    return pool[np.lexsort((ids[pool], -scores[pool]))[:limit]]
