"""memdir: long-term memory for LLM agents in a folder of markdown files.

``memdir.init(path)`` writes a layout once; ``memdir.open(path)`` gives a
``Memory`` with ``notebook``, ``knowledge`` and ``state`` stores. Writes return
a ``WriteResult``; every error memdir raises derives from ``MemdirError``.
``await memdir.aopen(path)`` gives the same as an ``AsyncMemory`` for asyncio.

The names below are imported on first use (PEP 562), so ``import memdir`` costs
next to nothing and a command pays only for what it touches; ``from memdir
import X`` works for every name in ``__all__``, as does ``memdir.X``.
"""

import typing as _typing

from memdir.errors import (
    DiskFull,
    FileShapeError,
    FolderExistsError,
    ForeignFolder,
    LayerNotConfigured,
    LocalOnly,
    LockTimeout,
    ManifestError,
    MemdirError,
    MigrationError,
    NotAMemoryFolder,
    ReadOnlyFolder,
    StorageError,
    WriteRefused,
)
from memdir.lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from memdir.aio import AsyncMemory, aopen
    from memdir.config import (
        Manifest,
        load_manifest,
        memdir_home,
    )
    from memdir.files.reader import GetResult
    from memdir.index.embedders import (
        Embedder,
        EmbedderUnavailable,
        HashingEmbedder,
        MiniLMEmbedder,
        load_embedder,
    )
    from memdir.index.search import Hit, Hits
    from memdir.index.sync import ScanReport
    from memdir.ingest import ImportReport, IngestError
    from memdir.llm.chat import (
        ChatModel,
        LLMError,
        OpenAIChat,
        load_llm,
    )
    from memdir.maintain.backup import BackupError, BackupResult
    from memdir.memory import Memory, open_agent
    from memdir.memory import open_memory as open
    from memdir.results import Notice, WriteResult
    from memdir.scaffold import InitReport
    from memdir.scaffold import adopt_folder as adopt
    from memdir.scaffold import init_folder as init
    from memdir.stores import (
        KnowledgeSection,
        KnowledgeStore,
        KnowledgeUsage,
        Notebook,
        NotebookEntry,
        Observation,
        StateEntry,
        StateStore,
    )
    from memdir.stores.history import (
        Activity,
        ActivityDetail,
        History,
        HistoryError,
    )
    from memdir.stores.sessions import (
        SessionInfo,
        SessionStore,
        UnknownSession,
    )

__version__ = "0.1.0"

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "Activity": "memdir.stores.history",
        "AsyncMemory": "memdir.aio",
        "ActivityDetail": "memdir.stores.history",
        "BackupError": "memdir.maintain.backup",
        "BackupResult": "memdir.maintain.backup",
        "ChatModel": "memdir.llm.chat",
        "Embedder": "memdir.index.embedders",
        "EmbedderUnavailable": "memdir.index.embedders",
        "GetResult": "memdir.files.reader",
        "HashingEmbedder": "memdir.index.embedders",
        "History": "memdir.stores.history",
        "HistoryError": "memdir.stores.history",
        "Hit": "memdir.index.search",
        "Hits": "memdir.index.search",
        "ImportReport": "memdir.ingest",
        "IngestError": "memdir.ingest",
        "InitReport": "memdir.scaffold",
        "KnowledgeSection": "memdir.stores",
        "KnowledgeStore": "memdir.stores",
        "KnowledgeUsage": "memdir.stores",
        "LLMError": "memdir.llm.chat",
        "Manifest": "memdir.config",
        "Memory": "memdir.memory",
        "MiniLMEmbedder": "memdir.index.embedders",
        "Notebook": "memdir.stores",
        "NotebookEntry": "memdir.stores",
        "Notice": "memdir.results",
        "Observation": "memdir.stores",
        "OpenAIChat": "memdir.llm.chat",
        "ScanReport": "memdir.index.sync",
        "SessionInfo": "memdir.stores.sessions",
        "SessionStore": "memdir.stores.sessions",
        "StateEntry": "memdir.stores",
        "StateStore": "memdir.stores",
        "UnknownSession": "memdir.stores.sessions",
        "WriteResult": "memdir.results",
        "adopt": "memdir.scaffold:adopt_folder",
        "aopen": "memdir.aio",
        "init": "memdir.scaffold:init_folder",
        "load_embedder": "memdir.index.embedders",
        "load_llm": "memdir.llm.chat",
        "load_manifest": "memdir.config",
        "memdir_home": "memdir.config",
        "open": "memdir.memory:open_memory",
        "open_agent": "memdir.memory",
    },
    submodules=True,  # memdir.tools after a bare ``import memdir``, as before
)


__all__ = [
    "Activity",
    "ActivityDetail",
    "AsyncMemory",
    "BackupError",
    "BackupResult",
    "ChatModel",
    "DiskFull",
    "Embedder",
    "EmbedderUnavailable",
    "FileShapeError",
    "FolderExistsError",
    "ForeignFolder",
    "GetResult",
    "HashingEmbedder",
    "History",
    "HistoryError",
    "Hit",
    "Hits",
    "ImportReport",
    "IngestError",
    "InitReport",
    "KnowledgeSection",
    "KnowledgeStore",
    "KnowledgeUsage",
    "LLMError",
    "LayerNotConfigured",
    "LocalOnly",
    "LockTimeout",
    "Manifest",
    "ManifestError",
    "MemdirError",
    "Memory",
    "MigrationError",
    "MiniLMEmbedder",
    "NotAMemoryFolder",
    "Notebook",
    "NotebookEntry",
    "Notice",
    "Observation",
    "OpenAIChat",
    "ReadOnlyFolder",
    "ScanReport",
    "SessionInfo",
    "SessionStore",
    "StateEntry",
    "StateStore",
    "StorageError",
    "UnknownSession",
    "WriteRefused",
    "WriteResult",
    "__version__",
    "adopt",
    "aopen",
    "init",
    "load_embedder",
    "load_llm",
    "load_manifest",
    "memdir_home",
    "open",
    "open_agent",
]
