"""Importing exported chat histories: parsing into a normalized model, then storing.

``parse_file(path)`` reads a file or an export archive (.zip), detects the
format by content and returns a ``ParsedFile`` of ``Conversation`` objects and
the ``LeftOut`` ones (malformed or empty, with position and title), or raises
``IngestError`` naming the line or JSON path at fault when the file is
unreadable or keeps no conversation. ``import_file`` stores them. Formats:
``FORMATS``.
"""

from memdir.ingest.detect import FORMATS, detect_format, parse_file
from memdir.ingest.importer import ImportReport, import_file
from memdir.ingest.model import (
    ROLES,
    Conversation,
    IngestError,
    LeftOut,
    Message,
    ParsedFile,
    content_hash,
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
