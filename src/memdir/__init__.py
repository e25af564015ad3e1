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

__version__ = "0.1.0"

__all__ = [
    "FileShapeError",
    "FolderExistsError",
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
    "NotAMemoryFolder",
    "Notebook",
    "NotebookEntry",
    "Notice",
    "Observation",
    "StateEntry",
    "StateStore",
    "WriteRefused",
    "WriteResult",
    "__version__",
    "adopt",
    "init",
    "load_manifest",
    "memdir_home",
    "open",
]
