"""What a search returns: ``Hit`` (one item, where it is and why it ranked) and
``Hits`` (the list, best first, and how the search found it: widened to the colder
tiers, how many hits those tiers hold beyond it, or a listing for an empty query).

``Hits`` is a ``list[Hit]``: ``Memory.search`` callers loop, index and compare it as a
plain list; what the search did is in its attributes and ``report()``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from memdir.index.words import Marker
from memdir.tiers import MODE_TIERS, TIERS
from memdir.timeutil import format_ts


@dataclass(frozen=True)
class Hit:
    path: str
    anchor: str
    kind: str
    layer: str
    title: str
    line_start: int
    line_end: int
    score: float
    keyword: float | None
    """BM25 score (higher is better) if the keyword search found it"""
    semantic: float | None
    """cosine to the query if the semantic search found it"""
    relevance: float
    tier: str
    date: datetime | None
    tags: tuple[str, ...]
    body: str = field(default="", repr=False, compare=False)
    """the item's text, what the snippet is cut from"""
    marker: Marker = field(default_factory=lambda: Marker([]), repr=False, compare=False)
    """the query's words, what the snippet marks"""

    @classmethod
    def made(cls, fields: dict[str, Any]) -> Hit:
        """The hit holding ``fields`` (every field's value, by name), as ``Hit(**fields)``
        makes it, for a fifth of the time: a frozen dataclass's ``__init__`` sets each
        field through ``object.__setattr__`` (10 us a hit, a tenth of a search's own
        time at k = 100), and does nothing else that this leaves out."""
        hit = cls.__new__(cls)
        hit.__dict__.update(fields)
        return hit

    @cached_property
    def snippet(self) -> str:
        """A window of the item's text around the query's words, each marked ``**so**``:
        cut when first read, so a search asked for 100 hits does not cut 100 snippets
        for a caller that reads only where they are."""
        return self.marker.snippet(self.body)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "anchor": self.anchor,
            "kind": self.kind,
            "layer": self.layer,
            "title": self.title,
            "lines": [self.line_start, self.line_end],
            "snippet": self.snippet,
            "score": round(self.score, 6),
            "parts": {
                "keyword": None if self.keyword is None else round(self.keyword, 4),
                "semantic": None if self.semantic is None else round(self.semantic, 4),
                "relevance": round(self.relevance, 4),
            },
            "tier": self.tier,
            "date": format_ts(self.date) if self.date else None,
            "tags": list(self.tags),
        }


class Hits(list[Hit]):
    """A search's hits, best first, and how the search found them.

    A list, so ``Memory.search`` callers loop, index and compare as before. ``mode`` is
    the mode asked for; ``widened``: the normal radius held no strong hit, so the colder
    tiers' hits are ranked in too; ``colder``: hits the colder tiers hold that this list
    (not widened) leaves out, ``None`` where nothing was counted (heartbeat, deep);
    ``listing``: an empty query, the most recent observations and no ranking at all.
    """

    def __init__(
        self,
        hits: Iterable[Hit] = (),
        *,
        mode: str = "normal",
        widened: bool = False,
        colder: int | None = None,
        listing: bool = False,
    ) -> None:
        super().__init__(hits)
        self.mode = mode
        self.widened = widened
        self.colder = colder
        self.listing = listing

    @property
    def radius(self) -> tuple[str, ...]:
        """The tiers the mode searches first, in the specification's order."""
        return tuple(tier for tier in TIERS if tier in MODE_TIERS.get(self.mode, TIERS))

    @property
    def beyond(self) -> tuple[str, ...]:
        """The tiers past the mode's radius."""
        return tuple(tier for tier in TIERS if tier not in self.radius)

    def to_dicts(self) -> list[dict[str, Any]]:
        """Each hit's JSON shape; a listing's without scores (nothing was matched)."""
        dicts = [hit.to_dict() for hit in self]
        if self.listing:
            for data in dicts:
                del data["score"], data["parts"]
        return dicts

    def report(self) -> dict[str, Any]:
        """What a result adds beside its hits: only what there is to say, and a sentence."""
        found: dict[str, Any] = {}
        if self.listing:
            found["listing"] = True
        if self.widened:
            found["widened"] = list(self.beyond)
        if self.colder:
            found["colder"] = self.colder
        sentence = self.sentence("mode 'deep'")
        if sentence:
            found["note"] = sentence
        return found

    def sentence(self, deep: str) -> str | None:
        """The search's outcome in words, ``deep`` naming how to ask for every tier."""
        if self.listing:
            return "An empty query: listing the most recent observations, newest first."
        if self.widened and not self:
            return "No hits in any tier."
        if self.widened:
            return (
                f"Nothing strong in the {_and(self.radius)} tiers: searched the "
                f"{_and(self.beyond)} tiers too (each hit names its tier)."
            )
        if self.colder:
            return f"{self.colder} more in colder tiers ({_and(self.beyond)}): {deep} shows them."
        return None


def _and(names: Iterable[str]) -> str:
    listed = list(names)
    return ", ".join(listed[:-1]) + " and " + listed[-1] if len(listed) > 1 else "".join(listed)
