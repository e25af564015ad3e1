"""claude.ai's ``conversations.json``: a list of ``{uuid, name, created_at, chat_messages}``.

Each chat message is ``{uuid, text, sender: "human"|"assistant", created_at,
content?, attachments?, files?}``. Its text is the ``text`` parts of
``content`` when there are any (tool use, tool results and thinking blocks are
skipped), else ``text``. Attachments and files are not read (a message that
only attached a file has no text). Conversations whose messages are all empty
(claude.ai exports many) are left out as empty, and a malformed one is left out
on its own; both are reported with their position and name.
"""

from __future__ import annotations

from memdir.ingest import _common as c
from memdir.ingest.model import Conversation, IngestError, Message

_SENDERS = {"human": "user", "assistant": "assistant"}


def parse_claude(value: object) -> list[c.Parsed]:
    items = c.root_list(value, "a list of conversations (claude.ai conversations.json)")
    return c.each_conversation(items, "conversations", _conversation, "name")


def _conversation(value: object, at: str) -> Conversation | None:
    obj = c.as_object(value, at)
    items_at = c.key_path(at, "chat_messages")
    items = c.as_list(c.required(obj, "chat_messages", at), items_at)
    title = c.opt_str(obj.get("name"), c.key_path(at, "name"))
    created = c.timestamp(obj.get("created_at"), c.key_path(at, "created_at"))
    source_id = c.ident(obj.get("uuid"), c.key_path(at, "uuid"))
    messages: list[Message] = []
    for index, item in enumerate(items):
        message = _message(item, c.item_path(items_at, index))
        if message is not None:
            messages.append(message)
    return c.conversation(title, messages, created, source_id)


def _message(value: object, at: str) -> Message | None:
    obj = c.as_object(value, at)
    if "text" not in obj and "content" not in obj:
        raise IngestError("a chat message needs 'text' or 'content'", at=at)
    role = c.role(c.required(obj, "sender", at), c.key_path(at, "sender"), _SENDERS)
    from_parts = c.text_parts(obj.get("content"), c.key_path(at, "content"))
    text = c.opt_str(obj.get("text"), c.key_path(at, "text"))
    moment = c.timestamp(obj.get("created_at"), c.key_path(at, "created_at"))
    content = from_parts or c.clean(text or "")
    if not content:
        return None
    return Message(role=role, content=content, timestamp=moment)
