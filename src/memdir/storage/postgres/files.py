"""``Files`` in PostgreSQL: one row per file in ``files``, its exact bytes in ``data``.

A write replaces the row in one statement inside the folder lock's transaction, so a
reader sees the old bytes or the new, and a crash before the commit leaves the old.
The version counts the file's writes (1 for a new file; a removed file starts again
at 1). A write outside a held lock takes the lock for itself.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from memdir.paths import too_long
from memdir.storage.postgres.db import Database, Folder, FolderLock
from memdir.storage.seam import FileStat, VersionConflict

_STAT = "path, size, sha256, mtime_ns, version"


def _stat(row: tuple[Any, ...]) -> FileStat:
    path, size, sha256, mtime_ns, version = row
    return FileStat(str(path), int(size), str(sha256), int(mtime_ns), int(version))


def _bad_path(path: str) -> bool:
    parts = path.split("/")
    return not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts)


def _check_path(path: str) -> str:
    if _bad_path(path):
        raise ValueError(f"{path!r} is not a path inside the memory folder")
    return path


def _like(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class PgFiles:
    """One agent's memory folder as rows of ``files``."""

    def __init__(
        self,
        db: Database,
        agent: str,
        *,
        clock_ns: Callable[[], int] = time.time_ns,
        folder: Folder | None = None,
    ) -> None:
        self.folder = folder or Folder(db, agent)
        self.agent = agent
        self.clock_ns = clock_ns

    @property
    def lock(self) -> FolderLock:
        return self.folder.lock

    def read(self, path: str) -> bytes | None:
        row = (
            self.folder.conn()
            .execute("SELECT data FROM files WHERE agent = %s AND path = %s", (self.agent, path))
            .fetchone()
        )
        return None if row is None else bytes(row[0])

    def stat(self, path: str) -> FileStat | None:
        row = (
            self.folder.conn()
            .execute(
                f"SELECT {_STAT} FROM files WHERE agent = %s AND path = %s", (self.agent, path)
            )
            .fetchone()
        )
        return None if row is None else _stat(row)

    def stamp(self, path: str) -> tuple[int, ...] | None:
        row = (
            self.folder.conn()
            .execute("SELECT version FROM files WHERE agent = %s AND path = %s", (self.agent, path))
            .fetchone()
        )
        return None if row is None else (int(row[0]),)

    def unwritable(self, path: str) -> str | None:
        if _bad_path(path):
            return f"{path!r} is not a path inside the memory folder; nothing was written"
        return too_long(path)

    def paths(self, folder: str = "") -> list[str]:
        start = folder.strip("/")
        rows = (
            self.folder.conn()
            .execute(
                "SELECT path FROM files WHERE agent = %s AND path LIKE %s ORDER BY path",
                (self.agent, _like(f"{start}/" if start else "")),
            )
            .fetchall()
        )
        return [
            str(row[0])
            for row in rows
            if not any(part.startswith(".") for part in str(row[0]).split("/"))
        ]

    def list(self, prefix: str = "") -> list[FileStat]:
        like = _like(prefix)
        rows = (
            self.folder.conn()
            .execute(
                f"SELECT {_STAT} FROM files WHERE agent = %s AND path LIKE %s ORDER BY path",
                (self.agent, like),
            )
            .fetchall()
        )
        return [_stat(row) for row in rows]

    def _current(self, path: str, expected: int | None) -> int:
        """The file's version under the lock (0: none), checked against ``expected``."""
        row = (
            self.lock.connection()
            .execute("SELECT version FROM files WHERE agent = %s AND path = %s", (self.agent, path))
            .fetchone()
        )
        found = 0 if row is None else int(row[0])
        if expected is not None and found != expected:
            raise VersionConflict(path, expected, found or None)
        return found

    def write(
        self,
        path: str,
        data: bytes,
        *,
        expected_version: int | None = None,
        mtime_ns: int | None = None,
    ) -> FileStat:
        """``Files.write``; ``mtime_ns`` keeps a pushed file's own time (default: now)."""
        _check_path(path)
        payload = bytes(data)
        with self.lock:
            self._current(path, expected_version)
            row = (
                self.lock.connection()
                .execute(
                    "INSERT INTO files AS f (agent, path, data, sha256, size, mtime_ns, version) "
                    "VALUES (%s, %s, %s, %s, %s, %s, 1) ON CONFLICT (agent, path) DO UPDATE SET "
                    "data = excluded.data, sha256 = excluded.sha256, size = excluded.size, "
                    "mtime_ns = excluded.mtime_ns, version = f.version + 1 "
                    f"RETURNING {_STAT}",
                    (
                        self.agent,
                        path,
                        payload,
                        hashlib.sha256(payload).hexdigest(),
                        len(payload),
                        mtime_ns if mtime_ns is not None else self.clock_ns(),
                    ),
                )  # fmt: skip
                .fetchone()
            )
        assert row is not None
        return _stat(row)

    def write_all(
        self, writes: Sequence[tuple[str, bytes]], on_written: Callable[[int], None] | None = None
    ) -> None:
        """``Files.write_all``: every file in the one transaction of the lock."""
        with self.lock:
            for n, (path, data) in enumerate(writes):
                self.write(path, data)
                if on_written is not None:
                    on_written(n)

    def append(self, path: str, data: bytes) -> FileStat:
        """``Files.append``: joined and hashed again in the database (PostgreSQL rewrites
        the value: O(size) there, only the added bytes sent)."""
        _check_path(path)
        payload = bytes(data)
        with self.lock:
            row = (
                self.lock.connection()
                .execute(
                    "INSERT INTO files AS f (agent, path, data, sha256, size, mtime_ns, version) "
                    "VALUES (%s, %s, %s, %s, %s, %s, 1) ON CONFLICT (agent, path) DO UPDATE SET "
                    "data = f.data || excluded.data, "
                    "sha256 = encode(sha256(f.data || excluded.data), 'hex'), "
                    "size = f.size + excluded.size, mtime_ns = excluded.mtime_ns, "
                    f"version = f.version + 1 RETURNING {_STAT}",
                    (
                        self.agent,
                        path,
                        payload,
                        hashlib.sha256(payload).hexdigest(),
                        len(payload),
                        self.clock_ns(),
                    ),
                )  # fmt: skip
                .fetchone()
            )
        assert row is not None
        return _stat(row)

    def remove(self, path: str, *, expected_version: int | None = None) -> bool:
        with self.lock:
            if self._current(path, expected_version) == 0:
                return False
            self.lock.connection().execute(
                "DELETE FROM files WHERE agent = %s AND path = %s", (self.agent, path)
            )
            return True

    def rename(self, old: str, new: str) -> FileStat:
        _check_path(new)
        with self.lock:
            data = self.read(old)
            if data is None:
                raise FileNotFoundError(old)
            old_stat = self.stat(old)
            assert old_stat is not None
            self.remove(old)
            return self.write(new, data, mtime_ns=old_stat.mtime_ns)
