"""knowledge.md: curated knowledge above a buffer of raw observations.

    # Knowledge

    ## conventions                         <- curated: capped, in the prompt
    <!-- updated: 2026-11-30T10:00:00Z -->
    - File names are snake_case.

    ## _observations                       <- buffer: searched, never injected
    ### obs_1764496800000_a1b2c3
    <!-- type: fact; date: 2026-11-30T10:00:00Z; tags: billing, api -->
    The billing API rate limit is 50 requests per second.

Rules (notebook seed, section 3 and 8.8):
- ``save`` (memory_save) adds one observation: an array, a non-string or empty
  content is refused with a reason. At most ``OBSERVATIONS_MAX`` (500); the
  oldest go to the archive.
- ``update`` (memory_update) writes a named curated section: ``replace``,
  ``patch`` (adds to it; ``append`` is an alias) or ``delete`` (observations by
  id). A section is capped at ``MEMORY_MD_SECTION_MAX_CHARS`` (3000), all
  curated text at ``MEMORY_MD_TOTAL_MAX_CHARS`` (15000); over a cap the text is
  compressed, and if still over the write is refused with ``{ok: false, reason}``.
- Bodies never open a sibling ``##`` section; ``<think>`` blocks are stripped;
  empty observations are dropped when read and pruned by the next write.
- A file over a cap on disk is reported (``check``) and brought under by the
  next write: the full original text of what changes goes to the archive first.
"""

from __future__ import annotations

import heapq
import operator
import re
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal, get_args

from memdir.config import Limits
from memdir.files.encoding import encode
from memdir.files.sections import Section, SectionDocument, sanitize_body, strip_think
from memdir.results import Notice, WriteResult
from memdir.safety.provenance import written_by
from memdir.stores.base import (
    ArchivedText,
    Refusal,
    SectionFileStore,
    check_secrets,
    check_text,
    clean_meta_value,
    normalize_key,
)
from memdir.stores.knowledge_edit import KnowledgeEdit
from memdir.stores.validate import Flags, flag
from memdir.textutil import compress, cut_point, drop_comments
from memdir.timeutil import format_ts, parse_ts

OBSERVATIONS_KEY = "_observations"
ObservationType = Literal["fact", "note", "insight", "task_result", "conversation"]
OBSERVATION_TYPES: tuple[str, ...] = get_args(ObservationType)
UPDATE_MODES = ("replace", "patch", "append", "delete")
ARCHIVE_KIND = "knowledge"
MAX_TAGS = 20
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_META = operator.attrgetter("meta")
_KEY = operator.attrgetter("key")
_BODY = operator.attrgetter("body")
_DATE = operator.methodcaller("get", "date")


@dataclass(frozen=True)
class Observation:
    id: str
    content: str
    type: ObservationType
    date: datetime
    tags: tuple[str, ...]


@dataclass(frozen=True)
class KnowledgeSection:
    key: str
    text: str
    updated_at: datetime | None
    by: str = "person"
    """who wrote it (``memdir.safety.provenance``)"""


@dataclass(frozen=True)
class KnowledgeUsage:
    section_chars: dict[str, int]
    total_chars: int
    section_max: int
    total_max: int
    observations: int
    observations_max: int
    empty_observations: int

    @property
    def over_sections(self) -> list[str]:
        return [key for key, chars in self.section_chars.items() if chars > self.section_max]

    @property
    def over_total(self) -> bool:
        return self.total_chars > self.total_max


_last_ms = 0
_id_lock = threading.Lock()


def new_observation_id() -> str:
    """``obs_<epoch ms>_<6 hex>``: unique across processes, and sorted in the order
    they were made within one (two in the same millisecond get the next one)."""
    global _last_ms
    with _id_lock:
        _last_ms = max(time.time_ns() // 1_000_000, _last_ms + 1)
        stamp = _last_ms
    return f"obs_{stamp}_{secrets.token_hex(3)}"


def observation_meta(type_: str, date: datetime, tags: tuple[str, ...]) -> dict[str, str]:
    meta = {"type": type_, "date": format_ts(date)}
    if tags:
        meta["tags"] = ", ".join(tags)
    return meta


def normalize_tags(tags: object) -> tuple[str, ...]:
    """Tags from a list of strings or one comma-separated string; Refusal otherwise."""
    if tags is None:
        return ()
    if isinstance(tags, str):
        items: list[object] = list(tags.split(","))
    elif isinstance(tags, (list, tuple)):
        items = list(tags)
    else:
        raise Refusal(f"tags must be a list of strings, not {type(tags).__name__}")
    result: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise Refusal(f"each tag must be a string, not {type(item).__name__}")
        tag = check_secrets(clean_meta_value(item).replace(",", " ").strip())
        tag = " ".join(tag.split())
        if tag and tag not in result:
            result.append(tag)
    if len(result) > MAX_TAGS:
        raise Refusal(f"{len(result)} tags given; use at most {MAX_TAGS}")
    return tuple(result)


def _parse_ids(raw: object) -> list[str]:
    if isinstance(raw, str):
        return [part for part in re.split(r"[\s,]+", raw) if part]
    if isinstance(raw, (list, tuple)) and all(isinstance(item, str) for item in raw):
        return [item.strip() for item in raw if item.strip()]
    raise Refusal("ids must be a list of observation ids such as ['obs_1764496800000_a1b2c3']")


class KnowledgeStore(SectionFileStore):
    STARTER = "# Knowledge\n\n## _observations\n"
    _parsed: tuple[SectionDocument, list[Observation]] | None = None

    # -- reading ---------------------------------------------------------------

    def sections(self) -> list[KnowledgeSection]:
        """Curated sections in file order (everything but ``## _observations``)."""
        return [
            KnowledgeSection(
                section.key,
                section.body,
                parse_ts(section.meta.get("updated")),
                written_by(section.meta),
            )
            for section in self._read()
            if section.key != OBSERVATIONS_KEY
        ]

    def section(self, name: str) -> KnowledgeSection | None:
        found = _find_curated(self._read(), name)
        if found is None:
            return None
        return KnowledgeSection(
            found.key, found.body, parse_ts(found.meta.get("updated")), written_by(found.meta)
        )

    def observations(self) -> list[Observation]:
        """Observations in file order (oldest first); empty ones are left out."""
        doc = self._read()  # cached while the file is unchanged: so is this list
        if self._parsed is not None and self._parsed[0] is doc:
            return list(self._parsed[1])
        _, sub = _observations_doc(doc)
        fallback = self.mtime() or self.ctx.clock()
        found = [_observation(section, fallback) for section in sub if section.body.strip()]
        self._parsed = (doc, found)
        return list(found)

    def get_observation(self, obs_id: str) -> Observation | None:
        for observation in self.observations():
            if observation.id == obs_id:
                return observation
        return None

    def usage(self) -> KnowledgeUsage:
        return _usage(self._read(), self.ctx.limits)

    def check_text(self, text: str) -> str | None:
        """Why ``text``, written whole, would leave knowledge.md over its caps (None if it
        fits). Writes nothing: a tool that edits the file as plain text asks this first."""
        usage = _usage(SectionDocument.parse(text), self.ctx.limits)
        if usage.over_sections:
            key = usage.over_sections[0]
            return (
                f"section {key!r} of {self.store} would be {usage.section_chars[key]} chars, over "
                f"the {usage.section_max}-char cap of a curated section; shorten it, or keep the "
                f"details as observations under ## {OBSERVATIONS_KEY} or in another file"
            )
        if usage.over_total:
            return (
                f"the curated sections of {self.store} would total {usage.total_chars} chars, over "
                f"the {usage.total_max}-char cap (## {OBSERVATIONS_KEY} not counted); shorten "
                "or remove a section first"
            )
        if usage.observations > usage.observations_max:
            return (
                f"{self.store} would hold {usage.observations} observations, over the cap of "
                f"{usage.observations_max}; remove old ones first"
            )
        return None

    def check(self) -> list[Notice]:
        usage = self.usage()
        notices = [
            Notice(
                self.store,
                f"section {key!r} is {usage.section_chars[key]} chars, over the "
                f"{usage.section_max}-char cap; the next write brings it under "
                "(the full text goes to the archive)",
            )
            for key in usage.over_sections
        ]
        if usage.over_total:
            notices.append(
                Notice(
                    self.store,
                    f"curated text is {usage.total_chars} chars, over the {usage.total_max}-char "
                    "cap; the next write moves the least recently updated sections to the archive",
                )
            )
        if usage.empty_observations:
            notices.append(
                Notice(
                    self.store,
                    f"{usage.empty_observations} empty observations are ignored "
                    "and pruned on the next write",
                )
            )
        if usage.observations > usage.observations_max:
            notices.append(
                Notice(
                    self.store,
                    f"{usage.observations} observations, over the cap of {usage.observations_max}; "
                    "the next write moves the oldest to the archive",
                )
            )
        return notices

    def render(self, max_tokens: int | None = None) -> str:
        """Curated knowledge as a prompt shows it (``## Your Knowledge``), whole sections
        in file order within ``max_tokens`` (default: the manifest's knowledge cap).
        Observations are never included."""
        budget = self.ctx.limits.knowledge_prompt_max_tokens if max_tokens is None else max_tokens
        header = "## Your Knowledge\n"
        blocks: list[str] = []
        used = _tokens(header)
        for section in self.sections():
            if not section.text.strip():
                continue
            block = f"\n### {section.key}\n{prompt_text(section.text)}\n"
            if used + _tokens(block) > budget:
                continue
            blocks.append(block)
            used += _tokens(block)
        return header + "".join(blocks) if blocks else ""

    # -- writing ---------------------------------------------------------------

    def save(
        self,
        content: object,
        type: str = "note",
        tags: object = (),
        *,
        date: datetime | None = None,
    ) -> WriteResult:
        """Add one observation to ``## _observations`` (memory_save)."""
        try:
            if isinstance(content, (list, tuple)):
                raise Refusal(
                    f"memory_save takes one observation, not an array of {len(content)}; "
                    "call it once per observation"
                )
            if not isinstance(content, str):
                raise Refusal(
                    f"content must be the observation's text as a string, not {_kind(content)}"
                )
            text = check_text(
                strip_think(content).strip(),
                "content",
                limit=self.ctx.limits.observation_max_chars,
                hint=(
                    "save the key facts as a few short observations, or keep the full text "
                    "in a file and save where it lives"
                ),
            )
            if not text:
                raise Refusal(
                    "content is empty; nothing was saved. Put the observation's text in content"
                )
            if type not in OBSERVATION_TYPES:
                raise Refusal(f"type must be one of {', '.join(OBSERVATION_TYPES)}, not {type!r}")
            tag_list = normalize_tags(tags)
            moment = date or self.ctx.clock()
            obs_id = new_observation_id()
            flags = flag(text, *tag_list)
            with self._edit_parts() as (parts, archived, notes):
                meta = observation_meta(type, moment, tag_list)
                flags.stamp(meta)
                parts.observations.append(Section(obs_id, text, meta, level=3))
                trimmed = self._trim_observations(parts.observations, keep=obs_id)
                if trimmed:
                    archived += trimmed
                    notes.append(
                        f"moved the {len(trimmed)} oldest observations to the archive "
                        f"(cap {self.ctx.limits.observations_max})"
                    )
                archive = self._keep(ARCHIVE_KIND, archived)
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)
        return _ok(self.store, "saved", obs_id, archived, archive, notes, flags.warnings)

    def update(
        self,
        section: object = None,
        content: object = None,
        mode: str = "replace",
        ids: object = None,
    ) -> WriteResult:
        """Write a curated section (memory_update), or delete observations (mode 'delete')."""
        chosen = mode.strip().lower() if isinstance(mode, str) else ""
        if chosen == "delete":
            return self.delete_observations(ids if ids is not None else content)
        if chosen not in UPDATE_MODES:
            return WriteResult.refused(
                self.store, f"mode must be one of {', '.join(UPDATE_MODES)}, not {mode!r}"
            )
        if chosen == "append":  # the seed's alias
            chosen = "patch"
        try:
            key = normalize_key(section, "section")
            if key.lower() == OBSERVATIONS_KEY:
                raise Refusal(
                    "_observations is the observation buffer: add to it with memory_save and "
                    "remove from it with mode 'delete'; curated sections have other names"
                )
            if not isinstance(content, str):
                raise Refusal(f"content must be a string, not {_kind(content)}")
            body = check_text(
                sanitize_body(strip_think(content)),
                "content",
                limit=self.ctx.limits.memory_md_total_max_chars,
                hint="a curated section is a short summary; save details as observations",
            )
            if not body.strip():
                raise Refusal(
                    "content is empty; nothing was written. To remove a section use remove_section"
                )
            flags = Flags()
            with self._edit_parts() as (parts, archived, notes):
                doc = parts.doc
                target = _find_curated(doc, key)
                old = target.body if target is not None else ""
                if chosen == "patch" and f"\n{body}\n" in f"\n{old}\n":  # already there
                    action = "unchanged"
                    notes.append("the section already holds this text")
                else:
                    new = old + "\n" + body if chosen == "patch" and old else body
                    new = self._fit(doc, target, key, new, notes)
                    if target is None:
                        target = doc.new_section(key)
                        position = doc.index(OBSERVATIONS_KEY)
                        doc.insert(len(doc) if position is None else position, target)
                        action = "created"
                    else:
                        action = "updated"
                    target.body = new
                    target.meta["updated"] = format_ts(self.ctx.clock())
                    flags = flag(new)
                    flags.stamp(target.meta)
                archive = self._keep(ARCHIVE_KIND, archived)
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)
        key = target.key if target is not None else key
        return _ok(self.store, action, key, archived, archive, notes, flags.warnings)

    def delete_observations(self, ids: object) -> WriteResult:
        """Remove observations by id (memory_update mode 'delete'); they go to the archive."""
        try:
            wanted = _parse_ids(ids)
            if not wanted:
                raise Refusal("no observation ids given; pass ids=['obs_...']")
            with self._edit_parts() as (parts, archived, notes):
                sub = parts.observations
                found = [obs for obs in sub if obs.key in wanted]
                if not found:
                    raise Refusal(
                        "none of these observation ids exist: "
                        + ", ".join(wanted)
                        + "; memory_search lists observations with their ids"
                    )
                sub.sections = [obs for obs in sub if obs.key not in wanted]
                archived += [ArchivedText.of(obs, "deleted") for obs in found]
                archive = self._keep(ARCHIVE_KIND, archived)
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)
        removed = tuple(obs.key for obs in found)
        missing = tuple(item for item in wanted if item not in removed)
        result = _ok(self.store, "removed", None, archived, archive, notes)
        return replace(result, removed=removed, missing=missing)

    def remove_section(self, name: str) -> WriteResult:
        """Remove a curated section; its text goes to the archive."""
        try:
            key = normalize_key(name, "section")
            with self._edit_parts() as (parts, archived, notes):
                doc = parts.doc
                target = _find_curated(doc, key)
                if target is None:
                    raise Refusal(f"no curated section {key!r}; sections are: {_names(doc)}")
                doc.sections = [section for section in doc if section is not target]
                archived.append(ArchivedText.of(target, "removed"))
                archive = self._keep(ARCHIVE_KIND, archived)
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)
        result = _ok(self.store, "removed", target.key, archived, archive, notes)
        return replace(result, removed=(target.key,))

    @contextmanager
    def transaction(self) -> Iterator[KnowledgeEdit]:
        """Edit the whole file as one write (the dream cycle): under the lock, caps
        enforced first, everything taken out kept in the archive. Raise ``Refusal``
        inside the block to leave the file as it was."""
        with self._edit_parts() as (parts, archived, notes):
            edit = KnowledgeEdit(self, parts, archived, notes)
            yield edit
            edit.archive = self._keep(ARCHIVE_KIND, archived)

    # -- caps ------------------------------------------------------------------

    def _fit(
        self, doc: SectionDocument, target: Section | None, key: str, new: str, notes: list[str]
    ) -> str:
        """``new`` within the section and file caps (compressed if need be), or Refusal."""
        limits = self.ctx.limits
        others = sum(len(s.body) for s in doc if s.key != OBSERVATIONS_KEY and s is not target)
        if len(new) > limits.memory_md_section_max_chars or (
            others + len(new) > limits.memory_md_total_max_chars
        ):
            squeezed = compress(new)
            if len(squeezed) < len(new):
                notes.append(f"compressed section {key!r} from {len(new)} to {len(squeezed)} chars")
            new = squeezed
        if len(new) > limits.memory_md_section_max_chars:
            raise Refusal(
                f"section {key!r} would be {len(new)} chars after compression, over the "
                f"{limits.memory_md_section_max_chars}-char cap; nothing was written. Replace it "
                "with a shorter summary (mode 'replace') or save details with memory_save"
            )
        if others + len(new) > limits.memory_md_total_max_chars:
            raise Refusal(
                f"curated knowledge would be {others + len(new)} chars, over the "
                f"{limits.memory_md_total_max_chars}-char cap of {self.store}; nothing was "
                "written. Shorten or remove another section first"
            )
        return new

    @contextmanager
    def _edit_parts(self) -> Iterator[tuple[_Parts, list[ArchivedText], list[str]]]:
        """``_edit`` with the observations parsed once and the caps enforced first;
        yields the parts, what enforcing archived, and notes on what it did."""
        with self._edit() as doc:
            parts = _Parts(doc, *self._nested(doc, OBSERVATIONS_KEY))
            archived, notes = self._enforce(parts)
            yield parts, archived, notes
            parts.commit()
            if parts.section is not None:
                self._nest(OBSERVATIONS_KEY, parts.observations)

    def _enforce(self, parts: _Parts) -> tuple[list[ArchivedText], list[str]]:
        """Bring a document edited by hand under the caps before a write."""
        limits = self.ctx.limits
        archived: list[ArchivedText] = []
        notes: list[str] = []
        doc, sub = parts.doc, parts.observations
        bodies = list(map(str.strip, map(_BODY, sub.sections)))  # one C-level pass
        if "" in bodies:
            kept = [obs for obs, body in zip(sub.sections, bodies, strict=True) if body]
            notes.append(f"pruned {len(sub) - len(kept)} empty observations")
            sub.sections = kept
        trimmed = self._trim_observations(sub, keep=None)
        if trimmed:
            archived += trimmed
            notes.append(f"moved {len(trimmed)} observations over the cap to the archive")
        curated = [s for s in doc if s.key != OBSERVATIONS_KEY]
        for target in curated:
            if len(target.body) <= limits.memory_md_section_max_chars:
                continue
            archived.append(ArchivedText.of(target, "over-cap"))
            text = compress(target.body)
            if len(text) > limits.memory_md_section_max_chars:
                text = text[: cut_point(text, limits.memory_md_section_max_chars)].rstrip()
            target.body = text
            notes.append(
                f"section {target.key!r} was over the cap; brought under, full text archived"
            )
        total = sum(len(s.body) for s in curated)
        if total > limits.memory_md_total_max_chars:
            oldest_first = sorted(curated, key=lambda s: parse_ts(s.meta.get("updated")) or _EPOCH)
            moved: list[Section] = []
            for target in oldest_first:
                if total <= limits.memory_md_total_max_chars:
                    break
                moved.append(target)
                total -= len(target.body)
                archived.append(ArchivedText.of(target, "over-cap"))
            gone = {id(target) for target in moved}  # by identity, in one pass
            doc.sections = [s for s in doc if id(s) not in gone]
            notes.append(
                "curated text was over the file cap; moved sections to the archive: "
                + ", ".join(target.key for target in moved)
            )
        return archived, notes

    def _trim_observations(self, sub: SectionDocument, keep: str | None) -> list[ArchivedText]:
        limit = self.ctx.limits.observations_max
        if len(sub) <= limit:
            return []
        fallback = self.ctx.clock()
        sections = sub.sections
        dates = map(parse_ts, map(_DATE, map(_META, sections)))
        moments = [moment or fallback for moment in dates]
        keeps = 0
        if keep is not None:  # never the one being added
            latest = datetime.max.replace(tzinfo=UTC)
            for position, key in enumerate(map(_KEY, sections)):
                if key == keep:
                    moments[position] = latest
                    keeps += 1
        count = min(len(sections) - limit, len(sections) - keeps)
        oldest = heapq.nsmallest(count, zip(moments, range(len(moments)), strict=True))
        doomed = [sections[position] for _, position in oldest]  # oldest first
        for position in sorted((position for _, position in oldest), reverse=True):
            del sections[position]
        return [ArchivedText.of(obs, "over-cap") for obs in doomed]


def _usage(doc: SectionDocument, limits: Limits) -> KnowledgeUsage:
    _, sub = _observations_doc(doc)
    curated = {s.key: len(s.body) for s in doc if s.key != OBSERVATIONS_KEY}
    empty = sum(1 for section in sub if not section.body.strip())
    return KnowledgeUsage(
        section_chars=curated,
        total_chars=sum(curated.values()),
        section_max=limits.memory_md_section_max_chars,
        total_max=limits.memory_md_total_max_chars,
        observations=len(sub) - empty,
        observations_max=limits.observations_max,
        empty_observations=empty,
    )


def prompt_text(body: str) -> str:
    """A curated body as a prompt shows it: HTML comments (source ids a dream keeps
    beside promoted facts, notes for people) left out; the file keeps them."""
    return drop_comments(body)  # one pass: linear in a section far over the cap


def _tokens(text: str) -> int:
    return (len(encode(text)) + 3) // 4


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    return "null" if value is None else type(value).__name__


def _names(doc: SectionDocument) -> str:
    keys = [section.key for section in doc if section.key != OBSERVATIONS_KEY]
    return ", ".join(keys) or "none"


def _find_curated(doc: SectionDocument, name: str) -> Section | None:
    curated = [section for section in doc if section.key != OBSERVATIONS_KEY]
    for section in curated:
        if section.key == name:
            return section
    folded = [section for section in curated if section.key.casefold() == name.casefold()]
    return folded[0] if len(folded) == 1 else None


def _observations_doc(doc: SectionDocument) -> tuple[Section | None, SectionDocument]:
    section = doc.get(OBSERVATIONS_KEY)
    if section is None:
        return None, SectionDocument(level=3)
    return section, SectionDocument.parse(section.body, level=3)


class _Parts:
    """A knowledge document being edited, with its observations parsed out."""

    def __init__(
        self, doc: SectionDocument, section: Section | None, observations: SectionDocument
    ) -> None:
        self.doc = doc
        self.section, self.observations = section, observations

    def commit(self) -> None:
        """Put the observations back into their section (made at the end if missing)."""
        if self.section is None:
            if not self.observations.sections:
                return
            self.section = self.doc.append(self.doc.new_section(OBSERVATIONS_KEY))
        self.section.body = self.observations.render()


def _observation(section: Section, fallback: datetime) -> Observation:
    raw_type = section.meta.get("type", "note")
    type_: ObservationType = raw_type if raw_type in OBSERVATION_TYPES else "note"  # type: ignore[assignment]
    tags = tuple(tag.strip() for tag in section.meta.get("tags", "").split(",") if tag.strip())
    date = parse_ts(section.meta.get("date")) or fallback
    return Observation(section.key, section.body, type_, date, tags)


def _ok(
    store: str,
    action: str,
    key: str | None,
    archived: list[ArchivedText],
    archive: str | None,
    notes: list[str],
    warnings: tuple[str, ...] = (),
) -> WriteResult:
    return WriteResult(
        ok=True,
        store=store,
        action=action,
        key=key,
        archived=tuple(item.key for item in archived),
        archive=archive,
        notes=tuple(notes),
        warnings=warnings,
    )
