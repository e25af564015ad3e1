"""A dream's plan: what to remove, merge and promote, checked before anything is applied.

The planner (offline or an LLM) sees at most ``max_entries`` observations as
``Entry``s and answers ``{remove: [ids], merge: [{ids, text}], promote:
[{section, text, ids}]}`` (notebook seed, section 8). ``parse_plan`` checks an
answer against that schema and against the entries it was given: unknown ids,
an id used twice, an empty text, a promotion into ``_observations`` are
problems; a plan with problems is rejected whole and changes nothing.

The specification's rule is conservative: an observation may leave the buffer
only as an exact duplicate of one that stays, or when a merge or a promotion
names it. ``conservative`` drops any other removal from a valid plan (and says
so); it never guesses.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jsonschema import Draft202012Validator

from memdir.stores.knowledge import OBSERVATIONS_KEY
from memdir.timeutil import format_ts

PREVIEW_CHARS = 300

PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "remove": {"type": "array", "items": {"type": "string"}},
        "merge": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "ids": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                    "text": {"type": "string", "minLength": 1},
                },
                "required": ["ids", "text"],
            },
        },
        "promote": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "section": {"type": "string", "minLength": 1},
                    "text": {"type": "string", "minLength": 1},
                    "ids": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                },
                "required": ["section", "text", "ids"],
            },
        },
    },
    "required": ["remove", "merge", "promote"],
}
_VALIDATOR = Draft202012Validator(PLAN_SCHEMA)


@dataclass(frozen=True)
class Entry:
    """One observation as a planner sees it."""

    id: str
    type: str
    date: datetime
    tags: tuple[str, ...]
    content: str

    @property
    def preview(self) -> str:
        text = " ".join(self.content.split())
        return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "date": format_ts(self.date),
            "tags": list(self.tags),
            "content": self.preview,
        }


@dataclass(frozen=True)
class Merge:
    ids: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class Promotion:
    section: str
    text: str
    ids: tuple[str, ...]
    fallback: tuple[Merge, ...] = ()
    """merges of duplicates inside this theme, applied if the promotion does not fit"""


@dataclass
class Plan:
    remove: list[str] = field(default_factory=list)
    merge: list[Merge] = field(default_factory=list)
    promote: list[Promotion] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """what the planner or the checks want the report to say"""

    @property
    def empty(self) -> bool:
        return not (self.remove or self.merge or self.promote)

    def restricted_to(self, unchanged: set[str]) -> Plan:
        """The parts of this plan that name only ``unchanged`` observations: the
        plan was made outside the lock, and an observation edited or deleted since
        must not be merged or promoted on what it said before."""
        merges = [m for m in self.merge if set(m.ids) <= unchanged]
        promotions = [
            Promotion(
                p.section, p.text, p.ids, tuple(m for m in p.fallback if set(m.ids) <= unchanged)
            )
            for p in self.promote
            if set(p.ids) <= unchanged
        ]
        removals = [i for i in self.remove if i in unchanged]
        dropped = (
            len(self.merge)
            - len(merges)
            + len(self.promote)
            - len(promotions)
            + len(self.remove)
            - len(removals)
        )
        notes = list(self.notes)
        if dropped:
            notes.append(
                f"left out {dropped} part{'s' if dropped > 1 else ''} of the plan: their "
                "observations changed while it was made"
            )
        return Plan(removals, merges, promotions, notes)

    def keeping_details(self, entries: list[Entry]) -> Plan:
        """The merges and promotions whose text keeps every number and name of the
        observations they cover; the others are left out (those observations stay),
        each with a note naming what its text dropped."""
        from memdir.dream.marks import missing_details

        by_id = {entry.id: entry.content for entry in entries}
        notes = list(self.notes)

        def keeps(ids: tuple[str, ...], text: str, what: str) -> bool:
            lost = missing_details([by_id[i] for i in ids if i in by_id], text)
            if lost:
                notes.append(f"left out {what}: its text drops {', '.join(lost[:5])}")
            return not lost

        merges = [m for m in self.merge if keeps(m.ids, m.text, f"a merge of {len(m.ids)}")]
        promotions = [
            p for p in self.promote if keeps(p.ids, p.text, f"a promotion into {p.section!r}")
        ]
        return Plan(list(self.remove), merges, promotions, notes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "remove": list(self.remove),
            "merge": [{"ids": list(m.ids), "text": m.text} for m in self.merge],
            "promote": [
                {"section": p.section, "text": p.text, "ids": list(p.ids)} for p in self.promote
            ],
        }


class PlanError(ValueError):
    """The planner's answer is not a usable plan; ``problems`` say why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def normalise(text: str) -> str:
    """Text compared for exact duplicates: case, accents, punctuation and spacing folded."""
    folded = unicodedata.normalize("NFKD", text).casefold()
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return " ".join(re.findall(r"\w+", folded))


def parse_plan(data: object, entries: list[Entry]) -> Plan:
    """``data`` (the planner's JSON) as a Plan over ``entries``, or PlanError."""
    problems = [
        f"{'/'.join(str(p) for p in error.absolute_path) or 'plan'}: {error.message}"
        for error in _VALIDATOR.iter_errors(data)
    ]
    if problems:
        raise PlanError(problems[:5])
    assert isinstance(data, dict)
    known = {entry.id for entry in entries}
    used: dict[str, str] = {}

    def claim(ids: list[str], where: str) -> None:
        for obs_id in ids:
            if obs_id not in known:
                problems.append(f"{where} names {obs_id!r}, which is not one of the entries")
            elif obs_id in used:
                problems.append(f"{obs_id} is used by both {used[obs_id]} and {where}")
            else:
                used[obs_id] = where

    plan = Plan()
    for n, item in enumerate(data["merge"]):
        ids = list(dict.fromkeys(item["ids"]))
        claim(ids, f"merge {n + 1}")
        text = item["text"].strip()
        if len(ids) < 2 or not text:
            problems.append(f"merge {n + 1} needs two or more ids and a text")
        plan.merge.append(Merge(tuple(ids), text))
    for n, item in enumerate(data["promote"]):
        ids = list(dict.fromkeys(item["ids"]))
        claim(ids, f"promotion {n + 1}")
        section = " ".join(item["section"].split())
        if section.casefold() == OBSERVATIONS_KEY or section.startswith("#"):
            problems.append(f"promotion {n + 1} must name a curated section, not {section!r}")
        if not item["text"].strip():
            problems.append(f"promotion {n + 1} has no text")
        plan.promote.append(Promotion(section, item["text"].strip(), tuple(ids)))
    removals = list(dict.fromkeys(data["remove"]))
    claim(removals, "remove")
    plan.remove = removals
    if problems:
        raise PlanError(problems[:5])
    return plan


def conservative(plan: Plan, entries: list[Entry]) -> Plan:
    """Keep only removals of exact duplicates of an observation that stays (seed rule)."""
    if not plan.remove:
        return plan
    by_id = {entry.id: entry for entry in entries}
    covered = {i for m in plan.merge for i in m.ids} | {i for p in plan.promote for i in p.ids}
    staying = {
        normalise(entry.content)
        for entry in entries
        if entry.id not in plan.remove and entry.id not in covered
    } | {normalise(m.text) for m in plan.merge}
    kept: list[str] = []
    refused: list[str] = []
    for obs_id in plan.remove:
        (kept if normalise(by_id[obs_id].content) in staying else refused).append(obs_id)
    if refused:
        plan.notes.append(
            f"kept {len(refused)} observations the plan would have removed: only exact "
            "duplicates, or observations a merge or promotion names, may leave the buffer"
        )
    plan.remove = kept
    return plan
