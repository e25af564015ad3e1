"""``history.db`` kept sound: the file under the activity history (``History``).

A damaged file (truncated, overwritten, a bad page, a schema its migrations cannot
read) must not stop the agent: every public method of ``History`` runs through
``HistoryFile.guard``, which, when SQLite says so (``memdir.sqlite.damage_reason``),
renames the file to ``history.db.corrupt-<UTC stamp>`` under the folder lock, starts
a fresh history, records the restart in its ``history_restarts`` table, sends a
``Notice`` and runs the call again. A process whose file another process set aside
follows it to the fresh one and moves nothing (the inode at the path changed: checked
before every write, since SQLite in WAL mode would write on to the old file, and
before a read at most once a second). The rows of the damaged file are not lost with
it: ``memdir doctor`` keeps reporting it and ``memdir doctor --repair`` reads them
back (``memdir.maintain.salvage``). In a folder this process cannot write, a damaged
file reads as an empty history instead.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from memdir import sqlite
from memdir.errors import ReadOnlyFolder
from memdir.results import Notice
from memdir.stores.history_schema import MIGRATIONS, Restart, read_only_history, restarts_in
from memdir.timeutil import Clock, format_ts

FOLLOW_SECONDS = 1.0  # how stale a read may be after another process set the file aside
P = ParamSpec("P")
T = TypeVar("T")
H = TypeVar("H", bound="HistoryFile")


def guarded(method: Callable[Concatenate[H, P], T]) -> Callable[Concatenate[H, P], T]:
    """``HistoryFile.guard`` around a method that reads."""

    @functools.wraps(method)
    def wrapper(history: H, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return history.guard(lambda: method(history, *args, **kwargs))

    return wrapper


def writing(method: Callable[Concatenate[H, P], T]) -> Callable[Concatenate[H, P], T]:
    """``HistoryFile.guard`` around a method that writes."""

    @functools.wraps(method)
    def wrapper(history: H, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return history.guard(lambda: method(history, *args, **kwargs), writes=True)

    return wrapper


class HistoryFile:
    """The connection to ``history.db``, mended when the file is damaged."""

    def __init__(
        self,
        path: Path,
        clock: Clock,
        *,
        lock: AbstractContextManager[object] | None = None,
        on_notice: Callable[[Notice], None] | None = None,
        read_only: str | None = None,
    ) -> None:
        self.read_only = read_only
        self.path = path
        self.clock = clock
        self.folder_lock = lock
        self.on_notice = on_notice
        self._lock = threading.RLock()
        self._guards = threading.local()  # how deep in ``guard`` each thread is
        self._follow_at = time.monotonic() + FOLLOW_SECONDS
        self._file_id = sqlite.file_id(path)
        if read_only is not None:
            self.db = read_only_history(path)
            return
        try:
            self.db = sqlite.connect(path, MIGRATIONS)
        except sqlite3.DatabaseError as exc:
            if not self._recover(exc, opening=True):
                raise
        self._file_id = sqlite.file_id(path)

    def close(self) -> None:
        self.db.close()

    def guard(self, operation: Callable[[], T], *, writes: bool = False) -> T:
        """Run ``operation``; if it finds the file damaged, set it aside, start a fresh
        history and run it once more. Every public method runs through here; only a
        thread's outermost call mends. It first checks that the file is still the one it
        opened (another process may have set it aside, and in WAL mode SQLite would go on
        writing to the old file without a word): before every write, and before a read
        at most once every ``FOLLOW_SECONDS``."""
        if writes and self.read_only is not None:
            raise ReadOnlyFolder(self.read_only)
        if self.read_only is not None:
            try:
                return operation()
            except sqlite3.DatabaseError as exc:
                if not sqlite.is_damage(exc):
                    raise
                self._read_as_empty(str(exc))
            return operation()

        def follow() -> None:
            if writes or time.monotonic() >= self._follow_at:
                self._follow_at = time.monotonic() + FOLLOW_SECONDS
                if sqlite.file_id(self.path) != self._file_id:
                    self._recover(sqlite3.DatabaseError(sqlite.MOVED))

        return sqlite.mended(self._guards, operation, self._recover, follow)

    def _read_as_empty(self, reason: str) -> None:
        """A damaged file in a folder this process cannot write: it cannot be set aside,
        so this process reads an empty history in memory instead."""
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self.db.close()
            self.db = read_only_history(Path(os.devnull) / "none")
        if self.on_notice is not None:
            where = f"{self.path.parent.name}/{self.path.name}"
            self.on_notice(
                Notice(
                    "history",
                    f"{where} is damaged ({reason}) and the folder is read-only: it reads as "
                    "empty here; `memdir doctor --repair` where the folder can be written",
                )
            )

    def _recover(self, exc: sqlite3.DatabaseError, *, opening: bool = False) -> bool:
        """True if ``exc`` came from a damaged (or moved) file and a sound one is open now."""
        db = None if opening else self.db
        reason = sqlite.damage_reason(exc, db, self.path, self._file_id, MIGRATIONS)
        if reason is None:
            return False
        self._mend(reason, db)
        return True

    def mend(self, reason: str) -> Path | None:
        """Set the file aside as damaged (``reason``: what ``memdir doctor`` found) and
        start a fresh history; the moved file's path (``memdir doctor --repair``)."""
        return self._mend(reason, self.db)

    def _mend(self, reason: str, db: sqlite3.Connection | None) -> Path | None:
        with self.folder_lock or contextlib.nullcontext(), self._lock:
            if db is not None:
                with contextlib.suppress(sqlite3.Error):
                    db.close()
            moved = sqlite.set_aside(self.path, reason, self._file_id, self.clock(), None)
            self.db = sqlite.connect(self.path, MIGRATIONS)
            self._file_id = sqlite.file_id(self.path)
            if moved is not None:
                self.db.execute(
                    "INSERT OR IGNORE INTO history_restarts (moved_to, reason, restarted_at) "
                    "VALUES (?, ?, ?)",
                    (moved.name, reason, format_ts(self.clock())),
                )
        if moved is not None and self.on_notice is not None:
            where = f"{self.path.parent.name}/{self.path.name}"
            self.on_notice(
                Notice(
                    "history",
                    f"{where} was damaged ({reason}); moved aside to "
                    f"{self.path.parent.name}/{moved.name} and started a fresh one: "
                    "`memdir doctor --repair` recovers what it can",
                    logged=True,  # sqlite.set_aside logged it
                )
            )
        return moved

    @guarded
    def restarts(self) -> list[Restart]:
        """Every time a damaged history was set aside for this one, oldest first."""
        with self._lock:
            return restarts_in(self.db)
