"""Section files: lossless round trips, surgical edits, and bodies that cannot split a file."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memdir.files.sections import (
    _CRLF_RE,
    _HEADING_RES,
    META_KEY_RE,
    Section,
    SectionDocument,
    _separation,
    canonical_body,
    sanitize_body,
    separate,
)

# -- strategies -------------------------------------------------------------------

# Pieces that make random text look like (broken) markdown, so the parser's edge cases
# come up far more often than in plain st.text().
_PIECES = st.sampled_from(
    ["## ", "### ", "# ", "##", "#", "```", "~~~~", "<!-- ", " -->", "<!-- a: 1 -->",
     "k: v", ";", "\n", "\r\n", "\r", " ", "\t", "x", "key", "   "]
)  # fmt: skip
MARKDOWNISH = st.one_of(
    st.text(),
    st.lists(st.one_of(_PIECES, st.text(max_size=4)), max_size=30).map("".join),
)
NEWLINES = st.sampled_from(["\n", "\r\n"])
KEYS = st.text(st.characters(blacklist_characters="\n\r"), min_size=1).filter(
    lambda key: key == key.strip()
)
META_VALUES = st.text(st.characters(blacklist_characters="\n\r;"), max_size=12).filter(
    lambda value: value == value.strip() and "-->" not in value and "<!--" not in value
)
METAS = st.dictionaries(st.from_regex(META_KEY_RE, fullmatch=True), META_VALUES, max_size=3)

# Whole lines a person might type into a section file.
_HAND_LINES = st.sampled_from(
    ["## alpha", "##  beta  ", "## gamma\t", "## alpha", "### sub", "# Title", "```", "```py",
     "~~~", "<!-- k: v -->", "<!-- x: 1; custom.key: two -->", "<!-- not meta", "", "   ",
     "text", "  indented", "trailing  ", "- item"]
)  # fmt: skip
HAND_EDITED = st.tuples(st.lists(_HAND_LINES, max_size=25), NEWLINES, st.booleans()).map(
    lambda t: t[1].join(t[0]) + (t[1] if t[2] else "")
)


def _fields(doc: SectionDocument) -> list[tuple[str, dict[str, str], str]]:
    return [(s.key, s.meta, s.body) for s in doc.sections]


# -- properties ----------------------------------------------------------------------


@settings(max_examples=300)
@given(text=MARKDOWNISH, level=st.sampled_from([2, 3]))
def test_parse_render_is_lossless_for_any_text(text: str, level: int) -> None:
    """Whatever the file holds, parsing and rendering gives back the same bytes."""
    assert SectionDocument.parse(text, level=level).render() == text


@settings(max_examples=150)
@given(
    items=st.lists(st.tuples(KEYS, METAS, MARKDOWNISH), max_size=5),
    newline=NEWLINES,
    level=st.sampled_from([2, 3]),
)
def test_generated_documents_round_trip(
    items: list[tuple[str, dict[str, str], str]], newline: str, level: int
) -> None:
    """Rendering valid sections and parsing back gives the same keys, meta and bodies."""
    sections = [Section(key, body, meta, level=level) for key, meta, body in items]
    doc = SectionDocument("", sections, level=level, newline=newline)
    rendered = doc.render()
    reparsed = SectionDocument.parse(rendered, level=level)
    assert reparsed.sections == doc.sections
    assert reparsed.render() == rendered


@settings(max_examples=150)
@given(text=HAND_EDITED, data=st.data(), new_body=MARKDOWNISH)
def test_editing_one_section_leaves_the_rest_byte_identical(
    text: str, data: st.DataObject, new_body: str
) -> None:
    """Only the edited section (and a blank line at its edges) changes."""
    doc = SectionDocument.parse(text)
    assume(doc.sections)
    index = data.draw(st.integers(0, len(doc.sections) - 1))
    raws = [section.render(doc.newline) for section in doc.sections]
    start = len(doc.preamble) + sum(len(raw) for raw in raws[:index])
    end = start + len(raws[index])
    before, after = text[:start], text[end:]

    doc.sections[index].body = new_body
    rendered = doc.render()

    nl = doc.newline
    fresh = doc.sections[index].render(nl)
    assert rendered.startswith(before) and rendered.endswith(after)
    middle = rendered[len(before) : len(rendered) - len(after)]
    assert middle in {a + fresh + b for a in ("", nl) for b in ("", nl)}
    reparsed = SectionDocument.parse(rendered)
    assert reparsed.keys() == doc.keys()
    assert reparsed.sections[index].body == doc.sections[index].body


@settings(max_examples=200)
@given(body=MARKDOWNISH, newline=NEWLINES, level=st.sampled_from([2, 3]))
def test_sanitized_body_never_splits_or_swallows_sections(
    body: str, newline: str, level: int
) -> None:
    """Headings and open fences in a body cannot add, remove or reorder sections."""
    doc = SectionDocument(level=level, newline=newline)
    for key, text in (("before", "a"), ("middle", body), ("after", "z")):
        doc.append(doc.new_section(key, text))
    reparsed = SectionDocument.parse(doc.render(), level=level)
    assert reparsed.keys() == ["before", "middle", "after"]
    assert _fields(reparsed) == _fields(doc)
    assert sanitize_body(sanitize_body(body, level), level) == sanitize_body(body, level)


@pytest.mark.parametrize(
    "body",
    ["## sibling\ntext", "# title", "##", "```\n## in fence", "~~~~\n```\nstill open", " ## x"],
)
def test_sanitize_body_examples(body: str) -> None:
    """Headings are demoted; an open fence is closed with its own marker."""
    doc = SectionDocument("", [Section("a", body), Section("b", "last")])
    assert SectionDocument.parse(doc.render()).keys() == ["a", "b"]


# -- hand-edited files ----------------------------------------------------------------

CRLF_FILE = (
    "# Knowledge\r\n"
    "Stray text before the first heading.\r\n"
    "\r\n"
    "##  conventions  \r\n"
    "<!-- managed: agent; updated: 2026-11-30T10:00:00Z; x-custom.key: kept -->\r\n"
    "Use snake_case for file names.   \r\n"
    "\r\n"
    "## code\r\n"
    "\r\n"
    "<!-- owner: me -->\r\n"
    "```python\r\n"
    "## not a heading\r\n"
    "```\r\n"
    "\r\n"
    "## last\r\n"
    "no trailing newline \udcff"
)


def _section_bytes(text: str) -> list[str]:
    doc = SectionDocument.parse(text)
    return [section.render(doc.newline) for section in doc.sections]


def test_hand_edited_crlf_file_round_trips_and_parses() -> None:
    """Preamble, odd spacing, unknown meta keys, fenced headings, no final newline."""
    doc = SectionDocument.parse(CRLF_FILE)
    assert doc.render() == CRLF_FILE
    assert doc.newline == "\r\n"
    assert doc.preamble == "# Knowledge\r\nStray text before the first heading.\r\n\r\n"
    assert doc.keys() == ["conventions", "code", "last"]
    assert doc.sections[0].meta["x-custom.key"] == "kept"
    assert doc.sections[0].body == "Use snake_case for file names.   "
    assert doc.sections[1].meta == {"owner": "me"}
    assert doc.sections[1].body == "```python\n## not a heading\n```"
    assert doc.sections[2].body == "no trailing newline \udcff"
    assert not any(section.changed for section in doc.sections)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_editing_a_crlf_file_keeps_other_sections_and_uses_crlf(index: int) -> None:
    """The other sections' bytes survive verbatim; the new text is CRLF throughout."""
    originals = _section_bytes(CRLF_FILE)
    doc = SectionDocument.parse(CRLF_FILE)
    doc.sections[index].body = "first line\nsecond line"
    rendered = doc.render()
    assert rendered.startswith(doc.preamble)
    for position, raw in enumerate(originals):
        if position != index:
            assert raw in rendered
    fresh = doc.sections[index].render("\r\n")
    assert fresh in rendered and "first line\r\nsecond line\r\n" in fresh
    assert "\n" not in rendered.replace("\r\n", "")
    assert SectionDocument.parse(rendered).keys() == ["conventions", "code", "last"]


def test_meta_edit_keeps_the_hand_written_heading_line() -> None:
    """A changed section keeps its heading bytes when its key did not change."""
    doc = SectionDocument.parse(CRLF_FILE)
    doc.sections[0].meta["updated"] = "2026-12-01T00:00:00Z"
    rendered = doc.render()
    assert "##  conventions  \r\n<!-- managed: agent; updated: 2026-12-01T00:00:00Z;" in rendered
    assert SectionDocument.parse(rendered).sections[0].meta["x-custom.key"] == "kept"


def test_append_and_remove_in_a_crlf_file() -> None:
    """A new section is set apart by a CRLF blank line; removal leaves the others intact."""
    originals = _section_bytes(CRLF_FILE)
    doc = SectionDocument.parse(CRLF_FILE)
    doc.append(doc.new_section("new", "hello", {"managed": "agent"}))
    rendered = doc.render()
    assert rendered == CRLF_FILE + "\r\n\r\n## new\r\n<!-- managed: agent -->\r\nhello\r\n"

    doc = SectionDocument.parse(CRLF_FILE)
    doc.remove("code")
    assert doc.render() == doc.preamble + originals[0] + originals[2]


def test_meta_comment_after_blank_line_and_lookalike_body() -> None:
    """A blank line between heading and meta is allowed; a body that looks like meta stays body."""
    doc = SectionDocument.parse("## a\n\n<!-- k: v -->\nbody\n")
    assert doc.sections[0].meta == {"k": "v"} and doc.sections[0].body == "body"
    fresh = Section("b", "<!-- not: meta -->\ntext")
    rendered = SectionDocument("", [fresh]).render()
    assert rendered == "## b\n<!--  -->\n<!-- not: meta -->\ntext\n"
    assert SectionDocument.parse(rendered).sections == [fresh]


def test_level_three_observations() -> None:
    """At level 3, ``###`` splits and ``##`` in a body is demoted below it."""
    text = "### obs-1\n<!-- at: 2026 -->\nsaw a thing\n### obs-2\nanother\n"
    doc = SectionDocument.parse(text, level=3)
    assert doc.render() == text and doc.keys() == ["obs-1", "obs-2"]
    doc.sections[0].body = "## not a sibling\n### nor this"
    assert doc.sections[0].body == "#### not a sibling\n#### nor this"
    assert SectionDocument.parse(doc.render(), level=3).keys() == ["obs-1", "obs-2"]


# -- regressions: inputs that once broke the round trip --------------------------


def test_body_ending_in_cr_round_trips() -> None:
    """A body ending in ``\\r`` loses it once rendered: the \\r joins the newline."""
    section = Section("a", "x\r")
    reparsed = SectionDocument.parse(SectionDocument("", [section]).render())
    assert reparsed.sections == [section]


def test_fence_closed_by_cr_line_does_not_swallow_next_section() -> None:
    """``'```\\n```\\r'`` sanitizes to three fence lines: the last one stays open."""
    doc = SectionDocument("", [Section("a", "```\n```\r"), Section("b", "x")])
    assert SectionDocument.parse(doc.render()).keys() == ["a", "b"]


def test_editing_section_whose_meta_value_holds_a_cr() -> None:
    """parse_meta accepts ``b\\rc`` as a value, render_meta then rejects it."""
    doc = SectionDocument.parse("## a\n<!-- k: b\rc -->\nbody\n")
    doc.sections[0].body = "new"
    assert SectionDocument.parse(doc.render()).sections[0].body == "new"


# -- big files: the linear forms agree with the plain ones -----------------------

# The regexes and the blank-line check as they were written first: quadratic on a long
# run of spaces or \r, or on a long document (each check copied the text so far).
_OLD_HEADING_RES = {level: re.compile(rf"^#{{{level}}}[ \t]+(\S.*?)[ \t]*$") for level in (2, 3)}
_OLD_CRLF_RE = re.compile(r"\r+\n")
_LINE_PIECES = st.sampled_from(
    ["#", "##", "###", " ", "\t", "\r", "\n", "a", "\xa0", "\x0b", "\u2028", "<!--", "-->"]
)
LINEISH = st.lists(_LINE_PIECES, max_size=20).map("".join)


def _old_separate(text: str, newline: str) -> str:
    if not text:
        return text
    if not text.endswith("\n"):
        text += newline
    last_line = text[:-1].rsplit("\n", 1)[-1]
    return text if last_line.rstrip("\r") == "" else text + newline


@settings(max_examples=300)
@given(line=LINEISH)
def test_heading_and_crlf_patterns_match_what_the_first_ones_did(line: str) -> None:
    for level, old in _OLD_HEADING_RES.items():
        before, now = old.match(line), _HEADING_RES[level].match(line)
        assert (before and before.group(1)) == (now and now.group(1))
    assert _CRLF_RE.sub("\n", line) == _OLD_CRLF_RE.sub("\n", line)


@settings(max_examples=300)
@given(parts=st.lists(st.one_of(LINEISH, MARKDOWNISH), max_size=6), newline=NEWLINES)
def test_separation_reads_only_the_end_and_agrees(parts: list[str], newline: str) -> None:
    """What render adds before a changed section, from the parts so far, is what
    ``separate`` of their whole text adds."""
    joined = "".join(parts)
    assert joined + _separation(parts, newline) == _old_separate(joined, newline)
    assert separate(joined, newline) == _old_separate(joined, newline)


_LONG_PIECES = st.sampled_from(["word ", "## x ", "```", "<!-- a: 1 -->", "\r", " ", "\t", "é"])


@settings(max_examples=25)
@given(
    piece=st.lists(_LONG_PIECES, min_size=1, max_size=4).map("".join),
    repeat=st.integers(min_value=5_000, max_value=60_000),
    newline=NEWLINES,
    level=st.sampled_from([2, 3]),
)
def test_a_very_long_body_without_newlines_round_trips(
    piece: str, repeat: int, newline: str, level: int
) -> None:
    """A body of up to megabytes on one line (an import, a pasted log) parses and renders
    byte for byte, as a file and as a section made in code."""
    body = "text " + piece * repeat  # one line, so no heading at its start
    marks = "#" * level
    text = (
        f"# Knowledge{newline}{newline}{marks} big{newline}{body}{newline}{marks} after{newline}x"
    )
    doc = SectionDocument.parse(text, level=level)
    assert doc.render() == text
    assert doc.keys() == ["big", "after"]
    assert doc.sections[0].body == canonical_body(body)
    made = SectionDocument("", [Section("big", body, level=level)], level=level, newline=newline)
    assert SectionDocument.parse(made.render(), level=level).sections == made.sections
    assert SectionDocument.parse(body, level=level).render() == body  # no heading at all


def test_a_document_of_many_sections_renders_each_edit_in_place() -> None:
    """50,000 sections (a hand-made file far over every cap): an edit in the middle and
    an append change only those sections; everything else keeps its bytes."""
    text = "# K\n\n" + "".join(f"### obs_{n}\n<!-- n: {n} -->\nbody {n}\n\n" for n in range(50_000))
    doc = SectionDocument.parse(text, level=3)
    doc.sections[25_000].body = "edited"
    doc.append(Section("new", "added", level=3))
    rendered = doc.render()
    middle = "### obs_25000\n<!-- n: 25000 -->\nedited\n"
    assert rendered == (
        text.replace("### obs_25000\n<!-- n: 25000 -->\nbody 25000\n", middle) + "### new\nadded\n"
    )


# -- adopting a render -----------------------------------------------------------------


def _parsed_state(doc: SectionDocument) -> tuple[object, ...]:
    """Everything a parse decides: what later renders, spans and edits depend on."""
    return (
        doc.preamble,
        doc.newline,
        [(s.key, s.meta, s.body, s.raw, s.changed, s._heading) for s in doc.sections],
    )


_EDITS = st.lists(
    st.tuples(
        st.sampled_from(["body", "meta", "append", "insert", "remove", "rename"]),
        st.integers(0, 20),
        KEYS,
        MARKDOWNISH,
        METAS,
    ),
    max_size=4,
)


def _edit(doc: SectionDocument, edits: list[tuple[str, int, str, str, dict[str, str]]]) -> None:
    for what, where, key, body, meta in edits:
        at = where % len(doc.sections) if doc.sections else 0
        if what == "append" or not doc.sections:
            doc.append(doc.new_section(key, body, meta))
        elif what == "insert":
            doc.insert(at, doc.new_section(key, body, meta))
        elif what == "remove":
            doc.sections.pop(at)
        elif what == "body":
            doc.sections[at].body = body
        elif what == "meta":
            doc.sections[at].meta = dict(meta)
        else:
            doc.sections[at].key = key


@settings(max_examples=400)
@given(text=st.one_of(HAND_EDITED, MARKDOWNISH), edits=_EDITS, level=st.sampled_from([2, 3]))
def test_an_edited_document_adopts_its_render_as_a_parse_would_read_it(
    text: str, edits: list[tuple[str, int, str, str, dict[str, str]]], level: int
) -> None:
    """After ``adopt(render)`` the document is what parsing the render gives, field for
    field and byte for byte, or adopt says no (and a parse is used instead)."""
    doc = SectionDocument.parse(text, level=level)
    _edit(doc, edits)
    rendered = doc.render()
    parsed = SectionDocument.parse(rendered, level=level)
    kept = list(doc.sections)
    if doc.adopt(rendered):
        assert _parsed_state(doc) == _parsed_state(parsed)
        assert all(a is b for a, b in zip(doc.sections, kept, strict=True))  # identity kept
        assert doc.render() == rendered
    else:  # only where the render does not read back as these sections
        assert [(s.key, s.meta, s.body) for s in parsed.sections] != [
            (s.key, s.meta, s.body) for s in kept
        ]


@settings(max_examples=300)
@given(text=st.one_of(HAND_EDITED, MARKDOWNISH), edits=_EDITS)
def test_a_sub_document_adopts_its_render_made_canonical_as_a_body(
    text: str, edits: list[tuple[str, int, str, str, dict[str, str]]]
) -> None:
    """The observations of knowledge.md are a level-3 document inside one body: it
    adopts the body it became (blank lines at its ends dropped) as a parse would."""
    doc = SectionDocument.parse(sanitize_body(text), level=3)
    _edit(doc, edits)
    holder = Section("_observations", doc.render())
    parsed = SectionDocument.parse(holder.body, level=3)
    if doc.adopt(holder.body):
        assert _parsed_state(doc) == _parsed_state(parsed)
    else:
        assert [(s.key, s.meta, s.body) for s in parsed.sections] != [
            (s.key, s.meta, s.body) for s in doc.sections
        ]


def test_adopting_a_render_that_reads_back_otherwise_says_no() -> None:
    """A fence left open in the last section swallows a section added after it: the
    render parses as fewer sections, and adopt refuses it."""
    doc = SectionDocument.parse("## a\n```\ncode\n")
    doc.append(doc.new_section("b", "hello"))
    assert not doc.adopt(doc.render())


def test_a_section_knows_it_changed_however_its_metadata_was_edited() -> None:
    """Every way of editing metadata, and the key or the body, marks a parsed section
    changed (so it renders fresh); putting a value back as it was does not."""
    edits = [
        lambda s: s.meta.__setitem__("k", "w"),
        lambda s: s.meta.__delitem__("k"),
        lambda s: s.meta.update(x="1"),
        lambda s: s.meta.pop("k"),
        lambda s: s.meta.popitem(),
        lambda s: s.meta.clear(),
        lambda s: s.meta.setdefault("x", "1"),
        lambda s: s.meta.__ior__({"x": "1"}),
        lambda s: setattr(s, "meta", {"k": "w"}),
        lambda s: setattr(s, "key", "other"),
        lambda s: setattr(s, "body", "new text"),
    ]
    for edit in edits:
        section = SectionDocument.parse("## a\n<!-- k: v -->\ntext\n").sections[0]
        assert not section.changed
        edit(section)
        assert section.changed
    section = SectionDocument.parse("## a\n<!-- k: v -->\ntext\n").sections[0]
    section.meta["k"] = "w"
    section.meta["k"] = "v"
    section.body = "text"
    assert not section.changed and section.render() == "## a\n<!-- k: v -->\ntext\n"
