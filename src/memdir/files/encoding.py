"""Bytes that are not UTF-8, and the one rule for them.

A memory file keeps its bytes: files are decoded with ``surrogateescape``, so a
byte that is not UTF-8 (``caf\\xe9`` from an old editor, a copied log, an export)
becomes a surrogate code point and is written back as the same byte. What leaves
memdir for somewhere that needs real text (the index's SQLite rows, a prompt, JSON
for a tool or MCP, a terminal) goes through ``clean``: each such code point becomes
U+FFFD, one for one, so offsets and line numbers do not move. Text coming *in*
(a tool argument, an API call) may not carry surrogates at all: a lone ``\\ud800`` is
valid JSON but no character, and is refused before any write (``has_surrogates``).
"""

from __future__ import annotations

import re

ENCODING = "utf-8"
ERRORS = "surrogateescape"
_SURROGATE = re.compile("[\ud800-\udfff]")


def decode(data: bytes) -> str:
    """A file's bytes as text that round-trips (``encode`` gives the same bytes)."""
    return data.decode(ENCODING, ERRORS)


def encode(text: str) -> bytes:
    return text.encode(ENCODING, ERRORS)


def has_surrogates(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def clean(text: str) -> str:
    """``text`` with every surrogate code point replaced by U+FFFD (same length)."""
    if text.isascii():
        return text
    try:
        text.encode(ENCODING)
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text
