"""Stores: each owns one kind of memory file and its rules (limits, eviction, TTL)."""

from memdir.stores.knowledge import KnowledgeSection, KnowledgeStore, KnowledgeUsage, Observation
from memdir.stores.notebook import Notebook, NotebookEntry
from memdir.stores.state import StateEntry, StateStore

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
