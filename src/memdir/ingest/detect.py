"""Reading a chat-history file (or an export archive): which format it is, by
content, and every conversation in it.

A file whose structure is unreadable (not JSON, no known shape, an archive that
is not an export) is refused whole. In a file of several conversations, each is
parsed on its own: one that is malformed or empty is left out, reported in
``ParsedFile.left_out`` with its position and title, and the others are kept. A
file that keeps no conversation is refused, naming the first fault.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memdir.ingest._common import Parsed, kind
from memdir.ingest.archive import is_archive, read_conversations
from memdir.ingest.chatgpt import parse_chatgpt
from memdir.ingest.claude import parse_claude
from memdir.ingest.generic import is_conversation_list, parse_generic, parse_jsonl
from memdir.ingest.locomo import parse_locomo
from memdir.ingest.model import FORMATS as FORMATS  # re-exported: detect's own list
from memdir.ingest.model import Conversation, IngestError, LeftOut, ParsedFile

_JSON_PARSERS: dict[str, Callable[[object], list[Parsed]]] = {
    "generic-json": parse_generic,
    "chatgpt": parse_chatgpt,
    "claude": parse_claude,
    "locomo": parse_locomo,
}

_EXPECTED = (
    "expected a list of messages {role, content}, an object with 'messages' or a list of them, "
    "JSON Lines of messages, a ChatGPT or claude.ai conversations.json (or the export's .zip), "
    "or a LoCoMo file"
)


def detect_format(path: Path) -> str:
    """The format of the file at ``path``, judged by its content; IngestError if none fits."""
    try:
        _check_regular(path)
        if is_archive(path):
            return _archive(path, None, detect_only=True)[0]
        return _detect(_read(path))[0]
    except IngestError as err:
        raise err.located(path=path) from None


def parse_file(path: Path, format: str | None = None) -> ParsedFile:
    """Every conversation in the file or export archive, or IngestError naming what is
    wrong and where; see the module docstring. ``format`` None means detect it."""
    try:
        if format is not None and format not in FORMATS:
            raise IngestError(f"unknown format {format!r}: expected one of {', '.join(FORMATS)}")
        _check_regular(path)
        if is_archive(path):
            format, found = _archive(path, format)
        else:
            format, found = _parse_text(_read(path), format)
        conversations = tuple(item for item in found if isinstance(item, Conversation))
        left_out = tuple(item for item in found if isinstance(item, LeftOut))
        if not conversations:
            raise _nothing_kept(left_out)
    except IngestError as err:
        raise err.located(path=path) from None
    return ParsedFile(format=format, conversations=conversations, left_out=left_out)


def _parse_text(text: str, format: str | None) -> tuple[str, list[Parsed]]:
    value = None
    if format is None:
        format, value = _detect(text)
    elif format != "jsonl":
        value = _load_json(text, "not JSON")
    found = parse_jsonl(text) if format == "jsonl" else _JSON_PARSERS[format](value)
    return format, found


def _archive(
    path: Path, format: str | None, *, detect_only: bool = False
) -> tuple[str, list[Parsed]]:
    """The archive's conversations file parsed as a file would be, or its shards joined."""
    members = read_conversations(path)
    if len(members) == 1:
        name, text = members[0]
        try:
            if detect_only:
                return _detect(text)[0], []
            return _parse_text(text, format)
        except IngestError as err:
            if err.at or err.line is not None:
                raise
            raise IngestError(f"{name} in the archive: {err.reason}") from None
    value: list[Any] = []
    for name, text in members:
        shard = _load_json(text, f"{name} in the archive is not JSON")
        if not isinstance(shard, list):
            raise IngestError(f"{name} in the archive: expected a list of conversations, "
                              f"found {_describe(shard)}")  # fmt: skip
        value.extend(shard)
    if format == "jsonl":
        raise IngestError("the archive's conversations are JSON shards, not JSON Lines")
    format = format or _shape(value, "")
    return format, [] if detect_only else _JSON_PARSERS[format](value)


def _nothing_kept(left_out: tuple[LeftOut, ...]) -> IngestError:
    """The refusal of a file that kept no conversation: its first malformed one, else empty."""
    malformed = [item for item in left_out if item.kind == "malformed"]
    if not malformed:
        return IngestError("no messages: every conversation in the file is empty")
    first = malformed[0]
    empty = len(left_out) - len(malformed)
    also = f"; {len(malformed) - 1} more malformed" if len(malformed) > 1 else ""
    also += f"; {empty} empty" if empty else ""
    title = f" {first.title!r}" if first.title else ""
    reason = f"{first.reason} (conversation #{first.position}{title}; nothing to import{also})"
    return IngestError(reason, at=first.at)


def _check_regular(path: Path) -> None:
    """Refuse what is not a file before opening it: a pipe with no writer blocks the open,
    a device such as /dev/zero never ends, and a pipe is read twice (once to tell an
    archive), so its first bytes would be lost."""
    try:
        mode = path.stat().st_mode
    except OSError as err:
        raise IngestError(f"cannot read the file: {err.strerror or err}") from None
    if stat.S_ISDIR(mode):
        raise IngestError("cannot read the file: it is a folder; import a file in it")
    if not stat.S_ISREG(mode):
        raise IngestError(
            "not a regular file (a pipe, a device or a socket); save the chat history to a "
            "file and import that"
        )


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise IngestError(f"cannot read the file: {err.strerror or err}") from None
    if not data.strip():
        raise IngestError("empty file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise IngestError(f"not JSON or JSON Lines: not UTF-8 text (byte {err.start})") from None


TOO_DEEP = "nested too deeply to be a chat history"
"""the refusal of JSON whose nesting Python's parser cannot follow (a RecursionError)"""


def _load_json(text: str, refusal: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise _json_refusal(refusal, err) from None
    except RecursionError:
        raise IngestError(f"{refusal}: {TOO_DEEP}") from None


def _json_refusal(refusal: str, err: json.JSONDecodeError) -> IngestError:
    return IngestError(f"{refusal}: {err.msg} (line {err.lineno} column {err.colno})")


def _detect(text: str) -> tuple[str, Any]:
    """The format and, for a JSON format, the parsed document (parsed once)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        if _first_line_is_object(text):
            return "jsonl", None
        raise _json_refusal("not JSON or JSON Lines", err) from None
    except RecursionError:
        raise IngestError(TOO_DEEP) from None
    return _shape(value, text), value


def _first_line_is_object(text: str) -> bool:
    first = next((line for line in text.split("\n") if line.strip()), "")
    try:
        return isinstance(json.loads(first), dict)
    except (json.JSONDecodeError, RecursionError):
        return False


def _shape(value: Any, text: str) -> str:
    if isinstance(value, dict):
        if "messages" in value:
            return "generic-json"
        if "role" in value and "\n" not in text.strip():
            return "jsonl"
    elif isinstance(value, list):
        if not value:
            raise IngestError("no messages: the file holds an empty list")
        first = value[0]
        if isinstance(first, dict):
            if "mapping" in first:
                return "chatgpt"
            if "chat_messages" in first:
                return "claude"
            if "sample_id" in first or isinstance(first.get("conversation"), dict):
                return "locomo"
            if is_conversation_list(value) or "role" in first or "content" in first:
                return "generic-json"
    raise IngestError(f"no known chat format: {_EXPECTED}; found {_describe(value)}")


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(repr(key) for key in list(value)[:6])
        more = ", ..." if len(value) > 6 else ""
        found = f"an object with keys {keys}{more}" if value else "an empty object"
        if "role" in value:
            found += " (one message: put it in a list, or on a single line as JSON Lines)"
        if "mapping" in value or "chat_messages" in value:
            found += " (one conversation: the export is a list of them)"
        return found
    if isinstance(value, list):
        if not value:
            return "an empty list"
        return f"a list whose first item is {_describe(value[0])}"
    return kind(value)
