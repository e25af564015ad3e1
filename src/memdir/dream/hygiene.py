"""knowledge.md hygiene (the seed's ``pruneMemoryMd``), run at the start of every dream.

- ``## daily-report-*`` sections leave knowledge.md for the daily logs (the
  journal's day they name, else today's); with no journal layer they go to the
  archive. Either way nothing is lost.
- Leaked ``<think>`` blocks are stripped from curated sections and observations.
- Empty observations are dropped (to the archive, as every removal).
- Caps: the transaction brings the file under them before anything else.
"""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING

from memdir.files.sections import Section, strip_think
from memdir.stores.knowledge_edit import KnowledgeEdit

if TYPE_CHECKING:
    from memdir.memory import Memory

DAILY_REPORT_RE = re.compile(r"^daily-report\b", re.IGNORECASE)
_DAY_RE = re.compile(r"(\d{4}-\d{2}-\d{2})")


def clean(memory: Memory, edit: KnowledgeEdit, *, dry_run: bool) -> list[str]:
    """Tidy knowledge.md inside ``edit``; return what was done, one sentence each."""
    notes: list[str] = []
    reports = [s for s in edit.curated if DAILY_REPORT_RE.match(s.key)]
    for section in reports:
        edit.pop_section(section.key)
        where = "" if dry_run else _to_daily_log(memory, edit, section)
        notes.append(f"moved section {section.key!r} out of knowledge.md{where}")
    stripped = 0
    for section in [*edit.curated, *edit.observations]:
        if "<think" in section.body.lower():
            section.body = strip_think(section.body).strip()
            stripped += 1
    if stripped:
        notes.append(f"stripped leaked <think> blocks from {stripped} entries")
    empty = [obs.key for obs in edit.observations if not obs.body.strip()]
    if empty:
        edit.take(empty, "empty")
        notes.append(f"dropped {len(empty)} empty observations")
    return notes


def _to_daily_log(memory: Memory, edit: KnowledgeEdit, section: Section) -> str:
    found = _DAY_RE.search(section.key)
    try:
        day = date.fromisoformat(found.group(1)) if found else memory.clock().date()
    except ValueError:
        day = memory.clock().date()
    if memory.has("journal"):
        written = memory.journal.add_section(day, section.key, section.body, dict(section.meta))
        if written.ok:
            return f" to {written.store}"
    edit.keep_in_archive(section, "daily-report")
    return " to the archive"
