"""Timestamps as memory files spell them: UTC, ISO 8601, seconds, ``Z``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

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
    moment = moment.astimezone(UTC)
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}Z"  # %Y writes year 1 as "1" on Linux


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


def moment_argument(
    value: datetime | str | None, name: str, *, whole_day: bool = False
) -> datetime | None:
    """An API's date argument (``since``, ``until``): a datetime, a date string, or None;
    ValueError naming ``name`` for anything else. ``whole_day``: a day without a time
    (``2026-11-30``) is its last second, so that a bound "on or before this day" holds
    the day's items (its midnight left them out)."""
    if value is None or isinstance(value, datetime):
        return value
    moment = parse_ts(value)
    if moment is None:
        raise ValueError(f"{name} must be a date such as 2026-11-30, not {value!r}")
    if whole_day and _is_day(value):
        return moment + timedelta(days=1, seconds=-1)
    return moment


def _is_day(text: str) -> bool:
    try:
        date.fromisoformat(text.strip())
    except ValueError:
        return False
    return True


def check_window(since: datetime | None, until: datetime | None) -> None:
    """ValueError if ``since`` is later than ``until``: nothing is dated in such a window,
    and its empty answer would look like a memory with nothing in it. Compared as the
    queries compare them (``format_ts``: UTC, to the second)."""
    if since is None or until is None:
        return
    start, end = format_ts(since), format_ts(until)
    if start > end:
        raise ValueError(
            f"since ({_day(start)}) is later than until ({_day(end)}); nothing is dated "
            "between them: give the earlier moment as since"
        )


def _day(stamp: str) -> str:
    """A ``format_ts`` stamp as a day when it is a day's first or last second."""
    return stamp.removesuffix("T00:00:00Z").removesuffix("T23:59:59Z")
