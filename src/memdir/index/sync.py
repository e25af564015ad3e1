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
- A rescan compares each file's stat with its row.
- The rows themselves are an ``IndexRows`` (``rows=``): ``index.sqlite_rows.SqliteRows``
  in ``.memdir/index.db`` by default, or ``storage.postgres.index.PgIndex``. This class
  decides which files, what they hold (extraction, placement) and when vectors are
  made; the damaged-file guard applies to SQLite rows only.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec, Protocol, TypeVar, cast

from memdir.config import STATE_DIR, Layer, Manifest
from memdir.files.encoding import clean
from memdir.files.sections import Parsed
from memdir.index.embedders import Embedder
from memdir.index.extract import extract
from memdir.index.query_vectors import QueryVectors
from memdir.index.ranking import DEFAULT as DEFAULT_RANKING
from memdir.index.ranking import Ranking
from memdir.index.rows import FileState, file_hash, placement
from memdir.index.sqlite_rows import SqliteRows
from memdir.index.survey import Survey
from memdir.paths import FileSpace
from memdir.results import Notice, Progress
from memdir.sqlite import MOVED, mended, relative
from memdir.storage.seam import Extracted, Files, IndexRows
from memdir.timeutil import Clock

if TYPE_CHECKING:
    from memdir.index.vectors import VectorCache

INDEX_FILE = "index.db"
_SCAN_BATCH = 500
P = ParamSpec("P")
T = TypeVar("T")


class Stamp(Protocol):
    """What a scan compares of a file: an ``os.stat_result`` or a ``FileStat``'s."""

    @property
    def st_mtime_ns(self) -> int: ...

    @property
    def st_size(self) -> int: ...


@dataclass(frozen=True)
class _Stamped:
    st_mtime_ns: int
    st_size: int


Found = dict[str, tuple[tuple[str, Layer], Stamp]]


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


def _guarded(method: Callable[Concatenate[Index, P], T]) -> Callable[Concatenate[Index, P], T]:
    """``Index.guard`` around a method: a damaged database is mended and the call run again."""

    @functools.wraps(method)
    def wrapper(index: Index, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return index.guard(lambda: method(index, *args, **kwargs))

    return wrapper


class Index:
    """One memory folder's index: which files, what they hold, and its rows (``rows``)."""

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
        rows: IndexRows | None = None,
        files: Files | None = None,
    ) -> None:
        self.root = root
        self.manifest = manifest
        self.embedder = embedder
        self.clock = clock
        self.path = path or root / STATE_DIR / INDEX_FILE
        """the SQLite database; a read-only folder's index is a private copy elsewhere"""
        self.space = FileSpace(root, manifest)
        self.survey = Survey(self.space, manifest)
        self.folder_lock = lock
        """taken to move a damaged database aside (the memory folder's lock)"""
        self.on_notice = on_notice
        self.scanned_at: float | None = None
        self.ranking: Ranking = DEFAULT_RANKING
        """how searches score (the defaults; the benchmarks switch parts off through it)"""
        self.query_vectors = QueryVectors()
        """the vectors of recent queries (``memdir.index.query_vectors``)"""
        self.unnamable = self.survey.unnamable
        """files left out because their names are not UTF-8 (``memdir doctor`` lists them)"""
        self._guards = threading.local()  # how deep in ``guard`` each thread is
        self.lock = threading.RLock()
        self._sqlite: SqliteRows | None = None
        if rows is None:
            self._sqlite = SqliteRows(self.path, root, manifest.agent, embedder, self.lock)
            rows = self._sqlite
        elif isinstance(rows, SqliteRows):
            self._sqlite = rows
            self.lock = rows.lock
        self.rows: IndexRows = rows
        """where the rows are kept (``SqliteRows`` by default)"""
        self.files = files
        """where the files are, when not on disk under ``root`` (``PgFiles``): listed
        through it, their stamp (mtime, size) its ``FileStat``'s"""
        if self._sqlite is not None:
            try:
                self._sqlite.open()
            except sqlite3.DatabaseError as exc:
                if not self._recover(exc, opening=True):
                    raise

    @property
    def db(self) -> sqlite3.Connection:
        """The SQLite connection (local rows only)."""
        return self._local().db

    @property
    def vectors(self) -> VectorCache | None:
        """The vectors in memory (SQLite rows; None without an embedder), made on first
        use: a process that writes and never searches does without numpy."""
        return self._local().vectors

    def _local(self) -> SqliteRows:
        if self._sqlite is None:
            raise TypeError("this index keeps its rows in PostgreSQL, not in index.db")
        return self._sqlite

    def close(self) -> None:
        self.rows.close()

    # -- a damaged database ----------------------------------------------------

    def guard(self, operation: Callable[[], T]) -> T:
        """Run ``operation``; if it finds the database damaged, move the file aside,
        rebuild the index from the files and run it once more (``memory.search`` runs
        through here). Any other error goes up as it was. Only the outermost guard of a
        thread mends (an inner one lets the error go up to it), so mending never waits
        for the folder lock while holding ``self.lock``."""
        return mended(self._guards, operation, self._recover)

    def _recover(self, exc: sqlite3.DatabaseError, *, opening: bool = False) -> bool:
        """True if ``exc`` came from a damaged (or moved) file and a sound one is open now."""
        if self._sqlite is None:
            return False
        reason = self._sqlite.damage(exc, opening=opening)
        if reason is None:
            return False
        self._mend(reason, opened=not opening)
        return True

    def mend(self, reason: str) -> Path | None:
        """Move the database aside as damaged (``reason``: what ``memdir doctor`` found),
        rebuild it from the files; the moved file's path (``memdir doctor --repair``)."""
        return self._mend(reason)

    def _mend(self, reason: str, *, opened: bool = True) -> Path | None:
        local = self._local()
        # The folder lock first, as a store write takes it before calling in here.
        with self.folder_lock or contextlib.nullcontext(), self.lock:
            moved = local.reopen(reason, self.clock(), opened=opened)
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
                    logged=True,  # sqlite.set_aside logged it
                )
            )
        return moved

    def _moved(self) -> None:
        """Follow another process that moved a damaged file aside to its fresh one."""
        if self._sqlite is not None and self._sqlite.moved():
            self._recover(sqlite3.DatabaseError(MOVED))

    # -- which files -----------------------------------------------------------

    def layers(self) -> list[tuple[str, Layer]]:
        return self.survey.layers()

    def files_on_disk(self) -> dict[str, tuple[str, Layer]]:
        """Relative path -> (layer name, layer) for every indexed file; first layer wins."""
        return {relpath: found for relpath, (found, _) in self._stats().items()}

    def _stats(self) -> Found:
        if self.files is None:
            return cast(Found, self.survey.files())
        found: Found = {}
        for stat in self.files.list():
            owner = self.layer_of(stat.path)
            if owner is not None:
                found[stat.path] = (owner, _Stamped(stat.mtime_ns, stat.size))
        return found

    def _compare(
        self, known: dict[str, tuple[int, int, str]]
    ) -> tuple[list[tuple[str, tuple[str, Layer], Stamp]], int, AbstractSet[str]]:
        """The files whose (mtime, size, layer) is not ``known``'s, how many are, and
        every indexed file's path (``Survey.compare``, or the same over ``files``)."""
        if self.files is None:
            on_disk, unchanged, present = self.survey.compare(known)
            return cast(list[tuple[str, tuple[str, Layer], Stamp]], on_disk), unchanged, present
        stale: list[tuple[str, tuple[str, Layer], Stamp]] = []
        found = self._stats()
        for relpath, (owner, stamp) in found.items():
            if known.get(relpath) != (stamp.st_mtime_ns, stamp.st_size, owner[0]):
                stale.append((relpath, owner, stamp))
        return stale, len(found) - len(stale), set(found)

    def _read(self, relpath: str) -> str | None:
        """The file's text (undecodable bytes kept as surrogates), None if it is gone."""
        if self.files is None:
            try:
                data = self.space.real(relpath).read_bytes()
            except FileNotFoundError:
                return None
        else:
            found = self.files.read(relpath)
            if found is None:
                return None
            data = found
        return data.decode("utf-8", "surrogateescape")

    def _stamp(self, relpath: str) -> Stamp | None:
        if self.files is None:
            try:
                return self.space.real(relpath).stat()
            except FileNotFoundError:
                return None
        stat = self.files.stat(relpath)
        return None if stat is None else _Stamped(stat.mtime_ns, stat.size)

    def layer_of(self, relpath: str) -> tuple[str, Layer] | None:
        """The layer that owns ``relpath`` (the first whose paths match it), if indexed."""
        return self.survey.layer_of(relpath)

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
        stat = self._stamp(relpath)
        if stat is not None and text is None:
            text = self._read(relpath)
        if stat is None or text is None:
            self.remove_file(relpath)
            return True
        state = FileState(relpath, found[0], found[1], text, stat.st_mtime_ns, stat.st_size)
        self.rows.write(state, parsed)
        return True

    @_guarded
    def update_files(self, changes: Sequence[tuple[str, str]]) -> None:
        """``update_file`` for many files written by a bulk job, in one transaction."""
        with self.lock, self.rows.batch():
            for relpath, text in changes:
                found = self.layer_of(relpath)
                if found is None:
                    continue
                stat = self._stamp(relpath)
                if stat is None:
                    self.rows.remove_file(relpath)
                    continue
                state = FileState(relpath, *found, text, stat.st_mtime_ns, stat.st_size)
                self.rows.write(state)

    @_guarded
    def remove_file(self, relpath: str) -> None:
        with self.lock:
            self.rows.remove_file(relpath)

    # -- scanning --------------------------------------------------------------

    @_guarded
    def scan(self, progress: Progress | None = None) -> ScanReport:
        """Pick up files added, edited or deleted outside memdir."""
        began = time.perf_counter()
        report = ScanReport()
        self._moved()
        with self.lock:
            known = self.rows.file_states()
            if not known:
                on_disk = self._stats()
                if on_disk:  # nothing indexed yet: every file is new
                    self.rows.refill(self._extracted(on_disk, report), len(on_disk), progress)
                    return self._scanned(report, began)
            stale, report.unchanged, present = self._compare(known)
            for start in range(0, len(stale), _SCAN_BATCH):  # a transaction per batch
                with self.rows.batch():
                    for relpath, found, stat in stale[start : start + _SCAN_BATCH]:
                        text = self._read(relpath)
                        if text is None:  # gone since the listing: the next scan drops it
                            continue
                        state = FileState(relpath, *found, text, stat.st_mtime_ns, stat.st_size)
                        outcome = self.rows.write(state)
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
        self.rows.tidy()
        self.scanned_at = time.monotonic()
        report.seconds = time.perf_counter() - began
        return report

    @_guarded
    def reindex(self, progress: Progress | None = None) -> ScanReport:
        """Rebuild every row from the files, in one transaction."""
        began = time.perf_counter()
        report = ScanReport()
        self._moved()
        with self.lock:
            on_disk = self._stats()
            files = self._extracted(on_disk, report)
            self.rows.refill(files, len(on_disk), progress, prune_vectors=True)
            return self._scanned(report, began)

    def _extracted(self, on_disk: Found, report: ScanReport) -> Iterator[Extracted]:
        """Every file's items, extracted and placed, in the order a scan would take them
        (so items get the same ids); each file is read as ``refill`` asks for it."""
        for relpath, ((layer_name, layer), stat) in on_disk.items():
            text = self._read(relpath)
            if text is None:  # gone since the listing
                continue
            items = [
                (item, placement(item, layer_name, layer))
                for item in extract(layer.store, relpath, clean(text))
            ]
            digest = file_hash(text).hexdigest()
            yield Extracted(
                relpath, layer_name, layer.store, items, stat.st_mtime_ns, stat.st_size, digest
            )
            report.added.append(relpath)

    # -- vectors ---------------------------------------------------------------

    @_guarded
    def ensure_vectors(
        self, progress: Progress | None = None, *, seconds: float | None = None
    ) -> int:
        """Embed every item text that has no vector for the current embedder; return how
        many were stored (``IndexRows.ensure_vectors``: with ``seconds``, about that long
        at most)."""
        if self.embedder is None:
            return 0
        with self.lock:
            return self.rows.ensure_vectors(self.embedder, progress, seconds=seconds)

    def vector_counts(self) -> tuple[int, int]:
        """(texts with a vector for the current embedder, texts): how far embedding is."""
        if self.embedder is None:
            return (0, 0)
        return self.rows.vector_counts(self.embedder.id)

    def _embed_texts(self, item_ids: list[int]) -> dict[int, str]:
        """Each item's text as it is embedded (SQLite rows): heading, meta and body."""
        return self._local().embed_texts(item_ids)
