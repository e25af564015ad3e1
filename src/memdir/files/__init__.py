"""File shapes (section files, cards) and atomic writes under the folder lock."""

from typing import TYPE_CHECKING

from memdir.lazy import lazy_exports

if TYPE_CHECKING:
    from memdir.files.atomic import FolderLock, atomic_write, folder_lock
    from memdir.files.cards import Card
    from memdir.files.sections import Section, SectionDocument, sanitize_body, strip_think

# imported on first use: a module of this package (atomic) must not load them all (cards: yaml)
__getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "Card": "memdir.files.cards",
        "FolderLock": "memdir.files.atomic",
        "Section": "memdir.files.sections",
        "SectionDocument": "memdir.files.sections",
        "atomic_write": "memdir.files.atomic",
        "folder_lock": "memdir.files.atomic",
        "sanitize_body": "memdir.files.sections",
        "strip_think": "memdir.files.sections",
    },
)

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
