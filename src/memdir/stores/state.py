"""state.md: dated snapshots that expire (progress, counters, "currently ...").

    ## deploy-v2
    <!-- updated: 2026-11-30T10:00:00Z -->
    v2.1 rolling out; 60% of hosts done.

Rules (notebook seed, section 1.1):
- ``set`` (state_update) upserts a snapshot stamped with the time.
- ``prune`` removes snapshots older than ``STATE_TTL_DAYS`` (7) and returns
  them; they go to the archive, not away.
- ``reflex_lines`` gives at most ``STATE_PROMPT_MAX_LINES_REFLEX`` short lines,
  newest first, for the reflex profile's prompt.
- A snapshot with no readable date counts from the file's modification time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from memdir.files.sections import Section, SectionDocument
from memdir.results import WriteResult
from memdir.stores.base import (
    ArchivedText,
    Refusal,
    SectionFileStore,
    normalize_key,
)
from memdir.stores.validate import entry_text, flag
from memdir.textutil import shorten
from memdir.timeutil import format_ts, parse_ts

ARCHIVE_KIND = "state"
REFLEX_LINE_MAX_CHARS = 160
STATE_ENTRY_MAX_CHARS = 2000
STATE_FILE_MAX_BYTES = 4096
"""what a plain-text edit may leave in state.md: snapshots are short lines, not notes"""


@dataclass(frozen=True)
class StateEntry:
    key: str
    text: str
    updated_at: datetime


class StateStore(SectionFileStore):
    STARTER = "# State\n"

    def entries(self) -> list[StateEntry]:
        fallback = self.mtime() or self.ctx.clock()
        return [self._entry(section, fallback) for section in self._read()]

    def get(self, key: str) -> StateEntry | None:
        for entry in self.entries():
            if entry.key == key:
                return entry
        return None

    def expired(self, now: datetime | None = None) -> list[StateEntry]:
        """Snapshots older than the TTL at ``now`` (default: the clock)."""
        cutoff = (now or self.ctx.clock()) - timedelta(days=self.ctx.limits.state_ttl_days)
        return [entry for entry in self.entries() if entry.updated_at < cutoff]

    def reflex_lines(self, n: int | None = None) -> list[str]:
        """At most ``n`` one-line snapshots, newest first (default: the manifest's limit)."""
        limit = self.ctx.limits.state_prompt_max_lines_reflex if n is None else n
        newest = sorted(self.entries(), key=lambda entry: entry.updated_at, reverse=True)
        return [
            shorten(f"{entry.key}: {entry.text}", REFLEX_LINE_MAX_CHARS)
            for entry in newest[: max(limit, 0)]
        ]

    def check_text(self, text: str) -> str | None:
        """Why ``text``, written whole, would leave state.md over its caps (None if it
        fits). Writes nothing: a tool that edits the file as plain text asks this first."""
        size = len(text.encode("utf-8", "surrogateescape"))
        if size > STATE_FILE_MAX_BYTES:
            return (
                f"{self.store} would be {size} bytes, over its {STATE_FILE_MAX_BYTES}-byte cap: "
                "it holds short dated snapshots; keep longer notes in another file"
            )
        for section in SectionDocument.parse(text):
            if len(section.body) > STATE_ENTRY_MAX_CHARS:
                return (
                    f"snapshot {section.key!r} of {self.store} would be {len(section.body)} "
                    f"chars, over the {STATE_ENTRY_MAX_CHARS}-char cap of a snapshot"
                )
        return None

    def set(self, key: str, text: str) -> WriteResult:
        """Insert or replace the snapshot ``key`` (state_update)."""
        try:
            key = normalize_key(key)
            body = entry_text(
                text,
                limit=STATE_ENTRY_MAX_CHARS,
                hint="a state snapshot is a short line or two; save detail with memory_save",
                empty="text is empty; to drop a snapshot use remove with its key",
            )
            flags = flag(body)
            with self._edit() as doc:
                section = doc.get(key)
                action = "updated" if section is not None else "created"
                if section is None:
                    section = doc.append(doc.new_section(key))
                section.body = body
                section.meta["updated"] = format_ts(self.ctx.clock())
                flags.stamp(section.meta)
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)
        return WriteResult(
            ok=True, store=self.store, action=action, key=key, warnings=flags.warnings
        )

    def remove(self, key: str) -> WriteResult:
        """Drop one snapshot; its text goes to the archive."""
        try:
            key = normalize_key(key)
            with self._edit() as doc:
                section = doc.get(key)
                if section is None:
                    raise Refusal(
                        f"no state entry {key!r}; entries are: {', '.join(doc.keys()) or 'none'}"
                    )
                doc.sections = [item for item in doc if item is not section]
                archive = self._keep(ARCHIVE_KIND, [ArchivedText.of(section, "removed")])
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)
        return WriteResult(
            ok=True,
            store=self.store,
            action="removed",
            key=key,
            removed=(key,),
            archived=(key,),
            archive=archive,
        )

    def prune(self, now: datetime | None = None) -> list[StateEntry]:
        """Remove snapshots past the TTL (kept in the archive) and return them."""
        cutoff = (now or self.ctx.clock()) - timedelta(days=self.ctx.limits.state_ttl_days)
        with self._edit() as doc:
            fallback = self.mtime() or self.ctx.clock()
            expired = [s for s in doc if self._entry(s, fallback).updated_at < cutoff]
            if not expired:
                return []
            self._keep(ARCHIVE_KIND, [ArchivedText.of(section, "expired") for section in expired])
            doc.sections = [s for s in doc if all(s is not gone for gone in expired)]
        return [self._entry(section, fallback) for section in expired]

    def _entry(self, section: Section, fallback: datetime) -> StateEntry:
        updated = parse_ts(section.meta.get("updated")) or fallback
        return StateEntry(section.key, section.body, updated)
