"""Reading a memory folder this process cannot write (a read-only mount, ``chattr +i``,
a folder owned by someone else).

``memdir.open`` notices it (``FolderLock.writable``) and opens the folder read-only:
``Memory.read_only`` says why, every write raises ``ReadOnlyFolder`` before it
touches anything, and reading, search and the context still work. Search needs an
index it can update as it finds files the index has not seen, so a read-only
folder's index is a private copy in the temp folder, taken from ``.memdir/index.db``
when there is one (no re-embedding) and removed when the memory is closed. The
activity history is read through an immutable connection.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
from pathlib import Path


def private_index(source: Path) -> Path:
    """A path to a copy of the index at ``source`` this process may write (an empty
    one, rebuilt by the first scan, if ``source`` is missing or unreadable)."""
    folder = Path(tempfile.mkdtemp(prefix="memdir-readonly-"))
    target = folder / source.name
    if source.is_file():
        try:
            with (
                contextlib.closing(read_only_connection(source)) as src,
                contextlib.closing(sqlite3.connect(target)) as dst,
            ):
                src.backup(dst)
        except sqlite3.Error:  # damaged or unreadable: a fresh index from the files
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
    return target


def remove_private_index(path: Path) -> None:
    if path.parent.name.startswith("memdir-readonly-"):
        shutil.rmtree(path.parent, ignore_errors=True)


def read_only_connection(path: Path) -> sqlite3.Connection:
    """A connection that never writes ``path`` nor creates its -wal/-shm files."""
    uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
    return sqlite3.connect(uri, uri=True, check_same_thread=False)
