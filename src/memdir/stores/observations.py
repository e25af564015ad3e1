"""The observation buffer of knowledge.md: ``## _observations``, one ``###`` a raw fact.

    ## _observations
    ### obs_1764496800000_a1b2c3
    <!-- type: fact; date: 2026-11-30T10:00:00Z; tags: billing, api -->
    The billing API rate limit is 50 requests per second.

An observation's id is ``obs_<epoch ms>_<6 hex>``: unique across processes and, within
one, in the order they were made. Its metadata is its type (``OBSERVATION_TYPES``), its
date and at most ``MAX_TAGS`` tags. An edit of knowledge.md parses the buffer once
(``KnowledgeParts``) and puts it back at the end (``KnowledgeParts.commit``).
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

from memdir.files.sections import Section, SectionDocument
from memdir.stores.base import Refusal, check_secrets, clean_meta_value
from memdir.stores.validate import blank
from memdir.timeutil import format_ts, parse_ts

OBSERVATIONS_KEY = "_observations"
ObservationType = Literal["fact", "note", "insight", "task_result", "conversation"]
OBSERVATION_TYPES: tuple[str, ...] = get_args(ObservationType)
MAX_TAGS = 20


@dataclass(frozen=True)
class Observation:
    id: str
    content: str
    type: ObservationType
    date: datetime
    tags: tuple[str, ...]


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
        if not blank(tag) and tag not in result:  # an empty or invisible tag: none
            result.append(tag)
    if len(result) > MAX_TAGS:
        raise Refusal(f"{len(result)} tags given; use at most {MAX_TAGS}")
    return tuple(result)


def parse_ids(raw: object) -> list[str]:
    """Observation ids from a list of strings or one string (commas or spaces between)."""
    if isinstance(raw, str):
        return [part for part in re.split(r"[\s,]+", raw) if part]
    if isinstance(raw, (list, tuple)) and all(isinstance(item, str) for item in raw):
        return [item.strip() for item in raw if item.strip()]
    raise Refusal("ids must be a list of observation ids such as ['obs_1764496800000_a1b2c3']")


def observation_of(section: Section, fallback: datetime) -> Observation:
    """The ``Observation`` a ``###`` section holds (``fallback``: its date if it has none)."""
    raw_type = section.meta.get("type", "note")
    type_: ObservationType = raw_type if raw_type in OBSERVATION_TYPES else "note"  # type: ignore[assignment]
    tags = tuple(tag.strip() for tag in section.meta.get("tags", "").split(",") if tag.strip())
    date = parse_ts(section.meta.get("date")) or fallback
    return Observation(section.key, section.body, type_, date, tags)


def observations_doc(doc: SectionDocument) -> tuple[Section | None, SectionDocument]:
    """The ``## _observations`` section of ``doc`` (None if missing) and its ``###``s."""
    section = doc.get(OBSERVATIONS_KEY)
    if section is None:
        return None, SectionDocument(level=3)
    return section, SectionDocument.parse(section.body, level=3)


class KnowledgeParts:
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
