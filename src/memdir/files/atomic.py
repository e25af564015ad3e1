"""Atomic file writes and the memory folder's lock.

Invariants:
- ``atomic_write`` never leaves a half-written target: the bytes go to a temp
  file in the same folder, are fsynced, and replace the target with one
  ``os.replace``; the folder is fsynced after, so the rename survives a crash.
  A reader sees the old file or the new one, never a mix. ``atomic_write_all``
  does the same for a few files in order (an archive, then the file it was taken
  from), their temp files fsynced at once: a crash never leaves a later file
  replaced without an earlier one.
- One ``FolderLock`` per memory folder per process (``folder_lock`` hands out
  the same object for the same folder), holding a thread lock and an OS file
  lock on ``.memdir/lock``. It is re-entrant, so a store method may call
  another under it. Writers re-read the file they change while holding it.
- Temp files carry ``TMP_SUFFIX`` and the writer's pid (``temps.temp_path``);
  one left by a killed writer is removed under the lock once its writer is gone
  (``remove_stale_temp_files``; when to look: ``memdir.files.temps``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

import filelock

from memdir.errors import DiskFull, LockTimeout, ReadOnlyFolder, StorageError
from memdir.files.temps import TMP_SUFFIX as TMP_SUFFIX  # re-exported: backups skip them
from memdir.files.temps import Folders, remove_stale, temp_path
from memdir.paths import resolved

LOCK_TIMEOUT_SECONDS = 30.0


def atomic_write(
    path: Path, data: str | bytes, *, encoding: str = "utf-8", sync_dir: bool = True
) -> None:
    """Replace ``path`` with ``data`` atomically (temp file, fsync, rename, fsync dir).

    ``sync_dir=False`` leaves the folder's fsync to the caller (``fsync_dirs``), for
    bulk jobs that rewrite many files in one folder: the rename is still atomic.
    A symlink is written through (its target replaced, the link kept); whether a link
    may be followed at all is the caller's rule (``memdir.stores.base.confine``). A
    read-only or full disk raises ``ReadOnlyFolder`` / ``DiskFull`` with the target as
    it was and no temp file left.
    """
    payload = data.encode(encoding) if isinstance(data, str) else data
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    try:
        _replace(path, payload)
    except OSError as exc:
        error = storage_error(path.parent, exc)
        if error is None:
            raise
        raise error from exc
    if sync_dir:
        _fsync_dir(path.parent)


def _replace(path: Path, payload: bytes) -> None:
    tmp = _stage(path, payload)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def _stage(path: Path, payload: bytes) -> Path:
    """Write ``payload`` to a fresh temp file beside ``path`` and fsync it; its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return tmp


def atomic_write_all(
    writes: Sequence[tuple[Path, bytes]], on_replaced: Callable[[int], None] | None = None
) -> None:
    """``atomic_write`` for several files in order, the fsyncs of their temp files at once.

    Every temp file is written and fsynced together (one thread each but the last, so
    the waits overlap), then each is renamed over its target and its folder fsynced
    before the next is renamed: a crash leaves the first ones replaced and the rest as
    they were, never a later one without an earlier (text a cap takes out of a file
    is in the archive before the file changes). If any temp file cannot be written,
    nothing is renamed and no temp file is left; errors as ``atomic_write``'s.
    ``on_replaced(n)`` is called once the n-th file is in place (and its folder synced).
    """
    if len(writes) <= 1:
        for n, (path, payload) in enumerate(writes):
            atomic_write(path, payload)
            if on_replaced is not None:
                on_replaced(n)
        return
    targets = [Path(os.path.realpath(path)) if path.is_symlink() else path for path, _ in writes]
    last = len(writes) - 1
    pool = _pool()
    futures = [pool.submit(_stage, targets[n], writes[n][1]) for n in range(last)]
    staged: dict[int, Path] = {}
    renamed: set[int] = set()
    failure: tuple[Path, OSError] | None = None
    try:
        try:
            staged[last] = _stage(targets[last], writes[last][1])
        except OSError as exc:
            failure = (targets[last], exc)
        for position, future in enumerate(futures):
            try:
                staged[position] = future.result()
            except OSError as exc:
                failure = failure or (targets[position], exc)
        if failure is None:
            for position, target in enumerate(targets):
                try:
                    os.replace(staged[position], target)
                except OSError as exc:
                    failure = (target, exc)
                    break
                renamed.add(position)
                _fsync_dir(target.parent)
                if on_replaced is not None:
                    on_replaced(position)
    finally:  # an interrupt too: each thread finishes, then no temp file is left
        for position, future in enumerate(futures):
            if position not in staged:
                with contextlib.suppress(BaseException):
                    staged[position] = future.result()
        for position, tmp in staged.items():
            if position not in renamed:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
    if failure is not None:
        where, cause = failure
        error = storage_error(where.parent, cause)
        if error is None:
            raise cause
        raise error from cause


def fsync_dirs(folders: Iterable[Path]) -> None:
    """Make renames in ``folders`` durable (after ``atomic_write(..., sync_dir=False)``)."""
    for folder in set(folders):
        _fsync_dir(folder)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on dirs
        pass
    finally:
        os.close(fd)


def remove_stale_temp_files(folders: Folders, skip: Collection[Path] = ()) -> list[Path]:
    """Delete temp files left by killed writers in ``folders`` (a mapping says which
    to walk down), keeping those a live writer may still rename (``temps.is_stale``).
    Call only while holding the folder's lock: its writers then are not mid-write."""
    return remove_stale(folders, skip)


class FolderLock:
    """A re-entrant lock across threads and processes for one memory folder.

    It knows its process: a child made by ``fork`` (a pre-forking server, celery,
    ``multiprocessing``) starts with a fresh, unheld lock of its own instead of the
    parent's (whose thread lock may be held by a thread the child does not have, and
    whose OS lock belongs to the parent). A folder whose ``.memdir/lock`` cannot be
    created or opened (a read-only mount, ``chattr +i``, no permission) makes
    ``acquire`` raise ``ReadOnlyFolder``: readers never take the lock, so they go on.
    """

    def __init__(self, lock_path: Path, timeout: float = LOCK_TIMEOUT_SECONDS) -> None:
        self.path = lock_path
        self.timeout = timeout
        self._fresh()

    def _fresh(self) -> None:
        self._pid = os.getpid()
        self._depth = 0
        """how deep the holding thread is in it (only that thread passes the RLock)"""
        self._thread_lock = threading.RLock()
        self._file_lock = filelock.FileLock(
            str(self.path), timeout=self.timeout, thread_local=False
        )

    def _for_this_process(self) -> None:
        if self._pid != os.getpid():
            with _registry_guard:
                if self._pid != os.getpid():
                    self._fresh()

    def writable(self) -> str | None:
        """None if this process can take the lock, else why not (without taking it)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            error = storage_error(self.path.parent.parent, exc)
            return str(error) if error is not None else f"{self.path}: {exc.strerror}"
        os.close(fd)
        return None

    def acquire(self) -> None:
        self._for_this_process()
        if not self._thread_lock.acquire(timeout=self.timeout):
            raise LockTimeout(f"another thread held {self.path} for over {self.timeout:g}s")
        if self._depth:  # this thread holds it already: a nested acquire costs a counter
            self._depth += 1
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file_lock.acquire()
        except filelock.Timeout as exc:
            self._thread_lock.release()
            raise LockTimeout(
                f"another process held {self.path} for over {self.timeout:g}s"
            ) from exc
        except OSError as exc:
            self._thread_lock.release()
            error = storage_error(self.path.parent.parent, exc)
            if error is None:
                raise
            raise error from exc
        except BaseException:
            self._thread_lock.release()
            raise
        self._depth = 1

    def release(self) -> None:
        self._depth -= 1
        if not self._depth:
            self._file_lock.release()
        self._thread_lock.release()

    @property
    def is_held(self) -> bool:
        return self._pid == os.getpid() and self._file_lock.is_locked

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


_UNWRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM}
_FULL = {errno.ENOSPC, errno.EDQUOT}


def storage_error(folder: Path, exc: OSError) -> StorageError | None:
    """The ``StorageError`` an OS error means for writing under ``folder``, or None
    when it is not one (a bug, a missing file: let it through)."""
    if exc.errno in _UNWRITABLE:
        if exc.errno == errno.EROFS:
            what = "is on a read-only file system"
        else:
            what = f"is not writable ({exc.strerror}: {exc.filename or folder})"
        return ReadOnlyFolder(
            f"{folder} {what}; it can be read and searched, but nothing can be written to it"
        )
    if exc.errno in _FULL:
        return DiskFull(
            f"no space left on the disk holding {folder} ({exc.strerror}); nothing was "
            "written and every file is as it was: free some space and try again"
        )
    return None


_registry: dict[Path, FolderLock] = {}
_registry_guard = threading.Lock()


def folder_lock(lock_path: Path) -> FolderLock:
    """The process-wide lock object for ``lock_path`` (one per folder, shared)."""
    key = resolved(lock_path)  # a .memdir that is a loop of links: said so, no traceback
    with _registry_guard:
        lock = _registry.get(key)
        if lock is None:
            lock = FolderLock(key)
            _registry[key] = lock
        return lock


_POOL: ThreadPoolExecutor | None = None
_POOL_GUARD = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """The threads that write and fsync temp files beside the caller's (made on first use)."""
    global _POOL
    with _POOL_GUARD:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="memdir-write")
        return _POOL


def _after_fork_in_child() -> None:
    """A forked child must not inherit a guard held by a parent's thread, nor its
    writer threads (they do not exist in the child)."""
    global _registry_guard, _POOL, _POOL_GUARD
    _registry_guard = threading.Lock()
    _POOL, _POOL_GUARD = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
