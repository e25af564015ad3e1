"""memdir.ingest: each chat-history format parsed, detected by content, or refused precisely."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memdir.ingest import FORMATS, IngestError, LeftOut, Message, detect_format, parse_file
from memdir.ingest.chatgpt import parse_chatgpt
from memdir.timeutil import format_ts

LOCOMO = Path("/work/shared/bench/locomo10-dev.json")
T0 = 1714564800  # 2024-05-01T12:00:00Z


def write(tmp_path: Path, name: str, data: Any, *, pretty: bool = False) -> Path:
    path = tmp_path / name
    text = data if isinstance(data, str) else json.dumps(data, indent=2 if pretty else None)
    path.write_text(text, encoding="utf-8")
    return path


def node(parent: str | None, children: str, role: str = "", *parts: Any, **extra: Any) -> Any:
    """A ChatGPT mapping node; no role means no message, ``extra`` goes into the message."""
    content = extra.pop("content", {"content_type": "text", "parts": list(parts)})
    author = {"role": role, "name": extra.pop("name", None)}
    message = {"author": author, "content": content, "create_time": None, **extra}
    return {"parent": parent, "children": children.split(), "message": message if role else None}


def chatgpt_export() -> list[dict[str, Any]]:
    image = {"content_type": "image_asset_pointer", "asset_pointer": "file-service://f1"}
    output = {"content_type": "execution_output", "text": "42"}
    hidden = {"is_visually_hidden_from_conversation": True}
    mapping = {
        "root": node(None, "sys"),
        "sys": node("root", "ctx", "system", ""),
        "ctx": node("sys", "u1", "user", "I like cats", metadata=hidden),  # custom instructions
        "u1": node("ctx", "old new", "user", "What is memdir?", create_time=T0),
        "old": node("u1", "", "assistant", "A rejected draft.", create_time=T0 + 5),
        "new": node("u1", "u2", "assistant", "A memory folder.", image, create_time=T0 + 9),
        "u2": node("new", "t1", "user", image, "Describe this", create_time=T0 + 20),
        "t1": node("u2", "a2", "tool", content=output, name="python"),
        "a2": node("t1", "", "assistant", "Done.", create_time=T0 + 30),
    }
    bootstrap_only = {"root": node(None, "sys"), "sys": node("root", "", "system", "")}
    first = {"title": "Memdir", "create_time": T0 - 1.5, "id": "conv-abc", "current_node": "a2"}
    second = {"title": "Empty", "create_time": T0, "id": "conv-2", "current_node": "sys"}
    return [{**first, "mapping": mapping}, {**second, "mapping": bootstrap_only}]


def claude_export() -> list[dict[str, Any]]:
    def msg(sender: str, text: str, *content: Any) -> dict[str, Any]:
        at = "2024-03-01T10:00:01.250000Z"
        item = {"uuid": "m", "text": text, "sender": sender, "created_at": at, "files": []}
        return {**item, "content": list(content)} if content else item

    tool = {"type": "tool_use", "name": "web_search", "input": {"q": "porto"}}
    chat = [
        msg("human", "Plan a trip", {"type": "text", "text": "Plan a trip"}),
        msg("assistant", "stale", text_part("Day 1: Lisbon"), tool, text_part("Day 2: Porto")),
        msg("human", "Thanks"),
        msg("human", ""),
    ]
    head = {"uuid": "c-1", "name": "Trip planning", "created_at": "2024-03-01T10:00:00Z"}
    return [{**head, "chat_messages": chat}, {"uuid": "c-2", "name": "", "chat_messages": []}]


def text_part(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


AI_PARTS = [text_part("Noted"), {"type": "image_url"}, text_part("Tom it is.")]
GENERIC_MESSAGES: list[dict[str, Any]] = [
    {"role": "Human", "content": "Remember my cat is Tom.", "timestamp": "2024-05-01T14:00+02:00"},
    {"role": "AI", "content": AI_PARTS, "timestamp": T0 + 60},
    {"role": "user", "content": "   ", "timestamp": T0 + 61},
    {"role": "bot", "content": "Anything else?", "timestamp": (T0 + 120) * 1000, "name": "Memo"},
]
GENERIC_SHAPES: dict[str, Any] = {
    "list": GENERIC_MESSAGES,
    "object": {"title": "Cats", "created_at": T0 - 60, "messages": GENERIC_MESSAGES},
    "conversations": [{"title": "Cats", "id": 7, "messages": GENERIC_MESSAGES}],
}
JSONL = "{}\n\n{}\n".format(
    json.dumps({"role": "user", "content": "first", "timestamp": T0 * 1000}),
    json.dumps({"role": "assistant", "content": "second", "timestamp": T0 * 1000 + 1500}),
)


def locomo_sample(when: str = "1:56 pm on 8 May, 2023", **turn: Any) -> list[dict[str, Any]]:
    turns = [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bo"}, {"dia_id": "D1:2", **turn}]
    speakers = {"speaker_a": "Ann", "speaker_b": "Bo"}
    conversation = {**speakers, "session_1_date_time": when, "session_1": turns}
    return [{"sample_id": "conv-1", "conversation": conversation, "qa": []}]


def test_chatgpt_follows_current_node_and_drops_system_and_empty(tmp_path: Path) -> None:
    parsed = parse_file(write(tmp_path, "conversations.json", chatgpt_export()))
    assert parsed.format == "chatgpt"
    [conv] = parsed.conversations  # the bootstrap-only conversation is dropped
    assert [(m.role, m.content, m.name) for m in conv.messages] == [
        ("user", "What is memdir?", None),
        ("assistant", "A memory folder.", None),
        ("user", "Describe this", None),
        ("tool", "42", "python"),
        ("assistant", "Done.", None),
    ]
    assert conv.title == "Memdir" and conv.source_id == "conv-abc"
    assert conv.started_at == datetime(2024, 5, 1, 11, 59, 58, 500000, tzinfo=UTC)
    assert conv.messages[0].timestamp == datetime(2024, 5, 1, 12, tzinfo=UTC)
    assert conv.messages[3].timestamp is None


def test_claude_prefers_content_text_parts(tmp_path: Path) -> None:
    parsed = parse_file(write(tmp_path, "conversations.json", claude_export()))
    assert parsed.format == "claude"
    [conv] = parsed.conversations
    assert [(m.role, m.content) for m in conv.messages] == [
        ("user", "Plan a trip"),
        ("assistant", "Day 1: Lisbon\n\nDay 2: Porto"),
        ("user", "Thanks"),
    ]
    assert (conv.title, conv.source_id) == ("Trip planning", "c-1")
    assert conv.started_at == datetime(2024, 3, 1, 10, tzinfo=UTC)
    assert conv.messages[0].timestamp == datetime(2024, 3, 1, 10, 0, 1, 250000, tzinfo=UTC)


@pytest.mark.parametrize("shape", sorted(GENERIC_SHAPES))
def test_generic_json_shapes(tmp_path: Path, shape: str) -> None:
    parsed = parse_file(write(tmp_path, "chat.json", GENERIC_SHAPES[shape]))
    assert parsed.format == "generic-json"
    [conv] = parsed.conversations
    assert conv.messages == (
        Message("user", "Remember my cat is Tom.", datetime(2024, 5, 1, 12, tzinfo=UTC)),
        Message("assistant", "Noted\n\nTom it is.", datetime(2024, 5, 1, 12, 1, tzinfo=UTC)),
        Message("assistant", "Anything else?", datetime(2024, 5, 1, 12, 2, tzinfo=UTC), "Memo"),
    )
    if shape == "list":  # no title in the file: an excerpt of the first user message
        assert (conv.title, conv.source_id) == ("Remember my cat is Tom.", "")
        assert conv.started_at == conv.messages[0].timestamp
    else:
        assert conv.title == "Cats"
    if shape == "object":
        assert conv.started_at == datetime(2024, 5, 1, 11, 59, tzinfo=UTC)
    if shape == "conversations":
        assert conv.source_id == "7"


def test_jsonl_with_blank_line_and_epoch_ms(tmp_path: Path) -> None:
    parsed = parse_file(write(tmp_path, "chat.jsonl", JSONL))
    assert parsed.format == "jsonl"
    [conv] = parsed.conversations
    assert [m.content for m in conv.messages] == ["first", "second"]
    assert conv.messages[1].timestamp == datetime(2024, 5, 1, 12, 0, 1, 500000, tzinfo=UTC)
    assert conv.started_at == datetime(2024, 5, 1, 12, tzinfo=UTC)


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo dev file not present")
def test_locomo_dev_file_one_conversation_per_session() -> None:
    samples = json.loads(LOCOMO.read_text(encoding="utf-8"))
    sessions = [
        (sample["sample_id"], key)
        for sample in samples
        for key, value in sample["conversation"].items()
        if key.startswith("session_") and isinstance(value, list)
    ]
    parsed = parse_file(LOCOMO)
    assert parsed.format == "locomo"
    assert len(parsed.conversations) == len(sessions) == 111
    assert {c.source_id for c in parsed.conversations} == {f"{s}:{k}" for s, k in sessions}
    raw = samples[0]["conversation"]
    conv = next(c for c in parsed.conversations if c.source_id == "conv-26:session_3")
    assert conv.title == f"conv-26 session 3: {raw['speaker_a']} and {raw['speaker_b']}"
    first = raw["session_3"][0]
    assert conv.messages[0] == Message("user", first["text"], conv.started_at, first["speaker"])
    assert len(conv.messages) == len(raw["session_3"])
    assert conv.started_at == datetime(2023, 6, 9, 19, 55, tzinfo=UTC)  # "7:55 pm on 9 June, 2023"
    assert {m.timestamp for m in conv.messages} == {conv.started_at}
    captioned = [t for t in raw["session_1"] if t.get("blip_caption")]
    session_1 = next(c for c in parsed.conversations if c.source_id == "conv-26:session_1")
    contents = {m.content for m in session_1.messages}
    assert {f"{t['text']} [image: {t['blip_caption']}]" for t in captioned} <= contents


def test_locomo_midnight_and_caption_only_turn(tmp_path: Path) -> None:
    when = "12:09 am on 13 September, 2023"
    data = locomo_sample(when, speaker="Bo", text="", blip_caption="a photo of a cake")
    [conv] = parse_file(write(tmp_path, "x.json", data)).conversations
    assert conv.started_at == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    assert conv.messages[1] == Message("user", "[image: a photo of a cake]", conv.started_at, "Bo")


FIXTURES: dict[str, Any] = {
    "chatgpt": chatgpt_export(),
    "claude": claude_export(),
    "generic-json": GENERIC_SHAPES["object"],
    "jsonl": JSONL,
    "locomo": locomo_sample(speaker="Bo", text="Hello"),
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_detect_format_by_content_not_name(tmp_path: Path, fmt: str) -> None:
    liar = {"chatgpt": "claude.jsonl", "jsonl": "conversations.json"}.get(fmt, "chat.txt")
    path = write(tmp_path, liar, FIXTURES[fmt], pretty=True)
    assert detect_format(path) == fmt
    assert parse_file(path).format == fmt


REFUSALS: list[tuple[str, Any, str]] = [
    ("empty", "", "empty file"),
    ("blank", " \n\n", "empty file"),
    ("prose", "hello, world", "not JSON or JSON Lines: Expecting value (line 1 column 1)"),
    ("number", "42", "no known chat format: expected"),
    ("object", {"foo": 1}, "found an object with keys 'foo'"),
    ("empty-list", [], "no messages"),
    ("all-empty", [{"role": "user", "content": ""}], "no messages"),
    ("jsonl-bad", JSONL + '{"role": "user"\n', "line 4: not valid JSON: Expecting ',' delimiter"),
    ("jsonl-keys", JSONL + '{"role": "user"}\n', "line 4: a message needs 'role' and 'content'"),
    ("jsonl-part", '{"role": "user", "content": [{"type": "text", "text": 3}]}\n',
     "line 1: content[0].text: expected a string, found a number"),
    ("role", [{"role": "user", "content": "a"}, {"role": "narrator", "content": "b"}],
     "messages[1].role: unknown role 'narrator'"),
    ("timestamp", [{"role": "user", "content": "a", "timestamp": "yesterday"}],
     "messages[0].timestamp: not a timestamp: 'yesterday'"),
    ("messages-type", {"messages": "hi"}, "messages: expected a list, found a string"),
    ("second-conv", [{"messages": []}, {"title": "x"}],
     "conversations[1].messages: required key is missing"),
    ("locomo-date", locomo_sample("sometime in May", speaker="Bo", text="x"),
     "samples[0].conversation.session_1_date_time: not a LoCoMo date-time"),
    ("locomo-hour", locomo_sample("25:10 pm on 8 May, 2023", speaker="Bo", text="x"),
     "session_1_date_time: not a valid date-time: '25:10 pm on 8 May, 2023' (the hour of a "
     "12-hour clock is 1-12)"),
    ("locomo-hour-0", locomo_sample("0:10 am on 8 May, 2023", speaker="Bo", text="x"),
     "(the hour of a 12-hour clock is 1-12)"),
    ("locomo-text", locomo_sample(speaker="Bo"),
     "samples[0].conversation.session_1[1].text: required key is missing"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "data", "expected"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_name_line_or_path(tmp_path: Path, case: str, data: Any, expected: str) -> None:
    path = write(tmp_path, "in.json", data)
    with pytest.raises(IngestError) as caught:
        parse_file(path)
    assert expected in str(caught.value)
    assert str(caught.value).startswith(f"{path}: ") and caught.value.path == path


def _bad_part(export: Any) -> None:
    export[1]["mapping"]["sys"]["message"]["content"]["parts"] = [7]


def _gone(export: Any) -> None:
    export[0]["current_node"] = "gone"


def _robot(export: Any) -> None:
    export[0]["chat_messages"][2]["sender"] = "robot"


EXPORT_REFUSALS: list[tuple[Any, Any, str]] = [
    (chatgpt_export, _gone, "conversations[0].current_node: 'gone' is not a node of mapping "
     "(conversation #1 'Memdir'; nothing to import; 1 empty)"),  # the other one is empty
    (claude_export, _robot, "conversations[0].chat_messages[2].sender: unknown role 'robot'"),
]  # fmt: skip


@pytest.mark.parametrize(("export", "damage", "expected"), EXPORT_REFUSALS)
def test_a_file_that_keeps_no_conversation_is_refused_naming_the_first_fault(
    tmp_path: Path, export: Any, damage: Any, expected: str
) -> None:
    data = export()
    damage(data)
    with pytest.raises(IngestError) as caught:
        parse_file(write(tmp_path, "conversations.json", data))
    assert expected in str(caught.value)


LEFT_OUT: list[tuple[Any, str]] = [
    (_bad_part, "conversations[1].mapping.sys.message.content.parts[0]: "
     "expected a string or an object, found a number"),
    (lambda e: e[1].pop("mapping"), "conversations[1].mapping: required key is missing"),
    (lambda e: e[1]["mapping"]["sys"].update(parent="nowhere"),
     "conversations[1].mapping.sys.parent: 'nowhere' is not a node of mapping"),
]  # fmt: skip


@pytest.mark.parametrize(("damage", "expected"), LEFT_OUT)
def test_one_malformed_conversation_is_left_out_and_the_others_kept(
    tmp_path: Path, damage: Any, expected: str
) -> None:
    data = chatgpt_export()
    damage(data)
    parsed = parse_file(write(tmp_path, "conversations.json", data))
    [kept] = parsed.conversations
    assert (kept.title, kept.position) == ("Memdir", 1)
    [left] = parsed.left_out
    assert (left.position, left.title, left.kind) == (2, "Empty", "malformed")
    assert f"{left.at}: {left.reason}" == expected
    assert left.describe() == f'#2 "Empty": malformed: {expected}'


def test_empty_conversations_are_reported(tmp_path: Path) -> None:
    gpt = parse_file(write(tmp_path, "gpt.json", chatgpt_export()))
    assert [item.to_dict() for item in gpt.left_out] == [
        {"position": 2, "title": "Empty", "kind": "empty", "reason": "no message with text",
         "at": ""},
    ]  # fmt: skip
    claude = parse_file(write(tmp_path, "claude.json", claude_export()))
    assert [item.describe() for item in claude.left_out] == [
        "#2 (no title): empty: no message with text"
    ]
    conversations = [{"title": "A", "messages": GENERIC_MESSAGES}, {"title": "B", "messages": []}]
    generic = parse_file(write(tmp_path, "generic.json", conversations))
    assert [(c.title, c.position) for c in generic.conversations] == [("A", 1)]
    assert [(item.position, item.title, item.kind) for item in generic.left_out] == [
        (2, "B", "empty")
    ]


def test_explicit_format_and_bad_bytes(tmp_path: Path) -> None:
    path = write(tmp_path, "conversations.json", chatgpt_export())
    with pytest.raises(IngestError, match=r"conversations\[0\]\.chat_messages: required key"):
        parse_file(path, "claude")
    with pytest.raises(IngestError, match="unknown format 'xml'"):
        parse_file(path, "xml")
    binary = tmp_path / "blob.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(IngestError, match="not UTF-8"):
        detect_format(binary)


def test_content_hash_stable_formatting_free_and_sensitive(tmp_path: Path) -> None:
    conversations = [
        {"title": "A", "messages": GENERIC_MESSAGES},
        {"title": "B", "messages": [{"role": "user", "content": "keep me"}]},
    ]
    compact = parse_file(write(tmp_path, "compact.json", conversations))
    pretty = parse_file(write(tmp_path, "pretty.json", conversations, pretty=True))
    again = parse_file(tmp_path / "compact.json")
    hashes = [c.content_hash for c in compact.conversations]
    assert hashes == [c.content_hash for c in pretty.conversations]
    assert hashes == [c.content_hash for c in again.conversations]
    assert len(set(hashes)) == 2 and all(len(h) == 64 for h in hashes)
    edited = json.loads(json.dumps(conversations))
    edited[0]["messages"][0]["content"] = "Remember my cat is Tim."
    changed = parse_file(write(tmp_path, "edited.json", edited))
    assert changed.conversations[0].content_hash != hashes[0]
    assert changed.conversations[1].content_hash == hashes[1]
    gpt_compact = parse_file(write(tmp_path, "g1.json", chatgpt_export()))
    gpt_pretty = parse_file(write(tmp_path, "g2.json", chatgpt_export(), pretty=True))
    assert gpt_compact.conversations == gpt_pretty.conversations


def test_message_model_validates() -> None:
    with pytest.raises(ValueError, match="role"):
        Message("narrator", "hi", None)
    with pytest.raises(ValueError, match="timezone-aware"):
        Message("user", "hi", datetime(2024, 1, 1))


# -- real exports' quirks (tests/data/exports) --------------------------------------------

EXPORTS = Path(__file__).parent / "data" / "exports"


def _load(name: str) -> Any:
    return json.loads((EXPORTS / name).read_text(encoding="utf-8"))


def test_chatgpt_export_quirks(tmp_path: Path) -> None:
    parsed = parse_file(EXPORTS / "chatgpt" / "conversations.json")
    sourdough, kayak = parsed.conversations
    assert [(m.role, m.name, m.content[:24]) for m in sourdough.messages] == [
        ("user", None, "My levain smells like na"),  # the image part skipped
        ("assistant", None, "Not dead: the grey liqui"),  # not the older answer
        ("user", None, "And how warm should the "),  # the voice message's words
        ("assistant", None, "print(round((24 - 21) * "),  # code it ran
        ("tool", "python", "4.5"),
        ("assistant", None, "Keep the kitchen at 24 t"),
    ]  # custom instructions, system, reasoning and the empty browsing display are dropped
    assert sourdough.started_at == datetime(2023, 3, 14, 10, 33, 20, tzinfo=UTC)
    assert [m.content[:24] for m in kayak.messages] == [
        "Plan three days of sea k",
        "Day 1: Svolvaer to Skrov",  # no current_node: the newest leaf's thread, not the draft
        "What if the wind is from",
        "Then stay in the lee of ",
    ]
    assert [item.describe() for item in parsed.left_out] == [
        '#3 "New chat": empty: no message with text',
        '#4 "Half-synced chat": malformed: conversations[3].mapping.x1.message.author: '
        "expected an object, found null",
    ]


def test_claude_export_quirks() -> None:
    parsed = parse_file(EXPORTS / "claude" / "conversations.json")
    bees, sundial = parsed.conversations
    assert [(m.role, m.content) for m in bees.messages] == [
        ("user", "My varroa count after the sugar roll was 9 mites per 300 bees. Treat now?"),
        ("assistant", "3 per 100 is above the autumn threshold: treat with oxalic acid while "
         "the colony is broodless."),  # text blocks only: no thinking, tool use or result
        ("user", "Thanks, dribbling method it is."),  # the file-only message has no text
    ]  # fmt: skip
    assert sundial.messages[1].content.startswith("Horas non numero nisi serenas")
    assert [item.describe() for item in parsed.left_out] == [
        "#3 (no title): empty: no message with text",
        '#4 "Odd sender": malformed: conversations[3].chat_messages[0].sender: '
        "unknown role 'narrator': expected one of assistant, human",
    ]


def test_a_public_exporter_fixture_without_current_node_reads_the_same_thread(
    tmp_path: Path,
) -> None:
    """mitkury/chatgpt-export-parser's example (MIT): its current_node is the newest leaf,
    so removing it, as some exporters' files do, changes nothing."""
    data = _load("public/mitkury-example-conversation.json")
    [with_node] = parse_file(write(tmp_path, "a.json", data)).conversations
    del data[0]["current_node"]
    [without] = parse_file(write(tmp_path, "b.json", data)).conversations
    assert without == with_node
    assert [m.content[:20] for m in without.messages] == [
        "Hello! Can you help ",
        "Of course! I'd be ha",
        "How do I write a fun",  # not the later edit "Actually, can you help me with Python"
        "Here's how to write ",
    ]
    data[0]["mapping"]["msg-5"]["message"]["create_time"] = 1704067600  # now the newest leaf
    [edited] = parse_file(write(tmp_path, "c.json", data)).conversations
    assert edited.messages[-1].content == "Actually, can you help me with Python instead?"


def _tree(**parents: str | None) -> dict[str, Any]:
    """A ChatGPT conversation whose nodes have these parents and no times."""
    mapping = {
        node_id: {"parent": parent, "message": {"author": {"role": "user"},
                  "content": {"content_type": "text", "parts": [node_id]}}}
        for node_id, parent in parents.items()
    }  # fmt: skip
    return {"title": "T", "mapping": mapping}


@pytest.mark.parametrize(
    ("conversation", "expected"),
    [
        (_tree(a=None, b="a", c="a"), ["a", "c"]),  # no times: the later leaf in the mapping
        (_tree(a="b", b="a"), "mapping: no leaf: every node is another's parent"),
        (_tree(a="b", b="c", c="b"), "mapping.c.parent: 'b' is its own ancestor"),
        (_tree(a="gone", b="a"), "mapping.a.parent: 'gone' is not a node of mapping"),
        ({"title": "T", "mapping": {}}, "empty"),
    ],
    ids=["untimed", "loop", "cycle-above-leaf", "missing-parent", "no-nodes"],
)
def test_newest_leaf_on_odd_trees_ends(tmp_path: Path, conversation: Any, expected: Any) -> None:
    """Links that loop or lead nowhere make the conversation malformed; the walk ends."""
    fine = _tree(x=None)
    parsed = parse_file(write(tmp_path, "t.json", [conversation, fine]))
    assert parsed.conversations[-1].messages[0].content == "x"
    if isinstance(expected, list):
        assert [m.content for m in parsed.conversations[0].messages] == expected
        return
    [left] = parsed.left_out
    assert left.kind == "empty" if expected == "empty" else expected in f"{left.at}: {left.reason}"


@st.composite
def _random_tree(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, str | None]]:
    """A ChatGPT mapping whose parent links are anything: a tree, loops, dangling links."""
    size = draw(st.integers(1, 8))
    ids = [f"n{i}" for i in range(size)]
    parents = {i: draw(st.sampled_from([None, "gone", *ids])) for i in ids}
    times = {i: draw(st.one_of(st.none(), st.integers(T0, T0 + 5))) for i in ids}
    mapping = {
        i: {"parent": parents[i], "message": {"author": {"role": "user"}, "create_time": times[i],
            "content": {"content_type": "text", "parts": [i]}}}
        for i in ids
    }  # fmt: skip
    return {"title": "T", "mapping": mapping}, parents


@given(_random_tree())
def test_any_parent_links_end_in_a_thread_or_a_left_out(tree: Any) -> None:
    """Whatever the links, the parse ends; a thread it keeps runs root to leaf by parents,
    and its leaf is the newest of the leaves."""
    conversation, parents = tree
    found = parse_chatgpt([conversation])
    assert len(found) == 1
    if isinstance(found[0], LeftOut):
        assert found[0].kind == "malformed"
        return
    thread = [m.content for m in found[0].messages]
    assert parents[thread[0]] is None
    assert all(parents[child] == parent for parent, child in itertools.pairwise(thread))
    leaves = [i for i in parents if i not in set(parents.values())]
    when = {i: conversation["mapping"][i]["message"]["create_time"] for i in parents}
    newest = max(leaves, key=lambda i: (when[i] if when[i] is not None else -1, leaves.index(i)))
    assert thread[-1] == newest


def _files(folder: Path) -> dict[Path, bytes]:
    return {
        p: p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".memdir" not in p.parts
    }


def _ingest(
    source: Path | str, folder: Path, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``python -m memdir ingest SOURCE --dir FOLDER`` in a child process."""
    env = dict(os.environ, COLUMNS="400")
    return subprocess.run(
        [sys.executable, "-m", "memdir", "ingest", str(source), "--dir", str(folder)],
        capture_output=True, text=True, env=env, timeout=timeout,
    )  # fmt: skip


def test_a_locomo_hour_past_12_is_refused_by_the_cli_and_writes_nothing(
    folder: Path, tmp_path: Path
) -> None:
    """``25:10 pm`` was read as 13:10 and imported."""
    data = locomo_sample("25:10 pm on 8 May, 2023", speaker="Bo", text="Hi")
    source = write(tmp_path, "locomo.json", data)
    before = _files(folder)
    done = _ingest(source, folder)
    assert done.returncode == 1, done
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "(the hour of a 12-hour clock is 1-12)" in done.stderr
    assert _files(folder) == before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_pipe_or_a_folder_is_refused_without_opening_it(folder: Path, tmp_path: Path) -> None:
    """A pipe with no writer blocked the import for ever (and /dev/zero read until memory
    ran out; a pipe with a writer lost its first bytes to the archive check: "empty file")."""
    pipe = tmp_path / "chat.json"
    os.mkfifo(pipe)
    before = _files(folder)
    done = _ingest(pipe, folder, timeout=30)
    assert done.returncode == 1, done
    assert done.stderr == (
        f"error: {pipe}: not a regular file (a pipe, a device or a socket); save the chat "
        "history to a file and import that\n"
    )
    with pytest.raises(IngestError, match="it is a folder; import a file in it"):
        parse_file(tmp_path)
    assert _files(folder) == before


def test_a_year_before_1000_is_written_as_iso_and_imported(folder: Path, tmp_path: Path) -> None:
    """``format_ts`` wrote year 999 as "999-05-08T13:00:00Z" (``%Y`` on Linux), which the
    session store then refused as "not an ISO time": the file was refused for memdir's slip."""
    data = locomo_sample("1:00 pm on 8 May, 0999", speaker="Bo", text="Hi")
    done = _ingest(write(tmp_path, "locomo.json", data), folder)
    assert done.returncode == 0, done
    assert "Imported 1 of 1 conversations" in done.stdout
    [session] = (folder / "sessions").glob("sess_imp_*.jsonl")
    assert '"0999-05-08T13:00:00Z"' in session.read_text(encoding="utf-8")
    assert (folder / "journal" / "0999-05-08.md").is_file()
    assert format_ts(datetime(1, 1, 2, 3, 4, 5, tzinfo=UTC)) == "0001-01-02T03:04:05Z"
