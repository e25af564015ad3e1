"""Reading a chat-history file: which format it is (by content) and parsing it whole."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memdir.ingest._common import kind
from memdir.ingest.chatgpt import parse_chatgpt
from memdir.ingest.claude import parse_claude
from memdir.ingest.generic import is_conversation_list, parse_generic, parse_jsonl
from memdir.ingest.locomo import parse_locomo
from memdir.ingest.model import Conversation, IngestError, ParsedFile

FORMATS: tuple[str, ...] = ("generic-json", "jsonl", "chatgpt", "claude", "locomo")

_JSON_PARSERS: dict[str, Callable[[object], list[Conversation | None]]] = {
    "generic-json": parse_generic,
    "chatgpt": parse_chatgpt,
    "claude": parse_claude,
    "locomo": parse_locomo,
}

_EXPECTED = (
    "expected a list of messages {role, content}, an object with 'messages' or a list of them, "
    "JSON Lines of messages, a ChatGPT or claude.ai conversations.json, or a LoCoMo file"
)


def detect_format(path: Path) -> str:
    """The format of the file at ``path``, judged by its content; IngestError if none fits."""
    try:
        return _detect(_read(path))[0]
    except IngestError as err:
        raise err.located(path=path) from None


def parse_file(path: Path, format: str | None = None) -> ParsedFile:
    """Every conversation in the file, or IngestError naming what is wrong and where.

    ``format`` None means detect it. Conversations left without messages are
    dropped; a file with no message at all is refused. Nothing is returned for a
    file that is only partly valid.
    """
    try:
        if format is not None and format not in FORMATS:
            raise IngestError(f"unknown format {format!r}: expected one of {', '.join(FORMATS)}")
        text = _read(path)
        if format is None:
            format, value = _detect(text)
        elif format != "jsonl":
            value = _load_json(text, "not JSON")
        found = parse_jsonl(text) if format == "jsonl" else _JSON_PARSERS[format](value)
        conversations = tuple(conversation for conversation in found if conversation is not None)
        if not conversations:
            raise IngestError("no messages: every conversation in the file is empty")
    except IngestError as err:
        raise err.located(path=path) from None
    return ParsedFile(format=format, conversations=conversations)


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


def _load_json(text: str, refusal: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise _json_refusal(refusal, err) from None


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
    return _shape(value, text), value


def _first_line_is_object(text: str) -> bool:
    first = next((line for line in text.split("\n") if line.strip()), "")
    try:
        return isinstance(json.loads(first), dict)
    except json.JSONDecodeError:
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
