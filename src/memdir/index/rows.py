"""Writing one file's items as rows of the index: by identity, with moves in bulk.

A row is kept while its item is (same anchor, same content hash); only where it
sits (ordinal, lines) and how it ages (tier, decay date, relevance) are updated in
place, so its FTS entry and its vector are never touched. Rows that moved by the
same distance move in one statement (``Rows.flush``): archiving the oldest of 500
observations is one delete, one insert and one UPDATE of the other 499.

A file made of units (``extract.units``: a section, an observation) also leaves a
``Layout`` in memory: each unit's text, anchor, first line and ordinal, and the ids
of its rows. The next write of the file pairs its units with the layout's by
(kind, text, anchor): a pair's rows only move, and just the units left over are
extracted and diffed row by row. A layout that a file merely grew past (an archive
appended to) is extended from its last unit; nothing before it is read again.
A layout is used only while the database agrees with it: the file's row still has
the hash it was made for (``write_file`` checks), and no other writer has added or
removed rows since (``Index`` checks the end of ``item_log``; any failed transaction
drops every layout). Otherwise the file's rows are read from the database.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from memdir.config import Layer
from memdir.files.encoding import clean
from memdir.files.sections import Parsed
from memdir.index import windows
from memdir.index.extract import (
    CORE_KINDS,
    Item,
    Segment,
    Unit,
    anchor_for,
    extract,
    item_kind,
    segments,
    tail_units,
    takes_anchor,
    unit_items,
)
from memdir.timeutil import format_ts

Placement = tuple[int, int, int, str, str | None, str | None, float | None]
"""ordinal, first line, last line, layer, tier, decay date, relevance"""
Row = tuple[int, str, str, int, int, int, tuple[str, str | None, str | None, float | None]]
"""a placed unit's row: id, anchor, content hash, ordinal and lines from the unit's, the rest"""
Existing = dict[tuple[str, str], list[tuple[int, Placement]]]
"""a file's rows not yet paired with an item: (anchor, content hash) -> (id, placement)"""

LAYOUT_MAX_CHARS = 8_000_000
"""a file larger than this keeps no layout (its text is held with it)"""

_MOVE = (
    "UPDATE places SET ordinal = ordinal + ?, line_start = line_start + ?, "
    "line_end = line_end + ? WHERE id IN ({})"
)
_RAW = operator.attrgetter("raw")
_CHUNK = 900  # ids per statement (SQLite builds allow 999 parameters at least)
_AGE = "UPDATE items SET layer = ?, tier = ?, decay_from = ?, relevance = ? WHERE id = ?"
_INSERT = (
    "INSERT INTO items (id, path, anchor, kind, agent, title, heading, body, meta, tags, "
    "date, content_hash, vector_key, layer, tier, decay_from, relevance) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_PLACE = "INSERT INTO places (id, ordinal, line_start, line_end) VALUES (?, ?, ?, ?)"


@dataclass(slots=True)
class PlacedUnit:
    """A unit as the index last wrote it. Rows are (id, anchor, content hash, ordinal
    less ``base * scale``, lines less ``line``, the placement's other fields)."""

    kind: str
    raw: str
    key: str | None
    anchor: str
    line: int
    base: int
    scale: int
    rows: list[Row]
    seg: int = 0
    """which segment of the file it is in (``extract.Segment``): runs stay inside one"""

    def placements(self) -> Iterable[tuple[int, str, str, Placement]]:
        offset = self.base * self.scale
        for item_id, anchor, content_hash, ordinal, first, last, rest in self.rows:
            placement = (offset + ordinal, self.line + first, self.line + last, *rest)
            yield item_id, anchor, content_hash, placement


@dataclass
class Layout:
    """What the index wrote for one file of units (see the module docstring)."""

    digest: str
    layer: str
    text: str
    hasher: hashlib._Hash
    units: list[PlacedUnit]
    counts: dict[str, int] = field(default_factory=dict)
    """how often each key occurs among the units (their anchors count them)"""
    unique: bool = False
    """every key occurs once: each unit's anchor is its key"""

    def appended(self, text: str) -> str | None:
        """What ``text`` adds to the end of this layout's text, if it only adds."""
        if len(text) <= len(self.text) or not text.startswith(self.text):
            return None
        return text[len(self.text) :]


def file_hash(text: str) -> hashlib._Hash:
    return hashlib.sha1(text.encode("utf-8", "surrogateescape"))


def placement(item: Item, layer_name: str, layer: Layer) -> Placement:
    """Where the item sits and how it ages: the fields that change without its text."""
    tier = item.tier
    if layer.store == "archive" or item.kind == "archive":
        tier = "archive"
    elif item.kind in CORE_KINDS or layer.decay == "none":
        tier = tier or "core"
    moment = (item.last_accessed or item.date) if layer.decay == "access" else item.date
    decay_from = format_ts(moment) if moment is not None else None
    return (
        item.ordinal, item.line_start, item.line_end, layer_name, tier, decay_from,
        item.relevance,
    )  # fmt: skip


class Rows:
    """The changes to one file's rows, gathered, then written at once (``flush``)."""

    def __init__(
        self, db: sqlite3.Connection, relpath: str, agent: str, layer_name: str, layer: Layer
    ) -> None:
        self.db = db
        self.relpath = relpath
        self.agent = agent
        self.layer_name = layer_name
        self.layer = layer
        self.moves: dict[tuple[int, int, int], list[int]] = {}
        self.deletes: list[int] = []
        self.inserts: list[tuple[object, ...]] = []
        self.places: list[tuple[int, int, int, int]] = []
        self._next_id: int | None = None

    def existing(self) -> Existing:
        """The file's rows in the database, to pair items with."""
        found: Existing = {}
        for item_id, anchor, content_hash, *rest in self.db.execute(
            "SELECT id, anchor, content_hash, ordinal, line_start, line_end, layer, tier, "
            "decay_from, relevance FROM items JOIN places USING (id) WHERE path = ?",
            (self.relpath,),
        ):
            found.setdefault((anchor, content_hash), []).append((item_id, tuple(rest)))
        return found

    def place(self, item: Item, existing: Existing) -> tuple[int, Placement]:
        """The row for ``item``: an existing one with its text (moved if need be), or new."""
        where = placement(item, self.layer_name, self.layer)
        matches = existing.get((item.anchor, item.content_hash))
        if matches:
            item_id, old = matches.pop()
            self.move(item_id, old, where)
            return item_id, where
        return self.insert(item, where), where

    def move(self, item_id: int, old: Placement, new: Placement) -> None:
        if old == new:
            return
        if old[3:] != new[3:]:
            self.db.execute(_AGE, (*new[3:], item_id))
        if old[:3] != new[:3]:
            distance = (new[0] - old[0], new[1] - old[1], new[2] - old[2])
            self.moves.setdefault(distance, []).append(item_id)

    def shift(self, ids: Iterable[int], ordinal: int, lines: int) -> None:
        self.moves.setdefault((ordinal, lines, lines), []).extend(ids)

    def insert(self, item: Item, where: Placement) -> int:
        if self._next_id is None:
            top = self.db.execute("SELECT max(id) FROM items").fetchone()[0]
            self._next_id = int(top or 0) + 1
        item_id = self._next_id
        self._next_id += 1
        self.inserts.append(
            (
                item_id,
                self.relpath,
                item.anchor,
                item.kind,
                self.agent,
                item.title,
                item.heading,
                item.body,
                item.meta,
                ",".join(item.tags),
                format_ts(item.date) if item.date else None,
                item.content_hash,
                item.vector_key,
                *where[3:],
            )
        )
        self.places.append((item_id, *where[:3]))
        return item_id

    def drop(self, existing: Existing) -> None:
        self.deletes.extend(item_id for rows in existing.values() for item_id, _ in rows)

    def flush(self) -> None:
        for chunk in _chunks(self.deletes):
            marks = ",".join("?" * len(chunk))
            self.db.execute(f"DELETE FROM items WHERE id IN ({marks})", chunk)
        for (ordinal, first, last), ids in self.moves.items():
            if ordinal or first or last:
                for chunk in _chunks(ids):
                    sql = _MOVE.format(",".join("?" * len(chunk)))
                    self.db.execute(sql, (ordinal, first, last, *chunk))
        if self.inserts:
            self.db.executemany(_INSERT, self.inserts)
            self.db.executemany(_INSERT_PLACE, self.places)


def _chunks(ids: list[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


def write_items(rows: Rows, items: list[Item]) -> None:
    """Bring the file's rows to ``items`` (a file not made of units, or no layout)."""
    existing = rows.existing()
    for item in items:
        rows.place(item, existing)
    rows.drop(existing)
    rows.flush()


@dataclass
class Placed:
    """A file's units as ``write_units`` left them, and how often each key occurs."""

    units: list[PlacedUnit]
    counts: dict[str, int]
    unique: bool


def write_units(rows: Rows, new: list[Segment], kind: str, layout: Layout | None = None) -> Placed:
    """Bring the file's rows to the units of ``new``.

    Without a layout the file's rows are read from the database and paired with the
    items of every unit. With one whose keys each occur once, a unit whose text the
    layout has (of the same kind) keeps its rows, moved if it moved; a run of such
    units that moved together moves in one statement, and costs no more than a look
    up per unit. Only the units left over are extracted, their items paired with the
    rows of the layout's units left over. A key that would then occur twice, or a
    layout without each key once, is done unit by unit (``_write_each``)."""
    if layout is None or not layout.unique:
        return _write_each(rows, new, kind, layout)
    old = layout.units
    where = dict(zip(map(_RAW, old), itertools.count()))
    if len(where) != len(old):
        return _write_each(rows, new, kind, layout)
    used = bytearray(len(old))
    steps: list[tuple[int, int, int, int, int]] = []  # segment, unit, old unit, count, line
    for number, seg in enumerate(new):
        match = list(map(where.get, seg.raws, itertools.repeat(-1, len(seg.raws))))
        line, j, count = seg.line, 0, len(match)
        while j < count:
            k = match[j]
            if k < 0 or used[k] or old[k].kind != seg.kind:
                steps.append((number, j, -1, 1, line))
                line += seg.raws[j].count("\n")
                j += 1
                continue
            end, group = j + 1, old[k].seg
            while end < count and match[end] == k + end - j:
                if used[k + end - j] or old[k + end - j].seg != group:
                    break
                end += 1
            size = end - j
            used[k : k + size] = b"\x01" * size
            steps.append((number, j, k, size, line))
            line += old[k + size - 1].line - old[k].line + seg.raws[end - 1].count("\n")
            j = end
    gone = list(_zeros(used))
    added = [new[number].unit(j, line) for number, j, k, _, line in steps if k < 0]
    counts = layout.counts
    freed = {old[n].key for n in gone if old[n].anchor}
    keys = [unit.key or "" for unit in added if takes_anchor(unit)]
    if len(set(keys)) != len(keys) or any(key in counts and key not in freed for key in keys):
        return _write_each(rows, new, kind, layout)  # a key twice: anchors renumber
    existing: Existing = {}
    for n in gone:
        for item_id, anchor, content_hash, spot in old[n].placements():
            existing.setdefault((anchor, content_hash), []).append((item_id, spot))
        if old[n].anchor:
            del counts[old[n].key or ""]
    fresh = iter(added)
    placed: list[PlacedUnit] = []
    for number, j, k, size, line in steps:
        if k < 0:
            unit = next(fresh)
            anchor = (unit.key or "") if takes_anchor(unit) else ""
            placed.append(_placed(rows, unit, anchor, kind, existing, number))
            continue
        span = old[k : k + size]
        _move(rows, span, line - old[k].line, new[number].base + j - old[k].base)
        if old[k].seg != number:
            for moved in span:
                moved.seg = number
        placed.extend(span)
    counts.update(dict.fromkeys(keys, 1))
    rows.drop(existing)
    rows.flush()
    return Placed(placed, counts, True)


def _zeros(flags: bytearray) -> Iterator[int]:
    """The positions of the zero bytes in ``flags``."""
    at = flags.find(0)
    while at >= 0:
        yield at
        at = flags.find(0, at + 1)


def _write_each(rows: Rows, new: list[Segment], kind: str, layout: Layout | None) -> Placed:
    """``write_units`` one unit at a time (a key used twice, or no layout)."""
    found = [unit for seg in new for unit in seg.units()]
    done = append_units(rows, found, kind, layout, 0)
    _number(done.units, new)
    return done


def _move(rows: Rows, span: list[PlacedUnit], lines: int, bases: int) -> None:
    """Units that moved together by ``lines`` lines and ``bases`` places."""
    if lines or bases:
        if span[0].kind != "curated":  # only a curated section's bullets are scaled
            rows.shift([row[0] for unit in span for row in unit.rows], bases, lines)
        else:
            for unit in span:
                rows.shift([row[0] for row in unit.rows], bases * unit.scale, lines)
        for unit in span:
            unit.line += lines
            unit.base += bases


def _number(done: list[PlacedUnit], new: list[Segment]) -> None:
    """Mark each placed unit with the number of its segment (runs stay inside one)."""
    n = 0
    for number, seg in enumerate(new):
        for unit in done[n : n + len(seg.raws)]:
            unit.seg = number
        n += len(seg.raws)


def append_units(
    rows: Rows, new: list[Unit], kind: str, layout: Layout | None, start: int
) -> Placed:
    """Bring the file's rows to its units: ``layout``'s first ``start`` units, untouched,
    then ``new`` (a section file that grew: its last section and what follows; or,
    from 0, any file), paired unit by unit; return them as placed and the key counts.
    Units after ``start`` are in the segment of the last one before it. Costs what
    ``new`` holds, not what the layout does (an archive grows all month)."""
    units: list[PlacedUnit] = []
    counts: dict[str, int] = {}
    pool: dict[tuple[str, str, str], PlacedUnit] = {}
    touched: set[str] = set()
    segment = 0
    if layout is not None:
        units, counts = layout.units, layout.counts  # the layout is this call's to change
        segment = units[start].seg if start else 0
        for old in units[start:]:
            if old.anchor:
                counts[old.key or ""] -= 1
                touched.add(old.key or "")
            pool[(old.kind, old.raw, old.anchor)] = old
        del units[start:]
    unique = layout is not None and layout.unique
    tail: list[PlacedUnit | None] = []
    left: list[tuple[int, Unit, str]] = []
    for unit in new:
        anchor = anchor_for(unit, counts)
        if anchor:
            touched.add(unit.key or "")
            unique = unique and anchor == unit.key
        paired = pool.pop((unit.kind, unit.raw, anchor), None)
        if paired is None:
            left.append((len(tail), unit, anchor))
            tail.append(None)
            continue
        _move(rows, [paired], unit.line - paired.line, unit.base - paired.base)
        tail.append(paired)
    if not start:  # the whole file: count afresh
        unique = all(count == 1 for count in counts.values() if count)
    if layout is None:
        existing = rows.existing()
    else:
        existing = {}
        for old in pool.values():
            for item_id, anchor, content_hash, spot in old.placements():
                existing.setdefault((anchor, content_hash), []).append((item_id, spot))
    for position, unit, anchor in left:
        tail[position] = _placed(rows, unit, anchor, kind, existing)
    rows.drop(existing)
    rows.flush()
    for grown in tail:
        assert grown is not None
        grown.seg = segment
        units.append(grown)
    for key in touched:
        if not counts.get(key):
            counts.pop(key, None)
    return Placed(units, counts, unique)


def _placed(
    rows: Rows, unit: Unit, anchor: str, kind: str, existing: Existing, seg: int = 0
) -> PlacedUnit:
    items = unit_items(unit, anchor, kind, rows.relpath)
    scale = 10_000 if items and items[0].ordinal != unit.base else 1
    offset = unit.base * scale
    kept: list[Row] = []
    for item in items:
        item_id, where = rows.place(item, existing)
        kept.append(
            (
                item_id,
                item.anchor,
                item.content_hash,
                where[0] - offset,
                where[1] - unit.line,
                where[2] - unit.line,
                where[3:],
            )  # fmt: skip
        )
    return PlacedUnit(unit.kind, unit.raw, unit.key, anchor, unit.line, unit.base, scale, kept, seg)


@dataclass(frozen=True)
class FileState:
    """A file as a write left it: what ``write_file`` brings its rows to."""

    relpath: str
    layer_name: str
    layer: Layer
    text: str
    mtime_ns: int
    size: int


def write_file(
    db: sqlite3.Connection,
    agent: str,
    state: FileState,
    parsed: Parsed | None,
    layout: Layout | None,
) -> tuple[str, Layout | None]:
    """Bring one file's rows and its ``files`` row to ``state`` (in the caller's
    transaction); return 'added', 'updated' or 'unchanged', and its layout after.

    ``layout`` is what this index last wrote for the file (the caller has checked that
    no other writer changed rows since); it is used only if the file's row still has
    the hash it was made for. ``parsed`` is the writer's parse of the text."""
    relpath, layer_name, layer, text = state.relpath, state.layer_name, state.layer, state.text
    added = layout.appended(text) if layout is not None else None
    if layout is not None and added is not None:
        hasher = layout.hasher.copy()
        hasher.update(added.encode("utf-8", "surrogateescape"))
    elif layout is not None and text == layout.text:
        hasher = layout.hasher
    else:
        hasher = file_hash(text)
    digest = hasher.hexdigest()
    row = db.execute("SELECT hash, layer FROM files WHERE path = ?", (relpath,)).fetchone()
    trusted = (
        layout is not None
        and row is not None
        and row[0] == layout.digest
        and row[1] == layer_name == layout.layer
    )
    if row is not None and row[0] == digest and row[1] == layer_name:
        db.execute(
            "UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?",
            (state.mtime_ns, state.size, relpath),
        )
        return "unchanged", layout if trusted else None
    rows = Rows(db, relpath, agent, layer_name, layer)
    cleaned = clean(text)
    kind = item_kind(layer.store)
    after: Layout | None = None
    tail = _tail(layout, layer, added) if trusted and added is not None else None
    if layout is not None and tail is not None:
        done = append_units(rows, tail, kind, layout, len(layout.units) - 1)
        after = Layout(digest, layer_name, text, hasher, done.units, done.counts, done.unique)
    elif (
        pieces := segments(layer.store, cleaned, parsed if cleaned is text else None)
    ) is not None:
        done = write_units(rows, pieces, kind, layout if trusted else None)
        if cleaned is text:
            after = Layout(digest, layer_name, text, hasher, done.units, done.counts, done.unique)
    else:
        write_items(rows, extract(layer.store, relpath, cleaned))
    windows.rekey(db, relpath, layer.store)
    db.execute(
        "INSERT INTO files (path, layer, store, mtime_ns, size, hash) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET "
        "layer = excluded.layer, store = excluded.store, "
        "mtime_ns = excluded.mtime_ns, size = excluded.size, hash = excluded.hash",
        (relpath, layer_name, layer.store, state.mtime_ns, state.size, digest),
    )
    return ("added" if row is None else "updated"), after


def _tail(layout: Layout | None, layer: Layer, added: str) -> list[Unit] | None:
    """The units from the layout's last section on, when a section file only grew."""
    if layout is None or layer.store == "knowledge" or clean(added) is not added:
        return None
    last = layout.units[-1]
    if last.kind != "section" or not layout.text.endswith(last.raw):
        return None
    return tail_units(last.raw + added, last.line, last.base)
