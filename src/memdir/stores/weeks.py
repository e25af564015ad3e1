"""Weeks as the research-intel file names them: Monday to Sunday, labelled
``Feb 10-16, 2025``, ``Jan 27-Feb 2``, ``Dec 29, 2025-Jan 4, 2026``."""

from __future__ import annotations

import re
from datetime import date, timedelta

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH = {name.lower(): number for number, name in enumerate(_MONTHS, 1)}
_WEEK_RE = re.compile(
    r"(?P<m1>[A-Za-z]{3})[a-z]*\.?\s+(?P<d1>\d{1,2})(?:,?\s*(?P<y1>\d{4}))?\s*[-–—]\s*"
    r"(?:(?P<m2>[A-Za-z]{3})[a-z]*\.?\s+)?(?P<d2>\d{1,2})(?:,?\s*(?P<y2>\d{4}))?"
)

Week = tuple[date, date]


def week_of(day: date) -> Week:
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=6)


def parse_week(label: str, reference: date) -> Week | None:
    """'Feb 10-16, 2025', 'Jan 27-Feb 2', 'Dec 29, 2025-Jan 4, 2026' -> (start, end).

    A label without a year is the latest such week starting on or before ``reference``.
    """
    match = _WEEK_RE.fullmatch(label.strip())
    if not match:
        return None
    month1 = _MONTH.get(match["m1"].lower(), 0)
    month2 = _MONTH.get((match["m2"] or match["m1"]).lower(), 0)
    d1, d2 = int(match["d1"]), int(match["d2"])
    if match["y1"]:
        years = [int(match["y1"])]
    elif match["y2"]:
        years = [int(match["y2"]) - (1 if month1 > month2 else 0)]
    else:
        years = [reference.year + 1, reference.year, reference.year - 1, reference.year - 2]
    for year in years:
        try:  # an unknown month is 0, which date() refuses
            start = date(year, month1, d1)
            end_year = int(match["y2"]) if match["y2"] else year + (month2 < month1)
            end = date(end_year, month2, d2)
        except ValueError:
            continue
        if 0 <= (end - start).days <= 13 and (len(years) == 1 or start <= reference):
            return start, end
    return None


def week_label(week: Week, *, year: bool = True) -> str:
    start, end = week
    first = f"{_MONTHS[start.month - 1]} {start.day}"
    last = str(end.day) if end.month == start.month else f"{_MONTHS[end.month - 1]} {end.day}"
    if not year:
        return f"{first}-{last}"
    if start.year != end.year:
        return f"{first}, {start.year}-{last}, {end.year}"
    return f"{first}-{last}, {end.year}"
