"""The index's rows in SQLite (``.memdir/index.db``): ``IndexRows`` on the local backend.

``index.sync.Index`` decides which files, what they hold and when vectors are made;
this class holds the SQL: the tables (``index.db``), the per-file layouts that let a
write re-extract only the units it changed (``index.rows``) and the primitives search
ranks with; its base ``index.sqlite_vectors.SqliteVectors`` holds the vectors (their
table, the vectors in memory, ``ensure_vectors`` and the vector primitive), as
``PgIndex``'s base ``IndexWrites`` holds its write path.

- Rows are written under ``lock`` (the ``Index``'s), each write in its own
  transaction unless inside ``batch()``, where every write shares one; a failed
  transaction drops every layout (``_forget``).
- ``file_states`` reads the ``files`` rows again only when the database changed
  since they were read (this connection's ``total_changes`` or another's ``PRAGMA
  data_version`` moved).
- The damaged-file guard's SQLite half: ``damage`` says whether an error means the
  file is damaged (or moved away by another process), ``reopen`` moves it aside and
  opens a fresh one; ``Index.guard`` takes the folder lock and rebuilds by a scan.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.files.sections import Parsed
from memdir.index import windows
from memdir.index.db import (
    INSERT_FILE,
    INSERT_ITEM,
    INSERT_PLACE,
    MIGRATIONS,
    clear_items,
    connect,
    log_bounds,
    refilling,
    shrink_wal,
    transaction,
)
from memdir.index.embedders import Embedder
from memdir.index.extract import EXTRACT_VERSION, Item
from memdir.index.row_cache import RowCache
from memdir.index.rows import LAYOUT_MAX_CHARS, FileState, Layout, write_file
from memdir.index.sqlite_vectors import SqliteVectors, where_sql
from memdir.index.words import STOPWORDS
from memdir.results import Progress
from memdir.sqlite import damage_reason, file_id, set_aside
from memdir.storage.seam import (
    Extracted,
    Pairs,
    Scope,
    candidates_one_by_one,
    rows_within_one_by_one,
)
from memdir.timeutil import format_ts

if TYPE_CHECKING:
    from memdir.index.embedders import Vectors

LOG_KEEP = 50_000
FILL_BATCH = 500
LAYOUTS_KEPT = 64  # files whose layout is kept (each holds its text)
COLUMN_WEIGHTS = (2.0, 1.0, 1.5, 0.5)
"""bm25() weights for the FTS columns: heading, body, tags, metadata words"""
COLUMNS = (
    "id", "path", "anchor", "ordinal", "kind", "layer", "title", "heading", "body", "tags",
    "line_start", "line_end", "date", "decay_from", "tier", "relevance",
)  # fmt: skip
"""an item's columns as ``rows`` gives them (search reads these)"""
_CHUNK = 900  # ids per statement (SQLite builds allow 999 parameters at least)


def item_row(relpath: str, agent: str, item: Item, key: str) -> tuple[object, ...]:
    """An item's columns from ``path`` to ``vector_key`` (``INSERT_ITEM``'s order);
    ``key``: its vector key (``windows.file_keys``)."""
    return (
        relpath, item.anchor, item.kind, agent, item.title, item.heading, item.body,
        item.meta, ",".join(item.tags), format_ts(item.date) if item.date else None,
        item.content_hash, key,
    )  # fmt: skip


class SqliteRows(SqliteVectors):
    """One memory folder's index rows in ``index.db`` (``IndexRows``; the vectors:
    ``SqliteVectors``)."""

    def __init__(
        self,
        path: Path,
        root: Path,
        agent: str,
        embedder: Embedder | None,
        lock: threading.RLock,
    ) -> None:
        super().__init__(path, root, embedder, lock)
        self.agent = agent
        self._files_seen: tuple[object, dict[str, tuple[int, int, str]]] | None = None
        self._file_id = file_id(path)
        self._layouts: dict[str, Layout] = {}  # by path: what this index last wrote there
        self._seen: int | None = None  # item_log's end as this index's last write left it
        self._batch = 0  # how deep in ``batch()``: writes inside share its transaction
        self._rows = RowCache(COLUMNS)  # the rows searches read, while the file is unchanged

    def open(self) -> None:
        """Connect (the schema brought up to date); raises ``sqlite3.DatabaseError`` when
        the file is damaged (the caller mends it)."""
        self.db = connect(self.path)
        self._check_version()

    def _check_version(self) -> None:
        """Drop rows made by another extractor version; the next scan rebuilds them."""
        with self.lock:
            row = self.db.execute("SELECT value FROM meta WHERE key = 'extract_version'").fetchone()
            if row is not None and row[0] == EXTRACT_VERSION:
                return
            self._forget()
            with transaction(self.db):
                clear_items(self.db)
                self.db.execute(
                    "INSERT INTO meta (key, value) VALUES ('extract_version', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (EXTRACT_VERSION,),
                )

    def close(self) -> None:
        self._flush_vectors()
        self.db.close()

    # -- a damaged database ----------------------------------------------------

    def damage(self, exc: sqlite3.DatabaseError, *, opening: bool = False) -> str | None:
        """Why ``exc`` means the file is damaged (or was moved away), or None."""
        db = None if opening else self.db
        return damage_reason(exc, db, self.path, self._file_id, MIGRATIONS)

    def moved(self) -> bool:
        """True when the file is no longer the one this connection opened."""
        return file_id(self.path) != self._file_id

    def reopen(self, reason: str, moment: datetime, *, opened: bool = True) -> Path | None:
        """Move the damaged file aside (unless another process did) and open a fresh
        one; the moved file's path. ``opened``: a connection is open to close first."""
        with self.lock:
            if opened:
                with contextlib.suppress(sqlite3.Error):
                    self.db.close()
            moved = set_aside(self.path, reason, self._file_id, moment, None)
            self._forget()
            self.db = connect(self.path)
            self._file_id = file_id(self.path)
            self._check_version()
            self._rows.clear()
            self._forget_vectors()
        return moved

    # -- writing rows ----------------------------------------------------------

    def file_states(self) -> dict[str, tuple[int, int, str]]:
        """The ``files`` rows (path -> mtime, size, layer), read again only when the
        database changed since they were read."""
        with self.lock:
            changed = self.db.execute("PRAGMA data_version").fetchone()[0]  # by other connections
            version = (self.db, self.db.total_changes, changed)
            if self._files_seen is None or self._files_seen[0] != version:
                rows = self.db.execute("SELECT path, mtime_ns, size, layer FROM files")
                known = {path: (mtime_ns, size, layer) for path, mtime_ns, size, layer in rows}
                self._files_seen = (version, known)
            return self._files_seen[1]

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction for the writes inside (a scan's batch, a bulk job's files)."""
        with self.lock:
            if self._batch:
                self._batch += 1
                try:
                    yield
                finally:
                    self._batch -= 1
                return
            self._batch = 1
            try:
                with self._changing():
                    yield
            finally:
                self._batch = 0

    def write(self, state: FileState, parsed: Parsed | None = None) -> str:
        """Bring one file's rows to ``state``; 'added', 'updated' or 'unchanged'.
        ``parsed``: the writer's parse of the text, extracted from instead of parsing it
        again (with the file's layout, only the units that changed are extracted)."""
        own = not self._batch
        with self.lock:
            try:
                with transaction(self.db) if own else contextlib.nullcontext():
                    self._check_seen()
                    layout = self._layouts.pop(state.relpath, None)
                    outcome, layout = write_file(self.db, self.agent, state, parsed, layout)
                    self._seen = self._log_head()
            except BaseException:
                self._forget()
                raise
            if layout is not None and own and len(state.text) <= LAYOUT_MAX_CHARS:
                self._layouts[state.relpath] = layout
                while len(self._layouts) > LAYOUTS_KEPT:
                    del self._layouts[next(iter(self._layouts))]
            return outcome

    def remove_file(self, path: str) -> None:
        with self.batch():
            self._check_seen()
            self._layouts.pop(path, None)
            self.db.execute("DELETE FROM items WHERE path = ?", (path,))
            self.db.execute("DELETE FROM files WHERE path = ?", (path,))
            self._seen = self._log_head()

    def refill(
        self,
        files: Iterable[Extracted],
        total: int,
        progress: Progress | None = None,
        *,
        prune_vectors: bool = False,
    ) -> None:
        """Every row replaced by ``files``' (a reindex, a first scan), in one transaction
        with the indexes and triggers on ``items`` set aside (``db.refilling``): other
        processes see the old rows until it commits. ``prune_vectors``: drop the vectors
        of other embedders before, and those no item uses after."""
        with self.lock:
            self._forget()  # the layouts kept of what this index wrote
            with transaction(self.db):
                if prune_vectors and self.embedder is not None:
                    self.db.execute("DELETE FROM vectors WHERE model != ?", (self.embedder.id,))
                with refilling(self.db):
                    self._fill(files, total, progress)
                if prune_vectors:
                    self.db.execute(
                        "DELETE FROM vectors WHERE vector_key NOT IN (SELECT vector_key FROM items)"
                    )
            if prune_vectors:
                shrink_wal(self.db)

    def _fill(self, files: Iterable[Extracted], total: int, progress: Progress | None) -> None:
        """Insert every file's rows into emptied tables, in the order a scan would (so
        items get the same ids), a batch of files at a time."""
        rows: list[tuple[object, ...]] = []
        places: list[tuple[object, ...]] = []
        infos: list[tuple[object, ...]] = []
        item_id = 0  # the tables are empty: ids from 1, as a scan would give them
        done = 0
        for done, found in enumerate(files, 1):
            keys = windows.file_keys(
                [(item.kind, item.embed_text, where[0]) for item, where in found.items]
            )
            for (item, where), key in zip(found.items, keys, strict=True):
                item_id += 1
                rows.append((item_id, *item_row(found.path, self.agent, item, key), *where[3:]))
                places.append((item_id, *where[:3]))
            infos.append(
                (found.path, found.layer, found.store, found.mtime_ns, found.size, found.digest)
            )
            if done % FILL_BATCH == 0:
                self._insert(rows, places, infos)
                rows, places, infos = [], [], []
                if progress is not None:
                    progress(done, total)
        if infos:
            self._insert(rows, places, infos)
            if progress is not None:
                progress(done, total)

    def _insert(
        self,
        rows: list[tuple[object, ...]],
        places: list[tuple[object, ...]],
        infos: list[tuple[object, ...]],
    ) -> None:
        self.db.executemany(INSERT_ITEM, rows)
        self.db.executemany(INSERT_PLACE, places)
        self.db.executemany(INSERT_FILE, infos)

    def tidy(self) -> None:
        """After a scan: trim ``item_log`` to about ``LOG_KEEP`` entries."""
        with self.lock:
            low, high = log_bounds(self.db)
            if high - low > LOG_KEEP * 2:
                self.db.execute("DELETE FROM item_log WHERE seq <= ?", (high - LOG_KEEP,))

    # -- layouts (see memdir.index.rows) ----------------------------------------

    def _log_head(self) -> int | None:
        row = self.db.execute("SELECT max(seq) FROM item_log").fetchone()
        return None if row[0] is None else int(row[0])

    def _check_seen(self) -> None:
        """In a transaction, before rows change: if any other writer added or removed
        rows since this index last did, none of its layouts can be trusted."""
        if self._layouts and self._log_head() != self._seen:
            self._layouts.clear()

    def _forget(self) -> None:
        """Drop every layout (a failed transaction, a rebuild, another database)."""
        self._layouts.clear()
        self._seen = None

    @contextlib.contextmanager
    def _changing(self) -> Iterator[None]:
        """A transaction that changes rows: if it fails, no layout can be trusted."""
        try:
            with transaction(self.db):
                yield
        except BaseException:
            self._forget()
            raise

    # -- the primitives --------------------------------------------------------

    def keyword(self, words: Sequence[str], scope: Scope, depth: int) -> Pairs:
        where, params = where_sql(scope)
        quoted = ['"' + word.replace('"', '""') + '"' for word in words]
        # Only stopwords: match them as a phrase, or nearly every item would match.
        phrase_only = all(word in STOPWORDS for word in words)
        match = " + ".join(quoted) if phrase_only else " OR ".join(quoted)
        weights = ", ".join(str(weight) for weight in COLUMN_WEIGHTS)
        # ordered by the selected score, not bm25() again: SQLite scores each match once
        sql = (
            f"SELECT i.id, -bm25(items_fts, {weights}) AS score FROM items_fts "
            f"JOIN items AS i ON i.id = items_fts.rowid "
            f"WHERE items_fts MATCH ? AND {where} ORDER BY score DESC LIMIT ?"
        )
        with self.lock:
            return self.db.execute(sql, [match, *params, depth]).fetchall()  # (int, float)s

    def allowed(self, ids: Sequence[int], scope: Scope) -> set[int]:
        where, params = where_sql(scope)
        allowed: set[int] = set()
        with self.lock:
            for start in range(0, len(ids), _CHUNK):
                chunk = list(ids[start : start + _CHUNK])
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT i.id FROM items AS i WHERE i.id IN ({marks}) AND {where}"
                allowed.update(row[0] for row in self.db.execute(sql, [*chunk, *params]))
        return allowed

    def candidates(
        self,
        words: Sequence[str],
        vector: Vectors | None,
        model: str,
        scopes: Sequence[Scope],
        depth: int,
        floor: float,
    ) -> list[tuple[Pairs, Pairs]]:
        return candidates_one_by_one(self, words, vector, model, scopes, depth, floor)

    def rows_within(
        self, ids: Sequence[int], among: Sequence[int], scope: Scope
    ) -> tuple[dict[int, dict[str, Any]], set[int]]:
        return rows_within_one_by_one(self, ids, among, scope)

    def rows(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        with self.lock:
            return self._rows.rows(self.db, ids)

    def recent(self, scope: Scope, limit: int, *, observations: bool) -> list[int]:
        where, params = where_sql(scope)
        if observations:
            where += " AND i.kind = 'observation'"
        sql = (
            f"SELECT i.id FROM items AS i WHERE {where} "
            f"ORDER BY i.date IS NULL, i.date DESC, i.id DESC LIMIT ?"
        )
        with self.lock:
            return [row[0] for row in self.db.execute(sql, [*params, limit])]

    def cold(self, cutoff: str) -> list[int]:
        """Ids of the cold and archived items (a tier, or a decay date before ``cutoff``),
        by id: what ``search.creative`` samples from."""
        sql = (
            "SELECT i.id FROM items AS i WHERE i.tier IN ('cold', 'archive') "
            "OR (i.tier IS NULL AND i.decay_from < ?) ORDER BY i.id"
        )
        with self.lock:
            return [row[0] for row in self.db.execute(sql, (cutoff,))]

    def select(
        self, *, kind: str | None = None, tier: str | None = None, layer: str | None = None
    ) -> list[dict[str, Any]]:
        """Every item's columns (those given: of that kind, tier and layer), by path and
        place in its file."""
        clauses, params = [], []
        for column, value in (("kind", kind), ("tier", tier), ("layer", layer)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        where = " AND ".join(clauses) or "1"
        sql = (
            f"SELECT {', '.join(COLUMNS)} FROM items JOIN places USING (id) WHERE {where} "
            "ORDER BY path, ordinal"
        )
        with self.lock:
            return [
                dict(zip(COLUMNS, values, strict=True)) for values in self.db.execute(sql, params)
            ]

    def count(self) -> int:
        with self.lock:
            return int(self.db.execute("SELECT count(*) FROM items").fetchone()[0])
