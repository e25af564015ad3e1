"""From a memory file to searchable items, by the store that owns it.

Each item keeps where it came from (anchor, line range) so a hit can be opened
with ``Memory.get``, and what search needs: a heading, a body, metadata words,
tags and dates. Extraction is pure: text in, items out.

| store                                  | items                                        |
|----------------------------------------|----------------------------------------------|
| knowledge                              | curated sections; each observation           |
| notebook, state, workstate             | each entry                                   |
| journal, lessons, intel, archive       | each ``##`` section (and the text above)     |
| document (identity, HEARTBEAT, ...)    | the file, or its ``##`` sections if it has   |
| vault                                  | the card                                     |
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import PurePosixPath
from typing import Any

from memdir.errors import FileShapeError
from memdir.files.sections import Parsed, Section, SectionDocument, section_body_start
from memdir.stores.knowledge import OBSERVATIONS_KEY
from memdir.textutil import drop_comments
from memdir.timeutil import parse_ts

# Bump when extraction changes what it produces: an index built by another
# version is rebuilt from the files on open.
EXTRACT_VERSION = "5"  # 5: narrative items keyed by their windows (index.windows)

# Metadata that is bookkeeping, not words anyone searches for.
_SKIP_META = frozenset(
    {
        "updated", "date", "created", "archived", "last_accessed", "managed", "id",
        "relevance", "tier", "access_count", "from", "reason", "title", "tags", "merged",
        "by", "flagged",
    }
)  # fmt: skip
_DATE_IN_NAME_RE = re.compile(r"(\d{4}-\d{2}-\d{2})")
_ID_LIKE_RE = re.compile(r"(obs|act|sess)_[\w-]+")

# Kinds whose items never decay (the vault seed's ``core``): who I am, what I curated,
# what I am doing now.
CORE_KINDS = frozenset({"section", "notebook", "document", "lesson", "workstate"})
_SECTION_KINDS = {
    "notebook": "notebook",
    "state": "state",
    "workstate": "workstate",
    "journal": "journal",
    "lessons": "lesson",
    "intel": "intel",
    "archive": "archive",
}

ITEM_KINDS = frozenset({"section", "observation", "document", "card", *_SECTION_KINDS.values()})
"""every kind an item can have (a search's ``kinds`` are checked against them)"""


@dataclass(frozen=True)
class Item:
    anchor: str
    ordinal: int
    kind: str
    title: str
    heading: str
    """the title's searchable words ('' when the title is only an id)"""
    body: str
    line_start: int
    line_end: int
    meta: str = ""
    tags: tuple[str, ...] = ()
    date: datetime | None = None
    last_accessed: datetime | None = None
    tier: str | None = None
    relevance: float | None = None

    @property
    def embed_text(self) -> str:
        """What the embedder sees: heading, metadata words and body."""
        parts = [part for part in (self.heading, self.meta, self.body) if part]
        return "\n".join(parts)

    @property
    def vector_key(self) -> str:
        """Names the embedded text: equal texts share one vector."""
        return hashlib.sha1(self.embed_text.encode("utf-8", "surrogatepass")).hexdigest()

    @property
    def content_hash(self) -> str:
        """Changes when anything indexed about the item changes (not its line numbers)."""
        fields = (
            self.kind,
            self.title,
            self.heading,
            self.body,
            self.meta,
            ",".join(self.tags),
            _iso(self.date),
        )  # fmt: skip  (tier, relevance, last access: updated in place, see Index._placement)
        return hashlib.sha1("\x1f".join(fields).encode("utf-8", "surrogatepass")).hexdigest()


def _iso(moment: datetime | None) -> str:
    return "" if moment is None else moment.isoformat()


class _Lines:
    """Offset -> 1-based line number in a text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.breaks = [match.start() for match in re.finditer("\n", text)]

    def of(self, offset: int) -> int:
        return bisect.bisect_left(self.breaks, offset) + 1

    def span(self, start: int, end: int) -> tuple[int, int]:
        """First and last line of ``text[start:end]`` that hold more than blanks."""
        chunk = self.text[start:end]
        last = start + len(chunk.rstrip())
        return self.of(start), self.of(max(last - 1, start))


def extract(store: str, relpath: str, text: str, parsed: Parsed | None = None) -> list[Item]:
    """The searchable items of one file owned by ``store`` (``parsed``: its parse, if
    the caller has one; see ``units``)."""
    found = units(store, text, parsed)
    if found is not None:
        kind = _SECTION_KINDS.get(store, "")
        return [
            item
            for unit, anchor in anchored(found)
            for item in unit_items(unit, anchor, kind, relpath)
        ]
    if store == "lessons":
        return _lessons(relpath, text)
    if store == "document":
        return _document(relpath, text)
    if store == "vault":
        return _card(relpath, text)
    return []


def _meta_words(meta: dict[str, Any]) -> str:
    words = []
    for key, value in meta.items():
        if key in _SKIP_META or value is None or isinstance(value, (dict, list, bool)):
            continue
        words.append(str(value))
    return " ".join(words)


def _tags(raw: object) -> tuple[str, ...]:
    if isinstance(raw, str):
        items: list[object] = list(raw.split(","))
    elif isinstance(raw, list):
        items = list(raw)
    else:
        return ()
    return tuple(str(tag).strip() for tag in items if str(tag).strip())


def _date(raw: object) -> datetime | None:
    if isinstance(raw, datetime):
        return parse_ts(raw.isoformat())
    if isinstance(raw, date):
        return parse_ts(raw.isoformat())
    return parse_ts(raw) if isinstance(raw, str) else None


def _heading(key: str) -> str:
    return "" if _ID_LIKE_RE.fullmatch(key) else key


class _Anchors:
    """Anchors unique within a file: a repeated key gets `` (2)``, `` (3)`` ..."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def __call__(self, key: str) -> str:
        count = self.seen.get(key, 0) + 1
        self.seen[key] = count
        return key if count == 1 else f"{key} ({count})"


def _section_item(
    section: Section,
    kind: str,
    ordinal: int,
    lines: tuple[int, int],
    anchor: str,
    default_date: datetime | None = None,
) -> Item:
    meta = section.meta
    return Item(
        anchor=anchor,
        ordinal=ordinal,
        kind=kind,
        title=section.key,
        heading=_heading(section.key),
        body=section.body,
        line_start=lines[0],
        line_end=lines[1],
        meta=_meta_words(dict(meta)),
        tags=_tags(meta.get("tags", "")),
        date=_date(meta.get("date")) or _date(meta.get("updated")) or default_date,
    )


# -- units ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Unit:
    """A piece of a section file whose items depend on nothing else in it: the text
    above the first section, a section, or one observation in ``## _observations``.

    Its items follow from ``raw`` (its text), the anchor it takes and where it sits:
    ``line`` (of its first line) and ``base`` (its items' ordinals are ``base`` plus
    0, or ``base * 10000`` plus each bullet's number). So an index that wrote a unit
    before, and finds the same ``raw`` elsewhere in the file, only moves its rows.
    """

    raw: str
    kind: str
    """'preamble', 'section', 'curated' (knowledge.md) or 'observation'"""
    key: str | None
    """the key it takes an anchor for (None: the preamble, anchored '')"""
    line: int
    base: int
    section: Section | None = None


@dataclass(frozen=True, slots=True)
class Segment:
    """Units one after another with nothing between them: the text above the first
    section, a run of sections, or the observations of one ``## _observations``.

    Unit ``n`` is ``raws[n]`` (``sections[n]`` parsed); its base is ``base + n`` and its
    first line ``line`` plus the lines of the units before it."""

    kind: str
    line: int
    base: int
    raws: list[str]
    sections: list[Section | None]

    def lines(self) -> list[int]:
        """The first line of each unit."""
        if not self.raws:
            return []
        return list(
            itertools.accumulate((raw.count("\n") for raw in self.raws[:-1]), initial=self.line)
        )

    def unit(self, n: int, line: int) -> Unit:
        section = self.sections[n]
        key = None if section is None else section.key
        return Unit(self.raws[n], self.kind, key, line, self.base + n, section)

    def units(self) -> Iterator[Unit]:
        for n, line in enumerate(self.lines()):
            yield self.unit(n, line)


_UNIT_STORES = frozenset({"knowledge", *_SECTION_KINDS} - {"lessons"})  # lessons: per bullet


def segments(store: str, text: str, parsed: Parsed | None = None) -> list[Segment] | None:
    """``text`` as segments of units, in file order (None for a store whose items are
    not made one section at a time: lessons, documents, cards). ``parsed`` is ``text``
    parsed (a writer's ``Parsed``), so it is not parsed again."""
    if store not in _UNIT_STORES:
        return None
    doc = parsed.doc if parsed is not None else SectionDocument.parse(text)
    nested = parsed.nested if parsed is not None else {}
    return _doc_segments(doc, store == "knowledge", nested)


def units(store: str, text: str, parsed: Parsed | None = None) -> list[Unit] | None:
    """``segments``' units, one after another."""
    found = segments(store, text, parsed)
    return None if found is None else [unit for seg in found for unit in seg.units()]


def _doc_segments(
    doc: SectionDocument,
    knowledge: bool,
    nested: Mapping[str, SectionDocument],
    line: int = 1,
    first: int = 1,
) -> list[Segment]:
    found: list[Segment] = []
    if not knowledge and first == 1:
        found.append(Segment("preamble", line, 0, [doc.preamble], [None]))
    line += doc.preamble.count("\n")
    kind = "curated" if knowledge else "section"
    run: list[Section] = []
    start = (line, first)
    for ordinal, section in enumerate(doc.sections, start=first):
        raw = section.raw
        if raw is None:
            raise ValueError("units are known only for a parsed document")
        if not knowledge or section.key != OBSERVATIONS_KEY:
            if not run:
                start = (line, ordinal)
            run.append(section)
        else:
            if run:
                found.append(_run(kind, start, run))
                run = []
            sub = nested.get(section.key) if doc.get(section.key) is section else None
            found.append(_observations(section, raw, sub, line, ordinal))
        line += raw.count("\n")
    if run:
        found.append(_run(kind, start, run))
    return found


def _run(kind: str, start: tuple[int, int], run: list[Section]) -> Segment:
    return Segment(kind, start[0], start[1], [s.raw or "" for s in run], list(run))


def tail_units(tail: str, line: int, ordinal: int) -> list[Unit]:
    """The units of the end of a section file, from the start of one of its sections
    (at ``line``, its ``ordinal``-th) on: what an append to the file needs parsed."""
    doc = SectionDocument.parse(tail)
    if doc.preamble:
        raise ValueError("the tail of a section file starts at a heading")
    return [unit for seg in _doc_segments(doc, False, {}, line, ordinal) for unit in seg.units()]


def item_kind(store: str) -> str:
    """The kind of the items a section-file store's units make ('' for knowledge.md)."""
    return _SECTION_KINDS.get(store, "")


def _observations(
    holder: Section, raw: str, sub: SectionDocument | None, line: int, ordinal: int
) -> Segment:
    """The observations under ``holder``: from ``sub``, its body as a writer parsed it,
    if ``raw`` holds that body as it is (not where the body differs from the text, as
    with CRLF newlines or a fence left open at the end), or else from ``raw``."""
    at = _body_at(raw) if sub is not None else -1
    if sub is not None and raw.startswith(holder.body, at):
        line += raw.count("\n", 0, at)
    else:
        sub = SectionDocument.parse(raw, level=3)  # the heading is the preamble
    line += sub.preamble.count("\n")
    return Segment("observation", line, ordinal * 10_000 + 1, sub.raws(), list(sub.sections))


def _body_at(raw: str) -> int:
    """Where a section's body starts in its text, as ``Section`` reads it: after the
    heading, blank lines and a metadata comment, and the blank lines after those."""
    body_start, _ = section_body_start(raw)
    while raw.startswith("\n", body_start):
        body_start += 1
    return body_start


def anchored(found: list[Unit]) -> Iterator[tuple[Unit, str]]:
    """Each unit with its anchor, unique within the file: a repeated key gets `` (2)`` ..."""
    counts: dict[str, int] = {}
    for unit in found:
        yield unit, anchor_for(unit, counts)


def takes_anchor(unit: Unit) -> bool:
    """Whether the unit counts among its key's anchors (an empty observation does not)."""
    if unit.key is None:
        return False
    return unit.kind != "observation" or unit.section is None or bool(unit.section.body.strip())


def anchor_for(unit: Unit, counts: dict[str, int]) -> str:
    """The anchor ``unit`` takes after the units whose keys ``counts`` holds (and count
    it): its key, or ``key (n)`` for the n-th unit with that key."""
    if unit.key is None or not takes_anchor(unit):
        return ""
    count = counts.get(unit.key, 0) + 1
    counts[unit.key] = count
    return unit.key if count == 1 else f"{unit.key} ({count})"


def unit_items(unit: Unit, anchor: str, kind: str, relpath: str) -> list[Item]:
    """The items of one unit; ``kind`` names a section file's items ('journal', ...)."""
    lines = _Lines(unit.raw)
    shift = unit.line - 1
    section = unit.section
    if unit.kind == "preamble":
        title = _title(unit.raw, relpath)
        item = _preamble_item(unit.raw, lines, kind, title)
        return [] if item is None else [_moved(item, shift, 0, date=_file_date(relpath))]
    assert section is not None
    if unit.kind == "observation":
        if not section.body.strip():
            return []  # an empty one has nothing to find
        item = _section_item(section, "observation", 0, lines.span(0, len(unit.raw)), anchor)
        return [_moved(item, shift, unit.base)]
    if unit.kind == "section":
        if not section.body.strip():
            return []  # a heading with nothing under it has nothing to find
        span = lines.span(0, len(unit.raw))
        item = _section_item(section, kind, 0, span, anchor, _file_date(relpath))
        return [_moved(item, shift, unit.base)]
    whole = _section_item(section, "section", 0, lines.span(0, len(unit.raw)), anchor)
    pieces = _bullets(section, 0)
    if len(pieces) < 2:
        return [_moved(whole, shift, unit.base)]
    return [
        Item(
            whole.anchor,
            unit.base * 10_000 + number,
            whole.kind,
            whole.title,
            whole.heading,
            drop_comments(unit.raw[start:end]).strip(),
            lines.of(start) + shift,
            lines.span(start, end)[1] + shift,
            whole.meta,
            whole.tags,
            whole.date,
        )  # fmt: skip
        for number, (start, end) in enumerate(pieces, start=1)
    ]


def _moved(item: Item, lines: int, ordinal: int, **changes: Any) -> Item:
    return replace(
        item,
        ordinal=item.ordinal + ordinal,
        line_start=item.line_start + lines,
        line_end=item.line_end + lines,
        **changes,
    )


def _file_date(relpath: str) -> datetime | None:
    found = _DATE_IN_NAME_RE.search(PurePosixPath(relpath).name)
    return _date(found.group(1)) if found else None


def _preamble_item(preamble: str, lines: _Lines, kind: str, title: str) -> Item | None:
    text = preamble.strip()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("# ")).strip()
    if not body:
        return None
    return Item("", 0, kind, title, title, body, *lines.span(0, len(preamble)))


def _section_file(relpath: str, text: str, kind: str) -> list[Item]:
    found = units("journal", text)  # any section-file store: the units are the same
    assert found is not None
    return [
        item for unit, anchor in anchored(found) for item in unit_items(unit, anchor, kind, relpath)
    ]


def _lessons(relpath: str, text: str) -> list[Item]:
    """One item per lesson: each ``- `` entry of a category section."""
    doc = SectionDocument.parse(text)
    lines = _Lines(text)
    items: list[Item] = []
    for ordinal, (section, start, _end) in enumerate(doc.spans(), start=1):
        raw_lines = (section.raw or "").splitlines(keepends=True)
        cursor = start + (len(raw_lines[0]) if raw_lines else 0)
        starts: list[int] = []
        for line in raw_lines[1:]:
            if line.startswith("- "):
                starts.append(cursor)
            cursor += len(line)
        ends = [*starts[1:], cursor] if starts else []  # a category with no lesson yet
        bounds = zip(starts, ends, strict=True)
        for number, (piece_start, piece_end) in enumerate(bounds, start=1):
            first, last = lines.span(piece_start, piece_end)
            items.append(
                Item(
                    anchor=f"{section.key} #{number}",
                    ordinal=ordinal * 10_000 + number,
                    kind="lesson",
                    title=section.key,
                    heading=section.key,
                    body=text[piece_start:piece_end].strip(),
                    line_start=first,
                    line_end=last,
                )
            )
    return items


def _bullets(section: Section, start: int) -> list[tuple[int, int]]:
    """A curated section as pieces: what comes before its first top-level ``- ``
    bullet, then each bullet with its continuation lines (offsets in the file). One
    fact per item, so a promoted fact is found on its own, not diluted by its section."""
    raw_lines = (section.raw or "").splitlines(keepends=True)
    if not raw_lines:
        return []
    cursor = start + len(raw_lines[0])  # past the heading
    starts: list[int] = []
    body_start = cursor
    fence = False
    for line in raw_lines[1:]:
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if line.startswith("- ") and not fence:
            starts.append(cursor)
        cursor += len(line)
    if len(starts) < 2:
        return []
    pieces = list(zip(starts, [*starts[1:], cursor], strict=True))
    head = section.raw[len(raw_lines[0]) : starts[0] - start] if section.raw else ""
    if drop_comments(head).strip():
        pieces.insert(0, (body_start, starts[0]))
    return pieces


def _title(preamble: str, relpath: str) -> str:
    for line in preamble.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return PurePosixPath(relpath).stem


def _document(relpath: str, text: str) -> list[Item]:
    doc = SectionDocument.parse(text)
    title = _title(doc.preamble, relpath)
    if not doc.sections:
        body = text.strip()
        if not body:
            return []
        lines = _Lines(text)
        return [Item("", 0, "document", title, title, body, *lines.span(0, len(text)))]
    items = _section_file(relpath, text, "document")
    return [
        replace(item, heading=f"{title}: {item.heading}" if item.anchor else title)
        for item in items
    ]


def _card(relpath: str, text: str) -> list[Item]:
    from memdir.files.cards import Card  # YAML frontmatter: only a vault has cards

    if "MOC" in PurePosixPath(relpath).parts:
        return []  # Maps of Content are generated indexes of the cards, not cards
    try:
        card = Card.parse(text)
    except FileShapeError:
        card = Card(body=text)
    meta = card.meta
    title = str(meta.get("title") or "")
    if not title:
        for line in card.body.splitlines():
            if line.startswith("# "):
                title = line[2:].strip()
                break
    title = title or PurePosixPath(relpath).stem
    raw_relevance = meta.get("relevance")
    relevance = float(raw_relevance) if isinstance(raw_relevance, (int, float)) else None
    tier = meta.get("tier")
    lines = _Lines(text)
    return [
        Item(
            anchor="",
            ordinal=0,
            kind="card",
            title=title,
            heading=title,
            body=card.body.strip(),
            line_start=1,
            line_end=lines.of(max(len(text.rstrip()) - 1, 0)),
            meta=_meta_words(meta),
            tags=_tags(meta.get("tags")),
            date=_date(meta.get("updated")) or _date(meta.get("created")),
            last_accessed=_date(meta.get("last_accessed")),
            tier=str(tier) if isinstance(tier, str) else None,
            relevance=relevance,
        )
    ]
