"""Keeping the index in step with the files.

- ``update_file`` is called by every store write (same call, same process),
  with the store's parse of the text: the file's items are diffed against its
  rows by (anchor, content hash), so an append to a 500-observation file inserts
  one row. Rows that only moved move in bulk, and what this index last wrote for a
  file is kept as its layout, so unchanged units are not extracted again
  (``memdir.index.rows``; ``_seen`` is the end of ``item_log`` as this index's
  own last write left it: another writer's rows make every layout stale).
- ``scan`` finds files edited by hand: a file whose mtime and size match its
  row is skipped unread; one that differs is hashed, and re-extracted only if
  its content changed. Files gone from disk lose their rows.
- ``reindex`` drops every row and rebuilds from the files (vectors for the
  current embedder are kept and reused by content; others are dropped), in one
  transaction with the indexes and triggers on ``items`` set aside
  (``db.refilling``): other processes see the old index until it commits. A scan
  that finds the index empty (a first open, a new extractor, a mended file)
  fills it the same way.
- Vectors are computed lazily (``ensure_vectors``, run by search), so a write
  never waits for the model; keyword search sees a write at once. A search
  embeds for about ``seconds`` at most (a batch at least): thousands of new
  items (an import, a huge file edited by hand) do not hold its answer back;
  items without a vector yet are found by keyword, and later searches (or
  ``reindex``, which embeds everything) catch up.
- A damaged database (``file is not a database``, ``malformed``, a schema the
  migrations cannot read) is found where it is opened or used, never checked for on
  the happy path: ``Index.guard`` (around every method here, and ``memory.search``)
  moves it aside to ``index.db.corrupt-<UTC stamp>`` under the folder lock, rebuilds
  it by a full scan, adds a ``Notice`` and runs the call again. Another process that
  had it open follows to the fresh file at its next scan (the inode changed) and
  moves nothing; what it wrote to the old file meanwhile that scan puts back.
- Which files, and which layer owns each: ``index.survey`` (the first layer whose
  paths match; one walk per folder; the answer kept while the names stay the same).
- A rescan compares each file's stat with its row; the rows are read from SQLite
  again only when the database changed since the last scan (this connection's
  ``total_changes`` or another's ``PRAGMA data_version`` moved).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from memdir.config import STATE_DIR, Layer, Manifest
from memdir.files.encoding import clean
from memdir.files.sections import Parsed
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
from memdir.index.extract import EXTRACT_VERSION, Item, extract
from memdir.index.ranking import DEFAULT as DEFAULT_RANKING
from memdir.index.ranking import Ranking
from memdir.index.rows import LAYOUT_MAX_CHARS, FileState, Layout, placement, write_file
from memdir.index.survey import Survey
from memdir.paths import FileSpace
from memdir.results import Notice, Progress
from memdir.sqlite import MOVED, damage_reason, file_id, relative, set_aside
from memdir.timeutil import Clock, format_ts

if TYPE_CHECKING:
    from memdir.index.vectors import VectorCache

INDEX_FILE = "index.db"
_EMBED_BATCH = 256
_BUDGET_BATCH = 64  # under a time budget: small batches, so it is kept to closely
_LOG_KEEP = 50_000
_SCAN_BATCH = 500
_LAYOUTS_KEPT = 64  # files whose layout is kept (each holds its text)
P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class ScanReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


def _item_row(relpath: str, agent: str, item: Item) -> tuple[object, ...]:
    """An item's columns from ``path`` to ``vector_key`` (``INSERT_ITEM``'s order)."""
    return (
        relpath, item.anchor, item.kind, agent, item.title, item.heading, item.body,
        item.meta, ",".join(item.tags), format_ts(item.date) if item.date else None,
        item.content_hash, item.vector_key,
    )  # fmt: skip


def _hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()


def _guarded(method: Callable[Concatenate[Index, P], T]) -> Callable[Concatenate[Index, P], T]:
    """``Index.guard`` around a method: a damaged database is mended and the call run again."""

    @functools.wraps(method)
    def wrapper(index: Index, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return index.guard(lambda: method(index, *args, **kwargs))

    return wrapper


class Index:
    """One memory folder's index: its database, its sync, its vectors in memory."""

    def __init__(
        self,
        root: Path,
        manifest: Manifest,
        *,
        embedder: Embedder | None,
        clock: Clock,
        path: Path | None = None,
        lock: AbstractContextManager[object] | None = None,
        on_notice: Callable[[Notice], None] | None = None,
    ) -> None:
        self.root = root
        self.manifest = manifest
        self.embedder = embedder
        self.clock = clock
        self.path = path or root / STATE_DIR / INDEX_FILE
        """the database; a read-only folder's index is a private copy elsewhere"""
        self.space = FileSpace(root, manifest)
        self.survey = Survey(self.space, manifest)
        self.lock = threading.RLock()
        self.folder_lock = lock
        """taken to move a damaged database aside (the memory folder's lock)"""
        self.on_notice = on_notice
        self._vectors: VectorCache | None = None  # built on first use: it needs numpy
        self.scanned_at: float | None = None
        self.ranking: Ranking = DEFAULT_RANKING
        """how searches score (the defaults; the benchmarks switch parts off through it)"""
        self.unnamable = self.survey.unnamable
        """files left out because their names are not UTF-8 (``memdir doctor`` lists them)"""
        self._files_seen: tuple[object, dict[str, tuple[int, int, str]]] | None = None
        self._vectors_seen: int | None = None  # item_log position ensure_vectors has covered
        self._guards = threading.local()  # how deep in ``guard`` each thread is
        self._file_id = file_id(self.path)
        self._layouts: dict[str, Layout] = {}  # by path: what this index last wrote there
        self._seen: int | None = None  # item_log's end as this index's last write left it
        try:
            self.db: sqlite3.Connection = connect(self.path)
            self._check_version()
        except sqlite3.DatabaseError as exc:
            if not self._recover(exc, opening=True):
                raise

    @property
    def vectors(self) -> VectorCache | None:
        """The vectors in memory (None without an embedder), made on first use: a
        process that writes and never searches does without numpy."""
        if self._vectors is None and self.embedder is not None:
            with self.lock:  # one cache, however many threads ask first
                if self._vectors is None:
                    self._vectors = self._vector_cache()
        return self._vectors

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
        if self._vectors is not None:  # never made: nothing to keep
            self._vectors.flush()
        self.db.close()

    def _vector_cache(self) -> VectorCache | None:
        """The vectors in memory, with their copy beside the folder's index: a read-only
        folder's private copy of the index (the same database) reads it, never writes."""
        if self.embedder is None:
            return None
        from memdir.index.matrix import matrix_path
        from memdir.index.vectors import VectorCache

        own = self.root / STATE_DIR / INDEX_FILE
        path = matrix_path(own, self.embedder.id)
        return VectorCache(self.embedder.id, self.embedder.dim, path, keep=self.path == own)

    # -- a damaged database ----------------------------------------------------

    def guard(self, operation: Callable[[], T]) -> T:
        """Run ``operation``; if it finds the database damaged, move the file aside,
        rebuild the index from the files and run it once more (``memory.search`` runs
        through here). Any other error goes up as it was. Only the outermost guard of a
        thread mends (an inner one lets the error go up to it), so mending never waits
        for the folder lock while holding ``self.lock``."""
        depth = getattr(self._guards, "depth", 0)
        self._guards.depth = depth + 1
        try:
            return operation()
        except sqlite3.DatabaseError as exc:
            if depth or not self._recover(exc):
                raise
        finally:
            self._guards.depth = depth
        return operation()

    def _recover(self, exc: sqlite3.DatabaseError, *, opening: bool = False) -> bool:
        """True if ``exc`` came from a damaged (or moved) file and a sound one is open now."""
        db = None if opening else self.db
        reason = damage_reason(exc, db, self.path, self._file_id, MIGRATIONS)
        if reason is None:
            return False
        self._mend(reason, db)
        return True

    def mend(self, reason: str) -> Path | None:
        """Move the database aside as damaged (``reason``: what ``memdir doctor`` found),
        rebuild it from the files; the moved file's path (``memdir doctor --repair``)."""
        return self._mend(reason, self.db)

    def _mend(self, reason: str, db: sqlite3.Connection | None) -> Path | None:
        # The folder lock first, as a store write takes it before calling in here.
        with self.folder_lock or contextlib.nullcontext(), self.lock:
            if db is not None:
                with contextlib.suppress(sqlite3.Error):
                    db.close()
            moved = set_aside(self.path, reason, self._file_id, self.clock(), None)
            self._forget()
            self.db = connect(self.path)
            self._file_id = file_id(self.path)
            self._check_version()
            self._vectors = None  # the next search loads the fresh file's vectors
            self._vectors_seen = None
            depth = getattr(self._guards, "depth", 0)
            self._guards.depth = depth + 1  # the scan below must not mend again
            try:
                self.scan()  # the fresh file is empty: a full scan builds every row
            finally:
                self._guards.depth = depth
        if moved is not None and self.on_notice is not None:
            self.on_notice(
                Notice(
                    "index",
                    f"{relative(self.path, self.root)} was damaged ({reason}); moved aside to "
                    f"{relative(moved, self.root)} and rebuilt from the files",
                )
            )
        return moved

    # -- which files -----------------------------------------------------------

    def layers(self) -> list[tuple[str, Layer]]:
        return self.survey.layers()

    def files_on_disk(self) -> dict[str, tuple[str, Layer]]:
        """Relative path -> (layer name, layer) for every indexed file; first layer wins."""
        return {relpath: found for relpath, (found, _) in self._stats().items()}

    def _stats(self) -> dict[str, tuple[tuple[str, Layer], os.stat_result]]:
        return self.survey.files()

    def layer_of(self, relpath: str) -> tuple[str, Layer] | None:
        """The layer that owns ``relpath`` (the first whose paths match it), if indexed."""
        return self.survey.layer_of(relpath)

    def _known(self) -> dict[str, tuple[int, int, str]]:
        """The ``files`` rows (path -> mtime, size, layer), read again only when the
        database changed since they were read."""
        changed = self.db.execute("PRAGMA data_version").fetchone()[0]  # by other connections
        version = (self.db, self.db.total_changes, changed)
        if self._files_seen is None or self._files_seen[0] != version:
            rows = self.db.execute("SELECT path, mtime_ns, size, layer FROM files")
            known = {path: (mtime_ns, size, layer) for path, mtime_ns, size, layer in rows}
            self._files_seen = (version, known)
        return self._files_seen[1]

    # -- writing rows ----------------------------------------------------------

    @_guarded
    def update_file(
        self, relpath: str, text: str | None = None, *, parsed: Parsed | None = None
    ) -> bool:
        """Bring one file's rows up to date; False if the file is not indexed. ``parsed``:
        the writer's parse of ``text``, extracted from instead of parsing it again."""
        found = self.layer_of(relpath)
        if found is None:
            return False
        path = self.space.real(relpath)
        try:
            stat = path.stat()
            if text is None:
                text = path.read_bytes().decode("utf-8", "surrogateescape")
        except FileNotFoundError:
            self.remove_file(relpath)
            return True
        self._apply(relpath, found, text, stat.st_mtime_ns, stat.st_size, parsed=parsed)
        return True

    @_guarded
    def update_files(self, changes: Sequence[tuple[str, str]]) -> None:
        """``update_file`` for many files written by a bulk job, in one transaction."""
        with self.lock, self._changing():
            for relpath, text in changes:
                found = self.layer_of(relpath)
                if found is None:
                    continue
                try:
                    stat = self.space.real(relpath).stat()
                except FileNotFoundError:
                    self._remove_rows(relpath)
                    continue
                self._apply(relpath, found, text, stat.st_mtime_ns, stat.st_size, own=False)

    def _apply(
        self,
        relpath: str,
        found: tuple[str, Layer],
        text: str,
        mtime_ns: int,
        size: int,
        *,
        own: bool = True,
        parsed: Parsed | None = None,
    ) -> str:
        """Write ``text``'s items for ``relpath``; return 'added', 'updated' or 'unchanged'.

        ``own=False`` when the caller already holds a transaction (batches: the caller
        calls ``_forget`` if it fails). ``parsed``: the writer's parse of ``text``."""
        with self.lock:
            try:
                with transaction(self.db) if own else contextlib.nullcontext():
                    outcome, layout = self._write(relpath, found, text, mtime_ns, size, parsed)
                    self._seen = self._log_head()
            except BaseException:
                self._forget()
                raise
            if layout is not None and own and len(text) <= LAYOUT_MAX_CHARS:
                self._layouts[relpath] = layout
                while len(self._layouts) > _LAYOUTS_KEPT:
                    del self._layouts[next(iter(self._layouts))]
            return outcome

    def _write(
        self,
        relpath: str,
        found: tuple[str, Layer],
        text: str,
        mtime_ns: int,
        size: int,
        parsed: Parsed | None,
    ) -> tuple[str, Layout | None]:
        """``_apply`` inside its transaction: the outcome, and the file's layout after."""
        self._check_seen()
        layout = self._layouts.pop(relpath, None)
        state = FileState(relpath, found[0], found[1], text, mtime_ns, size)
        return write_file(self.db, self.manifest.agent, state, parsed, layout)

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

    @_guarded
    def remove_file(self, relpath: str) -> None:
        with self.lock, self._changing():
            self._remove_rows(relpath)

    def _remove_rows(self, relpath: str) -> None:
        self._check_seen()
        self._layouts.pop(relpath, None)
        self.db.execute("DELETE FROM items WHERE path = ?", (relpath,))
        self.db.execute("DELETE FROM files WHERE path = ?", (relpath,))
        self._seen = self._log_head()

    # -- scanning --------------------------------------------------------------

    @_guarded
    def scan(self, progress: Progress | None = None) -> ScanReport:
        """Pick up files added, edited or deleted outside memdir."""
        began = time.perf_counter()
        report = ScanReport()
        if file_id(self.path) != self._file_id:
            self._recover(sqlite3.DatabaseError(MOVED))  # another process moved a damaged file
        with self.lock:
            known = self._known()
            if not known:
                on_disk = self._stats()
                if on_disk:  # nothing indexed yet: every file is new
                    with transaction(self.db), refilling(self.db):
                        self._fill(on_disk, report, progress)
                    return self._scanned(report, began)
            stale, report.unchanged, present = self.survey.compare(known)
            for start in range(0, len(stale), _SCAN_BATCH):  # a transaction per batch
                with self._changing():
                    for relpath, found, stat in stale[start : start + _SCAN_BATCH]:
                        real = self.space.real(relpath)
                        text = real.read_bytes().decode("utf-8", "surrogateescape")
                        outcome = self._apply(
                            relpath, found, text, stat.st_mtime_ns, stat.st_size, own=False
                        )
                        if outcome == "added":
                            report.added.append(relpath)
                        elif outcome == "updated":
                            report.updated.append(relpath)
                        else:
                            report.unchanged += 1
                if progress is not None:
                    progress(min(start + _SCAN_BATCH, len(stale)), len(stale))
            for relpath in sorted(path for path in known if path not in present):
                self.remove_file(relpath)
                report.removed.append(relpath)
            return self._scanned(report, began)

    def _scanned(self, report: ScanReport, began: float) -> ScanReport:
        self._trim_log()
        self.scanned_at = time.monotonic()
        report.seconds = time.perf_counter() - began
        return report

    @_guarded
    def reindex(self, progress: Progress | None = None) -> ScanReport:
        """Rebuild every row from the files, in one transaction."""
        began = time.perf_counter()
        report = ScanReport()
        if file_id(self.path) != self._file_id:
            self._recover(sqlite3.DatabaseError(MOVED))  # another process moved a damaged file
        with self.lock:
            self._forget()  # the layouts kept of what this index wrote
            on_disk = self._stats()
            with transaction(self.db):
                if self.embedder is not None:
                    self.db.execute("DELETE FROM vectors WHERE model != ?", (self.embedder.id,))
                with refilling(self.db):
                    self._fill(on_disk, report, progress)
                self.db.execute(
                    "DELETE FROM vectors WHERE vector_key NOT IN (SELECT vector_key FROM items)"
                )
            shrink_wal(self.db)
            return self._scanned(report, began)

    def _fill(
        self,
        on_disk: dict[str, tuple[tuple[str, Layer], os.stat_result]],
        report: ScanReport,
        progress: Progress | None,
    ) -> None:
        """Insert every file's rows into emptied tables (inside ``refilling``), in the
        order a scan would (so items get the same ids), a batch of files at a time."""
        files: list[tuple[object, ...]] = []
        rows: list[tuple[object, ...]] = []
        places: list[tuple[int, int, int, int]] = []
        agent = self.manifest.agent
        item_id = 0  # the tables are empty: ids from 1, as a scan would give them
        for done, (relpath, ((layer_name, layer), stat)) in enumerate(on_disk.items(), 1):
            text = self.space.real(relpath).read_bytes().decode("utf-8", "surrogateescape")
            for item in extract(layer.store, relpath, clean(text)):
                item_id += 1
                where = placement(item, layer_name, layer)
                rows.append((item_id, *_item_row(relpath, agent, item), *where[3:]))
                places.append((item_id, *where[:3]))
            files.append(
                (relpath, layer_name, layer.store, stat.st_mtime_ns, stat.st_size, _hash(text))
            )
            report.added.append(relpath)
            if done % _SCAN_BATCH == 0 or done == len(on_disk):
                self.db.executemany(INSERT_ITEM, rows)
                self.db.executemany(INSERT_PLACE, places)
                self.db.executemany(INSERT_FILE, files)
                rows, places, files = [], [], []
                if progress is not None:
                    progress(done, len(on_disk))

    def _trim_log(self) -> None:
        low, high = log_bounds(self.db)
        if high - low > _LOG_KEEP * 2:
            self.db.execute("DELETE FROM item_log WHERE seq <= ?", (high - _LOG_KEEP,))

    # -- vectors ---------------------------------------------------------------

    @_guarded
    def ensure_vectors(
        self, progress: Progress | None = None, *, seconds: float | None = None
    ) -> int:
        """Embed every item text that has no vector for the current embedder; return how many.

        After the first call only the items logged since the last one are checked,
        so a search after no write costs one lookup of the log's end. The texts
        missing a vector are listed once, then embedded and committed
        ``_EMBED_BATCH`` at a time: a run stopped part-way (killed, Ctrl-C) keeps
        what it embedded, and the next call embeds the rest only. With
        ``seconds``, stop after the batch that passes it (in batches of
        ``_BUDGET_BATCH``); the next call goes on from there.
        """
        if self.embedder is None:
            return 0
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
                    rows = self._missing_vectors(since, _BUDGET_BATCH)
                    if not rows:
                        break
                    done += self._store_vectors(rows)
                    if progress is not None:
                        progress(done, done)
                    if time.monotonic() - began >= seconds:
                        return done  # the log position stays: the next call looks again
            else:  # all of them: one look-up, not one per batch (each rescanned the done)
                rows = self._missing_vectors(since, None)
                for start in range(0, len(rows), _EMBED_BATCH):
                    done += self._store_vectors(rows[start : start + _EMBED_BATCH])
                    if progress is not None:
                        progress(start + len(rows[start : start + _EMBED_BATCH]), len(rows))
            # Items another process adds from now on are past ``high``: the next call sees them.
            self._vectors_seen = high
        return done

    def vector_counts(self) -> tuple[int, int]:
        """(texts with a vector for the current embedder, texts): how far embedding is."""
        if self.embedder is None:
            return (0, 0)
        total, embedded = self.db.execute(
            "SELECT count(*), count(v.vector_key) FROM (SELECT DISTINCT vector_key FROM items) "
            "AS i LEFT JOIN vectors AS v ON v.vector_key = i.vector_key AND v.model = ?",
            (self.embedder.id,),
        ).fetchone()
        return int(embedded), int(total)

    def _missing_vectors(self, since: int | None, limit: int | None) -> list[tuple[str, int]]:
        """(vector key, an item id) with no vector for this embedder, up to ``limit``."""
        assert self.embedder is not None
        missing = (
            "NOT EXISTS (SELECT 1 FROM vectors AS v WHERE v.vector_key = i.vector_key "
            "AND v.model = ?)"
        )
        if since is None:
            sql = f"SELECT i.vector_key, min(i.id) FROM items AS i WHERE {missing} "
            params: tuple[object, ...] = (self.embedder.id,)
        else:
            sql = (
                f"SELECT i.vector_key, min(i.id) FROM item_log AS l JOIN items AS i "
                f"ON i.id = l.item_id WHERE l.seq > ? AND l.op = 'add' AND {missing} "
            )
            params = (since, self.embedder.id)
        sql += "GROUP BY i.vector_key LIMIT ?"
        limited = (*params, -1 if limit is None else limit)
        return [(str(key), int(item_id)) for key, item_id in self.db.execute(sql, limited)]

    def _store_vectors(self, rows: list[tuple[str, int]]) -> int:
        """Embed and commit one batch; how many vectors it wrote (an item deleted since
        it was listed is passed over)."""
        assert self.embedder is not None
        texts = self._embed_texts([item_id for _, item_id in rows])
        rows = [row for row in rows if row[1] in texts]
        if not rows:
            return 0
        matrix = self.embedder.embed([texts[item_id] for _, item_id in rows])
        keys = [key for key, _ in rows]
        with self._changing():
            self._check_seen()
            self.db.executemany(
                "INSERT OR IGNORE INTO vectors (vector_key, model, dim, vector) "
                "VALUES (?, ?, ?, ?)",
                [
                    (key, self.embedder.id, self.embedder.dim, vector.tobytes())
                    for key, vector in zip(keys, matrix, strict=True)
                ],
            )
            marks = ",".join("?" * len(keys))
            self.db.execute(
                f"INSERT INTO item_log (item_id, op) SELECT id, 'vec' FROM items "
                f"WHERE vector_key IN ({marks})",
                keys,
            )
            self._seen = self._log_head()
        return len(rows)

    def _embed_texts(self, item_ids: list[int]) -> dict[int, str]:
        """Each item's text as it is embedded: heading, meta and body."""
        marks = ",".join("?" * len(item_ids))
        return {
            item_id: "\n".join(part for part in (heading, meta, body) if part)
            for item_id, heading, meta, body in self.db.execute(
                f"SELECT id, heading, meta, body FROM items WHERE id IN ({marks})", item_ids
            )
        }
