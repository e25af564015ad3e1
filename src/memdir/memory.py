"""``Memory``: one agent's memory folder, opened.

``open_memory(path)`` (in ``memdir.opening``, re-exported here) reads the manifest,
takes the folder lock once to tidy up (temp files left by a killed writer, the
one-time legacy migration), and hands back a ``Memory`` whose stores
(``notebook``, ``knowledge``, ``state``) are built on first use from the layers the
manifest declares. Asking for a store the manifest does not declare raises
``LayerNotConfigured``.

``Memory`` is the facade: each public method says what it does and hands the work
to the module that holds it (the index and search: ``memdir.folder_index``; the
features: ``dream``, ``maintain``, ``context``, ``ingest``), imported when first used.

Every store writes through immediately under the folder lock and holds no open
file, so there is nothing to flush: ``close`` (and leaving a ``with`` block)
has nothing to lose.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, cast

from memdir.config import (
    MANIFEST_NAME,
    Layer,
    Manifest,
    file_template,
    static_prefix,
)
from memdir.errors import LayerNotConfigured, LocalOnly
from memdir.files.atomic import FolderLock
from memdir.opening import READ_ONLY_REASON as READ_ONLY_REASON
from memdir.opening import find_root as find_root
from memdir.opening import open_agent as open_agent
from memdir.opening import open_memory as open_memory
from memdir.paths import FileSpace
from memdir.readonly import remove_private_index
from memdir.results import Notice, Progress, WriteResult
from memdir.storage.local import LOCK_FILE as LOCK_FILE
from memdir.storage.local import LocalFiles
from memdir.storage.mounts import MountedFiles
from memdir.storage.seam import Files, HistoryStore, IndexRows, Storage, WriteLock
from memdir.stores.base import Archive, StoreContext
from memdir.timeutil import Clock, utc_now

# Each feature is imported where it is first used (a method, a store's property), so
# opening a folder to save or search loads none of the others (tests/test_startup.py).
if TYPE_CHECKING:
    from memdir.context.assemble import Context
    from memdir.context.budget import BudgetReport
    from memdir.context.flush import FlushRequest
    from memdir.context.tokens import TokenCounter
    from memdir.dream import DreamReport
    from memdir.files.reader import GetResult
    from memdir.files.sections import Parsed
    from memdir.index.embedders import Embedder
    from memdir.index.search import Hit, Hits
    from memdir.index.sync import Index, ScanReport
    from memdir.ingest.importer import ImportReport
    from memdir.llm.chat import ChatModel
    from memdir.maintain.backup import BackupResult
    from memdir.maintain.decay import DecayReport
    from memdir.maintain.doctor import Finding
    from memdir.maintain.graph import Graph
    from memdir.maintain.jobs import MaintainReport
    from memdir.maintain.migrate import MigrationReport
    from memdir.stores.history import Activity, History
    from memdir.stores.intel import IntelStore
    from memdir.stores.journal import CompressionReport, JournalStore
    from memdir.stores.knowledge import KnowledgeStore
    from memdir.stores.lessons import LessonsStore
    from memdir.stores.notebook import Notebook
    from memdir.stores.sessions import SessionStore
    from memdir.stores.state import StateStore
    from memdir.stores.vault import VaultStore
    from memdir.stores.workstate import WorkState


class LocalStorage:
    """A memory folder on disk (the default ``Storage``): its files under
    ``.memdir/lock``, a mounted layer's in its own folder under that folder's lock,
    the history in ``.memdir/history.db``, the index in ``.memdir/index.db``."""

    name = "local"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.where = str(root)

    def files(self) -> Files:
        return LocalFiles(self.root)

    def mount(self, layer_name: str, mount: str, resolved: Path | None) -> Files:
        return LocalFiles(resolved if resolved is not None else self.root / mount)

    def history(self, memory: Memory) -> HistoryStore:
        from memdir.stores.history import History

        return History(
            memory.root / memory._layer("history").paths[0],
            memory.manifest.agent,
            memory.clock,
            on_end=memory._audit,
            lock=memory.lock,
            on_notice=memory.notices.append,
            read_only=memory.read_only,
        )

    def index_rows(self, embedder: Embedder | None = None) -> IndexRows | None:
        return None

    def close(self) -> None:
        """Nothing is held open here."""


class Memory:
    """An opened memory folder. Build it with ``memdir.open(path)``."""

    def __init__(
        self,
        root: Path,
        manifest: Manifest,
        *,
        clock: Clock | None = None,
        embedder: Embedder | str | None = None,
        storage: Storage | None = None,
    ) -> None:
        self.root = root
        self.manifest = manifest
        self.clock: Clock = clock or utc_now
        self.storage: Storage = storage or LocalStorage(root)
        """where the folder is kept (``LocalStorage``: on disk, the default; or
        ``storage.postgres.backend.PgStorage``)"""
        own = self.storage.files()
        self.lock: WriteLock = own.lock
        self.migration: MigrationReport | None = None
        self.notices: list[Notice] = []
        self.read_only: str | None = None
        """why the folder cannot be written here (it opened to read and search), or None"""
        self.space = FileSpace(root, manifest)
        self._embedder_choice = embedder
        mounts = {
            name: self.storage.mount(name, layer.mount, self.space.mounts.get(name))
            for name, layer in manifest.layers.items()
            if layer.mount is not None
        }
        self.files = MountedFiles(own, mounts)
        """the folder's files (and its mounts'), as its paths name them: read and
        write memory files through it, whichever backend holds them"""
        self._ctx = StoreContext(
            root=root,
            manifest=manifest,
            lock=self.lock,
            clock=self.clock,
            archive=Archive(self.files, manifest.archive_dir(), self.clock, self._on_write),
            on_write=self._on_write,
            on_writes=self.files_changed,
            files=self.files,
        )

    @property
    def manifest_where(self) -> str:
        """The manifest, for a person: its path on disk, or where the database keeps it."""
        if self.storage.name == "local":
            return str(self.root / MANIFEST_NAME)
        return f"{MANIFEST_NAME} of {self.storage.where}"

    @property
    def backend(self) -> str:
        """``local`` (files on disk) or ``postgres``."""
        return self.storage.name

    def local_only(self, what: str) -> None:
        """Raise ``LocalOnly`` if this folder is not on disk: ``what`` works on a local
        folder only (git backup, temp files, SQLite checks)."""
        if self.storage.name != "local":
            raise LocalOnly(
                f"{what} works on a folder on disk only; this one is kept in "
                f"{self.storage.name} ({self.storage.where}): `memdir export` it to a folder first"
            )

    def __repr__(self) -> str:
        if self.storage.name != "local":
            return f"Memory({self.storage.where!r}, layout={self.manifest.layout!r})"
        return f"Memory({str(self.root)!r}, layout={self.manifest.layout!r})"

    # -- stores ----------------------------------------------------------------

    def _path(self, store: str) -> str:
        path = self.manifest.path_of(store)
        if path is None:
            raise LayerNotConfigured(
                f"{self.manifest_where} declares no layer with store = {store!r}"
            )
        return path

    @cached_property
    def notebook(self) -> Notebook:
        """Working memory (NOTEBOOK.md)."""
        from memdir.stores.notebook import Notebook

        return Notebook(self._ctx, self._path("notebook"))

    @cached_property
    def knowledge(self) -> KnowledgeStore:
        """Curated knowledge and observations (knowledge.md)."""
        from memdir.stores.knowledge import KnowledgeStore

        return KnowledgeStore(self._ctx, self._path("knowledge"))

    @cached_property
    def state(self) -> StateStore:
        """TTL snapshots (state.md)."""
        from memdir.stores.state import StateStore

        return StateStore(self._ctx, self._path("state"))

    # -- the index -------------------------------------------------------------

    @cached_property
    def index(self) -> Index:
        """The derived search index (``.memdir/index.db``), opened on first use. In a
        read-only folder it is a private copy (``readonly.private_index``), kept up to
        date with the files for this process and removed at ``close``."""
        from memdir.folder_index import open_index

        return open_index(self)

    def layer_files(self, name: str, layer: Layer) -> list[str]:
        """The files of layer ``name`` (memory-folder paths, in pattern order), on any
        backend (``FileSpace.files`` walks the disk)."""
        from memdir.storage.mounts import layer_files

        return layer_files(self.files, name, layer)

    def _embedder(self) -> Embedder | None:
        from memdir.folder_index import choose_embedder

        return choose_embedder(self)

    def _on_write(self, relpath: str, text: str, parsed: Parsed | None = None) -> None:
        """Every store write lands here: the index follows in the same call (from the
        store's parse of the text, when it has one)."""
        from memdir.folder_index import follow_writes

        follow_writes(self, relpath, lambda index: index.update_file(relpath, text, parsed=parsed))

    def files_changed(self, changes: Sequence[tuple[str, str]]) -> None:
        """Tell memdir about files written beside its stores (``(relpath, text)`` pairs;
        a removed file's relpath with any text): the index follows at once, in one
        transaction, instead of at the next scan. Paths outside indexed layers are
        skipped. Call it under ``memory.lock`` after the files are on disk."""
        from memdir.folder_index import follow_writes

        follow_writes(self, f"{len(changes)} files", lambda index: index.update_files(changes))

    def scan(self) -> ScanReport:
        """Pick up files added, edited or removed by hand since the index last saw them."""
        if self.read_only is not None:  # the index is this process's own copy
            return self.index.scan()
        with self.lock:
            return self.index.scan()

    def reindex(self, progress: Progress | None = None) -> ScanReport:
        """Rebuild the index from the files (``memdir reindex``); ``progress(done, total)``
        is called as files are read, then as their texts are embedded. Vectors are
        committed a batch at a time and kept by content: a reindex stopped part-way
        and run again reads the files again but embeds only what has no vector yet.
        Raises ``EmbedderUnavailable`` before anything is done when the configured
        embedder cannot be made (a keyword-only rebuild is not what was asked)."""
        from memdir.folder_index import embedder_problem
        from memdir.index.embedders import EmbedderUnavailable

        problem = embedder_problem(self)
        if problem is not None:
            raise EmbedderUnavailable(
                f"{problem}; nothing was reindexed (fix the embedder, or set "
                '[index] embedder = "none" for keyword search only)'
            )
        with self.lock:
            report = self.index.reindex(progress)
        self.index.ensure_vectors(progress)
        return report

    def _fresh_index(self) -> Index:
        from memdir.folder_index import fresh_index

        return fresh_index(self)

    def search(
        self,
        query: str,
        k: int = 10,
        mode: str = "normal",
        layers: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
    ) -> Hits:
        """Hybrid keyword + semantic search over every indexed layer.

        ``mode`` picks tiers: ``heartbeat`` (core + active), ``normal`` (+ warm),
        ``deep`` (all, archive included). In ``normal`` mode, when no hit of those
        tiers is strong, the search widens to cold and archive (``hits.widened``);
        otherwise ``hits.colder`` counts the hits waiting there. An empty query
        lists the most recent observations (``hits.listing``). The result is a
        ``list[Hit]``, best first. Raises ValueError on a bad mode, k, date or layer name.
        """
        from memdir.folder_index import search

        return search(self, query, k, mode, layers, kinds, tags, since, until)

    def get(self, path: str, from_line: int | None = None, to_line: int | None = None) -> GetResult:
        """Exact lines of a memory file (``memory_get``): open what a hit points at."""
        from memdir.files.reader import read_lines

        return read_lines(self.space, path, from_line, to_line, files=self.files)

    def creative(self, n: int = 5, *, seed: int | None = None) -> list[Hit]:
        """A random sample of cold and archived items, not ranked by any query
        (the vault specification's creative mode: surface forgotten associations)."""
        from memdir.folder_index import creative

        return creative(self, n, seed)

    # -- the vault -------------------------------------------------------------

    @cached_property
    def vault(self) -> VaultStore:
        """Cards (the first vault layer; mounted from another folder if its manifest says so)."""
        from memdir.stores.vault import VaultStore

        found = self.manifest.layer_for("vault")
        if found is None:
            raise LayerNotConfigured(
                f"{self.manifest_where} declares no layer with store = 'vault'"
            )
        name, layer = found
        return VaultStore(self._ctx, self.space, name, layer, self.files.lock_of(f"{name}/x"))

    def touch(self, path: str) -> WriteResult:
        """Mark a card recalled: one tier up, last_accessed today (``memdir touch``)."""
        return self.vault.touch(path)

    def decay(self, *, dry_run: bool = False, progress: Progress | None = None) -> DecayReport:
        """Recompute every card's relevance and tier (``memdir decay``); touches nothing."""
        from memdir.maintain.decay import run_decay

        return run_decay(self.vault, dry_run=dry_run, progress=progress)

    def graph(self) -> Graph:
        """The vault's link graph (also saved to ``graph.json``: see ``graph_dir``)."""
        from memdir.maintain.graph import build_graph, graph_dir

        return build_graph(self.vault, graph_dir(self.vault, self.root))

    def write_mocs(self) -> list[str]:
        """Write a Map of Content per vault folder (``memdir moc``); touches no card."""
        from memdir.maintain.graph import write_mocs

        return write_mocs(self.vault)

    # -- the workspace ---------------------------------------------------------

    def _layer(self, store: str) -> Layer:
        found = self.manifest.layer_for(store)
        if found is None:
            raise LayerNotConfigured(
                f"{self.manifest_where} declares no layer with store = {store!r}"
            )
        return found[1]

    @cached_property
    def journal(self) -> JournalStore:
        """Daily journals (Decisions, Learnings, Milestones, Context)."""
        from memdir.stores.journal import JournalStore

        return JournalStore(self._ctx, file_template(self._layer("journal").paths[0], "date"))

    @cached_property
    def lessons(self) -> LessonsStore:
        """Lessons learned, by category; never pruned."""
        from memdir.stores.lessons import LessonsStore

        return LessonsStore(self._ctx, self._layer("lessons").paths[0])

    @cached_property
    def workstate(self) -> WorkState:
        """Right Now / Done / Pending (working-state.md; NOTEBOOK.md keys by default)."""
        from memdir.stores.base import SectionFileStore
        from memdir.stores.workstate import FILE_KEYS, NOTEBOOK_KEYS, WORKSTATE_STARTER, WorkState

        journal = self.journal if self.has("journal") else None
        if self.has("workstate"):
            path = self._layer("workstate").paths[0]
            store = SectionFileStore(self._ctx, path, starter=WORKSTATE_STARTER)
            return WorkState(store, FILE_KEYS, journal)
        return WorkState(self.notebook, NOTEBOOK_KEYS, journal, managed="system")

    @cached_property
    def intel(self) -> IntelStore:
        """Research intel, one file per project: this week in detail, past weeks compressed
        (by ``memory.llm`` when there is one, checked, else offline: ``LLMSummariser``)."""
        from memdir.llm.summaries import LLMSummariser
        from memdir.stores.intel import IntelStore

        template = file_template(self._layer("intel").paths[0], "project")
        summariser = LLMSummariser.following(
            lambda: self.llm, on_note=lambda note: self.notices.append(Notice("intel", note))
        )
        return IntelStore(self._ctx, template, summariser=summariser)

    def dream(
        self, *, force: bool = False, dry_run: bool = False, planner: str | None = None
    ) -> DreamReport:
        """Consolidate knowledge.md's observations (``memdir dream``): when due, or with
        ``force``; ``planner`` is ``offline``, ``llm`` or ``auto`` (the manifest's)."""
        from memdir.dream import run_dream

        return run_dream(self, force=force, dry_run=dry_run, planner=planner)

    def maintain(self, *, only: list[str] | None = None, dry_run: bool = False) -> MaintainReport:
        """Every due job in order: decay, state prune, dream, journals, intel (``memdir
        maintain``; safe from cron: a second call while one runs does nothing)."""
        from memdir.maintain.jobs import run_maintenance

        return run_maintenance(self, only=only, dry_run=dry_run)

    def compress_journals(self) -> list[CompressionReport]:
        """Compress every day over 20 KB: the full text to the archive, lines naming a
        card into its History, learnings into lessons, the day to a 20-line summary."""
        from memdir.maintain.compress import compress_journals

        return compress_journals(self)

    @cached_property
    def sessions(self) -> SessionStore:
        """Conversation sessions (the current episode): append-only, compacted at 2000."""
        from memdir.stores.sessions import SessionStore

        folder = static_prefix(self._layer("sessions").paths[0]) or "sessions"
        return SessionStore(self._ctx, folder)

    @cached_property
    def history(self) -> History:
        """The activity history (``.memdir/history.db``): activities, logs, mailbox, decisions.
        A damaged file is set aside under the folder lock and a fresh one started, with a
        notice; ``memdir doctor --repair`` recovers what it can from the damaged one."""
        # typed History (the async surface is generated from it); on postgres a PgHistory,
        # which offers History's public calls (the seam's HistoryStore)
        return cast("History", self.storage.history(self))

    def _audit(self, activity: Activity) -> None:
        from memdir.stores.audit import write_audit_line

        write_audit_line(self, activity)
        if self.manifest.dream.distill:  # post-task distillation; never raises
            from memdir.dream.distill import distill_activity

            distill_activity(self, activity)

    @cached_property
    def llm(self) -> ChatModel | None:
        """The chat model ``[llm]`` configures (``MEMDIR_LLM_*`` winning), or None: offline.

        What uses it (intel and journal summaries, distillation, the dream planner)
        has an offline path and takes it without one. Set it on the instance to
        choose another: ``memory.llm = FakeChat([...])`` in a test, ``None`` for off.
        """
        from memdir.llm.chat import LLMError, half_configured, load_llm

        try:
            chat = load_llm(self.manifest)
        except LLMError as exc:
            self.notices.append(Notice("llm", f"working offline: {exc}"))
            return None
        half = half_configured(self.manifest) if chat is None else None
        if half is not None:
            self.notices.append(Notice("llm", f"working offline: {half}"))
        return chat

    def lessons_check(self, query: str, k: int = 5) -> list[Hit]:
        """Search the lessons before something risky (``memdir lessons check``)."""
        found = self.manifest.layer_for("lessons")
        if found is None:
            raise LayerNotConfigured("this memory folder has no lessons layer")
        return self.search(query, k=k, mode="deep", layers=[found[0]])

    def ingest(
        self, path: str | Path, format: str | None = None, progress: Progress | None = None
    ) -> ImportReport:
        """Import a chat history (generic JSON/JSONL, ChatGPT, Claude, LoCoMo) into
        sessions, the journal and the index; idempotent, all or nothing per
        conversation. ``progress(done, total)`` follows the conversations, then the
        texts embedded (a search embeds for about a second only). Stopped part-way,
        what was imported and embedded stays; the same call again goes on from there
        (it imports nothing twice and embeds only what has no vector yet)."""
        from memdir.ingest.importer import import_file
        from memdir.safety.provenance import writing_as

        with writing_as("import"):
            report = import_file(self, Path(path), format, progress)
        # Embed now, so the next search is semantic over all of it; also when nothing
        # was new, as a stopped run may have left texts unembedded.
        self.index.ensure_vectors(progress)
        return report

    # -- context -------------------------------------------------------------

    @cached_property
    def tokens(self) -> TokenCounter:
        """How this folder counts tokens (``[context] tokenizer``; bytes / 4 by default)."""
        from memdir.context.tokens import load_counter

        return load_counter(self.manifest.context.tokenizer, self.root)

    def context(
        self, profile: str = "default", query: str | None = None, budget: int | None = None
    ) -> Context:
        """What the agent loads into its prompt: the boot sequence within budgets.

        ``profile``: reflex, default, deep or heartbeat. ``query`` adds a retrieval
        slot of search hits. ``budget`` (tokens) overrides ``[context] max_tokens``."""
        from memdir.context.assemble import assemble

        return assemble(self, self.tokens, profile, query, budget)

    def budget(self) -> BudgetReport:
        """Every always-loaded file against its target (``memdir budget``)."""
        from memdir.context.budget import budget_report

        return budget_report(self)

    def record_context_usage(self, session_id: str, used_tokens: int, window_tokens: int) -> None:
        """Record how full a session's context was on this turn (for the memory flush)."""
        self.history.record_usage(session_id, used_tokens, window_tokens)

    def maybe_memory_flush(self, session_id: str) -> FlushRequest | None:
        """Before a turn: if the last one filled the context past the threshold, open a
        ``sys_`` session holding the flush instruction and return it (once per session)."""
        from memdir.context.flush import open_flush

        return open_flush(self, session_id)

    def doctor(self) -> list[Finding]:
        """The specifications' audits (``memdir doctor``); reads only, touches nothing."""
        from memdir.maintain.doctor import diagnose

        return diagnose(self)

    def backup(self, *, push: bool = False) -> BackupResult:
        """Commit the folder with git, history included (``memdir backup``)."""
        from memdir.maintain.backup import backup as run_backup

        self.local_only("memdir backup (git)")
        lock = self.lock if isinstance(self.lock, FolderLock) else None
        return run_backup(self.root, now=self.clock(), push=push, lock=lock)

    def has(self, store: str) -> bool:
        """True if the manifest declares a layer backed by ``store``."""
        return self.manifest.layer_for(store) is not None

    # -- lifecycle -------------------------------------------------------------

    def _write_folders(self) -> dict[Path, bool]:
        """Every folder memdir writes here, mounts aside (``FileSpace.write_folders``)."""
        return self.space.write_folders(self.manifest)

    def check(self) -> list[Notice]:
        """What needs attention: files over their caps, empty entries, a migration done."""
        notices: list[Notice] = list(self.notices)
        if self.migration is not None:
            notices.append(Notice("migration", self.migration.summary()))
        if self.has("notebook"):
            notices.extend(self.notebook.check())
        if self.has("knowledge"):
            notices.extend(self.knowledge.check())
        return notices

    def close(self) -> None:
        """Every write is already on disk; this closes the index database if it was opened."""
        if "index" in self.__dict__:
            self.index.close()
            if self.read_only is not None and self.storage.name == "local":
                remove_private_index(self.index.path)
            del self.__dict__["index"]
        if "history" in self.__dict__:
            self.history.close()
            del self.__dict__["history"]
        self.storage.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
