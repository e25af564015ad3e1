"""One-time migration of the legacy files (notebook seed, section 3 "Migration").

- If ``MEMORY.md`` exists beside the knowledge file and ``knowledge.md`` does
  not: split it. Sections titled like a snapshot ("Current status", "Progress",
  "Silence counters") and lines that are dated, "silent", "current" or progress
  snapshots go to ``state.md``; everything else goes to ``knowledge.md``, its
  ``## _observations`` kept as observations.
- If ``memories.json`` exists: its entries become observations (each once, by
  its id, so a crash part-way and a rerun do not duplicate), then it is deleted.
- ``MEMORY.md`` is never written, moved or deleted; after migration memdir
  ignores it. Both steps are idempotent: each runs only while its trigger holds.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memdir.config import LEGACY_MEMORIES_JSON, LEGACY_MEMORY_MD
from memdir.errors import MigrationError
from memdir.files.sections import Section, SectionDocument, sanitize_body, strip_think
from memdir.stores.base import Refusal, read_text
from memdir.stores.knowledge import (
    OBSERVATION_TYPES,
    OBSERVATIONS_KEY,
    KnowledgeStore,
    new_observation_id,
    normalize_tags,
    observation_meta,
)
from memdir.stores.state import StateStore
from memdir.textutil import plural
from memdir.timeutil import Clock, format_ts, parse_ts

_SNAPSHOT_HEADING_RE = re.compile(
    r"\b(current|currently|status|progress|silent|silence|snapshot|right now|this week|today)\b",
    re.IGNORECASE,
)
_SNAPSHOT_LINE_RE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b"  # an ISO date
    r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b"  # 11/30/2026
    r"|\b(silent|silence|currently|current|in progress|progress|as of|today|this week)\b"
    r"|\b\d{1,3}\s?%",  # 60% done
    re.IGNORECASE,
)


@dataclass
class MigrationReport:
    knowledge_sections: int = 0
    observations: int = 0
    state_entries: int = 0
    json_entries: int = 0
    json_skipped: int = 0
    sources: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = []
        if LEGACY_MEMORY_MD in self.sources:
            sections = plural(self.knowledge_sections, "knowledge section")
            parts.append(
                f"{LEGACY_MEMORY_MD} split into {sections}, "
                f"{plural(self.observations, 'observation')} and "
                f"{plural(self.state_entries, 'state entry', 'state entries')}"
            )
        if LEGACY_MEMORIES_JSON in self.sources:
            skipped = f" ({self.json_skipped} empty skipped)" if self.json_skipped else ""
            parts.append(
                f"{LEGACY_MEMORIES_JSON}: {self.json_entries} entries became observations{skipped}"
            )
        return "; ".join(parts)


def migrate_legacy(
    knowledge: KnowledgeStore, state: StateStore | None, clock: Clock
) -> MigrationReport | None:
    """Run whichever migration is due (caller holds the folder lock); None if none was."""
    folder = knowledge.path.parent
    report = MigrationReport()
    legacy = folder / LEGACY_MEMORY_MD
    if legacy.is_file() and not knowledge.exists():
        _split_memory_md(legacy, knowledge, state, clock, report)
        report.sources.append(LEGACY_MEMORY_MD)
    memories = folder / LEGACY_MEMORIES_JSON
    if memories.is_file():
        _import_memories_json(memories, knowledge, clock, report)
        report.sources.append(LEGACY_MEMORIES_JSON)
    return report if report.sources else None


def _split_memory_md(
    legacy: Path,
    knowledge: KnowledgeStore,
    state: StateStore | None,
    clock: Clock,
    report: MigrationReport,
) -> None:
    source = SectionDocument.parse(read_text(legacy) or "")
    now = format_ts(clock())
    curated: list[Section] = []
    observations = SectionDocument(level=3)
    snapshots: list[tuple[str, str]] = []

    preamble = "\n".join(
        line
        for line in source.preamble.replace("\r\n", "\n").split("\n")
        if not line.startswith("# ")
    ).strip()
    if preamble:
        source.sections.insert(0, Section("general", preamble))

    for section in source:
        if section.key == OBSERVATIONS_KEY:
            for obs in SectionDocument.parse(section.body, level=3):
                if obs.body.strip():
                    observations.append(Section(obs.key, obs.body, obs.meta, level=3))
            continue
        body = strip_think(section.body).strip()
        if not body:
            continue
        if state is not None and _SNAPSHOT_HEADING_RE.search(section.key):
            snapshots.append((_slug(section.key), body))
            continue
        kept: list[str] = []
        for line in body.split("\n"):
            if state is not None and line.strip() and _SNAPSHOT_LINE_RE.search(line):
                text = line.strip().lstrip("-*+ ").strip()
                snapshots.append((f"{_slug(section.key)}-{len(snapshots) + 1}", text))
            else:
                kept.append(line)
        text = "\n".join(kept).strip()
        if text:
            curated.append(Section(section.key, sanitize_body(text), {"updated": now}))

    doc = SectionDocument(KnowledgeStore.STARTER.split("## ")[0])
    for curated_section in curated:
        doc.append(curated_section)
    doc.append(Section(OBSERVATIONS_KEY, observations.render()))
    knowledge.ctx.write(knowledge.relpath, doc.render())
    report.knowledge_sections = len(curated)
    report.observations = len(observations)

    if state is not None and snapshots:
        existing = state.ctx.read(state.relpath)
        state_doc = SectionDocument.parse(existing if existing is not None else StateStore.STARTER)
        for key, text in snapshots:
            unique, n = key, 1
            while state_doc.get(unique) is not None:
                n += 1
                unique = f"{key}-{n}"
            state_doc.append(state_doc.new_section(unique, text, {"updated": now}))
        state.ctx.write(state.relpath, state_doc.render())
        report.state_entries = len(snapshots)


def _import_memories_json(
    path: Path, knowledge: KnowledgeStore, clock: Clock, report: MigrationReport
) -> None:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MigrationError(f"{path} is not valid JSON ({exc}); it was left as it is") from exc
    if isinstance(data, dict):
        data = data.get("entries", data.get("memories", data.get("items")))
    if not isinstance(data, list):
        raise MigrationError(
            f"{path}: expected a list of entries (or an object with 'entries'); left as it is"
        )
    text = knowledge.ctx.read(knowledge.relpath)
    doc = SectionDocument.parse(text if text is not None else KnowledgeStore.STARTER)
    section = doc.get(OBSERVATIONS_KEY) or doc.append(doc.new_section(OBSERVATIONS_KEY))
    sub = SectionDocument.parse(section.body, level=3)
    for entry in data:
        content, obs_id, type_, moment, tags = _entry_fields(entry, clock)
        if not content:
            report.json_skipped += 1
            continue
        if sub.get(obs_id) is None:
            sub.append(Section(obs_id, content, observation_meta(type_, moment, tags), level=3))
        report.json_entries += 1
    section.body = sub.render()
    knowledge.ctx.write(knowledge.relpath, doc.render())
    path.unlink()


def _entry_fields(entry: object, clock: Clock) -> tuple[str, str, str, datetime, tuple[str, ...]]:
    if isinstance(entry, str):
        entry = {"content": entry}
    if not isinstance(entry, dict):
        return "", "", "note", clock(), ()
    raw = entry.get("content", entry.get("text", entry.get("memory", "")))
    content = strip_think(raw).strip() if isinstance(raw, str) else ""
    raw_id = str(entry.get("id", "")) or new_observation_id()
    obs_id = raw_id if raw_id.startswith("obs_") else "obs_legacy_" + re.sub(r"[^\w-]", "_", raw_id)
    type_ = entry.get("type", "note")
    type_ = type_ if type_ in OBSERVATION_TYPES else "note"
    stamp = entry.get("timestamp", entry.get("date", entry.get("createdAt")))
    moment = parse_ts(str(stamp)) if stamp is not None else None
    if moment is None and isinstance(stamp, (int, float)):
        with contextlib.suppress(OverflowError, OSError, ValueError):
            moment = datetime.fromtimestamp(stamp / 1000 if stamp > 1e11 else stamp).astimezone()
    metadata = entry.get("metadata")
    raw_tags = entry.get("tags", metadata.get("tags", []) if isinstance(metadata, dict) else [])
    try:
        tags = normalize_tags([str(tag) for tag in raw_tags] if isinstance(raw_tags, list) else ())
    except Refusal:
        tags = ()
    return content, obs_id, type_, moment or clock(), tags


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug or "state"
