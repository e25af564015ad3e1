"""Lessons learned: ``lessons.md`` (workspace layout: ``memory/lessons-learned.md``).

    # Lessons Learned

    ## Discord API
    - **Mistake:** Tried to send an embed with an empty field value
      **What happened:** The API returned 400; field values must be non-empty
      **Rule:** Validate embed fields are non-empty before sending

Rules (workspace seed, "Lessons Learned"): log the mistake, what happened and
the rule, by category, the moment the fix is known; search them before anything
tricky (``Memory.search(..., layers=[lessons])``, ``memdir lessons check``);
never prune: there is no delete, and the same lesson twice is written once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memdir.config import OBSERVATION_MAX_CHARS
from memdir.results import WriteResult
from memdir.stores.base import Refusal, SectionFileStore, normalize_key
from memdir.stores.validate import flag, one_line

_FIELD_RE = re.compile(r"\*\*(Mistake|What happened|Rule|Learned):\*\*\s*(.*)")


@dataclass(frozen=True)
class Lesson:
    category: str
    mistake: str
    what_happened: str
    rule: str
    text: str


def split_entries(body: str) -> list[str]:
    """A category's entries: each starts at a ``- `` line in the first column."""
    entries: list[str] = []
    for line in body.splitlines():
        if line.startswith("- ") or not entries:
            entries.append(line)
        else:
            entries[-1] += "\n" + line
    return [entry for entry in entries if entry.strip()]


def _one_line(value: object, what: str) -> str:
    empty = f"{what} is empty; a lesson needs the mistake, what happened and the rule"
    hint = "a lesson is a sentence or two"
    return one_line(value, what, empty=empty, limit=OBSERVATION_MAX_CHARS, hint=hint)


class LessonsStore(SectionFileStore):
    STARTER = "# Lessons Learned\n"

    def entries(self) -> list[Lesson]:
        found = []
        for section in self._read():
            for entry in split_entries(section.body):
                fields = {m.group(1): m.group(2).strip() for m in _FIELD_RE.finditer(entry)}
                found.append(
                    Lesson(
                        category=section.key,
                        mistake=fields.get("Mistake", ""),
                        what_happened=fields.get("What happened", ""),
                        rule=fields.get("Rule", fields.get("Learned", "")),
                        text=entry,
                    )
                )
        return found

    def add(self, category: str, mistake: str, what_happened: str, rule: str) -> WriteResult:
        """Log a lesson under ``category`` (created if new)."""
        try:
            fields = (
                _one_line(mistake, "mistake"),
                _one_line(what_happened, "what happened"),
                _one_line(rule, "rule"),
            )
            entry = (
                f"- **Mistake:** {fields[0]}\n  **What happened:** {fields[1]}\n"
                f"  **Rule:** {fields[2]}"
            )
            return self._append(category, entry, fields[0])
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)

    def add_learning(self, category: str, text: str, source: str | None = None) -> WriteResult:
        """Log a plain learning (what a compressed journal day taught), not a mistake."""
        try:
            line = _one_line(text, "the learning")
            suffix = f" (from {source})" if source else ""
            return self._append(category, f"- **Learned:** {line}{suffix}", line)
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)

    def _append(self, category: str, entry: str, identity: str) -> WriteResult:
        key = normalize_key(category, "category", "Discord API")
        flags = flag(entry)
        with self._edit() as doc:
            # "api" is the file's "## API", not a second category beside it
            same = [known.key for known in doc if known.key.casefold() == key.casefold()]
            key = key if key in same or not same else same[0]
            section = doc.get(key)
            if section is None:
                section = doc.append(doc.new_section(key))
            known = {m.group(2).strip() for m in _FIELD_RE.finditer(section.body)}
            if identity in known:
                return WriteResult(
                    ok=True,
                    store=self.store,
                    action="unchanged",
                    key=key,
                    notes=("this lesson is already logged in that category",),
                )
            section.body = f"{section.body}\n{entry}" if section.body else entry
            flags.add_to(section.meta)
        return WriteResult(
            ok=True, store=self.store, action="updated", key=key, warnings=flags.warnings
        )
