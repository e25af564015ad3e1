"""Stores: each owns one kind of memory file and its rules (limits, eviction, TTL)."""

from typing import TYPE_CHECKING

from memdir.lazy import lazy_exports

if TYPE_CHECKING:
    from memdir.stores.knowledge import (
        KnowledgeSection,
        KnowledgeStore,
        KnowledgeUsage,
        Observation,
    )
    from memdir.stores.notebook import Notebook, NotebookEntry
    from memdir.stores.state import StateEntry, StateStore

# imported on first use: a search (stores.base) loads no store's rules
__getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "KnowledgeSection": "memdir.stores.knowledge",
        "KnowledgeStore": "memdir.stores.knowledge",
        "KnowledgeUsage": "memdir.stores.knowledge",
        "Notebook": "memdir.stores.notebook",
        "NotebookEntry": "memdir.stores.notebook",
        "Observation": "memdir.stores.knowledge",
        "StateEntry": "memdir.stores.state",
        "StateStore": "memdir.stores.state",
    },
)

__all__ = [
    "KnowledgeSection",
    "KnowledgeStore",
    "KnowledgeUsage",
    "Notebook",
    "NotebookEntry",
    "Observation",
    "StateEntry",
    "StateStore",
]
