"""One edit of knowledge.md as a whole: what the dream cycle and its hygiene work with.

``KnowledgeStore.transaction()`` yields a ``KnowledgeEdit`` under the folder's
lock, with the file already brought under its caps. Whatever the edit takes out
(merged, promoted, duplicate or emptied observations, sections moved away) goes
to the archive in the same write; raising ``Refusal`` inside the block leaves
the file as it was.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from memdir.files.sections import Section, sanitize_body, strip_think
from memdir.stores.base import ArchivedText, Refusal, check_text, normalize_key
from memdir.stores.knowledge_caps import fit
from memdir.stores.observations import OBSERVATIONS_KEY, KnowledgeParts
from memdir.stores.validate import flag

if TYPE_CHECKING:
    from memdir.stores.knowledge import KnowledgeStore


class KnowledgeEdit:
    def __init__(
        self,
        store: KnowledgeStore,
        parts: KnowledgeParts,
        archived: list[ArchivedText],
        notes: list[str],
    ) -> None:
        self.store = store
        self.parts = parts
        self.archived = archived
        self.notes = notes
        self.archive: str | None = None
        """the archive file what this edit took out went to (set when the block ends)"""

    # -- reading ---------------------------------------------------------------------

    @property
    def observations(self) -> list[Section]:
        return list(self.parts.observations)

    @property
    def curated(self) -> list[Section]:
        return [s for s in self.parts.doc if s.key != OBSERVATIONS_KEY]

    def curated_chars(self) -> int:
        return sum(len(s.body) for s in self.curated)

    def text(self) -> str:
        """The file as this edit would write it now."""
        self.parts.commit()
        return self.parts.doc.render()

    # -- observations ----------------------------------------------------------------

    def take(self, ids: Iterable[str], reason: str) -> list[Section]:
        """Remove these observations from the buffer; their text goes to the archive."""
        wanted = set(ids)
        sub = self.parts.observations
        gone = [obs for obs in sub if obs.key in wanted]
        sub.sections = [obs for obs in sub if obs.key not in wanted]
        self.archived.extend(ArchivedText.of(obs, reason) for obs in gone)
        return gone

    def replace(
        self, ids: list[str], key: str, text: str, meta: dict[str, str], reason: str
    ) -> Section:
        """Put one observation where the first of ``ids`` was, and take them all out."""
        sub = self.parts.observations
        positions = [n for n, obs in enumerate(sub) if obs.key in set(ids)]
        at = positions[0] if positions else len(sub.sections)
        self.take(ids, reason)
        at = min(at, len(sub.sections))
        body = check_text(strip_think(text).strip(), "content")
        meta = dict(meta)
        flag(body).stamp(meta)
        entry = Section(key, body, meta, level=3)
        sub.sections.insert(at, entry)
        return entry

    # -- curated sections --------------------------------------------------------------

    def append(self, section: str, text: str, moment: datetime) -> tuple[str, str]:
        """Add ``text`` to a curated section (made if missing, above the buffer), within
        the section and file caps (compressed if need be), or raise Refusal."""
        from memdir.stores.knowledge import find_curated
        from memdir.timeutil import format_ts

        key = normalize_key(section, "section", "conventions")
        if key.casefold() == OBSERVATIONS_KEY:
            raise Refusal("_observations is the buffer, not a curated section")
        limit = self.store.ctx.limits.memory_md_total_max_chars
        body = check_text(sanitize_body(strip_think(text)), "text", limit=limit).strip()
        if not body:
            raise Refusal(f"nothing to add to section {key!r}")
        doc = self.parts.doc
        target = find_curated(doc, key)
        old = target.body.rstrip() if target is not None else ""
        new = f"{old}\n{body}" if old else body
        new = fit(self.store.ctx.limits, self.store.store, doc, target, key, new, self.notes)
        action = "updated"
        if target is None:
            target = doc.new_section(key)
            position = doc.index(OBSERVATIONS_KEY)
            doc.insert(len(doc) if position is None else position, target)
            action = "created"
        target.body = new
        target.meta["updated"] = format_ts(moment)
        flag(new).stamp(target.meta)
        return target.key, action

    def pop_section(self, key: str) -> Section | None:
        """Take a curated section out of the file (the caller puts it somewhere else)."""
        doc = self.parts.doc
        found = next((s for s in doc if s.key == key and key != OBSERVATIONS_KEY), None)
        if found is not None:
            doc.sections = [s for s in doc if s is not found]
        return found

    def keep_in_archive(self, section: Section, reason: str) -> None:
        self.archived.append(ArchivedText.of(section, reason))
