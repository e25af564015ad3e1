"""Where a memory folder is kept: the storage seam and its backends.

``seam`` holds the three Protocols (``Files``, ``IndexRows``, ``HistoryStore``) and
what they exchange; ``local`` adapts today's files on disk to ``Files``;
``postgres`` keeps folders, their index and their history in PostgreSQL (issue 15,
optional: ``pip install 'memdir[postgres]'``). docs/team.md draws the design.
"""

from memdir.storage.seam import (
    Files,
    FileStat,
    HistoryStore,
    IndexRows,
    Scope,
    Storage,
    VersionConflict,
    WriteLock,
)

__all__ = [
    "FileStat",
    "Files",
    "HistoryStore",
    "IndexRows",
    "Scope",
    "Storage",
    "VersionConflict",
    "WriteLock",
]
