"""Checked access to parsed JSON: every failure is an IngestError naming its JSON path.

``each_conversation`` runs a format's parser over a file's list of conversations
one at a time: a conversation that raises IngestError, or keeps no message, is
a ``LeftOut`` with its position and title, and the others are kept.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from memdir.ingest.model import Conversation, IngestError, LeftOut, Message
from memdir.textutil import shorten
from memdir.timeutil import parse_ts

TITLE_LIMIT = 60
# Epoch numbers at or above this are milliseconds (1e11 s is the year 5138; 1e11 ms is 1973).
_MS_THRESHOLD = 1e11
_IDENT_RE = re.compile(r"^[A-Za-z0-9_-]+$")

ROLE_ALIASES: dict[str, str] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "chatbot": "assistant",
    "gpt": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}


def kind(value: object) -> str:
    """How a JSON value is named in a refusal."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def key_path(at: str, key: str) -> str:
    step = key if _IDENT_RE.match(key) else f"[{json.dumps(key, ensure_ascii=False)}]"
    if not at:
        return step
    return f"{at}{step}" if step.startswith("[") else f"{at}.{step}"


def item_path(at: str, index: int) -> str:
    return f"{at}[{index}]"


def as_object(value: object, at: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise IngestError(f"expected an object, found {kind(value)}", at=at)
    return value


def as_list(value: object, at: str) -> list[Any]:
    if not isinstance(value, list):
        raise IngestError(f"expected a list, found {kind(value)}", at=at)
    return value


def root_list(value: object, expected: str) -> list[Any]:
    """The file's top-level list; ``expected`` names what it should hold."""
    if not isinstance(value, list):
        raise IngestError(f"expected {expected}, found {kind(value)}")
    return value


def as_str(value: object, at: str) -> str:
    if not isinstance(value, str):
        raise IngestError(f"expected a string, found {kind(value)}", at=at)
    return value


def opt_str(value: object, at: str) -> str | None:
    return None if value is None else as_str(value, at)


def ident(value: object, at: str) -> str:
    """A source's id: a string or an integer; null or absent is ``""``."""
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return as_str(value, at).strip()


def required(obj: dict[str, Any], key: str, at: str) -> Any:
    """``obj[key]``; a refusal naming the key's path when it is missing."""
    if key not in obj:
        raise IngestError("required key is missing", at=key_path(at, key))
    return obj[key]


def timestamp(value: object, at: str) -> datetime | None:
    """An ISO 8601 string, epoch seconds or epoch milliseconds as aware UTC; null is None."""
    if value is None:
        return None
    if isinstance(value, str):
        moment = parse_ts(value) if value.strip() else None
        if moment is None:
            raise IngestError(f"not a timestamp: {value!r}", at=at)
        return moment
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1000 if abs(value) >= _MS_THRESHOLD else value
        try:
            if not math.isfinite(seconds):
                raise ValueError("not finite")
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            raise IngestError(f"not a timestamp: {value!r}", at=at) from None
    raise IngestError(
        f"expected a timestamp (ISO string or epoch number), found {kind(value)}", at=at
    )


def role(value: object, at: str, aliases: dict[str, str] = ROLE_ALIASES) -> str:
    text = as_str(value, at)
    normalized = aliases.get(text.strip().lower())
    if normalized is None:
        expected = ", ".join(sorted(aliases))
        raise IngestError(f"unknown role {text!r}: expected one of {expected}", at=at)
    return normalized


def clean(text: str) -> str:
    """Message text as stored: newlines as ``\\n``, no surrounding whitespace."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def join_text(pieces: Iterable[str]) -> str:
    return "\n\n".join(piece for piece in (clean(p) for p in pieces) if piece)


def text_parts(value: object, at: str) -> str:
    """Content as a string, or a list of parts: strings or ``{type: "text", text}``.

    Parts of other types (images, tool calls) carry no text and are skipped.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return clean(value)
    pieces: list[str] = []
    for index, part in enumerate(as_list(value, at)):
        part_at = item_path(at, index)
        if isinstance(part, str):
            pieces.append(part)
            continue
        part_obj = as_object(part, part_at)
        if part_obj.get("type") == "text":
            pieces.append(as_str(required(part_obj, "text", part_at), key_path(part_at, "text")))
    return join_text(pieces)


Parsed = Conversation | LeftOut
"""What a format's parser gives for each conversation of the file."""


def each_conversation(
    items: list[Any],
    root: str,
    parse: Callable[[object, str], Conversation | None],
    title_key: str,
) -> list[Parsed]:
    """``parse(item, "root[i]")`` for each item, positions from 1; failures left out."""
    found: list[Parsed] = []
    for index, item in enumerate(items):
        position, title = index + 1, raw_title(item, title_key)
        try:
            parsed = parse(item, item_path(root, index))
        except IngestError as err:
            found.append(LeftOut(position, title, "malformed", err.reason, err.at))
            continue
        if parsed is None:
            found.append(LeftOut(position, title, "empty", "no message with text"))
        else:
            found.append(dataclasses.replace(parsed, position=position))
    return found


def raw_title(item: object, key: str) -> str | None:
    """The title a conversation gives itself, if it is a readable string (for reports)."""
    value = item.get(key) if isinstance(item, dict) else None
    if not isinstance(value, str) or not value.strip():
        return None
    printable = "".join(ch if ch.isprintable() else " " for ch in value)  # no terminal escapes
    return shorten(printable, TITLE_LIMIT) or None


def conversation(
    title: str | None,
    messages: Iterable[Message],
    started_at: datetime | None,
    source_id: str = "",
) -> Conversation | None:
    """A Conversation, or None when it kept no message.

    An absent or blank title becomes an excerpt of the first user message (else
    the first message), so it depends on the content alone, never on the file name.
    """
    kept = tuple(messages)
    if not kept:
        return None
    name = " ".join((title or "").split())
    if not name:
        first = next((m for m in kept if m.role == "user"), kept[0])
        name = shorten(first.content, TITLE_LIMIT)
    if started_at is None:
        started_at = next((m.timestamp for m in kept if m.timestamp is not None), None)
    return Conversation(title=name, messages=kept, started_at=started_at, source_id=source_id)
