"""Atomic file writes and the memory folder's lock.

Invariants:
- ``atomic_write`` never leaves a half-written target: the bytes go to a temp
  file in the same folder, are fsynced, and replace the target with one
  ``os.replace``; the folder is fsynced after, so the rename survives a crash.
  A reader sees the old file or the new one, never a mix.
- One ``FolderLock`` per memory folder per process (``folder_lock`` hands out
  the same object for the same folder), holding a thread lock and an OS file
  lock on ``.memdir/lock``. It is re-entrant, so a store method may call
  another under it. Writers re-read the file they change while holding it.
- Temp files carry ``TMP_SUFFIX``; one left by a killed writer is removed by
  the next writer that holds the lock (``remove_stale_temp_files``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

import filelock

from memdir.errors import LockTimeout

TMP_SUFFIX = ".memdir-tmp"
LOCK_TIMEOUT_SECONDS = 30.0


def atomic_write(
    path: Path, data: str | bytes, *, encoding: str = "utf-8", sync_dir: bool = True
) -> None:
    """Replace ``path`` with ``data`` atomically (temp file, fsync, rename, fsync dir).

    ``sync_dir=False`` leaves the folder's fsync to the caller (``fsync_dirs``), for
    bulk jobs that rewrite many files in one folder: the rename is still atomic.
    """
    payload = data.encode(encoding) if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}{TMP_SUFFIX}")
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
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    if sync_dir:
        _fsync_dir(path.parent)


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


def remove_stale_temp_files(folders: Iterable[Path]) -> list[Path]:
    """Delete temp files left by killed writers. Call only while holding the lock."""
    removed: list[Path] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for tmp in folder.glob(f".*{TMP_SUFFIX}"):
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
                removed.append(tmp)
    return removed


class FolderLock:
    """A re-entrant lock across threads and processes for one memory folder."""

    def __init__(self, lock_path: Path, timeout: float = LOCK_TIMEOUT_SECONDS) -> None:
        self.path = lock_path
        self.timeout = timeout
        self._thread_lock = threading.RLock()
        self._file_lock = filelock.FileLock(str(lock_path), timeout=timeout, thread_local=False)

    def acquire(self) -> None:
        if not self._thread_lock.acquire(timeout=self.timeout):
            raise LockTimeout(f"another thread held {self.path} for over {self.timeout:g}s")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file_lock.acquire()
        except filelock.Timeout as exc:
            self._thread_lock.release()
            raise LockTimeout(
                f"another process held {self.path} for over {self.timeout:g}s"
            ) from exc
        except BaseException:
            self._thread_lock.release()
            raise

    def release(self) -> None:
        self._file_lock.release()
        self._thread_lock.release()

    @property
    def is_held(self) -> bool:
        return self._file_lock.is_locked

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


_registry: dict[Path, FolderLock] = {}
_registry_guard = threading.Lock()


def folder_lock(lock_path: Path) -> FolderLock:
    """The process-wide lock object for ``lock_path`` (one per folder, shared)."""
    key = lock_path.resolve()
    with _registry_guard:
        lock = _registry.get(key)
        if lock is None:
            lock = FolderLock(key)
            _registry[key] = lock
        return lock
