"""Parsing exported chat histories into a normalized model (no storage here).

``parse_file(path)`` detects the format by content and returns a ``ParsedFile``
of ``Conversation`` objects, or raises ``IngestError`` naming the line or JSON
path at fault; a partly valid file is refused whole. Formats: ``FORMATS``.
"""

from memdir.ingest.detect import FORMATS, detect_format, parse_file
from memdir.ingest.importer import ImportReport, import_file
from memdir.ingest.model import ROLES, Conversation, IngestError, Message, ParsedFile, content_hash

__all__ = [
    "FORMATS",
    "ImportReport",
    "ROLES",
    "Conversation",
    "IngestError",
    "Message",
    "ParsedFile",
    "content_hash",
    "detect_format",
    "import_file",
    "parse_file",
]
