"""Counting tokens: the specifications' rule by default, an exact tokenizer when one is at hand.

``ByteCounter`` is bytes / 4 rounded up (the vault and notebook seeds' own
arithmetic). ``TokenizerFileCounter`` counts with a ``tokenizer.json`` already
on disk (the ``tokenizers`` library: ``pip install 'memdir[tokenizers]'``):
nothing is ever downloaded. Choose one in the manifest: ``[context] tokenizer = "bytes"``, a
path to a tokenizer.json (``"tokenizer-json:PATH"`` in full), or the name of a
token counter another package installs (``"NAME"`` or ``"NAME:ARG"``): both built-ins
are entry points of the ``memdir.tokenizers`` group (``memdir.plugins``) like any.

A long text is counted in pieces of about ``CHUNK_CHARS``, each cut just before
a space that starts a word (where the BERT, byte-level BPE and SentencePiece
pre-tokenizers split anyway, so the count is the same as for the whole text):
the tokenizer would otherwise hold every token of a 5 MB file at once (about
700 MB, measured).
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from memdir.errors import MemdirError
from memdir.paths import resolved


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

    def __init__(self, path: Path | str) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise MemdirError(
                "counting with a tokenizer.json needs the tokenizers library: "
                "pip install 'memdir[tokenizers]'"
            ) from None

        path = Path(path)
        if not path.is_file():
            raise MemdirError(f"no tokenizer file at {path}")
        self._tokenizer: Any = Tokenizer.from_file(str(path))
        self.name = f"tokenizer:{path.name}"

    CHUNK_CHARS = 20_000
    BATCH = 8  # pieces encoded at once (in parallel, by the library)

    def count(self, text: str) -> int:
        if len(text) <= self.CHUNK_CHARS:
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)
        pieces = list(chunks(text, self.CHUNK_CHARS))
        total = 0
        for start in range(0, len(pieces), self.BATCH):
            batch = self._tokenizer.encode_batch(
                pieces[start : start + self.BATCH], add_special_tokens=False
            )
            total += sum(len(encoding.ids) for encoding in batch)
        return total


def chunks(text: str, size: int) -> Iterator[str]:
    """``text`` in pieces, each after the first starting at a space that is followed by
    a non-space: the last such space within ``size`` chars, else the first one after
    (a piece is longer than ``size`` only where a run holds no such space)."""
    start = 0
    while len(text) - start > size:
        cut = _word_start(text, start + 1, start + size)
        if cut is None:
            break
        yield text[start:cut]
        start = cut
    yield text[start:]


def _word_start(text: str, low: int, high: int) -> int | None:
    at = text.rfind(" ", low, high + 1)
    while at >= low:
        if _starts_word(text, at):
            return at
        at = text.rfind(" ", low, at)
    at = text.find(" ", high + 1)
    while at >= 0:
        if _starts_word(text, at):
            return at
        at = text.find(" ", at + 1)
    return None


def _starts_word(text: str, at: int) -> bool:
    following = text[at + 1 : at + 2]
    return bool(following) and not following.isspace()


def load_counter(setting: str, root: Path) -> TokenCounter:
    """The counter ``[context] tokenizer`` names: ``bytes``, a tokenizer.json path (relative
    to the folder), or an entry point ``NAME[:ARG]`` of the ``memdir.tokenizers`` group."""
    from memdir.plugins import PluginError, resolve

    if setting in ("", "bytes/4"):
        setting = "bytes"
    name, colon, argument = setting.partition(":")
    if name == "tokenizer-json" or _is_path(setting):
        path = argument if name == "tokenizer-json" else setting
        name, colon, argument = (
            "tokenizer-json",
            ":",
            str(resolved(root / Path(path).expanduser(), f"[context] tokenizer {path}")),
        )
    try:
        factory = resolve("tokenizers", name)
    except PluginError as exc:
        raise MemdirError(f"[context] tokenizer: {exc}") from None
    try:
        counter = factory(argument) if colon else factory()
    except MemdirError:
        raise
    except Exception as exc:  # a plugin's own failure: name it, never a traceback
        raise MemdirError(f"the tokenizers plugin {name!r} could not be made: {exc}") from exc
    if not isinstance(counter, TokenCounter):
        raise MemdirError(f"the tokenizers plugin {name!r} did not give a TokenCounter")
    if type(counter).__module__.split(".")[0] != "memdir":
        return CheckedCounter(counter, name)
    return counter


class CheckedCounter:
    """A third party's counter, its every answer checked: a count that is not a whole
    number of at least 0, or a count that raises, is a ``MemdirError`` naming the plugin
    (never a ``TypeError`` deep in the context's budget arithmetic)."""

    def __init__(self, counter: TokenCounter, plugin: str) -> None:
        self.counter = counter
        self.plugin = plugin

    @property
    def name(self) -> str:
        return self.counter.name

    def count(self, text: str) -> int:
        try:
            counted = self.counter.count(text)
        except Exception as exc:
            raise MemdirError(f"the tokenizers plugin {self.plugin!r} failed: {exc}") from exc
        try:  # a whole number of any integer type (numpy's too), never a float or text
            whole = -1 if isinstance(counted, bool) else operator.index(counted)
        except TypeError:
            whole = -1
        if whole < 0:
            raise MemdirError(
                f"the tokenizers plugin {self.plugin!r} counted {counted!r} tokens; "
                "a count is a whole number of at least 0"
            )
        return whole


def _is_path(setting: str) -> bool:
    """A tokenizer.json named by path, as before plugins: a separator or a .json ending
    (an entry point name has neither; a Windows drive's colon is not a plugin's)."""
    return "/" in setting or "\\" in setting or setting.endswith(".json")
