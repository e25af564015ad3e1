"""The normalized model every chat-history format is parsed into, and its error.

A ``ParsedFile`` holds ``Conversation`` objects, each a tuple of ``Message``,
and a ``LeftOut`` for each conversation of the file that was not kept (malformed
or empty), with its position and title. Everything is frozen.
``Conversation.content_hash`` is computed from the title and the messages (role,
name, content, timestamp) alone, so re-importing the same content gives the same
hash whatever the file's formatting, name or the conversation's position.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from memdir.errors import MemdirError

ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")
FORMATS: tuple[str, ...] = ("generic-json", "jsonl", "chatgpt", "claude", "locomo")
"""the export formats ``parse_file`` reads (``detect`` maps each to its parser)"""
LEFT_OUT_KINDS: tuple[str, ...] = ("malformed", "empty", "refused")


class IngestError(MemdirError):
    """A chat-history file is malformed or of no known format; nothing was parsed.

    ``reason`` says what is wrong, ``line`` names the line (JSON Lines) and
    ``at`` the JSON path of the value at fault, e.g.
    ``conversations[3].mapping.abc.message.content.parts[0]``. A root list is
    named after what it holds: ``conversations``, ``messages`` or ``samples``.
    The message reads ``<file>: line 7: <path>: <reason>`` with absent parts left out.
    """

    def __init__(
        self, reason: str, *, at: str = "", line: int | None = None, path: Path | None = None
    ) -> None:
        self.reason = reason
        self.at = at
        self.line = line
        self.path = path
        where = [str(path)] if path is not None else []
        if line is not None:
            where.append(f"line {line}")
        if at:
            where.append(at)
        super().__init__(": ".join([*where, reason]))

    def located(self, *, line: int | None = None, path: Path | None = None) -> IngestError:
        """The same error with a line and/or file added (those already set are kept)."""
        return IngestError(
            self.reason,
            at=self.at,
            line=self.line if self.line is not None else line,
            path=self.path if self.path is not None else path,
        )


@dataclass(frozen=True)
class Message:
    """One turn: a normalized role, non-empty plain text, an aware UTC time or None."""

    role: str
    content: str
    timestamp: datetime | None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {self.role!r}")
        if not self.content.strip():
            raise ValueError("a message needs non-empty content")
        if self.timestamp is not None:
            if self.timestamp.tzinfo is None:
                raise ValueError("timestamp must be timezone-aware")
            object.__setattr__(self, "timestamp", self.timestamp.astimezone(UTC))


@dataclass(frozen=True)
class Conversation:
    """One conversation; ``content_hash`` is derived, never passed in."""

    title: str
    messages: tuple[Message, ...]
    started_at: datetime | None
    source_id: str
    position: int = field(default=1, compare=False)
    """where it is in the file, from 1 (reported when its write is refused)"""
    content_hash: str = field(init=False)

    def __post_init__(self) -> None:
        if self.started_at is not None:
            if self.started_at.tzinfo is None:
                raise ValueError("started_at must be timezone-aware")
            object.__setattr__(self, "started_at", self.started_at.astimezone(UTC))
        object.__setattr__(self, "content_hash", content_hash(self.title, self.messages))


@dataclass(frozen=True)
class LeftOut:
    """A conversation of the file that was not imported, and why.

    ``position`` counts the file's conversations from 1 (across an archive's
    shards, in order); ``title`` is the file's own, None when it has none or it
    could not be read; ``kind`` is one of ``LEFT_OUT_KINDS``: ``malformed`` (its
    JSON is not what the format says: ``at`` names the value), ``empty`` (no
    message with text) or ``refused`` (the session store would not take it).
    """

    position: int
    title: str | None
    kind: str
    reason: str
    at: str = ""

    def __post_init__(self) -> None:
        if self.kind not in LEFT_OUT_KINDS:
            raise ValueError(f"kind must be one of {', '.join(LEFT_OUT_KINDS)}, not {self.kind!r}")

    def describe(self) -> str:
        """One line for people: ``#4 "Trip": malformed: conversations[3].mapping: ...``."""
        title = f'"{self.title}"' if self.title else "(no title)"
        where = f"{self.at}: " if self.at else ""
        return f"#{self.position} {title}: {self.kind}: {where}{self.reason}"

    def to_dict(self) -> dict[str, object]:
        return {
            "position": self.position,
            "title": self.title,
            "kind": self.kind,
            "reason": self.reason,
            "at": self.at,
        }


@dataclass(frozen=True)
class ParsedFile:
    format: str
    conversations: tuple[Conversation, ...]
    left_out: tuple[LeftOut, ...] = ()

    @property
    def message_count(self) -> int:
        return sum(len(conversation.messages) for conversation in self.conversations)


def content_hash(title: str, messages: tuple[Message, ...]) -> str:
    """sha256 hex of a canonical JSON of the title and each message's fields."""
    canonical = {
        "title": title,
        "messages": [
            {
                "role": message.role,
                "name": message.name,
                "content": message.content,
                "timestamp": (
                    message.timestamp.astimezone(UTC).isoformat()
                    if message.timestamp is not None
                    else None
                ),
            }
            for message in messages
        ],
    }
    text = json.dumps(canonical, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
