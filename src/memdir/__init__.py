"""memdir: long-term memory for LLM agents in a folder of markdown files.

``memdir.init(path)`` writes a layout once; ``memdir.open(path)`` gives a
``Memory`` with ``notebook``, ``knowledge`` and ``state`` stores. Writes return
a ``WriteResult``; every error memdir raises derives from ``MemdirError``.
"""

from memdir.config import Manifest, load_manifest, memdir_home
from memdir.errors import (
    FileShapeError,
    FolderExistsError,
    LayerNotConfigured,
    LockTimeout,
    ManifestError,
    MemdirError,
    MigrationError,
    NotAMemoryFolder,
    WriteRefused,
)
from memdir.index.embedders import (
    Embedder,
    EmbedderUnavailable,
    HashingEmbedder,
    MiniLMEmbedder,
    load_embedder,
)
from memdir.index.search import Hit
from memdir.index.sync import ScanReport
from memdir.memory import Memory
from memdir.memory import open_memory as open
from memdir.reader import GetResult
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

__version__ = "0.1.0"

__all__ = [
    "Embedder",
    "EmbedderUnavailable",
    "FileShapeError",
    "FolderExistsError",
    "GetResult",
    "HashingEmbedder",
    "Hit",
    "InitReport",
    "KnowledgeSection",
    "KnowledgeStore",
    "KnowledgeUsage",
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
    "ScanReport",
    "StateEntry",
    "StateStore",
    "WriteRefused",
    "WriteResult",
    "__version__",
    "adopt",
    "init",
    "load_embedder",
    "load_manifest",
    "memdir_home",
    "open",
]
