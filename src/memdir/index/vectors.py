"""Vectors in memory: one float32 matrix per process, kept in step with the index.

The matrix holds a row for every item that has a vector from the current
embedder. It is loaded whole once, then caught up from ``item_log`` (items
added or deleted, vectors arrived) by whichever process made the change, so
a search after a write costs the few changed rows, not a reload. Brute-force
cosine over it is exact; the scale benchmark measures when that stops being
cheap enough.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from memdir.index.db import log_bounds
from memdir.index.embedders import Vectors

_GROW = 1.5


class VectorCache:
    def __init__(self, model: str, dim: int) -> None:
        self.model = model
        self.dim = dim
        self.seq = -1
        self.ids = np.zeros(0, dtype=np.int64)
        self.matrix: Vectors = np.zeros((0, dim), dtype=np.float32)
        self.alive = np.zeros(0, dtype=bool)
        self.size = 0
        self.rows: dict[int, int] = {}
        self._lock = threading.Lock()

    def refresh(self, db: sqlite3.Connection) -> None:
        """Catch up with the index (a full load the first time, after a reset, or after
        the log was trimmed past what this process saw)."""
        with self._lock:
            low, high = log_bounds(db)
            if self.seq < 0 or low > self.seq + 1:
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

    def _load_all(self, db: sqlite3.Connection, seq: int) -> None:
        rows = db.execute(
            "SELECT items.id, vectors.vector FROM items JOIN vectors "
            "ON vectors.vector_key = items.vector_key AND vectors.model = ?",
            (self.model,),
        ).fetchall()
        self.size = 0
        self.rows = {}
        capacity = max(len(rows), 16)
        self.ids = np.zeros(capacity, dtype=np.int64)
        self.matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        self.alive = np.zeros(capacity, dtype=bool)
        self._append(rows)
        self.seq = seq

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
        need = self.size + len(rows)
        if need > len(self.ids):
            capacity = max(int(len(self.ids) * _GROW), need, 16)
            self.ids = np.resize(self.ids, capacity)
            matrix = np.zeros((capacity, self.dim), dtype=np.float32)
            matrix[: self.size] = self.matrix[: self.size]
            self.matrix = matrix
            alive = np.zeros(capacity, dtype=bool)
            alive[: self.size] = self.alive[: self.size]
            self.alive = alive
        for item_id, blob in rows:
            vector = np.frombuffer(blob, dtype=np.float32)
            if vector.shape[0] != self.dim:
                continue  # written by another embedder with the same id: ignore, never crash
            row = self.size
            self.ids[row] = item_id
            self.matrix[row] = vector
            self.alive[row] = True
            self.rows[item_id] = row
            self.size += 1

    def _drop(self, item_id: int) -> None:
        row = self.rows.pop(item_id, None)
        if row is not None:
            self.alive[row] = False

    def top(self, query: Vectors, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` best (item id, cosine) pairs among live rows."""
        with self._lock:
            if self.size == 0:
                return []
            scores: npt.NDArray[np.float32] = self.matrix[: self.size] @ query
            scores = np.where(self.alive[: self.size], scores, -np.inf).astype(np.float32)
            limit = min(limit, int(self.alive[: self.size].sum()))
            if limit <= 0:
                return []
            best = np.argpartition(-scores, limit - 1)[:limit]
            best = best[np.argsort(-scores[best], kind="stable")]
            return [(int(self.ids[row]), float(scores[row])) for row in best]

    def top_among(
        self, query: Vectors, item_ids: Iterable[int], limit: int
    ) -> list[tuple[int, float]]:
        """The ``limit`` best (item id, cosine) pairs among ``item_ids`` only."""
        with self._lock:
            rows = np.fromiter((self.rows[i] for i in item_ids if i in self.rows), dtype=np.int64)
            if rows.size == 0:
                return []
            scores: npt.NDArray[np.float32] = self.matrix[rows] @ query
            limit = min(limit, rows.size)
            best = np.argpartition(-scores, limit - 1)[:limit]
            best = best[np.argsort(-scores[best], kind="stable")]
            return [(int(self.ids[rows[i]]), float(scores[i])) for i in best]

    def __len__(self) -> int:
        return int(self.alive[: self.size].sum())
