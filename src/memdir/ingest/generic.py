"""Generic JSON and JSON Lines: messages ``{role, content, timestamp?, name?}``.

Generic JSON comes in three shapes: a list of messages, one conversation object
``{"messages": [...], "title"?, "created_at"?, "id"?}``, or a list of such
objects. JSON Lines is one message object per line; blank lines are skipped and
all the lines make one conversation. In a list of conversation objects, one that
is malformed or empty is left out and reported, and the others are kept.
"""

from __future__ import annotations

import json
from typing import Any

from memdir.ingest import _common as c
from memdir.ingest.model import Conversation, IngestError, Message

_NEEDS = "a message needs 'role' and 'content'"


def parse_message(value: object, at: str) -> Message | None:
    """One message, or None when it has no text (validated all the same)."""
    obj = c.as_object(value, at)
    if "role" not in obj or "content" not in obj:
        hint = ""
        if "messages" in obj:
            hint = " (this holds a 'messages' list: a conversation, not a message)"
        raise IngestError(_NEEDS + hint, at=at)
    role = c.role(obj["role"], c.key_path(at, "role"))
    content = c.text_parts(obj["content"], c.key_path(at, "content"))
    moment = c.timestamp(obj.get("timestamp"), c.key_path(at, "timestamp"))
    name = c.opt_str(obj.get("name"), c.key_path(at, "name"))
    if not content:
        return None
    return Message(role=role, content=content, timestamp=moment, name=(name or "").strip() or None)


def _messages(items: list[Any], at: str) -> list[Message]:
    parsed = (parse_message(item, c.item_path(at, index)) for index, item in enumerate(items))
    return [message for message in parsed if message is not None]


def _conversation_object(value: object, at: str) -> Conversation | None:
    obj = c.as_object(value, at)
    items = c.as_list(c.required(obj, "messages", at), c.key_path(at, "messages"))
    title = c.opt_str(obj.get("title"), c.key_path(at, "title"))
    created = c.timestamp(obj.get("created_at"), c.key_path(at, "created_at"))
    source_id = c.ident(obj.get("id"), c.key_path(at, "id"))
    messages = _messages(items, c.key_path(at, "messages"))
    return c.conversation(title, messages, created, source_id)


def is_conversation_list(value: list[Any]) -> bool:
    return bool(value) and isinstance(value[0], dict) and "messages" in value[0]


def parse_generic(value: object) -> list[c.Parsed]:
    if isinstance(value, dict):
        return _whole(_conversation_object(value, ""))
    items = c.root_list(value, "a list of messages or conversations, or an object with 'messages'")
    if is_conversation_list(items):
        return c.each_conversation(items, "conversations", _conversation_object, "title")
    return _whole(c.conversation(None, _messages(items, "messages"), None))


def _whole(conversation: Conversation | None) -> list[c.Parsed]:
    """A file that is one conversation: malformed means the file is (the error rises)."""
    return [] if conversation is None else [conversation]


def parse_jsonl(text: str) -> list[c.Parsed]:
    messages: list[Message] = []
    # Split on "\n" only: JSON strings may hold a raw U+2028, which splitlines() would cut at.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            reason = f"not valid JSON: {err.msg} (column {err.colno})"
            raise IngestError(reason, line=number) from None
        except RecursionError:
            raise IngestError("nested too deeply to be a message", line=number) from None
        if not isinstance(value, dict):
            raise IngestError(f"expected a message object, found {c.kind(value)}", line=number)
        try:
            message = parse_message(value, "")
        except IngestError as err:
            raise err.located(line=number) from None
        if message is not None:
            messages.append(message)
    return _whole(c.conversation(None, messages, None))
