"""memdir: long-term memory for LLM agents in a folder of markdown files.

``memdir.init(path)`` writes a layout once; ``memdir.open(path)`` gives a
``Memory`` with ``notebook``, ``knowledge`` and ``state`` stores. Writes return
a ``WriteResult``; every error memdir raises derives from ``MemdirError``.

The names below are imported on first use (PEP 562), so ``import memdir`` costs
next to nothing and a command pays only for what it touches; ``from memdir
import X`` works for every name in ``__all__``, as does ``memdir.X``.
"""

import typing as _typing

from memdir.errors import (
    DiskFull,
    FileShapeError,
    FolderExistsError,
    LayerNotConfigured,
    LockTimeout,
    ManifestError,
    MemdirError,
    MigrationError,
    NotAMemoryFolder,
    ReadOnlyFolder,
    StorageError,
    WriteRefused,
)

if _typing.TYPE_CHECKING:
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
    from memdir.memory import Memory
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

# name -> (module, attribute): what each exported name is, imported when first asked for
_LAZY: dict[str, tuple[str, str]] = {
    "Activity": ("memdir.stores.history", "Activity"),
    "ActivityDetail": ("memdir.stores.history", "ActivityDetail"),
    "BackupError": ("memdir.maintain.backup", "BackupError"),
    "BackupResult": ("memdir.maintain.backup", "BackupResult"),
    "ChatModel": ("memdir.llm.chat", "ChatModel"),
    "Embedder": ("memdir.index.embedders", "Embedder"),
    "EmbedderUnavailable": ("memdir.index.embedders", "EmbedderUnavailable"),
    "GetResult": ("memdir.files.reader", "GetResult"),
    "HashingEmbedder": ("memdir.index.embedders", "HashingEmbedder"),
    "History": ("memdir.stores.history", "History"),
    "HistoryError": ("memdir.stores.history", "HistoryError"),
    "Hit": ("memdir.index.search", "Hit"),
    "Hits": ("memdir.index.search", "Hits"),
    "ImportReport": ("memdir.ingest", "ImportReport"),
    "IngestError": ("memdir.ingest", "IngestError"),
    "InitReport": ("memdir.scaffold", "InitReport"),
    "KnowledgeSection": ("memdir.stores", "KnowledgeSection"),
    "KnowledgeStore": ("memdir.stores", "KnowledgeStore"),
    "KnowledgeUsage": ("memdir.stores", "KnowledgeUsage"),
    "LLMError": ("memdir.llm.chat", "LLMError"),
    "Manifest": ("memdir.config", "Manifest"),
    "Memory": ("memdir.memory", "Memory"),
    "MiniLMEmbedder": ("memdir.index.embedders", "MiniLMEmbedder"),
    "Notebook": ("memdir.stores", "Notebook"),
    "NotebookEntry": ("memdir.stores", "NotebookEntry"),
    "Notice": ("memdir.results", "Notice"),
    "Observation": ("memdir.stores", "Observation"),
    "OpenAIChat": ("memdir.llm.chat", "OpenAIChat"),
    "ScanReport": ("memdir.index.sync", "ScanReport"),
    "SessionInfo": ("memdir.stores.sessions", "SessionInfo"),
    "SessionStore": ("memdir.stores.sessions", "SessionStore"),
    "StateEntry": ("memdir.stores", "StateEntry"),
    "StateStore": ("memdir.stores", "StateStore"),
    "UnknownSession": ("memdir.stores.sessions", "UnknownSession"),
    "WriteResult": ("memdir.results", "WriteResult"),
    "adopt": ("memdir.scaffold", "adopt_folder"),
    "init": ("memdir.scaffold", "init_folder"),
    "load_embedder": ("memdir.index.embedders", "load_embedder"),
    "load_llm": ("memdir.llm.chat", "load_llm"),
    "load_manifest": ("memdir.config", "load_manifest"),
    "memdir_home": ("memdir.config", "memdir_home"),
    "open": ("memdir.memory", "open_memory"),
}


def __getattr__(name: str) -> object:
    """An exported name, imported now; or a submodule (``memdir.tools``) not yet imported."""
    import importlib
    import importlib.util

    where = _LAZY.get(name)
    if where is None:
        if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return importlib.import_module(f"{__name__}.{name}")
    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value  # the next lookup is a plain one
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Activity",
    "ActivityDetail",
    "BackupError",
    "BackupResult",
    "ChatModel",
    "DiskFull",
    "Embedder",
    "EmbedderUnavailable",
    "FileShapeError",
    "FolderExistsError",
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
    "init",
    "load_embedder",
    "load_llm",
    "load_manifest",
    "memdir_home",
    "open",
]
