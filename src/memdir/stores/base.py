"""What every store shares: its context, locked read-modify-write of one section
file, the archive that keeps what a cap pushes out, and key validation.

Invariants:
- Reads never take the lock: files are only ever replaced whole (atomic
  rename), so a reader sees an old or a new version, never a torn one.
- Files are read and written through ``StoreContext.files`` (the storage seam's
  ``Files``: on disk, or in PostgreSQL), by their memory-folder paths.
- Every write takes the folder lock, re-reads the file under it,
  applies its change, and writes atomically. A refused write raises ``Refusal``
  inside the edit, which leaves every file as it was (the archive included: what
  an edit keeps there is written with the file, at its end).
- Text a cap removes goes to the archive before the file that held it is
  rewritten: a crash in between leaves it in both places, never in neither
  (``atomic_write_all``: both temp files fsynced at once, the archive renamed first).
- A reader caches a file's parse on its ``Files.stamp`` (a version that moves at
  every write, had without reading the file).
- A file an edit just wrote is not parsed again by the next: the store keeps the
  text it wrote with its document (``SectionDocument.adopt``), and reuses it when the
  bytes read under the lock are the same; the index gets the same document.
- Files are decoded with ``surrogateescape``, so bytes that are not UTF-8
  survive a round trip untouched.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar, Protocol

from memdir.config import Limits, Manifest
from memdir.files.atomic import atomic_write
from memdir.files.sections import (
    META_KEY_RE,
    Parsed,
    Section,
    SectionDocument,
    detect_newline,
    separate,
)
from memdir.paths import outside_target
from memdir.storage.mounts import MountedFiles
from memdir.storage.seam import Files, WriteLock
from memdir.stores.validate import Refusal as Refusal  # re-exported: stores raise it
from memdir.stores.validate import blank
from memdir.stores.validate import check_text as check_text  # the one write check
from memdir.timeutil import Clock, format_ts


class OnWrite(Protocol):
    def __call__(self, relpath: str, text: str, parsed: Parsed | None = None) -> None: ...


OnWrites = Callable[[Sequence[tuple[str, str]]], None]
ENCODING = "utf-8"
ERRORS = "surrogateescape"
KEY_MAX_CHARS = 120


def read_text(path: Path) -> str | None:
    """The file's text (bytes that are not UTF-8 kept, see ``files.encoding``), or None
    when there is no file there: missing, or a folder in its place."""
    try:
        return path.read_bytes().decode(ENCODING, ERRORS)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def write_text(path: Path, text: str, *, sync_dir: bool = True) -> None:
    atomic_write(path, text.encode(ENCODING, ERRORS), sync_dir=sync_dir)


def decode(data: bytes | None) -> str | None:
    """A file's text from its bytes (``read_text``'s decoding), None for no file."""
    return None if data is None else data.decode(ENCODING, ERRORS)


def encode(text: str) -> bytes:
    return text.encode(ENCODING, ERRORS)


@dataclass(frozen=True)
class Write:
    relpath: str
    text: str
    parsed: Parsed | None = None


class Writes:
    """The files one edit writes, in order (what it archives, then the file itself):
    written together at the end of the edit (``commit``), or not at all."""

    def __init__(self) -> None:
        self.pending: list[Write] = []

    def text_of(self, relpath: str) -> str | None:
        for write in reversed(self.pending):
            if write.relpath == relpath:
                return write.text
        return None

    def add(self, write: Write) -> None:
        self.pending = [w for w in self.pending if w.relpath != write.relpath] + [write]

    def commit(self, files: Files, on_write: OnWrite) -> None:
        """Write every file (``Files.write_all``: in order; on disk their fsyncs
        overlapped), then tell the index about each; those written before a failure are
        told too."""
        if not self.pending:
            return
        done: list[Write] = []
        try:
            files.write_all(
                [(write.relpath, encode(write.text)) for write in self.pending],
                lambda n: done.append(self.pending[n]),
            )
        finally:
            for write in done:
                on_write(write.relpath, write.text, write.parsed)


def confine_in(files: Files, relpath: str) -> None:
    """Refusal if ``relpath`` cannot take a memory file (``Files.unwritable``: on disk a
    folder in its place, or a link that leads outside the folder)."""
    why = files.unwritable(relpath)
    if why is not None:
        raise Refusal(why)


def confine(base: Path, path: Path, relpath: str) -> None:
    """Refusal if ``path`` cannot take a memory file: a link that leads outside ``base``
    (see ``outside_target``), or a folder where the file should be."""
    if path.is_dir():
        raise Refusal(
            f"{relpath} is a folder, not a file; memdir cannot write its memory there. Move "
            "the folder away (its files are left as they are), and nothing was written"
        )
    target = outside_target(base, path)
    if target is not None:
        raise Refusal(
            f"{relpath} is a link to {target}, outside the memory folder; memdir does not "
            "write through it. Replace the link with the file itself (or a link inside the "
            "folder), and nothing was written"
        )


def check_secrets(text: str) -> str:
    """``check_text`` without a size limit (keys, tags, short fields)."""
    return check_text(text)


_BIDI_CONTROL = re.compile("[\u202a-\u202e\u2066-\u2069]")
"""the embeddings, overrides and isolates of Unicode's bidirectional algorithm (what
"Trojan Source" used). The marks U+200E and U+200F only set the direction of the
neutral characters beside them and are kept"""


def normalize_key(raw: object, what: str = "key", example: str = "current-task") -> str:
    """A section key from user input, or Refusal with a sentence saying what to fix
    (``example``: a name of the kind asked for, said when it is empty)."""
    if not isinstance(raw, str):
        raise Refusal(f"{what} must be a string, not {type(raw).__name__}")
    # NFC: 'café' typed decomposed (e + U+0301) is the same key, not a second entry
    key = unicodedata.normalize("NFC", " ".join(raw.split()))
    if blank(key):  # spaces, or zero-width and bidi characters only: nothing to see
        raise Refusal(f"{what} is empty; give a short name such as {example!r}")
    if len(key) > KEY_MAX_CHARS:
        raise Refusal(f"{what} is {len(key)} chars; keep it under {KEY_MAX_CHARS}")
    turned = _BIDI_CONTROL.search(key)
    if turned:  # 'U+202E evil' shows as 'live': a name must read as it shows
        raise Refusal(
            f"{what} holds U+{ord(turned.group()):04X}, a bidirectional control that makes a "
            "name show other than it reads; write it without (right-to-left letters need none)"
        )
    return check_text(key, what)


def clean_meta_value(value: str) -> str:
    """Make free text safe as a metadata value (one line, no ';' or comment marks)."""
    for bad in (";", "-->", "<!--"):
        value = value.replace(bad, ",")
    return " ".join(value.split())


@dataclass(frozen=True)
class ArchivedText:
    key: str
    text: str
    reason: str
    meta: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, section: Section, reason: str) -> ArchivedText:
        return cls(section.key, section.body, reason, section.meta)


class Archive:
    """Append-only keeping of text memdir took out of a file, by kind and month.

    ``archive/<kind>/YYYY-MM.md`` is a section file: one section per kept item
    with when, why and where from. Monthly files keep each rewrite small.
    """

    def __init__(self, files: Files, folder: str, clock: Clock, on_write: OnWrite) -> None:
        self.files = files
        self.folder = folder
        self.clock = clock
        self.on_write = on_write

    def path_for(self, kind: str) -> str:
        return f"{self.folder}/{kind}/{self.clock():%Y-%m}.md"

    def keep(
        self,
        kind: str,
        source: str,
        items: Sequence[ArchivedText],
        writes: Writes | None = None,
    ) -> str:
        """Write ``items`` to the archive (caller holds the lock); return its relative path.
        With ``writes`` (an edit's), the archive file joins them instead of being
        written at once.

        New sections are rendered on their own and appended to the file's text
        (no parse of what is there but its end), then the whole is written
        atomically. An item already at the end of the file, as this same text from
        this same source, is not kept twice: a kill after a keep and before the write
        that took the text out leaves it in both places, and the next write of that
        store takes the same text out again.
        """
        relpath = self.path_for(kind)
        confine_in(self.files, relpath)
        existing = writes.text_of(relpath) if writes is not None else None
        if existing is None:
            existing = decode(self.files.read(relpath))
        if existing is None:
            existing = f"# Archive: {kind}\n\nKept by memdir; nothing here is deleted.\n"
        stamp = format_ts(self.clock())
        added = SectionDocument(newline=detect_newline(existing))
        for item in items:
            meta = {"archived": stamp, "reason": item.reason, "from": source}
            for key, value in item.meta.items():
                if key not in meta and META_KEY_RE.fullmatch(key):
                    meta[key] = clean_meta_value(value)
            added.append(added.new_section(item.key, item.text, meta))
        added.sections = _not_kept_yet(existing, added.sections)
        if not added.sections:
            return relpath
        text = separate(existing, added.newline) + added.render()
        if writes is not None:
            writes.add(Write(relpath, text))
            return relpath
        self.files.write_all([(relpath, encode(text))])
        self.on_write(relpath, text)
        return relpath


def _kept_as(section: Section) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    meta = tuple(sorted((k, v) for k, v in section.meta.items() if k != "archived"))
    return section.key, section.body, meta


def _not_kept_yet(existing: str, sections: list[Section]) -> list[Section]:
    """``sections`` less those the end of the archive file ``existing`` already holds
    (a retried keep's are its last sections, so only a tail is parsed)."""
    window = max(4 * sum(len(section.render()) for section in sections), 8192)
    end = existing[-window:]
    if "\r" not in end and not any(section.body in end for section in sections):
        return sections  # none of their texts is there (a section's body is, as it is)
    tail = SectionDocument.parse(end).sections
    kept = {_kept_as(section) for section in tail}
    return [section for section in sections if _kept_as(section) not in kept]


@dataclass(frozen=True)
class StoreContext:
    root: Path
    """the folder on disk (local); on postgres a folder of this process's own, for
    what is kept per process, never a memory file"""
    manifest: Manifest
    lock: WriteLock
    clock: Clock
    archive: Archive
    on_write: OnWrite
    """called after every file write with its relative path and new text (updates the index)"""
    on_writes: OnWrites
    """the same for a bulk job's many writes at once (one index transaction)"""
    files: MountedFiles
    """the folder's files (its own and its mounts'), by memory-folder path"""

    @property
    def limits(self) -> Limits:
        return self.manifest.limits

    def read(self, relpath: str) -> str | None:
        """The file's text, or None when there is none (``read_text``'s decoding)."""
        return decode(self.files.read(relpath))

    def write(self, relpath: str, text: str) -> None:
        """Replace the file with ``text`` (atomically; the caller holds the lock and
        tells the index)."""
        self.files.write_all([(relpath, encode(text))])

    def exists(self, relpath: str) -> bool:
        return self.files.stamp(relpath) is not None


class SectionFileStore:
    """A store over one section file: cached reads, locked read-modify-write edits."""

    STARTER: ClassVar[str] = ""

    def __init__(self, ctx: StoreContext, relpath: str, *, starter: str | None = None) -> None:
        self.ctx = ctx
        self.starter = self.STARTER if starter is None else starter
        self.relpath = relpath
        self._cache: tuple[tuple[int, ...], SectionDocument] | None = None
        self._owned: tuple[str, Parsed] | None = None
        """the text the last edit wrote (or read) and its parse; only edits use it"""
        self._editing: _Editing | None = None

    @property
    def store(self) -> str:
        """The file's path relative to the memory folder, as results name it."""
        return self.relpath

    @property
    def path(self) -> Path:
        """Where the file is on disk, for a local folder (on postgres: no memory file
        is there; read and write through ``ctx.files``)."""
        return self.ctx.root / self.relpath

    def exists(self) -> bool:
        return self.ctx.exists(self.relpath)

    def ensure_file(self) -> bool:
        """Create the file with its starter text if missing; True if created."""
        with self.ctx.lock:
            if self.exists():
                return False
            self.ctx.write(self.relpath, self.starter)
            self.ctx.on_write(self.relpath, self.starter)
            return True

    def mtime(self) -> datetime | None:
        stat = self.ctx.files.stat(self.relpath)
        if stat is None:
            return None
        return datetime.fromtimestamp(stat.mtime_ns // 1_000_000_000, tz=UTC)

    def _read(self) -> SectionDocument:
        """The parsed file for reading; do not mutate (use ``_edit``)."""
        signature = self.ctx.files.stamp(self.relpath)
        if signature is None:
            return SectionDocument.parse(self.starter)
        if self._cache is not None and self._cache[0] == signature:
            return self._cache[1]
        text = self.ctx.read(self.relpath)  # None through a link that leads outside
        doc = SectionDocument.parse(text if text is not None else self.starter)
        self._cache = (signature, doc)
        return doc

    @contextmanager
    def _edit(self) -> Iterator[SectionDocument]:
        """Lock, re-read from disk, yield the document, write it back if it changed.

        Raise ``Refusal`` inside the block to leave the file untouched. The document is
        the last edit's when the bytes on disk are still the ones it wrote (no parse);
        what the block archives is written with the file, archive first.
        """
        with self.ctx.lock:
            confine_in(self.ctx.files, self.relpath)
            text = self.ctx.read(self.relpath)
            source = text if text is not None else self.starter
            owned, self._owned = self._owned, None  # the block may change it, or fail
            taken = owned[1] if owned is not None and owned[0] == source else None
            doc = taken.doc if taken is not None else SectionDocument.parse(source)
            outer, self._editing = self._editing, _Editing(taken)
            try:
                yield doc
                editing = self._editing
                rendered = doc.render()
                parsed = _adopted(doc, rendered, editing.nested)
                if rendered != source:
                    editing.writes.add(Write(self.relpath, rendered, parsed))
                    self._cache = None
                editing.writes.commit(self.ctx.files, self.ctx.on_write)
                if parsed is not None:
                    self._owned = (rendered, parsed)
            finally:
                self._editing = outer

    def _nested(self, doc: SectionDocument, key: str) -> tuple[Section | None, SectionDocument]:
        """Section ``key`` of ``doc`` (an edit's, unchanged yet) and the level-3 document in
        its body: the last edit's when ``doc`` is (no parse), else parsed. Hand it back
        with ``_nest`` once edited."""
        section = doc.get(key)
        if section is None:
            return None, SectionDocument(level=3)
        taken = self._editing.taken if self._editing is not None else None
        if taken is not None and taken.doc is doc:
            sub = taken.nested.get(key)
            if sub is not None:
                return section, sub
        return section, SectionDocument.parse(section.body, level=3)

    def _nest(self, key: str, sub: SectionDocument) -> None:
        """``sub`` is now the body of section ``key``: the edit's end adopts it on that
        body, for the index and the next edit."""
        if self._editing is not None:
            self._editing.nested[key] = sub

    def _keep(self, kind: str, items: Sequence[ArchivedText]) -> str | None:
        if not items:
            return None
        writes = self._editing.writes if self._editing is not None else None
        return self.ctx.archive.keep(kind, self.relpath, items, writes)


@dataclass
class _Editing:
    """What one edit carries to its end: the parse it started from (if the last edit's),
    the files it writes, and level-3 documents nested in its sections' bodies."""

    taken: Parsed | None
    writes: Writes = field(default_factory=Writes)
    nested: dict[str, SectionDocument] = field(default_factory=dict)


def _adopted(
    doc: SectionDocument, rendered: str, nested: Mapping[str, SectionDocument]
) -> Parsed | None:
    """``doc`` (and each level-3 document inside one of its sections' bodies) as the
    parse of ``rendered``, or None where that cannot be had without parsing."""
    if not doc.adopt(rendered):
        return None
    for key, sub in nested.items():
        holder = doc.get(key)
        if holder is None or not sub.adopt(holder.body):
            return None
    return Parsed(doc, dict(nested))
