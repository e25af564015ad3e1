"""ChatGPT's ``conversations.json``: a list of conversations, each a tree of nodes.

Each conversation has ``mapping`` (node id -> ``{id, parent, children,
message}``) and ``current_node``, the leaf of the thread the user last saw. The
thread is read from ``current_node`` up the ``parent`` links, then reversed, so
regenerated answers and edited prompts that were not chosen are left out.

A message's text is its ``content.parts`` (strings, and objects that carry a
``text`` string such as audio transcriptions; image pointers are skipped) or,
without parts, its ``content.text`` (code, execution output). Nodes without a
message, messages hidden from the conversation (system prompts, custom
instructions) and messages with no text (the empty system bootstrap node,
reasoning summaries) are dropped.
"""

from __future__ import annotations

from typing import Any

from memdir.ingest import _common as c
from memdir.ingest.model import Conversation, IngestError, Message


def parse_chatgpt(value: object) -> list[Conversation | None]:
    items = c.root_list(value, "a list of conversations (ChatGPT conversations.json)")
    return [
        _conversation(item, c.item_path("conversations", index)) for index, item in enumerate(items)
    ]


def _conversation(value: object, at: str) -> Conversation | None:
    obj = c.as_object(value, at)
    mapping_at = c.key_path(at, "mapping")
    mapping = c.as_object(c.required(obj, "mapping", at), mapping_at)
    current_at = c.key_path(at, "current_node")
    current = c.as_str(c.required(obj, "current_node", at), current_at)
    if current not in mapping:
        raise IngestError(f"{current!r} is not a node of mapping", at=current_at)
    title = c.opt_str(obj.get("title"), c.key_path(at, "title"))
    created = c.timestamp(obj.get("create_time"), c.key_path(at, "create_time"))
    id_key = "id" if obj.get("id") is not None else "conversation_id"
    source_id = c.ident(obj.get(id_key), c.key_path(at, id_key))
    messages: list[Message] = []
    for node_id in _thread(mapping, current, mapping_at):
        message = _message(mapping[node_id], c.key_path(mapping_at, node_id))
        if message is not None:
            messages.append(message)
    return c.conversation(title, messages, created, source_id)


def _thread(mapping: dict[str, Any], leaf: str, mapping_at: str) -> list[str]:
    """Node ids from the root down to ``leaf``, following ``parent`` links."""
    chain: list[str] = []
    seen: set[str] = set()
    node_id: str | None = leaf
    while node_id is not None:
        seen.add(node_id)
        chain.append(node_id)
        node_at = c.key_path(mapping_at, node_id)
        node = c.as_object(mapping[node_id], node_at)
        parent_at = c.key_path(node_at, "parent")
        parent = c.opt_str(node.get("parent"), parent_at)
        if parent is not None and parent not in mapping:
            raise IngestError(f"{parent!r} is not a node of mapping", at=parent_at)
        if parent in seen:
            raise IngestError(
                f"{parent!r} is its own ancestor: the links form a cycle", at=parent_at
            )
        node_id = parent
    chain.reverse()
    return chain


def _message(node: dict[str, Any], node_at: str) -> Message | None:
    raw = node.get("message")
    if raw is None:
        return None
    at = c.key_path(node_at, "message")
    msg = c.as_object(raw, at)
    author_at = c.key_path(at, "author")
    author = c.as_object(c.required(msg, "author", at), author_at)
    role = c.role(c.required(author, "role", author_at), c.key_path(author_at, "role"))
    name = c.opt_str(author.get("name"), c.key_path(author_at, "name"))
    content_at = c.key_path(at, "content")
    content = c.as_object(c.required(msg, "content", at), content_at)
    text = _text(content, content_at)
    moment = c.timestamp(msg.get("create_time"), c.key_path(at, "create_time"))
    metadata = msg.get("metadata")
    hidden = isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")
    if not text or hidden is True:
        return None
    return Message(role=role, content=text, timestamp=moment, name=(name or "").strip() or None)


def _text(content: dict[str, Any], at: str) -> str:
    if "parts" not in content:
        text = content.get("text")
        return c.clean(c.as_str(text, c.key_path(at, "text"))) if text is not None else ""
    parts_at = c.key_path(at, "parts")
    pieces: list[str] = []
    for index, part in enumerate(c.as_list(content["parts"], parts_at)):
        part_at = c.item_path(parts_at, index)
        if part is None:
            continue
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, dict):
            if part.get("text") is not None:
                pieces.append(c.as_str(part["text"], c.key_path(part_at, "text")))
        else:
            raise IngestError(f"expected a string or an object, found {c.kind(part)}", at=part_at)
    return c.join_text(pieces)
