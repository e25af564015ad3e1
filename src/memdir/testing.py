"""Fakes for tests, shipped with the library so users can test their agents too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class FakeClock:
    """A clock that stands still until moved: pass it as ``memdir.open(path, clock=...)``."""

    def __init__(self, start: datetime | str = "2026-11-30T10:00:00Z") -> None:
        if isinstance(start, str):
            start = datetime.fromisoformat(start.replace("Z", "+00:00"))
        self.now = start if start.tzinfo else start.replace(tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        """Move forward by ``timedelta(**delta)``, e.g. ``clock.advance(days=8)``."""
        self.now += timedelta(**delta)
        return self.now
