"""knowledge.md's caps (notebook seed, section 3 and 8.8), and what keeps it under them.

A curated section is capped at ``MEMORY_MD_SECTION_MAX_CHARS`` (3000), all curated
text at ``MEMORY_MD_TOTAL_MAX_CHARS`` (15000), the buffer at ``OBSERVATIONS_MAX``
(500) observations. A write that would go over is compressed (``fit``), and refused
if still over; a file over a cap on disk (edited by hand) is reported (``cap_notices``)
and brought under by the next write (``enforce``): what changes goes to the archive
whole first, the oldest observations and least recently updated sections first.
"""

from __future__ import annotations

import heapq
import operator
from dataclasses import dataclass
from datetime import UTC, datetime

from memdir.config import Limits
from memdir.files.sections import Section, SectionDocument
from memdir.results import Notice
from memdir.stores.base import ArchivedText, Refusal
from memdir.stores.observations import OBSERVATIONS_KEY, KnowledgeParts, observations_doc
from memdir.textutil import compress, cut_point
from memdir.timeutil import Clock, parse_ts

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_META = operator.attrgetter("meta")
_KEY = operator.attrgetter("key")
_BODY = operator.attrgetter("body")
_DATE = operator.methodcaller("get", "date")


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


def usage_of(doc: SectionDocument, limits: Limits) -> KnowledgeUsage:
    _, sub = observations_doc(doc)
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


def why_over(store: str, usage: KnowledgeUsage) -> str | None:
    """Why a text with this ``usage`` may not be written whole to ``store``, or None."""
    if usage.over_sections:
        key = usage.over_sections[0]
        return (
            f"section {key!r} of {store} would be {usage.section_chars[key]} chars, over "
            f"the {usage.section_max}-char cap of a curated section; shorten it, or keep the "
            f"details as observations under ## {OBSERVATIONS_KEY} or in another file"
        )
    if usage.over_total:
        return (
            f"the curated sections of {store} would total {usage.total_chars} chars, over "
            f"the {usage.total_max}-char cap (## {OBSERVATIONS_KEY} not counted); shorten "
            "or remove a section first"
        )
    if usage.observations > usage.observations_max:
        return (
            f"{store} would hold {usage.observations} observations, over the cap of "
            f"{usage.observations_max}; remove old ones first"
        )
    return None


def cap_notices(store: str, usage: KnowledgeUsage) -> list[Notice]:
    """What is over a cap in the file as it is, and what the next write does about it."""
    notices = [
        Notice(
            store,
            f"section {key!r} is {usage.section_chars[key]} chars, over the "
            f"{usage.section_max}-char cap; the next write brings it under "
            "(the full text goes to the archive)",
        )
        for key in usage.over_sections
    ]
    if usage.over_total:
        notices.append(
            Notice(
                store,
                f"curated text is {usage.total_chars} chars, over the {usage.total_max}-char "
                "cap; the next write moves the least recently updated sections to the archive",
            )
        )
    if usage.empty_observations:
        notices.append(
            Notice(
                store,
                f"{usage.empty_observations} empty observations are ignored "
                "and pruned on the next write",
            )
        )
    if usage.observations > usage.observations_max:
        notices.append(
            Notice(
                store,
                f"{usage.observations} observations, over the cap of {usage.observations_max}; "
                "the next write moves the oldest to the archive",
            )
        )
    return notices


def fit(
    limits: Limits,
    store: str,
    doc: SectionDocument,
    target: Section | None,
    key: str,
    new: str,
    notes: list[str],
) -> str:
    """``new`` within the section and file caps (compressed if need be), or Refusal."""
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
            f"{limits.memory_md_total_max_chars}-char cap of {store}; nothing was "
            "written. Shorten or remove another section first"
        )
    return new


def enforce(
    parts: KnowledgeParts, limits: Limits, clock: Clock
) -> tuple[list[ArchivedText], list[str]]:
    """Bring a document edited by hand under the caps before a write."""
    archived: list[ArchivedText] = []
    notes: list[str] = []
    doc, sub = parts.doc, parts.observations
    bodies = list(map(str.strip, map(_BODY, sub.sections)))  # one C-level pass
    if "" in bodies:
        kept = [obs for obs, body in zip(sub.sections, bodies, strict=True) if body]
        notes.append(f"pruned {len(sub) - len(kept)} empty observations")
        sub.sections = kept
    trimmed = trim_observations(sub, None, limits, clock)
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
        notes.append(f"section {target.key!r} was over the cap; brought under, full text archived")
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


def trim_observations(
    sub: SectionDocument, keep: str | None, limits: Limits, clock: Clock
) -> list[ArchivedText]:
    """Take the oldest observations over ``observations_max`` out of ``sub`` (never
    ``keep``, the one being added; one without a date counts as made now)."""
    limit = limits.observations_max
    if len(sub) <= limit:
        return []
    now = clock()
    sections = sub.sections
    dates = map(parse_ts, map(_DATE, map(_META, sections)))
    moments = [moment or now for moment in dates]
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
