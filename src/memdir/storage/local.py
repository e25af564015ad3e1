"""``Files`` on disk: the memory folder as it is today, behind the seam.

An adapter over what the stores already call (``atomic_write``, ``FolderLock``,
``os.stat``), so the next phase can hand the stores a ``Files`` without changing what
lands on disk. A file's version is its mtime in nanoseconds; a write under the lock
that would leave it unchanged (a coarse clock, two writes in one tick) moves it on by
one nanosecond, so the version grows at every write memdir makes, and a hand edit
changes it too. ``write_all`` (what the stores' edits use) does not hash nor bump: an
edit costs what it did before the seam; its ``stamp`` (mtime, size, inode) moves with
the atomic rename's new inode.

Links: memdir follows a link that stays inside the folder and never one that leaves
it (``paths.outside_target``'s rule): ``read`` sees no file there, ``unwritable`` says why.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from stat import S_ISREG

from memdir.config import STATE_DIR
from memdir.errors import MemdirError
from memdir.files.atomic import FolderLock, atomic_write, atomic_write_all, folder_lock
from memdir.files.temps import TMP_SUFFIX
from memdir.paths import resolved, too_long, walk_files
from memdir.storage.seam import FileStat, VersionConflict

LOCK_FILE = "lock"
_PATHS_KEPT = 100_000


class LocalFiles:
    """A memory folder's files on disk, under its ``.memdir/lock``."""

    def __init__(self, root: Path, *, lock: FolderLock | None = None) -> None:
        self.root = root
        self._lock = lock or folder_lock(root / STATE_DIR / LOCK_FILE)
        self._paths: dict[str, Path] = {}
        self._real_root: str | None = None

    @property
    def lock(self) -> FolderLock:
        return self._lock

    def _path(self, path: str) -> Path:
        found = self._paths.get(path)
        if found is None:
            if not path or path.startswith("/") or ".." in path.split("/"):
                raise ValueError(f"{path!r} is not a path inside the memory folder")
            if len(self._paths) >= _PATHS_KEPT:
                self._paths.clear()
            found = self._paths[path] = self.root / path  # joining costs more than a look-up
        return found

    def _outside(self, target: Path) -> str | None:
        """Where ``target`` leads if a link takes it out of the folder, else None
        (``paths.outside_target``, with the folder's own real path resolved once)."""
        if self._real_root is None:
            self._real_root = os.path.realpath(self.root)
        real = os.path.realpath(target)
        inside = real == self._real_root or real.startswith(self._real_root + os.sep)
        return None if inside else real

    def read(self, path: str) -> bytes | None:
        target = self._path(path)
        try:
            data = target.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except OSError as exc:
            # a loop of links, or a name longer than the file system holds: no file there
            if exc.errno in (errno.ELOOP, errno.ENAMETOOLONG):
                return None
            raise
        if self._outside(target) is not None:  # never read through it
            return None
        return data

    def stamp(self, path: str) -> tuple[int, ...] | None:
        try:
            stat = os.stat(self._path(path))
        except OSError:
            return None
        if not S_ISREG(stat.st_mode):
            return None
        return (stat.st_mtime_ns, stat.st_size, stat.st_ino)

    def unwritable(self, path: str) -> str | None:
        long = too_long(path)
        if long is not None:
            return long
        target = self._path(path)
        if target.is_dir():
            return (
                f"{path} is a folder, not a file; memdir cannot write its memory there. Move "
                "the folder away (its files are left as they are), and nothing was written"
            )
        leads = self._outside(target)
        if leads is not None:
            return (
                f"{path} is a link to {leads}, outside the memory folder; memdir does not "
                "write through it. Replace the link with the file itself (or a link inside the "
                "folder), and nothing was written"
            )
        try:
            resolved(target, path)
        except MemdirError as loop:
            return f"{loop} with the file itself, and nothing was written"
        return None

    def paths(self, folder: str = "") -> list[str]:
        start = folder.strip("/")
        return sorted(
            relative
            for relative, _ in walk_files(self.root, start)
            if TMP_SUFFIX not in relative and not relative.startswith(f"{STATE_DIR}/")
        )

    def real(self, path: str) -> Path:
        """The file on disk (for jobs that are about the disk itself)."""
        return self._path(path)

    def stat(self, path: str) -> FileStat | None:
        """Without reading the file: its sha256 is computed when first asked."""
        target = self._path(path)
        try:
            stat = os.stat(target)
        except OSError:
            return None
        if not S_ISREG(stat.st_mode):
            return None

        def digest() -> str:
            try:
                return hashlib.sha256(target.read_bytes()).hexdigest()
            except OSError:
                return ""

        return FileStat(path, stat.st_size, digest, stat.st_mtime_ns, stat.st_mtime_ns)

    def list(self, prefix: str = "") -> list[FileStat]:
        found: list[FileStat] = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if d != STATE_DIR or dirpath != str(self.root))
            for name in filenames:
                if TMP_SUFFIX in name:
                    continue
                rel = Path(dirpath, name).relative_to(self.root).as_posix()
                if rel.startswith(prefix):
                    stat = self.stat(rel)
                    if stat is not None:
                        found.append(stat)
        return sorted(found, key=lambda s: s.path)

    def _check(self, path: str, expected: int | None) -> FileStat | None:
        current = self.stat(path)
        if expected is not None:
            found = current.version if current is not None else None
            if (found or 0) != expected:
                raise VersionConflict(path, expected, found)
        return current

    def write(self, path: str, data: bytes, *, expected_version: int | None = None) -> FileStat:
        with self._lock:
            before = self._check(path, expected_version)
            target = self._path(path)
            atomic_write(target, data)
            return self._moved_on(path, target, before)

    def _moved_on(self, path: str, target: Path, before: FileStat | None) -> FileStat:
        after = self.stat(path)
        assert after is not None
        if before is not None and after.mtime_ns <= before.mtime_ns:
            bumped = before.mtime_ns + 1
            os.utime(target, ns=(bumped, bumped))
            after = self.stat(path)
            assert after is not None
        return after

    def write_all(
        self, writes: Sequence[tuple[str, bytes]], on_written: Callable[[int], None] | None = None
    ) -> None:
        with self._lock:
            atomic_write_all([(self._path(p), data) for p, data in writes], on_written)

    def append(self, path: str, data: bytes) -> FileStat:
        with self._lock:
            before = self.stat(path)
            target = self._path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("ab") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            return self._moved_on(path, target, before)

    def remove(self, path: str, *, expected_version: int | None = None) -> bool:
        with self._lock:
            if self._check(path, expected_version) is None:
                return False
            with contextlib.suppress(FileNotFoundError):
                self._path(path).unlink()
            return True

    def rename(self, old: str, new: str) -> FileStat:
        with self._lock:
            before = self.stat(new)
            source, target = self._path(old), self._path(new)
            if not source.is_file():
                raise FileNotFoundError(old)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
            return self._moved_on(new, target, before)
