"""Typed results of memdir's writes and reports.

A write returns a ``WriteResult``: ``ok`` with what happened, or ``ok=False``
with a ``reason`` a model can act on. Either way it names the file it was for
(``store``), so an agent never has to guess a path. ``to_dict`` gives the
structured form tools hand back, ``{ok, status, store, ...}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memdir.errors import WriteRefused

Progress = Callable[[int, int], None]
"""``step(done, total)``: how long jobs (reindex, decay, ingest) report their progress."""


@dataclass(frozen=True)
class WriteResult:
    ok: bool
    store: str
    action: str
    """created | updated | saved | removed | cleared | unchanged | refused"""
    reason: str | None = None
    key: str | None = None
    """the section key or observation id written"""
    archived: tuple[str, ...] = ()
    """keys or ids this write moved to the archive (evicted, trimmed, overflow)"""
    archive: str | None = None
    """the archive file they went to"""
    removed: tuple[str, ...] = ()
    """keys or ids removed on request"""
    missing: tuple[str, ...] = ()
    """keys or ids asked for that did not exist"""
    notes: tuple[str, ...] = ()
    """sentences about side effects: evictions, compression, repairs"""
    warnings: tuple[str, ...] = ()
    """sentences about what was saved but should be looked at: text that reads as
    instructions to the model (saved, flagged, shown to the model as a quoted note)"""

    @classmethod
    def refused(cls, store: str, reason: str) -> WriteResult:
        return cls(ok=False, store=store, action="refused", reason=reason)

    def raise_for_refusal(self) -> WriteResult:
        """Return self if ok, else raise ``WriteRefused``."""
        if not self.ok:
            raise WriteRefused(self.store, self.reason or "refused")
        return self

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "ok": self.ok,
            "status": "ok" if self.ok else "error",
            "store": self.store,
            "action": self.action,
        }
        for name in ("reason", "key", "archive"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        for name in ("archived", "removed", "missing", "notes", "warnings"):
            value = getattr(self, name)
            if value:
                data[name] = list(value)
        return data


@dataclass(frozen=True)
class Notice:
    """Something found when a store was read: over a cap, an empty entry, a migration."""

    store: str
    message: str
    logged: bool = field(default=False, compare=False, repr=False)
    """already said on stderr through logging (a damaged database set aside): the
    command line does not print it again"""

    def __str__(self) -> str:
        return f"{self.store}: {self.message}"
