"""Timestamps as memory files spell them: UTC, ISO 8601, seconds, ``Z``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, date, datetime

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")  # fmt: skip
"""English day and month names, lower case (spelled out: strptime's %A and %B follow
the process locale)."""

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def format_ts(moment: datetime) -> str:
    """``2026-11-30T10:00:00Z``"""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_ts(text: str | None) -> datetime | None:
    """Read a timestamp or a date as written by hand or by memdir; None if unreadable."""
    return _parse_ts(text) if text else None


@functools.lru_cache(maxsize=8192)  # the same few stamps are read again at every write
def _parse_ts(text: str) -> datetime | None:
    value = text.strip()
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        try:
            day = date.fromisoformat(value)
        except ValueError:
            return None
        moment = datetime(day.year, day.month, day.day)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def moment_argument(value: datetime | str | None, name: str) -> datetime | None:
    """An API's date argument (``since``, ``until``): a datetime, a date string, or None;
    ValueError naming ``name`` for anything else."""
    if value is None or isinstance(value, datetime):
        return value
    moment = parse_ts(value)
    if moment is None:
        raise ValueError(f"{name} must be a date such as 2026-11-30, not {value!r}")
    return moment


def check_window(since: datetime | None, until: datetime | None) -> None:
    """ValueError if ``since`` is later than ``until``: nothing is dated in such a window,
    and its empty answer would look like a memory with nothing in it. Compared as the
    queries compare them (``format_ts``: UTC, to the second)."""
    if since is None or until is None:
        return
    start, end = format_ts(since), format_ts(until)
    if start > end:
        start, end = start.removesuffix("T00:00:00Z"), end.removesuffix("T00:00:00Z")
        raise ValueError(
            f"since ({start}) is later than until ({end}); nothing is dated between them: "
            "give the earlier moment as since"
        )
