"""``Memory``: one agent's memory folder, opened.

``open_memory(path)`` reads the manifest, takes the folder lock once to tidy up
(temp files left by a killed writer, the one-time legacy migration), and hands
back a ``Memory`` whose stores (``notebook``, ``knowledge``, ``state``) are
built on first use from the layers the manifest declares. Asking for a store
the manifest does not declare raises ``LayerNotConfigured``.

Every store writes through immediately under the folder lock and holds no open
file, so there is nothing to flush: ``close`` (and leaving a ``with`` block)
has nothing to lose.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from types import TracebackType

from memdir.config import MANIFEST_NAME, STATE_DIR, Manifest, load_manifest
from memdir.errors import LayerNotConfigured, NotAMemoryFolder
from memdir.files.atomic import folder_lock, remove_stale_temp_files
from memdir.migrate import MigrationReport, migrate_legacy
from memdir.results import Notice
from memdir.stores.base import Archive, StoreContext
from memdir.stores.knowledge import KnowledgeStore
from memdir.stores.notebook import Notebook
from memdir.stores.state import StateStore
from memdir.timeutil import Clock, utc_now

LOCK_FILE = "lock"


class Memory:
    """An opened memory folder. Build it with ``memdir.open(path)``."""

    def __init__(self, root: Path, manifest: Manifest, *, clock: Clock | None = None) -> None:
        self.root = root
        self.manifest = manifest
        self.clock: Clock = clock or utc_now
        self.lock = folder_lock(root / STATE_DIR / LOCK_FILE)
        self.migration: MigrationReport | None = None
        self._ctx = StoreContext(
            root=root,
            manifest=manifest,
            lock=self.lock,
            clock=self.clock,
            archive=Archive(root, manifest.archive_dir(), self.clock),
        )

    def __repr__(self) -> str:
        return f"Memory({str(self.root)!r}, layout={self.manifest.layout!r})"

    # -- stores ----------------------------------------------------------------

    def _path(self, store: str) -> str:
        path = self.manifest.path_of(store)
        if path is None:
            raise LayerNotConfigured(
                f"{self.root / MANIFEST_NAME} declares no layer with store = {store!r}"
            )
        return path

    @cached_property
    def notebook(self) -> Notebook:
        """Working memory (NOTEBOOK.md)."""
        return Notebook(self._ctx, self._path("notebook"))

    @cached_property
    def knowledge(self) -> KnowledgeStore:
        """Curated knowledge and observations (knowledge.md)."""
        return KnowledgeStore(self._ctx, self._path("knowledge"))

    @cached_property
    def state(self) -> StateStore:
        """TTL snapshots (state.md)."""
        return StateStore(self._ctx, self._path("state"))

    def has(self, store: str) -> bool:
        """True if the manifest declares a layer backed by ``store``."""
        return self.manifest.layer_for(store) is not None

    # -- lifecycle -------------------------------------------------------------

    def _startup(self) -> None:
        with self.lock:
            remove_stale_temp_files(self._write_folders())
            if self.has("knowledge"):
                state = self.state if self.has("state") else None
                self.migration = migrate_legacy(self.knowledge, state, self.clock)

    def _write_folders(self) -> set[Path]:
        folders = {self.root, self.root / STATE_DIR}
        for store in ("notebook", "knowledge", "state", "workstate"):
            path = self.manifest.path_of(store)
            if path is not None:
                folders.add((self.root / path).parent)
        archive = self.root / self.manifest.archive_dir()
        if archive.is_dir():
            folders.update(child for child in archive.iterdir() if child.is_dir())
        return folders

    def check(self) -> list[Notice]:
        """What needs attention: files over their caps, empty entries, a migration done."""
        notices: list[Notice] = []
        if self.migration is not None:
            notices.append(Notice("migration", self.migration.summary()))
        if self.has("notebook"):
            notices.extend(self.notebook.check())
        if self.has("knowledge"):
            notices.extend(self.knowledge.check())
        return notices

    def close(self) -> None:
        """Every write is already on disk and no file is held open: nothing to flush."""

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def find_root(path: str | Path) -> Path:
    root = Path(path).expanduser().resolve()
    if not (root / MANIFEST_NAME).is_file():
        raise NotAMemoryFolder(
            f"{root} has no {MANIFEST_NAME}; run `memdir init {root}` to make it a memory folder "
            f"(`memdir init {root} --adopt` maps files already there without moving them)"
        )
    return root


def open_memory(path: str | Path, *, clock: Clock | None = None) -> Memory:
    """Open the memory folder at ``path`` (it must hold a memdir.toml)."""
    root = find_root(path)
    memory = Memory(root, load_manifest(root / MANIFEST_NAME), clock=clock)
    memory._startup()
    return memory
