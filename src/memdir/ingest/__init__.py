"""Importing exported chat histories: parsing into a normalized model, then storing.

``parse_file(path)`` reads a file or an export archive (.zip), detects the
format by content and returns a ``ParsedFile`` of ``Conversation`` objects and
the ``LeftOut`` ones (malformed or empty, with position and title), or raises
``IngestError`` naming the line or JSON path at fault when the file is
unreadable or keeps no conversation. ``import_file`` stores them. Formats:
``FORMATS``.
"""

from typing import TYPE_CHECKING

from memdir.lazy import lazy_exports

if TYPE_CHECKING:
    from memdir.ingest.detect import detect_format, parse_file
    from memdir.ingest.importer import ImportReport, import_file
    from memdir.ingest.model import (
        FORMATS,
        ROLES,
        Conversation,
        IngestError,
        LeftOut,
        Message,
        ParsedFile,
        content_hash,
    )

# imported on first use: FORMATS (--help) needs no importer
__getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "Conversation": "memdir.ingest.model",
        "FORMATS": "memdir.ingest.model",
        "ImportReport": "memdir.ingest.importer",
        "IngestError": "memdir.ingest.model",
        "LeftOut": "memdir.ingest.model",
        "Message": "memdir.ingest.model",
        "ParsedFile": "memdir.ingest.model",
        "ROLES": "memdir.ingest.model",
        "content_hash": "memdir.ingest.model",
        "detect_format": "memdir.ingest.detect",
        "import_file": "memdir.ingest.importer",
        "parse_file": "memdir.ingest.detect",
    },
)

__all__ = [
    "FORMATS",
    "ImportReport",
    "ROLES",
    "Conversation",
    "IngestError",
    "LeftOut",
    "Message",
    "ParsedFile",
    "content_hash",
    "detect_format",
    "import_file",
    "parse_file",
]
