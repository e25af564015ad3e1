"""Tiers and relevance: the vault specification's forgetting curve, for any dated item.

    relevance = max(floor, 1 - days_since x rate)          (rate 0.015, floor 0.1)
    tier      = active (0-7 days) | warm (8-21) | cold (22-60) | archive (60+)

``core`` is never computed: it is set by hand (or pinned by kind: identity,
curated knowledge, the notebook) and never decays. An item set in a colder tier
(the archive folder's) is never more relevant than the tier's first day.

Search modes choose tiers: heartbeat (core, active), normal (and warm; it widens
to cold and archive when nothing there is strong, see ``memdir.index.search``),
deep (all). What loads at boot and what a heartbeat checks never widens.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from memdir.config import Decay

Tier = Literal["core", "active", "warm", "cold", "archive"]
TIERS: tuple[Tier, ...] = ("core", "active", "warm", "cold", "archive")
Mode = Literal["heartbeat", "normal", "deep"]
MODE_TIERS: dict[str, frozenset[str]] = {
    "heartbeat": frozenset({"core", "active"}),
    "normal": frozenset({"core", "active", "warm"}),
    "deep": frozenset(TIERS),
}


def days_since(moment: datetime, now: datetime) -> float:
    return max((now - moment).total_seconds() / 86400.0, 0.0)


def relevance(days: float, decay: Decay) -> float:
    return max(decay.floor, 1.0 - days * decay.rate)


def tier_for(days: float, decay: Decay) -> Tier:
    whole = int(days)
    if whole <= decay.active_days:
        return "active"
    if whole <= decay.warm_days:
        return "warm"
    if whole <= decay.cold_days:
        return "cold"
    return "archive"


def tier_ceiling(tier: str, decay: Decay) -> float:
    """The most relevance an item of ``tier`` can have: its first day in the tier. An item
    placed in a tier by where it lives (the archive) is never fresher than the tier says,
    whatever its own date; a tier memdir does not know caps nothing."""
    first_day = {
        "warm": decay.active_days + 1,
        "cold": decay.warm_days + 1,
        "archive": decay.cold_days + 1,
    }.get(tier)
    return 1.0 if first_day is None else relevance(first_day, decay)


def max_age_days(mode: str, decay: Decay) -> int | None:
    """The oldest an unpinned item may be to show in ``mode`` (None: any age)."""
    if mode == "heartbeat":
        return decay.active_days
    if mode == "normal":
        return decay.warm_days
    return None
