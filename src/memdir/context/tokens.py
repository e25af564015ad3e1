"""Counting tokens: the specifications' rule by default, an exact tokenizer when one is at hand.

``ByteCounter`` is bytes / 4 rounded up (the vault and notebook seeds' own
arithmetic). ``TokenizerFileCounter`` counts with a ``tokenizer.json`` already
on disk (the ``tokenizers`` library, installed with memdir): nothing is ever
downloaded. Choose one in the manifest: ``[context] tokenizer = "bytes"`` or a
path to a tokenizer.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from memdir.errors import MemdirError


@runtime_checkable
class TokenCounter(Protocol):
    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...


class ByteCounter:
    """bytes / 4, rounded up: the specifications' own estimate."""

    name = "bytes/4"

    def count(self, text: str) -> int:
        return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4


class TokenizerFileCounter:
    """Exact counts from a local tokenizer.json (Hugging Face ``tokenizers`` format)."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        if not path.is_file():
            raise MemdirError(f"no tokenizer file at {path}")
        self._tokenizer: Any = Tokenizer.from_file(str(path))
        self.name = f"tokenizer:{path.name}"

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


def load_counter(setting: str, root: Path) -> TokenCounter:
    if setting in ("", "bytes", "bytes/4"):
        return ByteCounter()
    return TokenizerFileCounter((root / Path(setting).expanduser()).resolve())
