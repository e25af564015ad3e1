"""The storage seam: what a memory folder needs of where it is kept.

Three parts, each a small ``Protocol``; ``local`` (files on disk, SQLite in ``.memdir/``,
the default) and ``postgres`` (``memdir.storage.postgres``) fulfil them. Nothing above
the seam (stores, dream, context, tools, servers) may know which it has.

- ``Files``: a folder of exact bytes by relative path. A write replaces a file whole
  (a reader sees the old bytes or the new, never a mix) and may name the version it
  read (``expected_version``): another writer's change in between is a
  ``VersionConflict``, not a lost update. ``lock`` is the folder's write lock: one
  writer at a time across threads, processes and (postgres) hosts, re-entrant in a
  thread; a writer re-reads under it. On ``postgres`` the lock is the write's
  transaction: every file, index row and history row written under it commits at its
  outermost release, or none does (an exception out of it rolls back what was
  written inside that level).
  local: ``memdir.storage.local.LocalFiles`` (an adapter over ``files.atomic``'s
  ``atomic_write`` and ``FolderLock`` and ``os.stat``, which the stores call today).
  postgres: ``memdir.storage.postgres.files.PgFiles``.
- ``IndexRows``: the index's rows, as sync writes them and search reads them: per file
  the state last seen and its items (diffed by anchor and content hash), the keyword
  primitive (BM25 with FTS5's column weights over an OR of the query's words), the
  vector primitive (cosine to the query under a filter), rows by id. Which files and
  when to embed stay in ``index.sync.Index`` (``Index(..., rows=)``); ranking
  (fusion, neighbours, subject, exact, decay, floor, widening) stays above the seam,
  in ``index.search``, one copy for both backends.
  local: ``memdir.index.sqlite_rows.SqliteRows`` (the default).
  postgres: ``memdir.storage.postgres.index.PgIndex``.
- ``HistoryStore``: the activity history's public methods, as ``History`` has them.
  local: ``memdir.stores.history.History``. postgres:
  ``memdir.storage.postgres.history.PgHistory``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memdir.errors import MemdirError

if TYPE_CHECKING:
    from memdir.config import Decay
    from memdir.files.sections import Parsed
    from memdir.index.embedders import Embedder, Vectors
    from memdir.index.extract import Item
    from memdir.index.rows import FileState
    from memdir.index.search import Filters
    from memdir.results import Progress
    from memdir.stores.history import Activity, ActivityDetail, ActivityRun


class VersionConflict(MemdirError):
    """The file changed since the version the writer read; nothing was written."""

    def __init__(self, path: str, expected: int, found: int | None) -> None:
        self.path = path
        self.expected = expected
        self.found = found
        now = "is gone" if found is None else f"is at version {found}"
        super().__init__(
            f"{path} changed since it was read (version {expected}; it {now}); nothing "
            "was written: read it again and redo the change"
        )


class FileStat:
    """What a folder knows of one file without reading it.

    ``version`` changes at every write of the file (it only grows): a counter on
    postgres, the file's mtime in nanoseconds on disk (bumped if a write would not
    change it). ``sha256`` may be given as a function that hashes the file when first
    asked (on disk, where a stat does not read the file)."""

    __slots__ = ("_sha256", "mtime_ns", "path", "size", "version")

    def __init__(
        self, path: str, size: int, sha256: str | Callable[[], str], mtime_ns: int, version: int
    ) -> None:
        self.path = path
        self.size = size
        self._sha256 = sha256
        self.mtime_ns = mtime_ns
        self.version = version

    @property
    def sha256(self) -> str:
        if not isinstance(self._sha256, str):
            self._sha256 = self._sha256()
        return self._sha256

    def _key(self) -> tuple[str, int, str, int, int]:
        return (self.path, self.size, self.sha256, self.mtime_ns, self.version)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FileStat) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"FileStat(path={self.path!r}, size={self.size}, version={self.version}, "
            f"mtime_ns={self.mtime_ns})"
        )


@runtime_checkable
class WriteLock(Protocol):
    """The folder's write lock (``FolderLock`` on disk, ``PgFolderLock`` on postgres)."""

    def __enter__(self) -> Any: ...

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Any: ...

    @property
    def is_held(self) -> bool:
        """True when this thread (and process) holds it."""
        ...


@runtime_checkable
class Files(Protocol):
    """A memory folder's files: exact bytes by relative POSIX path."""

    @property
    def lock(self) -> WriteLock: ...

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or None when there is none."""
        ...

    def stat(self, path: str) -> FileStat | None: ...

    def stamp(self, path: str) -> tuple[int, ...] | None:
        """Something that changes whenever the file does, had without reading it (a
        reader's cache key): the version on postgres; mtime, size and inode on disk,
        where ``stat`` reads the file to hash it. None when there is no file."""
        ...

    def unwritable(self, path: str) -> str | None:
        """Why no file can be written at ``path`` (a folder in its place, a link that
        leads outside the folder), as a sentence; None when it can."""
        ...

    def paths(self, folder: str = "") -> list[str]:
        """The paths of every file under ``folder`` ("" for all), sorted, without
        reading them; hidden files and folders (a name starting with a dot) left out,
        and on disk a link that leads outside the folder."""
        ...

    def list(self, prefix: str = "") -> list[FileStat]:
        """Every file whose path starts with ``prefix``, sorted by path."""
        ...

    def write(self, path: str, data: bytes, *, expected_version: int | None = None) -> FileStat:
        """Replace (or create) the file with ``data``, atomically. ``expected_version``
        0 means the file must not exist yet; another number, that it is still at that
        version (else ``VersionConflict``, nothing written)."""
        ...

    def write_all(
        self, writes: Sequence[tuple[str, bytes]], on_written: Callable[[int], None] | None = None
    ) -> None:
        """Write several files in order, as one edit: on postgres in one transaction;
        on disk each replaced in turn (their fsyncs overlapped), so a crash leaves the
        first ones written and the rest as they were, never a later one without an
        earlier. ``on_written(n)`` once the n-th is in place."""
        ...

    def append(self, path: str, data: bytes) -> FileStat:
        """Add ``data`` at the end of the file (a session log), creating it if missing."""
        ...

    def remove(self, path: str, *, expected_version: int | None = None) -> bool:
        """Delete the file; False if there was none."""
        ...

    def rename(self, old: str, new: str) -> FileStat:
        """Move a file, replacing whatever ``new`` held."""
        ...


Pairs = list[tuple[int, float]]
"""(item id, score), best first"""


@dataclass(frozen=True)
class Extracted:
    """One file's items as ``index.sync`` extracted and placed them, for ``refill``."""

    path: str
    layer: str
    store: str
    items: Sequence[tuple[Item, tuple[object, ...]]]
    """each item with its placement (``index.rows.placement``)"""
    mtime_ns: int
    size: int
    digest: str


@dataclass(frozen=True)
class Scope:
    """Which items a search looks at: the filters, read at ``now`` under ``decay``,
    over the mode's tiers or (``wide``) every tier but the archive folder's."""

    filters: Filters
    decay: Decay
    now: datetime
    wide: bool = False


@runtime_checkable
class IndexRows(Protocol):
    """The index's rows for one memory folder (what sync writes, what search reads).

    ``index.sync.Index`` calls it under its own lock (one thread at a time)."""

    def file_states(self) -> dict[str, tuple[int, int, str]]:
        """Path -> (mtime_ns, size, layer) of every file as last indexed (``scan``)."""
        ...

    def write(self, state: FileState, parsed: Parsed | None = None) -> str:
        """The file's rows brought to ``state`` (its text, layer, stat): its items
        (``index.extract``, placed by ``index.rows.placement``), diffed with its rows by
        (anchor, content hash): those kept only move. 'added', 'updated' or 'unchanged'
        (same digest and layer). ``parsed``: the writer's parse of the text."""
        ...

    def batch(self) -> AbstractContextManager[None]:
        """One transaction for the writes inside (a scan's batch, a bulk job)."""
        ...

    def remove_file(self, path: str) -> None: ...

    def refill(
        self,
        files: Iterable[Extracted],
        total: int,
        progress: Progress | None = None,
        *,
        prune_vectors: bool = False,
    ) -> None:
        """Every row replaced by ``files``' (``reindex``, a first scan), in one
        transaction; vectors of the texts kept are kept. ``prune_vectors``: those of
        other embedders and of texts gone are dropped."""
        ...

    def tidy(self) -> None:
        """After a scan: housekeeping (SQLite trims its item log)."""
        ...

    def ensure_vectors(
        self, embedder: Embedder, progress: Progress | None = None, *, seconds: float | None = None
    ) -> int:
        """Embed the texts with no vector from ``embedder`` (with ``seconds``: for about
        that long, a batch at least); return how many texts were given their vector
        (PostgreSQL passes over the rows a locked write holds: not counted, stored by a
        later call)."""
        ...

    def vector_counts(self, model: str) -> tuple[int, int]:
        """(texts with a vector from ``model``, texts)."""
        ...

    def vectors_ready(self, model: str) -> bool:
        """True when some item has a vector from ``model`` (a search can go semantic)."""
        ...

    def keyword(self, words: Sequence[str], scope: Scope, depth: int) -> Pairs:
        """The best ``depth`` items by BM25 (FTS5's column weights, k1 1.2, b 0.75) over
        an OR of ``words`` (a phrase when all are stopwords) within ``scope``."""
        ...

    def semantic(
        self, vector: Vectors, model: str, scope: Scope, depth: int, floor: float
    ) -> Pairs:
        """The best ``depth`` items by cosine to ``vector`` (vectors from ``model``),
        at least ``floor``, within ``scope``."""
        ...

    def allowed(self, ids: Sequence[int], scope: Scope) -> set[int]:
        """Those of ``ids`` within ``scope``."""
        ...

    def rows(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Each item's columns, as ``index.sqlite_rows.COLUMNS`` names them."""
        ...

    def candidates(
        self,
        words: Sequence[str],
        vector: Vectors | None,
        model: str,
        scopes: Sequence[Scope],
        depth: int,
        floor: float,
    ) -> list[tuple[Pairs, Pairs]]:
        """For each of ``scopes``: ``keyword`` and ``semantic`` (none without a
        ``vector``), the same answers, asked together (PostgreSQL: one round trip)."""
        ...

    def rows_within(
        self, ids: Sequence[int], among: Sequence[int], scope: Scope
    ) -> tuple[dict[int, dict[str, Any]], set[int]]:
        """``rows(ids)`` and ``allowed(among, scope)`` together (PostgreSQL: one round
        trip); nothing asked for an empty list."""
        ...

    def recent(self, scope: Scope, limit: int, *, observations: bool) -> list[int]:
        """Ids of the newest items first (an empty query's listing; ``observations``:
        of that kind only, when the filters name no kind)."""
        ...

    def cold(self, cutoff: str) -> list[int]:
        """Ids of the cold and archived items (by tier, or a decay date before
        ``cutoff``), by id (``search.creative`` samples them)."""
        ...

    def select(
        self, *, kind: str | None = None, tier: str | None = None, layer: str | None = None
    ) -> list[dict[str, Any]]:
        """Every item's columns (of that kind, tier, layer when given), by path and
        place in the file (``memdir doctor``'s checks, the context's core cards)."""
        ...

    def count(self) -> int:
        """How many items."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class HistoryStore(Protocol):
    """The activity history, as ``memdir.stores.history.History`` offers it."""

    def start_activity(self, type: str, label: str, task_id: str | None = None) -> str: ...

    def log(
        self, activity_id: str, type: str, content: str, metadata: dict[str, Any] | None = None
    ) -> int: ...

    def log_many(
        self, activity_id: str, events: Sequence[tuple[str, str, dict[str, Any] | None]]
    ) -> list[int]:
        """Several events, ``(type, content, metadata)``, in one transaction, in order."""
        ...

    def end_activity(
        self,
        activity_id: str,
        summary: str | None = None,
        keywords: list[str] | None = None,
        success: bool = True,
    ) -> Activity: ...

    def get(self, activity_id: str) -> ActivityDetail | None: ...

    def activity(
        self, type: str, label: str, task_id: str | None = None
    ) -> AbstractContextManager[ActivityRun]:
        """``with history.activity(...) as run``: ended when the block leaves."""
        ...

    def recent(
        self,
        limit: int = 20,
        *,
        type: str | None = None,
        task_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[Activity]: ...

    def search(
        self, query: str, limit: int = 10, *, type: str | None = None, since: datetime | None = None
    ) -> list[Activity]: ...

    def unended(self, type: str | None = None) -> list[Activity]: ...

    def receive(
        self,
        source: str,
        content: str,
        kind: str = "message",
        metadata: dict[str, Any] | None = None,
        activity_id: str | None = None,
    ) -> str: ...

    def decide(
        self,
        decision: str,
        reason: str | None = None,
        *,
        mailbox_item_id: str | None = None,
        activity_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str: ...

    def record_usage(self, session_id: str, used_tokens: int, window_tokens: int) -> None: ...

    def usage(self, session_id: str) -> tuple[float | None, bool]: ...

    def claim_flush(self, session_id: str) -> bool: ...

    def export_jsonl(self, out: Path) -> int:
        """Every activity (with its logs), mailbox item and decision as JSON Lines, from
        one consistent snapshot; how many lines were written."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Storage(Protocol):
    """Where one memory folder is kept: its ``Files`` (and its mounts'), its history,
    its index rows. ``memdir.memory.LocalStorage`` (on disk, the default) and
    ``memdir.storage.postgres.backend.PgStorage``; a ``Memory`` is built over one."""

    name: str
    """``local`` or ``postgres``"""
    where: str
    """the folder, for a person: a path, or the database and agent"""

    def files(self) -> Files: ...

    def mount(self, layer_name: str, mount: str, resolved: Path | None) -> Files:
        """The ``Files`` of a layer mounted from elsewhere (the manifest's ``mount``; on
        disk ``resolved`` is its folder)."""
        ...

    def history(self, memory: Any) -> HistoryStore:
        """The activity history of ``memory`` (a ``Memory``: its clock, its audit hook)."""
        ...

    def index_rows(self, embedder: Embedder | None = None) -> IndexRows | None:
        """The index's rows (``embedder``: the folder's), or None for the SQLite index
        in ``.memdir/``."""
        ...

    def close(self) -> None: ...


def candidates_one_by_one(
    rows: IndexRows,
    words: Sequence[str],
    vector: Vectors | None,
    model: str,
    scopes: Sequence[Scope],
    depth: int,
    floor: float,
) -> list[tuple[Pairs, Pairs]]:
    """``IndexRows.candidates`` for a backend with nothing to gain from asking together."""
    return [
        (
            rows.keyword(words, scope, depth),
            [] if vector is None else rows.semantic(vector, model, scope, depth, floor),
        )
        for scope in scopes
    ]


def rows_within_one_by_one(
    rows: IndexRows, ids: Sequence[int], among: Sequence[int], scope: Scope
) -> tuple[dict[int, dict[str, Any]], set[int]]:
    """``IndexRows.rows_within``, one call after the other."""
    return (rows.rows(ids) if ids else {}), (rows.allowed(among, scope) if among else set())
