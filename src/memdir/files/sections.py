"""Section files: markdown split at ``## key`` headings, each section with an
optional metadata comment and a body.

    # Knowledge                                              <- preamble, verbatim

    ## conventions                                           <- heading: the key
    <!-- managed: agent; updated: 2026-11-30T10:00:00Z -->   <- metadata
    Use snake_case for file names.                           <- body

Invariants:
- Lossless: ``SectionDocument.parse(text).render() == text`` for every text.
- A section whose key, metadata and body still equal what was parsed renders
  its original bytes; a changed or new section renders fresh in the file's
  newline style, and only the blank line at its edges is touched.
- Headings inside fenced code blocks are body text.
- ``level`` is the heading depth that splits sections: 2 for a file, 3 for the
  observations nested in ``## _observations``.
- Bodies are held canonical and safe: ``\\n`` newlines, no leading or
  trailing blank lines, no heading that would split the file (``## x`` in a
  level-2 body becomes ``### x``), no code fence left open.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

_FENCE_OPEN_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FENCE_CLOSE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")
_META_RE = re.compile(r"<!--(.*)-->[ \t]*")
_META_ITEM_RE = re.compile(r"([A-Za-z_][\w.-]*)[ \t]*:[ \t]*(.*)", re.DOTALL)
META_KEY_RE = re.compile(r"[A-Za-z_][\w.-]*")
# Patterns here must not backtrack over a long run (of \r, spaces ...) once per
# position in it: a file on disk may be megabytes with no newline (bench/big_files.py).
_CRLF_RE = re.compile(r"(?<!\r)\r+\n")  # tried once per run of \r, not at each
_THINK_RE = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)


def _heading_re(level: int) -> re.Pattern[str]:
    # The key ends at its last character that is not a space or tab (a lazy ``.*?``
    # would try ``[ \t]*$`` at every position: quadratic in a line of spaces).
    return re.compile(rf"^#{{{level}}}[ \t]+(\S(?:.*[^ \t\n])?)[ \t]*$")


_HEADING_RES = {level: _heading_re(level) for level in range(1, 7)}
# Headings that would split a body at ``level`` (2 up to ``level`` hashes, as the
# parser reads them), to demote one below it. ``# Title`` never splits a section.
_DEMOTE_RES = {
    level: re.compile(rf"^#{{{min(2, level)},{level}}}(?=[ \t]+\S)", re.MULTILINE)
    for level in range(1, 7)
}
# The same, found in a whole text at once: after a newline (a pattern that starts with
# a literal is searched for fast; ``^`` in MULTILINE mode is tried at every position,
# ten times slower on a long file), or at its very start. ``\S`` never matches ``\r``.
_DEMOTE_AFTER_NL_RES = {
    level: re.compile(rf"\n#{{{min(2, level)},{level}}}(?=[ \t]+\S)") for level in range(1, 7)
}
_DEMOTE_AT_START_RES = {
    level: re.compile(rf"#{{{min(2, level)},{level}}}(?=[ \t]+\S)") for level in range(1, 7)
}
_HEADING_AFTER_NL_RES = {level: re.compile(rf"\n#{{{level}}}[ \t]+\S") for level in range(1, 7)}
_HEADING_AT_START_RES = {level: re.compile(rf"#{{{level}}}[ \t]+\S") for level in range(1, 7)}


def split_lines(text: str) -> list[str]:
    """Split on ``\\n`` only (not on the other breaks str.splitlines knows), keeping ends."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def line_content(line: str) -> str:
    """A line without its ``\\n`` or ``\\r\\n`` ending."""
    if line.endswith("\n"):
        line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
    return line


def detect_newline(text: str) -> str:
    """The newline a file mostly uses; ``\\n`` when it has none."""
    if "\r" not in text:
        return "\n"
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    return "\r\n" if crlf > lf else "\n"


def canonical_body(text: str) -> str:
    """``\\n`` newlines, no blank lines at either end (a final ``\\r`` is a newline too)."""
    if "\r" in text:
        return _CRLF_RE.sub("\n", text).lstrip("\n").rstrip("\r\n")
    return text.strip("\n")


class FenceTracker:
    """Feeds lines in order; says whether each is inside (or delimits) a code fence."""

    def __init__(self) -> None:
        self.marker: str | None = None

    def in_fence(self, content: str) -> bool:
        if self.marker is None:
            match = _FENCE_OPEN_RE.match(content)
            if match:
                self.marker = match.group(1)
                return True
            return False
        match = _FENCE_CLOSE_RE.match(content)
        if match:
            run = match.group(1)
            if run[0] == self.marker[0] and len(run) >= len(self.marker):
                self.marker = None
        return True


def parse_meta(content: str) -> dict[str, str] | None:
    """``<!-- a: 1; b: two -->`` -> ``{"a": "1", "b": "two"}``; None if not a metadata comment."""
    match = _META_RE.fullmatch(content)
    if not match:
        return None
    inner = match.group(1).strip()
    if "-->" in inner or "<!--" in inner or "\r" in inner:
        return None
    meta: dict[str, str] = {}
    for item in inner.split(";"):
        item = item.strip()
        if not item:
            continue
        pair = _META_ITEM_RE.fullmatch(item)
        if not pair:
            return None
        meta[pair.group(1)] = pair.group(2).strip()
    return meta


def section_body_start(raw: str) -> tuple[int, dict[str, str]]:
    """Where a section's body starts in its text (``raw``, from its heading line on):
    after the heading line, then after a metadata comment if one follows the blank
    lines after it; and that comment's fields ({} without one)."""
    end = raw.find("\n")
    position = len(raw) if end < 0 else end + 1
    body_start = position
    while position < len(raw):
        end = raw.find("\n", position)
        line_end = len(raw) if end < 0 else end + 1
        content = line_content(raw[position:line_end])
        if content == "":
            position = line_end
            continue
        parsed = parse_meta(content)
        if parsed is not None:
            return line_end, parsed
        break
    return body_start, {}


def render_meta(meta: Mapping[str, str]) -> str:
    """The one-line metadata comment for ``meta``; raises ValueError on a value it cannot hold."""
    items = []
    for key, value in meta.items():
        if not META_KEY_RE.fullmatch(key):
            raise ValueError(f"metadata key {key!r} must match {META_KEY_RE.pattern}")
        if any(bad in value for bad in (";", "\n", "\r", "-->", "<!--")) or value != value.strip():
            raise ValueError(
                f"metadata value {value!r} for {key!r} must be one trimmed line "
                "without ';' or '-->'"
            )
        items.append(f"{key}: {value}")
    return "<!-- " + "; ".join(items) + " -->"


def strip_think(text: str) -> str:
    """Remove leaked ``<think>...</think>`` blocks (an unclosed one runs to the end)."""
    return _THINK_RE.sub("", text)


def sanitize_body(text: str, level: int = 2) -> str:
    """Text made safe as a section body at ``level``.

    Headings that would split it (``##`` up to ``level`` hashes) are demoted one
    below it (``## x`` becomes ``### x`` in a level-2 body), so a body never
    opens a sibling section; a code fence left open is closed, so it cannot
    swallow the sections after it. A parsed body is already in this form.
    """
    text = canonical_body(text)
    if "#" not in text and "`" not in text and "~" not in text:
        return text  # nothing that could split or fence
    demote = _DEMOTE_RES[level]
    deeper = "#" * (level + 1)
    if "```" not in text and "~~~" not in text:  # no fences: one pass over the whole text
        text = _DEMOTE_AFTER_NL_RES[level].sub("\n" + deeper, text)
        first = _DEMOTE_AT_START_RES[level].match(text)
        return deeper + text[first.end() :] if first else text
    fence = FenceTracker()
    out = []
    for line in split_lines(text):
        content = line_content(line)
        if not fence.in_fence(content):
            line = demote.sub(deeper, line)
        out.append(line)
    body = "".join(out)
    if fence.marker is not None:
        body = body.rstrip("\n") + "\n" + fence.marker
    return canonical_body(body)


class _Meta(dict[str, str]):
    """A section's metadata: a dict that tells its section when it changes, so a
    section nothing touched knows it is unchanged without comparing (``changed``)."""

    __slots__ = ("_owner",)

    def __init__(self, items: Mapping[str, str], owner: Section) -> None:
        super().__init__(items)
        self._owner = owner

    def __setitem__(self, key: str, value: str) -> None:
        self._owner._clean = False
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._owner._clean = False
        super().__delitem__(key)

    def __ior__(self, other: Any) -> _Meta:  # type: ignore[override,misc]
        self._owner._clean = False
        super().update(other)
        return self

    def clear(self) -> None:
        self._owner._clean = False
        super().clear()

    def pop(self, *args: Any) -> Any:
        self._owner._clean = False
        return super().pop(*args)

    def popitem(self) -> tuple[str, str]:
        self._owner._clean = False
        return super().popitem()

    def setdefault(self, key: str, default: Any = None) -> Any:
        self._owner._clean = False
        return super().setdefault(key, default)

    def update(self, *args: Any, **kwargs: str) -> None:
        self._owner._clean = False
        super().update(*args, **kwargs)


class Section:
    """One ``## key`` section: key, metadata and a canonical body."""

    __slots__ = ("key", "_meta", "_body", "level", "_raw", "_orig", "_heading", "_clean")

    def __init__(
        self, key: str, body: str = "", meta: Mapping[str, str] | None = None, *, level: int = 2
    ) -> None:
        self.key = key
        self._meta = _Meta(meta or {}, self)
        self.level = level
        self._body = sanitize_body(body, level)
        self._raw: str | None = None
        self._orig: tuple[str, dict[str, str], str] | None = None
        self._heading: str | None = None
        self._clean = False
        """nothing was set since ``_orig`` was taken (a hint: False says "compare")"""

    @property
    def meta(self) -> dict[str, str]:
        return self._meta

    @meta.setter
    def meta(self, value: Mapping[str, str]) -> None:
        self._meta = _Meta(value, self)
        self._clean = False

    @property
    def body(self) -> str:
        return self._body

    @body.setter
    def body(self, value: str) -> None:
        self._body = sanitize_body(value, self.level)
        self._clean = False

    @property
    def raw(self) -> str | None:
        """The section's text exactly as parsed (None for a section made in code)."""
        return self._raw

    @property
    def changed(self) -> bool:
        """True for a new section, or one edited since it was parsed."""
        orig = self._orig
        if orig is None:
            return True
        if self._clean and self.key is orig[0]:
            return False
        return orig != (self.key, self._meta, self._body)

    @classmethod
    def _from_text(cls, raw: str, level: int, *, fence_open: bool) -> Section:
        """A parsed section. Its body cannot hold a heading at ``level`` (that would have
        split it), so only a fence left open at the end of the file needs sanitising."""
        end = raw.find("\n")
        heading = line_content(raw[: len(raw) if end < 0 else end + 1])
        match = _HEADING_RES[level].match(heading)
        assert match is not None, "caller passes text starting with a heading"
        body_start, meta = section_body_start(raw)
        section = cls(match.group(1), "", meta, level=level)
        body = raw[body_start:]
        section._body = sanitize_body(body, level) if fence_open else canonical_body(body)
        section._raw = raw
        section._orig = (section.key, dict(section.meta), section._body)
        section._heading = heading
        section._clean = True
        return section

    def render(self, newline: str = "\n") -> str:
        if not self.changed and self._raw is not None:
            return self._raw
        heading = f"{'#' * self.level} {self.key}"
        match = _HEADING_RES[self.level].match(heading)
        if match is None or match.group(1) != self.key:
            raise ValueError(f"section key {self.key!r} must be one non-empty trimmed line")
        if self._orig is not None and self._orig[0] == self.key and self._heading:
            heading = self._heading
        parts = [heading]
        first_line = self._body.split("\n", 1)[0]
        if self.meta or parse_meta(first_line) is not None:
            parts.append(render_meta(self.meta))
        if self._body:
            parts.append(self._body.replace("\n", newline))
        return newline.join(parts) + newline

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Section):
            return NotImplemented
        return (self.key, self.meta, self._body, self.level) == (
            other.key,
            other.meta,
            other._body,
            other.level,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Section(key={self.key!r}, meta={self.meta!r}, body={self._body[:40]!r})"


def _heading_offsets(text: str, level: int) -> tuple[list[int], bool]:
    """Where each heading at ``level`` starts, and whether a fence is open at the end.

    Without fence markers one regex scan finds them; with fences, lines are
    walked so headings inside a fence are skipped.
    """
    if "```" not in text and "~~~" not in text:
        found = [0] if _HEADING_AT_START_RES[level].match(text) else []
        found += [match.start() + 1 for match in _HEADING_AFTER_NL_RES[level].finditer(text)]
        return found, False
    heading_re = _HEADING_RES[level]
    fence = FenceTracker()
    starts: list[int] = []
    offset = 0
    for line in split_lines(text):
        content = line_content(line)
        if not fence.in_fence(content) and heading_re.match(content):
            starts.append(offset)
        offset += len(line)
    return starts, fence.marker is not None


def _same_lines(old: str, new: str) -> bool:
    """``new`` is ``old``, or ``old`` (ending in a newline) with blank lines after it:
    a section of either text parses the same."""
    if new == old:
        return True
    return (
        old.endswith("\n")
        and new.startswith(old)
        and not new[len(old) :].replace("\r\n", "").strip("\n")
    )


def separate(text: str, newline: str) -> str:
    """Ensure ``text`` ends with a blank line, so a following heading stands apart."""
    return text + _separation([text], newline)


def _separation(parts: list[str], newline: str) -> str:
    """What ``separate`` adds to ``"".join(parts)``: reads only its last line, from the
    end of the parts, so rendering a long document stays linear in its length."""
    line: list[str] = []
    ends_newline: bool | None = None
    for piece in reversed(parts):
        if not piece:
            continue
        end = len(piece)
        if ends_newline is None:
            ends_newline = piece.endswith("\n")
            end -= ends_newline
        cut = piece.rfind("\n", 0, end)
        line.append(piece[cut + 1 : end])
        if cut >= 0:
            break
    if ends_newline is None:
        return ""  # nothing to stand apart from
    blank = all(not chunk.strip("\r") for chunk in line)  # the last line holds only \r
    if ends_newline:
        return "" if blank else newline
    return newline if blank else newline + newline


class SectionDocument:
    """A preamble (text before the first heading) and an ordered list of sections."""

    def __init__(
        self,
        preamble: str = "",
        sections: list[Section] | None = None,
        *,
        level: int = 2,
        newline: str = "\n",
    ) -> None:
        self.preamble = preamble
        self.sections: list[Section] = list(sections or [])
        self.level = level
        self.newline = newline

    @classmethod
    def parse(cls, text: str, *, level: int = 2) -> SectionDocument:
        starts, fence_open = _heading_offsets(text, level)
        newline = detect_newline(text)
        if not starts:
            return cls(text, [], level=level, newline=newline)
        bounds = zip(starts, [*starts[1:], len(text)], strict=True)
        last = len(starts) - 1
        sections = [
            Section._from_text(text[a:b], level, fence_open=fence_open and n == last)
            for n, (a, b) in enumerate(bounds)
        ]
        return cls(text[: starts[0]], sections, level=level, newline=newline)

    def render(self) -> str:
        parts = [self.preamble]  # joined once at the end: linear in the document's length
        previous_changed = False
        for section in self.sections:
            if section.level != self.level:
                raise ValueError(
                    f"section {section.key!r} is level {section.level}, not {self.level}"
                )
            changed = section.changed
            if changed or previous_changed:
                parts.append(_separation(parts, self.newline))
            raw = section._raw
            parts.append(raw if raw is not None and not changed else section.render(self.newline))
            previous_changed = changed
        return "".join(parts)

    def adopt(self, text: str) -> bool:
        """Become ``SectionDocument.parse(text, level=self.level)``, where ``text`` is
        this document's render (or that render made canonical, as a body is), without
        parsing again what did not change: an edit need not re-read the file it wrote.

        Sections keep their identity. One unchanged since it was parsed whose bytes are
        the same (or gained only blank lines) takes its slice of ``text`` as it is; any
        other is parsed from its slice and checked. False when ``text`` does not split
        into these sections with these keys, metadata and bodies (a fence left open
        swallowed a heading, say): the document is then no parse of ``text``; parse
        ``text`` instead.
        """
        starts, fence_open = _heading_offsets(text, self.level)
        if len(starts) != len(self.sections):
            return False
        ends = [*starts[1:], len(text)] if starts else []
        for section, start, end in zip(self.sections, starts, ends, strict=True):
            old = section._raw
            if old is not None and end - start == len(old) and text.startswith(old, start):
                continue  # its bytes as parsed: so are its fields (parse(render(x)) == x)
            raw = text[start:end]
            unchanged = not section.changed
            if old is not None and unchanged and _same_lines(old, raw):
                section._raw = raw
                continue
            last = fence_open and end == len(text)  # a fence open at the end is closed
            fresh = Section._from_text(raw, self.level, fence_open=last)
            if fresh._orig != (section.key, section.meta, section._body):
                return False
            _, meta, body = fresh._orig
            section._raw, section._orig, section._heading = (
                raw,
                (section.key, meta, body),
                fresh._heading,
            )
            section._clean = True
        self.preamble = text[: starts[0]] if starts else text
        self.newline = detect_newline(text)
        return True

    def spans(self) -> list[tuple[Section, int, int]]:
        """Each section with its start and end offset in the text it was parsed from.

        Only an unchanged parsed document knows its offsets; raises ValueError otherwise.
        """
        offset = len(self.preamble)
        out = []
        for section in self.sections:
            if section.raw is None or section.changed:
                raise ValueError("offsets are known only for an unchanged, parsed document")
            out.append((section, offset, offset + len(section.raw)))
            offset += len(section.raw)
        return out

    def raws(self) -> list[str]:
        """Each section's text as parsed (``''`` for one made in code)."""
        return [section._raw or "" for section in self.sections]

    # -- lookup and edits ------------------------------------------------------

    def __iter__(self) -> Iterator[Section]:
        return iter(self.sections)

    def __len__(self) -> int:
        return len(self.sections)

    def keys(self) -> list[str]:
        return [section.key for section in self.sections]

    def index(self, key: str) -> int | None:
        for position, section in enumerate(self.sections):
            if section.key == key:
                return position
        return None

    def get(self, key: str) -> Section | None:
        position = self.index(key)
        return None if position is None else self.sections[position]

    def new_section(
        self, key: str, body: str = "", meta: Mapping[str, str] | None = None
    ) -> Section:
        return Section(key, body, meta, level=self.level)

    def append(self, section: Section) -> Section:
        self.sections.append(section)
        return section

    def insert(self, position: int, section: Section) -> Section:
        self.sections.insert(position, section)
        return section

    def remove(self, key: str) -> Section | None:
        position = self.index(key)
        return None if position is None else self.sections.pop(position)


@dataclass(frozen=True)
class Parsed:
    """A section file as an edit wrote it, already parsed (see ``SectionDocument.adopt``):
    ``doc`` is ``SectionDocument.parse(text)``, and each of ``nested`` the level-3 parse
    of one of its sections' bodies, by key (knowledge.md's observations)."""

    doc: SectionDocument
    nested: Mapping[str, SectionDocument] = field(default_factory=dict)
