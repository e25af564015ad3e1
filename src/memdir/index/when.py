"""Time words in a query, resolved to the dates an answer's item would carry.

"What did Dave open in May 2023?", "where was Calvin in the last week of October",
"the test score from yesterday": a query naming a time says when the memory it
wants was written. ``time_windows`` turns those words into windows of dates
(against the query's moment for the relative ones), and the ranking weighs up an
item whose own date falls in one (``Ranking.date_boost``).

Read:
- a month with a year ("May 2023", "23 January, 2023"): that month;
- a day with its month and year ("on 9 February, 2023", "September 8, 2023",
  "1st September 2023"): that day too, a ``day`` window inside the month's, which
  runs on for ``DAY_LAG_DAYS`` only (the ranking weighs an item in both up twice);
- a month named as a time ("in August", "during March", "the last week of
  October", "8 May"): that month in any year. A month word on its own is not read
  ("march", "may" are verbs more often than months);
- a year named as a time ("in 2022", "during 2021"): that year;
- relative words against the query's moment: "yesterday", "last night", "last
  week", "last month", "last year" (not "the last week of August"), "N
  days/weeks/months ago".

Each window runs on past its end by ``LAG_DAYS``: people tell of an event in the
days after it ("what did we do in August" is told in early September).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memdir.timeutil import MONTHS

LAG_DAYS = 14
"""a window runs on this many days past its end: an event is told of after it"""
DAY_LAG_DAYS = 2
"""a day's window runs on this many days past it (the day named is usually the day told)"""
_TIME_WORDS = frozenset(
    [
        "in",
        "during",
        "of",
        "early",
        "late",
        "mid",
        "since",
        "until",
        "by",
        "before",
        "after",
        "around",
        "the",
        "last",
        "first",
    ]
)
_YEAR_RE = re.compile(r"(19|20)\d\d")
_DAY_RE = re.compile(r"([1-9]|[12]\d|3[01])(st|nd|rd|th)?")
_UNITS = {"day": 1, "days": 1, "week": 7, "weeks": 7, "month": 30, "months": 30}
_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "couple": 2}


@dataclass(frozen=True)
class Window:
    """Dates from ``start`` up to ``end``; with ``month`` set, that month in any year."""

    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None
    day: bool = False
    """a single day (``start``), named with its month and year"""

    def holds(self, moment: datetime) -> bool:
        if self.month is not None:
            for year in (moment.year, moment.year - 1):
                first = datetime(year, self.month, 1, tzinfo=UTC)
                if first <= moment < _month_end(first) + timedelta(days=LAG_DAYS):
                    return True
            return False
        assert self.start is not None and self.end is not None
        lag = DAY_LAG_DAYS if self.day else LAG_DAYS
        return self.start <= moment < self.end + timedelta(days=lag)


def _month_end(first: datetime) -> datetime:
    return (first + timedelta(days=32)).replace(day=1)


def time_windows(tokens: list[str], now: datetime) -> list[Window]:
    """The windows the query's time words name; ``tokens``: its words, lower case, in
    order (stopwords kept: "in", "of" and "the" say a month is a time)."""
    windows: list[Window] = []
    for at, token in enumerate(tokens):
        before = tokens[at - 1] if at else ""
        after = tokens[at + 1] if at + 1 < len(tokens) else ""
        if token in MONTHS:
            month = MONTHS.index(token) + 1
            later = tokens[at + 2] if at + 2 < len(tokens) else ""
            # "8 May 2023" (the day before), "May 8, 2023" (the day between)
            day, year = (before, after) if _YEAR_RE.fullmatch(after) else (after, later)
            if _YEAR_RE.fullmatch(year):
                first = datetime(int(year), month, 1, tzinfo=UTC)
                windows.append(Window(first, _month_end(first)))
                found = _DAY_RE.fullmatch(day)
                if found and int(found.group(1)) <= (_month_end(first) - first).days:
                    start = first.replace(day=int(found.group(1)))
                    windows.append(Window(start, start + timedelta(days=1), day=True))
            elif before in _TIME_WORDS or before.isdigit() or after.isdigit():
                windows.append(Window(month=month))
        elif _YEAR_RE.fullmatch(token) and before in _TIME_WORDS:
            windows.append(Window(datetime(int(token), 1, 1, tzinfo=UTC),
                                  datetime(int(token) + 1, 1, 1, tzinfo=UTC)))  # fmt: skip
        elif token == "yesterday" or (token == "night" and before == "last"):
            windows.append(Window(now - timedelta(days=2), now))
        elif before == "last" and token in ("week", "month", "year") and after != "of":
            days = {"week": 7, "month": 31, "year": 366}[token]
            windows.append(Window(now - timedelta(days=2 * days), now))
        elif token == "ago" and at >= 2 and tokens[at - 1] in _UNITS:
            count = _NUMBERS.get(tokens[at - 2]) or (
                int(tokens[at - 2]) if tokens[at - 2].isdigit() else 0
            )
            if count:
                days = count * _UNITS[tokens[at - 1]]
                middle = now - timedelta(days=days)
                spread = timedelta(days=max(2, days // 3))
                windows.append(Window(middle - spread, middle + spread))
    return windows
