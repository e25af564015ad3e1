"""Applying a checked plan to knowledge.md, inside one transaction.

Merges replace their group by one observation (the newest date, the union of
tags, the most telling type, and a ``merged`` field naming the ids it
replaces). Promotions add to curated sections above ``_observations`` within
the caps; a promotion that does not fit is refused and its observations stay.
Removals (exact duplicates only, see ``plan.conservative``) leave the buffer.
Everything taken out goes to the archive. A result that would leave less than
``1 - max_curated_drop`` of the curated text is rejected whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memdir.dream.plan import Entry, Merge, Plan
from memdir.stores.base import Refusal
from memdir.stores.knowledge import MAX_TAGS, new_observation_id, observation_meta
from memdir.stores.knowledge_edit import KnowledgeEdit

TYPE_RANK = ("fact", "insight", "task_result", "note", "conversation")


@dataclass
class Applied:
    merged: list[dict[str, Any]] = field(default_factory=list)
    promoted: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def apply_plan(
    edit: KnowledgeEdit,
    plan: Plan,
    entries: Sequence[Entry],
    moment: datetime,
    *,
    max_curated_drop: float,
) -> Applied:
    """Apply ``plan`` inside ``edit``; raise Refusal to reject it whole."""
    by_id = {entry.id: entry for entry in entries}
    present = {obs.key for obs in edit.observations}
    done = Applied()
    before = edit.curated_chars()

    def merge(merge: Merge) -> None:
        ids = [i for i in merge.ids if i in present]
        if len(ids) < 2:
            return
        members = [by_id[i] for i in ids]
        meta = observation_meta(_type(members), max(m.date for m in members), _tags(members))
        meta["merged"] = " ".join(ids)
        new_id = new_observation_id()
        edit.replace(ids, new_id, merge.text, meta, "merged")
        present.difference_update(ids)
        done.merged.append({"ids": ids, "into": new_id, "text": merge.text})

    for item in plan.merge:
        merge(item)
    for promotion in plan.promote:
        ids = [i for i in promotion.ids if i in present]
        try:
            key, action = edit.append(promotion.section, promotion.text, moment)
        except Refusal as refusal:
            done.refused.append(
                {"section": promotion.section, "ids": ids, "reason": refusal.reason}
            )
            for item in promotion.fallback:  # its duplicates still merge
                merge(item)
            continue
        edit.take(ids, "promoted")
        done.promoted.append({"section": key, "action": action, "ids": ids})
    removable = [i for i in plan.remove if i in present]
    if removable:
        edit.take(removable, "duplicate")
        done.removed = removable
    after = edit.curated_chars()
    if before and after < (1 - max_curated_drop) * before:
        raise Refusal(
            f"the plan would leave {after} of {before} chars of curated knowledge, dropping "
            f"more than {max_curated_drop:.0%}; rejected whole, nothing changed"
        )
    return done


def _type(members: list[Entry]) -> str:
    ranked = sorted(
        (m.type for m in members),
        key=lambda t: TYPE_RANK.index(t) if t in TYPE_RANK else len(TYPE_RANK),
    )
    return ranked[0] if ranked else "note"


def _tags(members: list[Entry]) -> tuple[str, ...]:
    tags: list[str] = []
    for member in members:
        for tag in member.tags:
            if tag not in tags:
                tags.append(tag)
    return tuple(tags[:MAX_TAGS])
