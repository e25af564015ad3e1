"""NOTEBOOK.md: the agent's working memory, always in its prompt.

    ## current-task
    <!-- managed: agent; updated: 2026-11-30T10:00:00Z -->
    Migrating the billing service; step 3 of 5.

Rules (notebook seed, "Notebook"):
- Entries have a key, text, who manages them (agent | system | cpp) and when
  they were updated. At most ``NOTEBOOK_MAX_AGENT_ENTRIES`` (4) agent entries
  of ``NOTEBOOK_ENTRY_MAX_CHARS`` (6000) each; system and cpp entries do not
  count. A new agent key beyond the cap evicts the oldest agent entry.
- Persisted at once on every change (the seed allows a 2 s debounce; memdir
  does not need one), so it survives a restart and a crash.
- Caps hold at load, at write and when rendered. A notebook edited by hand past
  the caps reads as capped; the next write moves what is over the cap to the
  archive and says so. Nothing leaves the notebook unrecorded: evicted, cut and
  cleared text all go to ``archive/notebook/``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal, get_args

from memdir.files.sections import Section, SectionDocument
from memdir.results import Notice, WriteResult
from memdir.safety.provenance import written_by
from memdir.stores.base import (
    ArchivedText,
    Refusal,
    SectionFileStore,
    normalize_key,
)
from memdir.stores.validate import entry_text, flag
from memdir.textutil import cut_point
from memdir.timeutil import format_ts, parse_ts

Managed = Literal["agent", "system", "cpp"]
MANAGED_VALUES: tuple[str, ...] = get_args(Managed)
ARCHIVE_KIND = "notebook"


@dataclass(frozen=True)
class NotebookEntry:
    key: str
    text: str
    managed: Managed
    updated_at: datetime
    by: str = "person"
    """who wrote it (``memdir.safety.provenance``)"""


@dataclass(frozen=True)
class _Plan:
    """How the caps apply to a document: what stays, what is over."""

    entries: list[NotebookEntry]
    evicted: list[NotebookEntry]
    long: list[NotebookEntry]
    evicted_positions: frozenset[int]
    long_positions: frozenset[int]


class Notebook(SectionFileStore):
    STARTER = "# Notebook\n"

    # -- reading ---------------------------------------------------------------

    def entries(self) -> list[NotebookEntry]:
        """Entries in file order, within the caps (over-long text shown cut)."""
        return self._plan(self._read()).entries

    def get(self, key: str) -> NotebookEntry | None:
        for entry in self.entries():
            if entry.key == key:
                return entry
        return None

    def render(self) -> str:
        """The notebook as an agent's prompt shows it (``## Notebook``); empty if no entries."""
        entries = [entry for entry in self.entries() if entry.text.strip()]
        if not entries:
            return ""
        blocks = [f"### {entry.key}\n{entry.text}" for entry in entries]
        return "## Notebook\n\n" + "\n\n".join(blocks) + "\n"

    def check(self) -> list[Notice]:
        """What is over the caps on disk right now (fixed by the next write)."""
        plan = self._plan(self._read())
        notices = []
        limits = self.ctx.limits
        if plan.evicted:
            notices.append(
                Notice(
                    self.store,
                    f"{len(plan.evicted)} agent entries over the cap of "
                    f"{limits.notebook_max_agent_entries} are hidden and will move to the archive "
                    f"on the next write: {', '.join(entry.key for entry in plan.evicted)}",
                )
            )
        for entry in plan.long:
            notices.append(
                Notice(
                    self.store,
                    f"entry {entry.key!r} is over {limits.notebook_entry_max_chars} chars; it "
                    "reads cut, and the next write keeps the full text in the archive",
                )
            )
        return notices

    def check_text(self, text: str) -> str | None:
        """Why ``text``, written whole, would leave NOTEBOOK.md over its caps (None if it
        fits). Writes nothing: a tool that edits the file as plain text asks this first."""
        plan = self._plan(SectionDocument.parse(text))
        limits = self.ctx.limits
        if plan.evicted:
            fallback = self.ctx.clock()
            agents = [  # in the file's order, whichever the cap would push out
                entry.key
                for entry in (
                    self._entry(section, fallback) for section in SectionDocument.parse(text)
                )
                if entry.managed == "agent"
            ]
            return (
                f"{self.store} would hold {len(agents)} agent-managed entries "
                f"({', '.join(agents)}); the cap is {limits.notebook_max_agent_entries}. "
                "Replace or remove an entry instead of adding one"
            )
        if plan.long:
            entry = plan.long[0]
            return (
                f"entry {entry.key!r} of {self.store} would be {len(entry.text)} chars, over the "
                f"{limits.notebook_entry_max_chars}-char cap of a notebook entry; keep it short "
                "and keep the details in another file"
            )
        return None

    # -- writing ---------------------------------------------------------------

    def update(self, key: str, text: str, managed: str = "agent") -> WriteResult:
        """Insert or replace the entry ``key`` (update_notebook)."""
        limit = self.ctx.limits.notebook_entry_max_chars
        try:
            key = normalize_key(key)
            if managed not in MANAGED_VALUES:
                raise Refusal(
                    f"managed must be one of {', '.join(MANAGED_VALUES)}, not {managed!r}"
                )
            body = entry_text(
                text,
                limit=limit,
                hint="keep the entry short and save details with memory_save",
                empty="text is empty; to remove an entry use clear_notebook with its key",
            )
            flags = flag(body)
            with self._edit() as doc:
                archived, notes = self._enforce(doc)
                section = doc.get(key)
                action = "updated" if section is not None else "created"
                if section is None:
                    section = doc.append(doc.new_section(key))
                section.body = body
                section.meta["managed"] = managed
                section.meta["updated"] = format_ts(self.ctx.clock())
                flags.stamp(section.meta)
                evicted = self._evict_over_cap(doc, keep=key)
                if evicted:
                    archived = archived + evicted
                    notes.append(
                        "evicted the oldest agent entries to make room: "
                        + ", ".join(entry.key for entry in evicted)
                    )
                archive = self._keep(ARCHIVE_KIND, archived)
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)
        return WriteResult(
            ok=True,
            store=self.store,
            action=action,
            key=key,
            archived=tuple(item.key for item in archived),
            archive=archive,
            notes=tuple(notes),
            warnings=flags.warnings,
        )

    def clear(self, key: str | None = None) -> WriteResult:
        """Remove one entry, or with no key every agent-managed entry (clear_notebook)."""
        try:
            wanted = None if key is None else normalize_key(key)
            with self._edit() as doc:
                archived, notes = self._enforce(doc)
                if wanted is not None:
                    targets = [section for section in doc if section.key == wanted]
                    if not targets:
                        raise Refusal(
                            f"no notebook entry {wanted!r}; entries are: "
                            + (", ".join(doc.keys()) or "none")
                        )
                else:
                    targets = [section for section in doc if _managed(section) == "agent"]
                for section in targets:
                    doc.remove(section.key)
                cleared = [ArchivedText.of(section, "cleared") for section in targets]
                archive = self._keep(ARCHIVE_KIND, archived + cleared)
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)
        return WriteResult(
            ok=True,
            store=self.store,
            action="cleared" if targets else "unchanged",
            key=wanted,
            removed=tuple(section.key for section in targets),
            archived=tuple(item.key for item in archived),
            archive=archive,
            notes=tuple(notes),
        )

    # -- caps ------------------------------------------------------------------

    def _entry(self, section: Section, fallback: datetime) -> NotebookEntry:
        updated = parse_ts(section.meta.get("updated")) or fallback
        return NotebookEntry(
            section.key, section.body, _managed(section), updated, written_by(section.meta)
        )

    def _plan(self, doc: SectionDocument) -> _Plan:
        limits = self.ctx.limits
        fallback = self.mtime() or self.ctx.clock()
        all_entries = [self._entry(section, fallback) for section in doc]
        agents = [(entry.updated_at, pos) for pos, entry in enumerate(all_entries)]
        agents = [item for item in agents if all_entries[item[1]].managed == "agent"]
        over = len(agents) - limits.notebook_max_agent_entries
        evicted_positions = {pos for _, pos in sorted(agents)[: max(over, 0)]}
        entries: list[NotebookEntry] = []
        long: list[NotebookEntry] = []
        long_positions: set[int] = set()
        for pos, entry in enumerate(all_entries):
            if pos in evicted_positions:
                continue
            if len(entry.text) > limits.notebook_entry_max_chars:
                long.append(entry)
                long_positions.add(pos)
                cut = cut_point(entry.text, limits.notebook_entry_max_chars)
                entry = replace(entry, text=entry.text[:cut].rstrip())
            entries.append(entry)
        evicted = [all_entries[pos] for pos in sorted(evicted_positions)]
        return _Plan(
            entries, evicted, long, frozenset(evicted_positions), frozenset(long_positions)
        )

    def _enforce(self, doc: SectionDocument) -> tuple[list[ArchivedText], list[str]]:
        """Bring a hand-edited document under the caps; return what to archive."""
        plan = self._plan(doc)
        archived: list[ArchivedText] = []
        notes: list[str] = []
        limit = self.ctx.limits.notebook_entry_max_chars
        kept: list[Section] = []
        for pos, section in enumerate(doc.sections):
            if pos in plan.evicted_positions:
                archived.append(ArchivedText.of(section, "over-cap"))
                continue
            if pos in plan.long_positions:
                archived.append(ArchivedText.of(section, "over-length"))
                section.body = section.body[: cut_point(section.body, limit)].rstrip()
                notes.append(f"cut entry {section.key!r} to {limit} chars; full text archived")
            kept.append(section)
        doc.sections = kept
        if plan.evicted:
            notes.append(
                "moved agent entries over the cap to the archive: "
                + ", ".join(entry.key for entry in plan.evicted)
            )
        return archived, notes

    def _evict_over_cap(self, doc: SectionDocument, keep: str) -> list[ArchivedText]:
        limit = self.ctx.limits.notebook_max_agent_entries
        fallback = self.ctx.clock()
        evicted: list[ArchivedText] = []
        while True:
            agents = [
                (self._entry(section, fallback).updated_at, pos, section)
                for pos, section in enumerate(doc)
                if _managed(section) == "agent"
            ]
            if len(agents) <= limit:
                return evicted
            candidates = [item for item in agents if item[2].key != keep]
            _, position, oldest = min(candidates, key=lambda item: (item[0], item[1]))
            del doc.sections[position]
            evicted.append(ArchivedText.of(oldest, "evicted"))


def _managed(section: Section) -> Managed:
    value = section.meta.get("managed", "agent")
    if value == "system":
        return "system"
    if value == "cpp":
        return "cpp"
    return "agent"
