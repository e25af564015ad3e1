"""Opening a memory: a folder on disk (``open_memory``) or an agent in a database
(``open_agent``), handed back as a ``Memory``.

Opening a folder takes its lock once to tidy up (``tidy_on_open``): temp files a
killed writer left, and the one-time migration of a legacy MEMORY.md or
memories.json. A folder this process cannot write opens read-only and is not
tidied: reads and search work, writes are refused. ``memdir.memory`` re-exports
these names, so ``from memdir.memory import open_memory`` works as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memdir.config import (
    LEGACY_MEMORIES_JSON,
    LEGACY_MEMORY_MD,
    MANIFEST_NAME,
    STATE_DIR,
    load_manifest,
)
from memdir.errors import MemdirError, NotAMemoryFolder
from memdir.files.atomic import FolderLock
from memdir.paths import resolved
from memdir.results import Notice
from memdir.storage.local import LOCK_FILE

if TYPE_CHECKING:
    from memdir.index.embedders import Embedder
    from memdir.memory import Memory
    from memdir.storage.postgres.db import Database
    from memdir.timeutil import Clock

READ_ONLY_REASON = "opened read-only (writes are refused)"


def find_root(path: str | Path) -> Path:
    root = resolved(Path(path).expanduser())
    if root.is_file():  # (init on it would be refused too: it is no folder)
        hint = f" (the memory folder is {root.parent})" if root.name == MANIFEST_NAME else ""
        raise NotAMemoryFolder(f"{root} is a file, not a memory folder{hint}")
    if not root.exists():
        raise NotAMemoryFolder(
            f"{root} does not exist; `memdir init {root}` makes a memory folder there"
        )
    if not (root / MANIFEST_NAME).is_file():
        raise NotAMemoryFolder(
            f"{root} has no {MANIFEST_NAME}; run `memdir init {root}` to make it a memory folder "
            f"(`memdir init {root} --adopt` maps files already there without moving them)"
        )
    return root


def open_agent(
    url: str,
    agent_id: str,
    *,
    read_only: bool = False,
    clock: Clock | None = None,
    embedder: Embedder | str | None = None,
    schema: str = "memdir",
    db: Database | None = None,
) -> Memory:
    """The memory of agent ``agent_id`` in the database at ``url`` (PostgreSQL).

    ``read_only``: every write is refused (``ReadOnlyFolder``; the tools answer
    ``{ok: false}``), reads, search and recall work. ``db``: a ``Database`` of the
    caller's own instead of the one this process shares per URL. Raises
    ``NotAMemoryFolder`` when the database has no such agent (``memdir init --agent
    ID --database-url URL`` creates one). Close it (or use ``with``) when done.
    """
    from memdir.config import parse_manifest
    from memdir.memory import Memory
    from memdir.storage.postgres.backend import PgStorage
    from memdir.storage.postgres.db import shared_database

    storage = PgStorage(db or shared_database(url, schema), agent_id)
    try:
        data = storage.files().read(MANIFEST_NAME)
        if data is None:
            raise NotAMemoryFolder(
                f"the database has no agent {agent_id!r} ({storage.where}); create it with "
                f"`memdir init --agent {agent_id} --database-url URL`, or `memdir push DIR "
                f"--agent {agent_id}` to move a folder there"
            )
        manifest = parse_manifest(
            data.decode("utf-8", "replace"), Path(f"{agent_id}/{MANIFEST_NAME}")
        )
        if read_only:
            storage.folder.lock.read_only = READ_ONLY_REASON
        memory = Memory(storage.scratch, manifest, clock=clock, embedder=embedder, storage=storage)
    except BaseException:
        storage.close()
        raise
    if read_only:
        memory.read_only = READ_ONLY_REASON
        memory.notices.append(Notice("folder", READ_ONLY_REASON))
    return memory


def open_memory(
    path: str | Path,
    *,
    clock: Clock | None = None,
    embedder: Embedder | str | None = None,
    database_url: str | None = None,
) -> Memory:
    """Open the memory folder at ``path`` (it must hold a memdir.toml).

    ``embedder``: an ``Embedder``, or the name of one (``minilm``, ``hashing``,
    ``none``); by default the manifest's ``[index] embedder``. ``database_url``
    (``postgresql://...``): the folder is kept in that database and ``path`` is its
    agent id (``open_agent``).
    """
    from memdir.memory import Memory

    if database_url:
        return open_agent(database_url, str(path), clock=clock, embedder=embedder)
    root = find_root(path)
    memory = Memory(root, load_manifest(root / MANIFEST_NAME), clock=clock, embedder=embedder)
    assert isinstance(memory.lock, FolderLock)  # on disk
    why = memory.lock.writable()
    if why is not None:
        memory.read_only = why
        memory.notices.append(Notice("folder", f"opened read-only: {why}"))
        return memory
    tidy_on_open(memory)
    return memory


def tidy_on_open(memory: Memory) -> None:
    """Under the folder lock: sweep a killed writer's temp files, run the legacy
    migration when it is due (``memory.migration``); then each mount's temp files,
    each under its own lock."""
    from memdir.files.temps import sweep_after_crash

    mounts = set(memory.space.mounts.values())
    with memory.lock:
        # Temp files a killed writer left: swept only when a writer died (files.temps).
        sweep_after_crash(memory.root / STATE_DIR, memory._write_folders(), skip=mounts)
        if memory.has("knowledge") and _legacy_files(memory):  # else no store is loaded
            from memdir.maintain.migrate import migrate_legacy

            state = memory.state if memory.has("state") else None
            memory.migration = migrate_legacy(memory.knowledge, state, memory.clock)
    for mount in mounts:  # each under its own lock, taken after ours is released
        try:  # briefly: another agent may hold it for a long decay; a later open sweeps
            with FolderLock(mount / STATE_DIR / LOCK_FILE, timeout=1.0):
                sweep_after_crash(mount / STATE_DIR, {mount: True})
        except MemdirError:  # busy, or a mount this agent cannot write
            continue


def _legacy_files(memory: Memory) -> bool:
    """A MEMORY.md or memories.json beside knowledge.md: the one-time migration is due."""
    folder = (memory.root / memory._path("knowledge")).parent
    return any((folder / name).is_file() for name in (LEGACY_MEMORY_MD, LEGACY_MEMORIES_JSON))
