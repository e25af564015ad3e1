"""ChatGPT's ``conversations.json``: a list of conversations, each a tree of nodes.

Each conversation has ``mapping`` (node id -> ``{id, parent, children,
message}``) and usually ``current_node``, the leaf of the thread the user last
saw. The thread is read from that leaf up the ``parent`` links, then reversed,
so regenerated answers and edited prompts that were not chosen are left out.
Without ``current_node`` (null or absent, as in some exporters' files) the leaf
is the newest one: of the nodes that are no node's parent, the one whose
message has the latest ``create_time`` (a leaf without a time counts as oldest;
a tie goes to the later in the mapping, which ChatGPT writes in creation
order). A parent that is not in the mapping, or links that loop, make the
conversation malformed (the walk keeps the nodes it has seen, so it always
ends).

A message's text is its ``content.parts`` (strings, and objects that carry a
``text`` string such as audio transcriptions; image and audio asset pointers
are skipped) or, without parts, its ``content.text`` (code, execution output,
quotes). Nodes without a message, messages hidden from the conversation
(system prompts, custom instructions) and messages with no text (the empty
system bootstrap node, reasoning, browsing displays, memory updates) are
dropped.

Each conversation is parsed on its own: one that is malformed is left out and
reported with its position and title, and the others are kept.
"""

from __future__ import annotations

import math
from typing import Any

from memdir.ingest import _common as c
from memdir.ingest.model import Conversation, IngestError, Message


def parse_chatgpt(value: object) -> list[c.Parsed]:
    items = c.root_list(value, "a list of conversations (ChatGPT conversations.json)")
    return c.each_conversation(items, "conversations", _conversation, "title")


def _conversation(value: object, at: str) -> Conversation | None:
    obj = c.as_object(value, at)
    mapping_at = c.key_path(at, "mapping")
    mapping = c.as_object(c.required(obj, "mapping", at), mapping_at)
    title = c.opt_str(obj.get("title"), c.key_path(at, "title"))
    created = c.timestamp(obj.get("create_time"), c.key_path(at, "create_time"))
    id_key = "id" if obj.get("id") is not None else "conversation_id"
    source_id = c.ident(obj.get(id_key), c.key_path(at, id_key))
    if not mapping:
        return None
    current_at = c.key_path(at, "current_node")
    current = c.opt_str(obj.get("current_node"), current_at)
    if current is None:
        current = _newest_leaf(mapping, mapping_at)
    elif current not in mapping:
        raise IngestError(f"{current!r} is not a node of mapping", at=current_at)
    messages: list[Message] = []
    for node_id in _thread(mapping, current, mapping_at):
        message = _message(mapping[node_id], c.key_path(mapping_at, node_id))
        if message is not None:
            messages.append(message)
    return c.conversation(title, messages, created, source_id)


def _newest_leaf(mapping: dict[str, Any], mapping_at: str) -> str:
    """The leaf (no node's parent) whose message is the newest; see the module docstring."""
    parents: set[str] = set()
    for node_id, node in mapping.items():
        node_at = c.key_path(mapping_at, node_id)
        parent = c.as_object(node, node_at).get("parent")
        if parent is not None:
            parents.add(c.as_str(parent, c.key_path(node_at, "parent")))
    newest: tuple[float, int, str] | None = None
    for order, node_id in enumerate(mapping):
        if node_id in parents:
            continue
        key = (_created(mapping[node_id], c.key_path(mapping_at, node_id)), order, node_id)
        if newest is None or key > newest:
            newest = key
    if newest is None:
        raise IngestError("no leaf: every node is another's parent, the links loop", at=mapping_at)
    return newest[2]


def _created(node: dict[str, Any], node_at: str) -> float:
    message = node.get("message")
    if not isinstance(message, dict):
        return -math.inf
    at = c.key_path(c.key_path(node_at, "message"), "create_time")
    moment = c.timestamp(message.get("create_time"), at)
    return moment.timestamp() if moment is not None else -math.inf


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
