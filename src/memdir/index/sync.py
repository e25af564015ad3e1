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
  current embedder are kept and reused by content; others are dropped).
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
- A file belongs to the first layer in the manifest whose paths match it; it
  is indexed only if that layer is (a catch-all layer listed last never takes
  a file an earlier layer keeps out of the index). ``MEMORY.md`` is legacy:
  never indexed.
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
from typing import Concatenate, ParamSpec, TypeVar

from memdir.config import LEGACY_MEMORY_MD, STATE_DIR, Layer, Manifest, is_glob, static_prefix
from memdir.files.encoding import has_surrogates
from memdir.files.sections import Parsed
from memdir.index.db import MIGRATIONS, clear_items, connect, log_bounds, transaction
from memdir.index.embedders import Embedder
from memdir.index.extract import EXTRACT_VERSION
from memdir.index.rows import LAYOUT_MAX_CHARS, FileState, Layout, write_file
from memdir.index.vectors import VectorCache
from memdir.paths import FileSpace, Walks
from memdir.results import Notice, Progress
from memdir.sqlite import MOVED, damage_reason, file_id, relative, set_aside
from memdir.timeutil import Clock

INDEX_FILE = "index.db"
EXTRACTABLE = frozenset(
    {"notebook", "knowledge", "state", "workstate", "journal", "lessons", "intel", "archive",
     "document", "vault"}
)  # fmt: skip
_EMBED_BATCH = 256
_BUDGET_BATCH = 64  # under a time budget: small batches, so it is kept to closely
_LOG_KEEP = 50_000
_SCAN_BATCH = 500
_LAYOUTS_KEPT = 64  # files whose layout is kept (each holds its text)
_OWNERS_KEPT = 4096  # paths whose layer is remembered
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


def _indexed(layer: Layer) -> bool:
    return layer.indexed and layer.store in EXTRACTABLE


def _legacy(relpath: str) -> bool:
    """``MEMORY.md`` is migrated once and then ignored: no layer owns it."""
    return relpath.rpartition("/")[2] == LEGACY_MEMORY_MD


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
        self.lock = threading.RLock()
        self.folder_lock = lock
        """taken to move a damaged database aside (the memory folder's lock)"""
        self.on_notice = on_notice
        self.vectors = VectorCache(embedder.id, embedder.dim) if embedder is not None else None
        self.scanned_at: float | None = None
        self.unnamable: set[str] = set()
        """files left out because their names are not UTF-8 (``memdir doctor`` lists them)"""
        self._vectors_seen: int | None = None  # item_log position ensure_vectors has covered
        self._guards = threading.local()  # how deep in ``guard`` each thread is
        self._file_id = file_id(self.path)
        self._layouts: dict[str, Layout] = {}  # by path: what this index last wrote there
        self._owners: dict[str, tuple[str, Layer] | None] = {}  # by path: ``layer_of``
        self._seen: int | None = None  # item_log's end as this index's last write left it
        try:
            self.db: sqlite3.Connection = connect(self.path)
            self._check_version()
        except sqlite3.DatabaseError as exc:
            if not self._recover(exc, opening=True):
                raise

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
        self.db.close()

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
            if self.embedder is not None:
                self.vectors = VectorCache(self.embedder.id, self.embedder.dim)
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
        return [(name, layer) for name, layer in self.manifest.layers.items() if _indexed(layer)]

    def files_on_disk(self) -> dict[str, tuple[str, Layer]]:
        """Relative path -> (layer name, layer) for every indexed file; first layer wins."""
        return {relpath: found for relpath, (found, _) in self._stats().items()}

    def _stats(self) -> dict[str, tuple[tuple[str, Layer], os.stat_result]]:
        found: dict[str, tuple[tuple[str, Layer], os.stat_result]] = {}
        passed: list[tuple[str, Layer]] = []  # layers not indexed, earlier in the manifest
        walks = Walks(
            {
                self.space.base(name)[0]
                for name, layer in self.manifest.layers.items()
                if _indexed(layer) and any(is_glob(p) and not static_prefix(p) for p in layer.paths)
            }
        )
        for name, layer in self.manifest.layers.items():
            if not _indexed(layer):
                passed.append((name, layer))
                continue
            for relpath, stat in self.space.stats(name, layer, skip=found, walks=walks).items():
                if relpath in found or _legacy(relpath):
                    continue
                if has_surrogates(relpath):  # a name that is not UTF-8 cannot be a row
                    self.unnamable.add(relpath)
                    continue
                if any(self.space.matches(n, other, relpath) for n, other in passed):
                    continue  # an earlier layer that is not indexed owns it
                found[relpath] = ((name, layer), stat)
        return found

    def layer_of(self, relpath: str) -> tuple[str, Layer] | None:
        """The layer that owns ``relpath`` (the first whose paths match it), if indexed:
        a question of the manifest alone, so each path's answer is kept."""
        if relpath in self._owners:
            return self._owners[relpath]
        found = None
        if not _legacy(relpath):
            for name, layer in self.manifest.layers.items():
                if self.space.matches(name, layer, relpath):
                    found = (name, layer) if _indexed(layer) else None
                    break
        if len(self._owners) >= _OWNERS_KEPT:
            self._owners.clear()
        self._owners[relpath] = found
        return found

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
            known = {
                path: (mtime_ns, size, layer)
                for path, mtime_ns, size, layer in self.db.execute(
                    "SELECT path, mtime_ns, size, layer FROM files"
                )
            }
            on_disk = self._stats()
            stale: list[tuple[str, tuple[str, Layer], os.stat_result]] = []
            for relpath, (found, stat) in on_disk.items():
                if known.get(relpath) == (stat.st_mtime_ns, stat.st_size, found[0]):
                    report.unchanged += 1
                else:
                    stale.append((relpath, found, stat))
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
            for relpath in sorted(set(known) - set(on_disk)):
                self.remove_file(relpath)
                report.removed.append(relpath)
            self._trim_log()
            self.scanned_at = time.monotonic()
        report.seconds = time.perf_counter() - began
        return report

    @_guarded
    def reindex(self, progress: Progress | None = None) -> ScanReport:
        """Rebuild every row from the files."""
        with self.lock:
            self._forget()
            with transaction(self.db):
                clear_items(self.db)
                if self.embedder is not None:
                    self.db.execute("DELETE FROM vectors WHERE model != ?", (self.embedder.id,))
            report = self.scan(progress)
            self.db.execute(
                "DELETE FROM vectors WHERE vector_key NOT IN (SELECT vector_key FROM items)"
            )
        return report

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
        so a search after no write costs one lookup of the log's end. With
        ``seconds``, stop after the batch that passes it (in batches of
        ``_BUDGET_BATCH``); the next call goes on from there.
        """
        if self.embedder is None:
            return 0
        done = 0
        began = time.monotonic()
        batch = _EMBED_BATCH if seconds is None else _BUDGET_BATCH
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
            total = self._count_missing() if progress is not None and whole else 0
            while True:
                rows = self._missing_vectors(None if whole else seen, batch)
                if not rows:
                    break
                self._store_vectors(rows)
                done += len(rows)
                if progress is not None:
                    progress(done, max(total, done))
                if seconds is not None and time.monotonic() - began >= seconds:
                    return done  # the log position stays: the next call looks again
            self._vectors_seen = log_bounds(self.db)[1]
        return done

    def _count_missing(self) -> int:
        assert self.embedder is not None
        row = self.db.execute(
            "SELECT count(DISTINCT vector_key) FROM items AS i WHERE NOT EXISTS (SELECT 1 FROM "
            "vectors AS v WHERE v.vector_key = i.vector_key AND v.model = ?)",
            (self.embedder.id,),
        ).fetchone()
        return int(row[0])

    def _missing_vectors(self, since: int | None, limit: int) -> list[tuple[str, int]]:
        """Up to a batch of (vector key, an item id) with no vector for this embedder."""
        assert self.embedder is not None
        missing = (
            "NOT EXISTS (SELECT 1 FROM vectors AS v WHERE v.vector_key = i.vector_key "
            "AND v.model = ?)"
        )
        if since is None:
            sql = f"SELECT i.vector_key, min(i.id) FROM items AS i WHERE {missing} "
            params: tuple[object, ...] = (self.embedder.id, limit)
        else:
            sql = (
                f"SELECT i.vector_key, min(i.id) FROM item_log AS l JOIN items AS i "
                f"ON i.id = l.item_id WHERE l.seq > ? AND l.op = 'add' AND {missing} "
            )
            params = (since, self.embedder.id, limit)
        sql += "GROUP BY i.vector_key LIMIT ?"
        return [(str(key), int(item_id)) for key, item_id in self.db.execute(sql, params)]

    def _store_vectors(self, rows: list[tuple[str, int]]) -> None:
        assert self.embedder is not None
        matrix = self.embedder.embed(self._embed_texts([item_id for _, item_id in rows]))
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

    def _embed_texts(self, item_ids: list[int]) -> list[str]:
        marks = ",".join("?" * len(item_ids))
        rows = {
            item_id: (heading, meta, body)
            for item_id, heading, meta, body in self.db.execute(
                f"SELECT id, heading, meta, body FROM items WHERE id IN ({marks})", item_ids
            )
        }
        return ["\n".join(part for part in rows[item_id] if part) for item_id in item_ids]
