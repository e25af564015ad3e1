"""memdir: long-term memory for LLM agents in a folder of markdown files.

``memdir.init(path)`` writes a layout once; ``memdir.open(path)`` gives a
``Memory`` with ``notebook``, ``knowledge`` and ``state`` stores. Writes return
a ``WriteResult``; every error memdir raises derives from ``MemdirError``.
"""

from memdir.config import Manifest, load_manifest, memdir_home
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
from memdir.llm.chat import ChatModel, LLMError, OpenAIChat, load_llm
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
from memdir.stores.history import Activity, ActivityDetail, History, HistoryError
from memdir.stores.sessions import SessionInfo, SessionStore, UnknownSession

__version__ = "0.1.0"

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
