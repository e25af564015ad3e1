"""Cards: lossless round trips, surgical frontmatter edits, an untouchable body."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memdir.errors import FileShapeError
from memdir.files.cards import Card

# -- strategies -------------------------------------------------------------------

NEWLINES = st.sampled_from(["\n", "\r\n"])
# Frontmatter lines a person might write, some of them broken on purpose.
_FRONT_LINES = st.sampled_from(
    ["a: 1", "b: two", "c: 'single'", 'd: "double"', "tags:", "- x", "- y", "  - z",
     "# a comment", "", "e: [1, 2]", "f:", "  nested: 1", "g: null", "h: true",
     "a: 3", "i: 1.5  # trailing comment", "j: |", "  block text", "k: {p: 1,", "q: 2}",
     ": bad", "[1, 2]", "---", "..."]
)  # fmt: skip
CARD_TEXTS = st.tuples(
    st.lists(_FRONT_LINES, max_size=12),
    NEWLINES,
    st.sampled_from(["---", "...", "--- "]),
    st.text(),
).map(lambda t: t[1].join(["---", *t[0], t[2], t[3]]))
_TEXT = st.characters()
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(_TEXT, max_size=20),
)
VALUES = st.one_of(SCALARS, st.lists(st.text(_TEXT, max_size=10), max_size=4))
METAS = st.dictionaries(st.text(_TEXT, max_size=10), VALUES, max_size=5)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


# -- properties ----------------------------------------------------------------------


@settings(max_examples=300)
@given(text=st.one_of(st.text(), CARD_TEXTS))
def test_parse_render_is_lossless_for_any_text(text: str) -> None:
    """Any text renders back byte for byte, unless its frontmatter is rejected outright."""
    try:
        card = Card.parse(text)
    except FileShapeError:
        assert text.startswith("---")
        return
    assert card.render() == text
    assert not card.changed


@settings(max_examples=200)
@given(meta=METAS, body=st.text())
def test_generated_cards_round_trip(meta: dict[str, Any], body: str) -> None:
    """Rendering a new card and parsing it back gives the same metadata and body."""
    card = Card(meta, body)
    reparsed = Card.parse(card.render())
    assert reparsed.meta == meta
    assert reparsed.body == body


@settings(max_examples=200)
@given(text=CARD_TEXTS, data=st.data(), value=VALUES)
def test_metadata_edits_never_touch_the_body(text: str, data: st.DataObject, value: Any) -> None:
    """Setting, adding or deleting a key changes the frontmatter only, and loads back."""
    try:
        card = Card.parse(text)
    except FileShapeError:
        assume(False)
    body = card.body
    key = data.draw(st.sampled_from([*card.meta, "new_key"]))
    if key in card.meta and data.draw(st.booleans()):
        del card.meta[key]
    else:
        card.meta[key] = value
    expected = dict(card.meta)
    rendered = card.render()
    assert rendered.endswith(body)
    reparsed = Card.parse(rendered)
    assert reparsed.body == body
    assert reparsed.meta == expected


@settings(max_examples=100)
@given(meta=METAS, body=st.text(), newline=NEWLINES)
def test_card_without_frontmatter_gains_metadata(
    meta: dict[str, Any], body: str, newline: str
) -> None:
    """Metadata on a plain file is prepended; the old text follows unchanged."""
    text = f"# Title{newline}{body}"
    card = Card.parse(text)
    assert card.meta == {} and card.body == text
    card.meta.update(meta)
    rendered = card.render()
    assert rendered.endswith(text)
    assert Card.parse(rendered) == Card(meta, text)


# -- hand-edited cards ---------------------------------------------------------------

FRONT = [
    "---",
    "# a comment about this card",
    "type: person",
    'name: "Alice Smith"  # quoted, with a trailing comment',
    "tags:",
    "- client",
    "- berlin",
    "relevance: 0.5",
    "x-custom: 'kept as is'",
    "---",
]
BODY = "# Alice\n\nMet at the *conference*.  \n---\nrelevance: 0.1\n"


def _card_text(newline: str) -> str:
    return newline.join(FRONT) + newline + BODY.replace("\n", newline)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_hand_edited_card_parses_and_round_trips(newline: str) -> None:
    """Comments, quoting, block lists and a ``---`` inside the body all survive."""
    text = _card_text(newline)
    card = Card.parse(text)
    assert card.render() == text
    assert card.meta == {
        "type": "person",
        "name": "Alice Smith",
        "tags": ["client", "berlin"],
        "relevance": 0.5,
        "x-custom": "kept as is",
    }
    assert card.body == BODY.replace("\n", newline)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_changing_one_field_rewrites_only_its_line(newline: str) -> None:
    """Every other frontmatter line, and the body, stay byte-identical."""
    text = _card_text(newline)
    card = Card.parse(text)
    card.meta["relevance"] = 0.9
    rendered = card.render()
    old, new = _lines(text), _lines(rendered)
    assert len(old) == len(new)
    changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    assert changed == [FRONT.index("relevance: 0.5")]
    assert new[changed[0]] == f"relevance: 0.9{newline}"
    assert rendered.endswith(BODY.replace("\n", newline))


def test_in_place_list_edit_rewrites_only_that_key() -> None:
    """Appending to ``tags`` replaces the block list; nothing else moves."""
    card = Card.parse(_card_text("\n"))
    card.meta["tags"].append("vip")
    expected = _card_text("\n").replace(
        "tags:\n- client\n- berlin\n", "tags: [client, berlin, vip]\n"
    )
    assert card.render() == expected


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_adding_a_key_appends_it_to_the_frontmatter(newline: str) -> None:
    """A new key goes last, before the closing fence, in the file's newline style."""
    card = Card.parse(_card_text(newline))
    card.meta["last_accessed"] = "2026-11-30"
    lines = [*FRONT[:-1], "last_accessed: '2026-11-30'", "---"]
    assert card.render() == newline.join(lines) + newline + BODY.replace("\n", newline)
    assert Card.parse(card.render()).meta["last_accessed"] == "2026-11-30"


def test_deleting_a_key_removes_only_its_lines() -> None:
    """Deleting ``tags`` drops its three lines and nothing else."""
    card = Card.parse(_card_text("\n"))
    del card.meta["tags"]
    assert card.render() == _card_text("\n").replace("tags:\n- client\n- berlin\n", "")


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_plain_file_gains_frontmatter(newline: str) -> None:
    """A file without frontmatter gets a block prepended, in its own newline style."""
    text = f"# Notes{newline}{newline}free text{newline}"
    card = Card.parse(text)
    assert card.meta == {} and card.render() == text
    card.meta["type"] = "note"
    card.meta["tags"] = ["a", "b"]
    expected = f"---{newline}type: note{newline}tags: [a, b]{newline}---{newline}{text}"
    assert card.render() == expected


def test_empty_and_unclosed_frontmatter() -> None:
    """``---``/``---`` is empty metadata; an opening ``---`` without a close is body."""
    card = Card.parse("---\n---\nbody")
    assert card.meta == {} and card.body == "body"
    card.meta["a"] = 1
    assert card.render() == "---\na: 1\n---\nbody"
    unclosed = "---\na: 1\nno closing fence\n"
    card = Card.parse(unclosed)
    assert card.meta == {} and card.body == unclosed and card.render() == unclosed


def test_body_edit_leaves_frontmatter_bytes_alone() -> None:
    """Changing only the body keeps the frontmatter exactly as written."""
    card = Card.parse(_card_text("\r\n"))
    card.body = "replaced\n"
    assert card.render() == "\r\n".join(FRONT) + "\r\nreplaced\n"


@pytest.mark.parametrize(
    "text",
    [
        "---\na: [1, 2\n---\nbody\n",  # unclosed flow list
        "---\na: 1\n  b: 2\n---\n",  # bad indentation
        "---\n- a\n- b\n---\nbody\n",  # a list, not a mapping
        "---\njust a string\n---\n",  # a scalar, not a mapping
    ],
)
def test_bad_frontmatter_raises_file_shape_error(text: str) -> None:
    """Invalid YAML and non-mapping frontmatter are rejected with FileShapeError."""
    with pytest.raises(FileShapeError):
        Card.parse(text)


# -- regressions: inputs that once broke the round trip --------------------------


def test_invalid_date_in_frontmatter_raises_file_shape_error() -> None:
    """PyYAML's date constructor raises ValueError, which _load_yaml does not wrap."""
    with pytest.raises(FileShapeError):
        Card.parse("---\nlast_accessed: 2026-13-45\n---\nbody\n")


def test_empty_meta_card_with_horizontal_rules_round_trips() -> None:
    """Rendered as the bare body, the body's ``---`` lines are read back as frontmatter."""
    card = Card({}, "---\nhello\n---\n")
    assert Card.parse(card.render()) == card


def test_a_key_inside_a_flow_mapping_is_not_edited_as_its_own_line() -> None:
    """``q: 2}`` continues ``k``'s mapping; setting the real ``q`` must keep both loading."""
    card = Card.parse("---\nk: {p: 1,\nq: 2}\nq: 2}\n---\n")
    assert card.meta == {"k": {"p": 1, "q": 2}, "q": "2}"}
    card.meta["q"] = False
    assert Card.parse(card.render()).meta == {"k": {"p": 1, "q": 2}, "q": False}


def test_value_with_next_line_character_round_trips() -> None:
    """allow_unicode makes PyYAML write NEL raw in a quoted scalar, where it folds to a space."""
    card = Card({"note": "a\x85b"}, "body\n")
    assert Card.parse(card.render()).meta == {"note": "a\x85b"}


_LONG_PIECES = st.sampled_from(["word ", "---", "# x ", "a: 1 ", "\r", "\t", "é", "..."])


@settings(max_examples=25)
@given(
    piece=st.lists(_LONG_PIECES, min_size=1, max_size=4).map("".join),
    repeat=st.integers(min_value=5_000, max_value=60_000),
    newline=NEWLINES,
    front=st.booleans(),
)
def test_a_very_long_body_without_newlines_round_trips(
    piece: str, repeat: int, newline: str, front: bool
) -> None:
    """A card body of up to megabytes on one line parses and renders byte for byte,
    and a metadata edit leaves it alone."""
    body = "text " + piece * repeat
    text = f"---{newline}type: person{newline}---{newline}{body}" if front else body
    card = Card.parse(text)
    assert card.render() == text
    assert card.body == body
    card.meta["tier"] = "warm"
    edited = Card.parse(card.render())
    assert edited.body == body and edited.meta["tier"] == "warm"


def test_unclosed_frontmatter_over_a_long_file_is_all_body() -> None:
    """An opening ``---`` never closed, over 200,000 lines: no metadata, every byte kept."""
    text = "---\n" + "".join(f"line {n}: value\n" for n in range(200_000))
    card = Card.parse(text)
    assert card.meta == {} and card.body == text and card.render() == text
