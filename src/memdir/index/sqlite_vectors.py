"""The vectors of the index's rows in SQLite: ``SqliteVectors``, ``SqliteRows``' base.

As ``storage.postgres.writes.IndexWrites`` is ``PgIndex``'s base, this class is the
vector half of ``index.sqlite_rows.SqliteRows`` (which adds the rows, their layouts,
the damaged-file guard and the other primitives): the ``vectors`` table (one vector
per text and embedder, by ``vector_key``), the vectors in memory (``VectorCache``,
with their copy on disk, made on first use: a process that never searches does
without numpy) and the vector primitive.

- ``ensure_vectors`` embeds the texts with no vector, checking after the first call
  only the items logged since (``item_log``), and commits each batch as a write of
  the rows (under ``lock``, the layouts checked: ``SqliteRows._changing``).
- ``semantic`` scores the vectors in memory: a filter letting through at most
  ``SELECTIVE_SHARE`` of the items is applied before the scan (only its items are
  scored), a looser one after it (widened to every match if too few are left).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.config import STATE_DIR
from memdir.index import windows
from memdir.index.db import log_bounds
from memdir.index.embedders import Embedder
from memdir.results import Progress
from memdir.storage.seam import Pairs, Scope

if TYPE_CHECKING:
    from memdir.index.embedders import Vectors
    from memdir.index.vectors import VectorCache

_CHUNK = 900  # keys per statement (SQLite builds allow 999 parameters at least)
EMBED_BATCH = 256
BUDGET_BATCH = 64  # under a time budget: small batches, so it is kept to closely
SELECTIVE_SHARE = 0.25
"""a filter letting through at most this share of the items is applied before the
vector scan (score only its items) rather than after it"""
SCAN_FACTOR = 4
"""a looser filter is checked on the vector scan's best by reading every item it lets
through, not each of them by id, in a folder of at most this many items per candidate"""


def where_sql(scope: Scope) -> tuple[str, list[object]]:
    """``Filters.sql`` for ``scope`` (items as ``i``)."""
    return scope.filters.sql(scope.decay, scope.now, wide=scope.wide)


class SqliteVectors:
    """One memory folder's vectors in ``index.db`` (``IndexRows``' vector methods)."""

    db: sqlite3.Connection
    """the rows' connection (``SqliteRows.open``)"""
    _seen: int | None
    """item_log's end as the last write left it (``SqliteRows``' layouts)"""

    def __init__(
        self, path: Path, root: Path, embedder: Embedder | None, lock: threading.RLock
    ) -> None:
        self.path = path
        self.root = root
        self.embedder = embedder
        self.lock = lock
        self._vectors: VectorCache | None = None  # built on first use: it needs numpy
        self._vectors_seen: int | None = None  # item_log position ensure_vectors has covered

    # -- what the rows give it (``SqliteRows``) ---------------------------------

    def _changing(self) -> AbstractContextManager[None]:
        """A transaction that changes rows (the layouts dropped if it fails)."""
        raise NotImplementedError

    def _check_seen(self) -> None:
        """In a transaction, before rows change: the layouts checked."""
        raise NotImplementedError

    def _log_head(self) -> int | None:
        raise NotImplementedError

    def allowed(self, ids: Sequence[int], scope: Scope) -> set[int]:
        raise NotImplementedError

    # -- the vectors in memory ---------------------------------------------------

    def _flush_vectors(self) -> None:
        """Their copy on disk brought up to date (at ``close``)."""
        if self._vectors is not None:  # never made: nothing to keep
            self._vectors.flush()

    def _forget_vectors(self) -> None:
        """Another database (a mended file): the next search loads its vectors."""
        self._vectors = None
        self._vectors_seen = None

    @property
    def vectors(self) -> VectorCache | None:
        """The vectors in memory (None without an embedder), made on first use: a
        process that writes and never searches does without numpy."""
        if self._vectors is None and self.embedder is not None:
            with self.lock:  # one cache, however many threads ask first
                if self._vectors is None:
                    self._vectors = self._vector_cache()
        return self._vectors

    def _vector_cache(self) -> VectorCache | None:
        """The vectors in memory, with their copy beside the folder's index: a read-only
        folder's private copy of the index (the same database) reads it, never writes."""
        if self.embedder is None:
            return None
        from memdir.index.matrix import matrix_path
        from memdir.index.vectors import VectorCache

        own = self.root / STATE_DIR / "index.db"
        path = matrix_path(own, self.embedder.id)
        return VectorCache(self.embedder.id, self.embedder.dim, path, keep=self.path == own)

    # -- embedding -------------------------------------------------------------

    def ensure_vectors(
        self, embedder: Embedder, progress: Progress | None = None, *, seconds: float | None = None
    ) -> int:
        """Embed every item text that has no vector from ``embedder``; return how many.

        After the first call only the items logged since the last one are checked,
        so a search after no write costs one lookup of the log's end. The texts
        missing a vector are listed once, then embedded and committed
        ``EMBED_BATCH`` at a time: a run stopped part-way (killed, Ctrl-C) keeps
        what it embedded, and the next call embeds the rest only. With
        ``seconds``, stop after the batch that passes it (in batches of
        ``BUDGET_BATCH``); the next call goes on from there.
        """
        done = 0
        began = time.monotonic()
        with self.lock:
            low, high = log_bounds(self.db)
            seen = self._vectors_seen
            if seen is not None and high == seen:
                return 0
            whole = (
                seen is None
                or low > seen + 1
                or self.db.execute(
                    "SELECT 1 FROM item_log WHERE seq > ? AND op = 'reset' LIMIT 1", (seen,)
                ).fetchone()
                is not None
            )
            since = None if whole else seen
            if seconds is not None:  # a search: a batch or a few, each looked up afresh
                while True:
                    rows = self._missing_vectors(embedder, since, BUDGET_BATCH)
                    if not rows:
                        break
                    done += self._store_vectors(embedder, rows)
                    if progress is not None:
                        progress(done, done)
                    if time.monotonic() - began >= seconds:
                        return done  # the log position stays: the next call looks again
            else:  # all of them: one look-up, not one per batch (each rescanned the done)
                rows = self._missing_vectors(embedder, since, None)
                for start in range(0, len(rows), EMBED_BATCH):
                    done += self._store_vectors(embedder, rows[start : start + EMBED_BATCH])
                    if progress is not None:
                        progress(start + len(rows[start : start + EMBED_BATCH]), len(rows))
            # Items another process adds from now on are past ``high``: the next call sees them.
            self._vectors_seen = high
        return done

    def vector_counts(self, model: str) -> tuple[int, int]:
        """(texts with a vector from ``model``, texts)."""
        with self.lock:
            total, embedded = self.db.execute(
                "SELECT count(*), count(v.vector_key) FROM (SELECT DISTINCT vector_key FROM "
                "items) AS i LEFT JOIN vectors AS v ON v.vector_key = i.vector_key "
                "AND v.model = ?",
                (model,),
            ).fetchone()
        return int(embedded), int(total)

    def vectors_ready(self, model: str) -> bool:
        """Catch the vectors in memory up with the index; True when there are any."""
        vectors = self.vectors
        if vectors is None or vectors.model != model:
            return False
        vectors.refresh(self.db)
        return len(vectors) > 0

    def _missing_vectors(
        self, embedder: Embedder, since: int | None, limit: int | None
    ) -> list[tuple[str, int]]:
        """(vector key, an item id) with no vector for this embedder, up to ``limit``."""
        missing = (
            "NOT EXISTS (SELECT 1 FROM vectors AS v WHERE v.vector_key = i.vector_key "
            "AND v.model = ?)"
        )
        if since is None:
            sql = f"SELECT i.vector_key, min(i.id) FROM items AS i WHERE {missing} "
            params: tuple[object, ...] = (embedder.id,)
        else:
            sql = (
                f"SELECT i.vector_key, min(i.id) FROM item_log AS l JOIN items AS i "
                f"ON i.id = l.item_id WHERE l.seq > ? AND l.op = 'add' AND {missing} "
            )
            params = (since, embedder.id)
        # In the order the items were read: a batch holds whole files, so the windows it
        # runs are its own (in hash order the first batch ran about half of all of them).
        sql += "GROUP BY i.vector_key ORDER BY min(i.id) LIMIT ?"
        limited = (*params, -1 if limit is None else limit)
        return [(str(key), int(item_id)) for key, item_id in self.db.execute(sql, limited)]

    def _store_vectors(self, embedder: Embedder, rows: list[tuple[str, int]]) -> int:
        """Embed and commit one batch; how many vectors it wrote (an item deleted since
        it was listed is passed over)."""
        texts = self.embed_texts([item_id for _, item_id in rows])
        rows = [row for row in rows if row[1] in texts]
        if not rows:
            return 0
        made, embedded = windows.embed_missing(
            embedder,
            [(key, texts[item_id]) for key, item_id in rows],
            lambda wanted: self._window_runs([item_id for _, item_id in rows], wanted),
            lambda keys: self._have_vectors(embedder.id, keys),
            lambda keys: self._stored_vectors(embedder.id, keys),
        )
        if not made:
            return 0
        keys = list(made)
        matrix = list(made.values())
        with self._changing():
            self._check_seen()
            self.db.executemany(
                "INSERT OR IGNORE INTO vectors (vector_key, model, dim, vector) "
                "VALUES (?, ?, ?, ?)",
                [
                    (key, embedder.id, embedder.dim, vector.tobytes())
                    for key, vector in zip(keys, matrix, strict=True)
                ],
            )
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                self.db.execute(
                    f"INSERT INTO item_log (item_id, op) SELECT id, 'vec' FROM items "
                    f"WHERE vector_key IN ({marks})",
                    chunk,
                )
            self._seen = self._log_head()
        return embedded

    def _window_runs(self, ids: list[int], wanted: set[str]) -> list[windows.Run]:
        """The runs of the windows of the files of ``ids`` holding a key of ``wanted``."""
        with self.lock:
            marks = ",".join("?" * len(ids))
            paths = [
                path
                for (path,) in self.db.execute(
                    f"SELECT DISTINCT path FROM items WHERE id IN ({marks})", ids
                )
            ]
            return [
                run
                for path in paths
                for run in windows.file_runs(
                    [(text, key) for _, text, key in windows.file_entries(self.db, path)], wanted
                )
            ]

    def _stored_vectors(self, model: str, keys: list[str]) -> dict[str, Any]:
        """The vectors from ``model`` of those of ``keys`` with one."""
        import numpy as np

        found: dict[str, Any] = {}
        with self.lock:
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                found.update(
                    (key, np.frombuffer(blob, dtype=np.float32))
                    for key, blob in self.db.execute(
                        f"SELECT vector_key, vector FROM vectors WHERE model = ? "
                        f"AND vector_key IN ({marks})",
                        (model, *chunk),
                    )
                )
        return found

    def _have_vectors(self, model: str, keys: list[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            found.update(
                key
                for (key,) in self.db.execute(
                    f"SELECT vector_key FROM vectors WHERE model = ? AND vector_key IN ({marks})",
                    (model, *chunk),
                )
            )
        return found

    def embed_texts(self, item_ids: list[int]) -> dict[int, str]:
        """Each item's text as it is embedded: heading, meta and body."""
        marks = ",".join("?" * len(item_ids))
        return {
            item_id: "\n".join(part for part in (heading, meta, body) if part)
            for item_id, heading, meta, body in self.db.execute(
                f"SELECT id, heading, meta, body FROM items WHERE id IN ({marks})", item_ids
            )
        }

    def semantic(
        self, vector: Vectors, model: str, scope: Scope, depth: int, floor: float
    ) -> Pairs:
        vectors = self.vectors
        if vectors is None or vectors.model != model:
            return []
        where, params = where_sql(scope)
        if where != "1":
            with self.lock:
                count = self.db.execute(
                    f"SELECT count(*) FROM items AS i WHERE {where}", params
                ).fetchone()[0]
            if count <= len(vectors) * SELECTIVE_SHARE:
                return self._semantic_among(vector, where, params, depth, floor)
        if where == "1":
            return [pair for pair in vectors.top(vector, depth) if pair[1] >= floor]
        wanted = depth * 4
        candidates = [pair for pair in vectors.top(vector, wanted) if pair[1] >= floor]
        ids = [item_id for item_id, _ in candidates]
        if len(vectors) <= SCAN_FACTOR * len(ids):  # one scan beats a look-up per id
            with self.lock:
                sql = f"SELECT i.id FROM items AS i WHERE {where}"
                allowed = {row[0] for row in self.db.execute(sql, params)}.intersection(ids)
        else:
            allowed = self.allowed(ids, scope)
        kept = [(item_id, score) for item_id, score in candidates if item_id in allowed]
        if len(kept) >= depth or len(candidates) < wanted:
            return kept[:depth]  # enough, or every item above the floor was looked at
        return self._semantic_among(vector, where, params, depth, floor)

    def _semantic_among(
        self, vector: Vectors, where: str, params: list[object], depth: int, floor: float
    ) -> Pairs:
        """Cosine over just the items a selective filter lets through."""
        with self.lock:
            sql = f"SELECT i.id FROM items AS i WHERE {where}"
            matching = [row[0] for row in self.db.execute(sql, params)]
        assert self.vectors is not None
        best = self.vectors.top_among(vector, matching, depth)
        return [(item_id, score) for item_id, score in best if score >= floor]
