"""The one check every piece of text passes before memdir writes it.

``check_text`` runs before any side effect of a write (no archive entry, no
eviction, no file touched), in this order, cheapest first, so a 10 MB argument
is refused without being scanned:

1. it is a string;
2. it is within its size limit (one observation, one journal entry, one card: the
   manifest's ``[limits]``), with a reason that says what to do instead;
3. it is text: no lone surrogate (``"\\ud800"`` is valid JSON but no character and
   cannot be written as UTF-8) and no NUL or other control character but tab and
   newline (carriage returns are kept: a file may use CRLF);
4. it holds no credential (``memdir.safety.secrets``).

Each failure raises ``Refusal`` with one sentence a model can act on. Text that
reads as instructions to the model is not refused: ``flag`` finds it
(``memdir.safety.poisoning``), the store saves it with ``flagged`` in its metadata and
the write result carries the ``warnings``; the context shows it as a quoted note.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

from memdir.files.encoding import clean, has_surrogates
from memdir.files.sections import strip_think
from memdir.safety.provenance import BY_KEY, FLAG_KEY, current_writer


class Refusal(Exception):
    """Raised inside a store edit to refuse the write; carries the reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def check_text(
    text: object, what: str = "text", *, limit: int | None = None, hint: str = ""
) -> str:
    """``text`` unchanged if it may be written, else ``Refusal`` (see the module docstring).

    ``limit`` is the most characters it may hold; ``hint`` (a clause) says what to do
    instead when it holds more, e.g. "save the key facts as separate observations".
    """
    if not isinstance(text, str):
        raise Refusal(f"{what} must be a string, not {type(text).__name__}")
    if limit is not None and len(text) > limit:
        instead = f"; {hint}" if hint else ""
        raise Refusal(
            f"{what} is {len(text):,} characters, over the {limit:,}-character limit of one "
            f"{_unit(what)}; nothing was written{instead}"
        )
    if has_surrogates(text):
        position = next(n for n, ch in enumerate(text) if "\ud800" <= ch <= "\udfff")
        raise Refusal(
            f"{what} holds an invalid character (a lone surrogate, U+{ord(text[position]):04X}, "
            f"at position {position}): it is not text and cannot be saved; send it as UTF-8 "
            "text, and nothing was written"
        )
    control = _CONTROL.search(text)
    if control is not None:
        raise Refusal(
            f"{what} holds a control character (U+{ord(control.group()):04X} at position "
            f"{control.start()}) that a markdown file should not hold; remove it, nothing was "
            "written"
        )
    from memdir.safety.secrets import secret_refusal  # its patterns: a write's, not a read's

    reason = secret_refusal(text)
    if reason is not None:
        raise Refusal(reason)
    return text


def blank(text: str) -> bool:
    """True if ``text`` shows nothing: only white space and invisible format characters
    (zero-width spaces and joiners, a byte-order mark, bidi marks and overrides: Unicode
    category Cf), which ``str.strip`` keeps. Such a key or text is as empty as spaces."""
    return all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in text)


def one_line(value: object, what: str, *, empty: str, limit: int, hint: str = "") -> str:
    """``value`` as one line to write (think-tags dropped, white space folded):
    ``Refusal(empty)`` when nothing is left of it, else what ``check_text`` refuses."""
    if not isinstance(value, str) or blank(strip_think(value)):
        raise Refusal(empty)
    check_text(value, what, limit=limit, hint=hint)
    return " ".join(strip_think(value).split())


def entry_text(text: object, *, limit: int, hint: str, empty: str) -> str:
    """An entry's ``text`` to write (think-tags dropped, trimmed): what ``check_text``
    refuses, or ``Refusal(empty)`` when nothing is left of it."""
    body = check_text(
        strip_think(text).strip() if isinstance(text, str) else text, "text", limit=limit, hint=hint
    )
    if blank(body):
        raise Refusal(empty)
    return body


def as_text(text: str) -> str:
    """Outside text (an imported chat) made fit to write: each lone surrogate and each
    control character ``check_text`` refuses becomes U+FFFD, one for one. For data
    memdir converts; what an agent sends is refused instead, with a reason."""
    text = clean(text)
    return _CONTROL.sub("\ufffd", text) if _CONTROL.search(text) else text


def _unit(what: str) -> str:
    """'content' -> 'memory', 'text' -> 'entry': how the limit's sentence names one."""
    return {"content": "memory", "text": "entry", "line": "entry", "body": "card"}.get(what, what)


@dataclass(frozen=True)
class Flags:
    """What ``flag`` saw in a text about to be written."""

    kinds: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def stamp(self, meta: MutableMapping[str, Any]) -> None:
        """Record the writer and any flag in an item's metadata (a flag cleared when the
        new text reads clean)."""
        meta[BY_KEY] = current_writer()
        self.mark(meta)

    def mark(self, meta: MutableMapping[str, Any]) -> None:
        """Record the flag alone (set, or cleared when the text reads clean)."""
        if self.kinds:
            meta[FLAG_KEY] = ", ".join(self.kinds)
        else:
            meta.pop(FLAG_KEY, None)

    def add_to(self, meta: MutableMapping[str, Any]) -> None:
        """Add any flag to a section that many writes append to (never cleared by one)."""
        if self.kinds:
            had = [k.strip() for k in str(meta.get(FLAG_KEY, "")).split(",") if k.strip()]
            meta[FLAG_KEY] = ", ".join([*had, *(k for k in self.kinds if k not in had)])


def flag(*texts: str) -> Flags:
    """The instruction-like kinds in ``texts`` and the warnings a write result carries."""
    from memdir.safety.poisoning import find_instructions, instruction_warnings  # rules load once

    kinds: list[str] = []
    warnings: list[str] = []
    for text in texts:
        found = find_instructions(text)
        if found:
            kinds += [f.kind for f in found if f.kind not in kinds]
            warnings += [w for w in instruction_warnings(text) if w not in warnings]
    return Flags(tuple(kinds), tuple(warnings))
