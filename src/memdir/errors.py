"""Exceptions raised by memdir.

Every exception memdir raises on purpose derives from ``MemdirError``::

    MemdirError
    ├── ManifestError         memdir.toml is missing a value, has a bad one, or is not TOML
    ├── NotAMemoryFolder      no memdir.toml at the path given to memdir.open()
    ├── FolderExistsError     memdir init over a folder that already has a manifest
    ├── ForeignFolder         memdir init over a folder that looks like something else's
    │                         (a code project, a home folder); nothing was written
    ├── LayerNotConfigured    the manifest declares no layer for the store asked for
    ├── LockTimeout           another process held the folder lock for too long
    ├── StorageError          the disk refused a write; every file is as it was
    │   ├── ReadOnlyFolder    the folder cannot be written (read-only mount, no permission);
    │   │                     it still opens, reads and searches
    │   └── DiskFull          no space left (or over quota)
    ├── FileShapeError        a file cannot be read as the shape its layer says it has
    ├── MigrationError        a legacy file (memories.json) could not be read; left untouched
    ├── WriteRefused          raised by WriteResult.raise_for_refusal() on {ok: false}
    ├── LocalOnly             a job about the disk itself (git backup, SQLite checks) asked
    │                         of a folder kept in PostgreSQL
    ├── VersionConflict       (storage) a file changed since the version a writer read
    ├── TokenRefused          (storage.postgres.tokens) a team server request's token does
    │                         not let it in: 401 (none valid) or 403 (other agents')
    ├── EmbedderUnavailable   (index.embedders) the configured embedder cannot run here
    │   └── ModelFileMismatch (index.model_files) the model file's sha256 is not the pinned one
    ├── PluginError           (plugins) no embedder, LLM client or token counter of that name
    ├── HistoryError          (history) a bad call: unknown activity, bad type; also a ValueError
    ├── DatabaseDamaged       (sqlite) a damaged index.db or history.db could not be moved aside
    ├── UnknownSession        (sessions) no such session; also a LookupError
    ├── IngestError           (ingest) a chat history file is malformed or of no known format
    ├── LLMError              (llm) the configured LLM could not be reached or its answer read
    └── BackupError           (backup) git is missing or refused

Refusals an agent can act on (over a cap, empty content, an array where one
observation is expected) are not exceptions: store methods return a
``WriteResult`` with ``ok=False`` and a reason, so the tool layer can hand the
model a sentence. ``WriteRefused`` exists for Python callers who prefer raising.
"""

from __future__ import annotations

from pathlib import Path


class MemdirError(Exception):
    """Base class of every error memdir raises on purpose."""


class ManifestError(MemdirError):
    """memdir.toml could not be loaded; names the file, the line and the key."""

    def __init__(self, path: Path, message: str, *, line: int | None = None, key: str = "") -> None:
        self.path = path
        self.line = line
        self.key = key
        self.message = message
        where = f"{path}:{line}" if line is not None else f"{path}"
        what = f"{key}: " if key else ""
        super().__init__(f"{where}: {what}{message}")


class NotAMemoryFolder(MemdirError):
    """The folder has no memdir.toml."""


class FolderExistsError(MemdirError):
    """memdir init was asked to write a manifest where one already exists."""


class ForeignFolder(MemdirError):
    """memdir init was pointed at a folder that looks like something other than a memory
    folder (``memdir.scaffold.foreign_reason``); nothing was written."""


class LayerNotConfigured(MemdirError):
    """The manifest declares no layer backed by the requested store."""


class LockTimeout(MemdirError):
    """The memory folder's lock could not be taken in time."""


class StorageError(MemdirError):
    """The disk refused a write (read-only, full); nothing was written."""


class ReadOnlyFolder(StorageError):
    """The memory folder cannot be written here; reading and searching still work."""


class DiskFull(StorageError):
    """No space left on the disk holding the memory folder."""


class FileShapeError(MemdirError):
    """A memory file does not have the shape its layer declares."""


class MigrationError(MemdirError):
    """A legacy file could not be migrated; it was left as it is."""


class LocalOnly(MemdirError):
    """The job works on a folder on disk only; this one is kept in a database."""


class WriteRefused(MemdirError):
    """A write was refused; ``reason`` says why and ``store`` which file it was for."""

    def __init__(self, store: str, reason: str) -> None:
        self.store = store
        self.reason = reason
        super().__init__(f"{store}: {reason}")
