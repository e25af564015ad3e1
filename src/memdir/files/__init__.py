"""File shapes (section files, cards) and atomic writes under the folder lock."""

from memdir.files.atomic import FolderLock, atomic_write, folder_lock
from memdir.files.cards import Card
from memdir.files.sections import Section, SectionDocument, sanitize_body, strip_think

__all__ = [
    "Card",
    "FolderLock",
    "Section",
    "SectionDocument",
    "atomic_write",
    "folder_lock",
    "sanitize_body",
    "strip_think",
]
