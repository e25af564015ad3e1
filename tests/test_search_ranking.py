"""The ranking's parts that read more than one item: the rest of a conversation, and
the time a query names."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

import memdir
from memdir.index.when import time_windows
from memdir.index.words import WORD_RE
from memdir.testing import FakeClock
from pg_fixture import index_backend  # noqa: F401  (every test on SQLite and PostgreSQL)

pytestmark = pytest.mark.usefixtures("index_backend")


def _journal(folder: Path, name: str, turns: list[tuple[str, str]], date: str = "") -> None:
    meta = f"<!-- date: {date} -->\n" if date else ""
    body = "".join(f"\n## {speaker}\n{meta}{text}\n" for speaker, text in turns)
    (folder / "journal" / f"{name}.md").write_text(f"# {name}\n{body}")


def test_a_turn_of_a_conversation_about_the_query_outranks_a_lone_match(
    folder: Path, clock: FakeClock
) -> None:
    memory = memdir.open(folder, clock=clock, embedder="none")
    _journal(folder, "2026-11-01-a", [
        ("ana", "I finally booked the kayak trip"),
        ("ben", "which river is the kayak trip on?"),
        ("ana", "let me get a coffee first"),
        ("ben", "sure, take your time"),
        ("ana", "the Wye: three days on the river"),
        ("ben", "three days of kayak, lucky you"),
        ("ana", "the trip was my sister's idea"),
    ])  # fmt: skip
    _journal(folder, "2026-11-02-b", [
        ("cy", "the budget meeting ran long"),
        ("dee", "a river trip came up, over lunch, in a hurry"),
        ("cy", "then back to the spreadsheets"),
    ])  # fmt: skip
    memory.scan()

    def order() -> list[tuple[str, str]]:
        hits = memory.search("which river does the kayak trip go down", k=10, mode="deep")
        return [(hit.path, hit.anchor) for hit in hits]

    answer, lone = ("journal/2026-11-01-a.md", "ana (3)"), ("journal/2026-11-02-b.md", "dee")
    assert order().index(answer) < order().index(lone)
    memory.index.ranking = replace(memory.index.ranking, session_share=0.0)
    assert order().index(answer) > order().index(lone)  # without the part, the lone match


def test_a_query_naming_a_month_prefers_what_was_written_then(
    folder: Path, clock: FakeClock
) -> None:
    memory = memdir.open(folder, clock=clock, embedder="none")
    for day in ("2023-05-14", "2023-07-14", "2023-09-14"):
        _journal(folder, day, [("ana", "we went to the climbing gym together")], f"{day}T10:00:00Z")
    memory.scan()
    for query, day in (
        ("where did Ana go in May 2023?", "2023-05-14"),
        ("where did Ana go in July?", "2023-07-14"),
        ("what did Ana do during September", "2023-09-14"),
    ):
        assert memory.search(query, k=3, mode="deep")[0].path == f"journal/{day}.md", query


def test_time_words_are_read_only_as_times() -> None:
    now = datetime(2026, 3, 10, 12, tzinfo=UTC)

    def months(query: str) -> list[tuple[int | None, int | None]]:
        found = time_windows(WORD_RE.findall(query.lower()), now)
        return [(w.start.year if w.start else None, w.month or (w.start.month if w.start else None))
                for w in found]  # fmt: skip

    assert months("what did we do in May 2023") == [(2023, 5)]
    assert months("the last week of August") == [(None, 8)]
    assert months("we may march on") == []  # verbs, not months
    assert months("since 2021") == [(2021, 1)]
    [yesterday] = time_windows(["from", "yesterday"], now)
    assert yesterday.holds(datetime(2026, 3, 9, 18, tzinfo=UTC))
    assert not yesterday.holds(datetime(2026, 2, 1, tzinfo=UTC))
    [ago] = time_windows(["two", "weeks", "ago"], now)
    assert ago.holds(datetime(2026, 2, 24, tzinfo=UTC))
    assert not ago.holds(datetime(2025, 12, 1, tzinfo=UTC))


def test_the_depth_decides_which_candidates_the_later_parts_can_lift(
    folder: Path, clock: FakeClock
) -> None:
    memory = memdir.open(folder, clock=clock, embedder="none")
    for month in ("01", "02", "03", "09", "10"):
        day = f"2023-{month}-14"
        _journal(folder, day, [("ana", "the kayak trip again")], f"{day}T10:00:00Z")
    _journal(folder, "2023-05-14", [("ana", "the kayak trip with the family")],
             "2023-05-14T10:00:00Z")  # fmt: skip
    memory.scan()

    def first() -> str:
        return memory.search("the kayak trip in May 2023", k=1, mode="deep")[0].path

    assert memory.index.ranking.depth >= 6
    assert first() == "journal/2023-05-14.md"  # the weakest BM25, lifted by its month
    memory.index.ranking = replace(memory.index.ranking, depth=3)
    assert first() != "journal/2023-05-14.md"  # past the depth: never scored at all


def test_a_query_naming_a_day_prefers_that_day_over_the_rest_of_its_month(
    folder: Path, clock: FakeClock
) -> None:
    memory = memdir.open(folder, clock=clock, embedder="none")
    for day in ("2023-02-01", "2023-02-09", "2023-02-20"):
        _journal(folder, day, [("ana", "the retreat gave me a new outlook")], f"{day}T10:00:00Z")
    memory.scan()

    def first(query: str) -> str:
        return memory.search(query, k=3, mode="deep")[0].path

    for query in (
        "what outlook did Ana gain after the retreat on 9 February, 2023?",
        "what outlook came from the retreat on February 9, 2023",
        "the retreat's outlook, 9th February 2023",
    ):
        assert first(query) == "journal/2023-02-09.md", query
    # a month alone says nothing about the day: the three tie on their month, so the
    # order is the one they have without any date words
    assert first("the retreat's outlook in February 2023") == first("the retreat's outlook")
    memory.index.ranking = replace(memory.index.ranking, day_boost=1.0)
    assert first("the retreat on 9 February, 2023") == first("the retreat")


def test_a_day_is_read_only_with_its_month_and_year() -> None:
    now = datetime(2026, 3, 10, 12, tzinfo=UTC)

    def days(query: str) -> list[str]:
        found = time_windows(WORD_RE.findall(query.lower()), now)
        return [w.start.date().isoformat() for w in found if w.day and w.start]

    assert days("on 9 February, 2023") == ["2023-02-09"]
    assert days("September 8, 2023") == ["2023-09-08"]
    assert days("the 1st September 2023") == ["2023-09-01"]
    assert days("in May 2023") == []
    assert days("on 9 February") == []  # no year: the month in any year, no day
    assert days("31 February 2023") == []  # no such day: the month only
    [day] = [w for w in time_windows(["on", "9", "february", "2023"], now) if w.day]
    assert day.holds(datetime(2023, 2, 10, 8, tzinfo=UTC))
    assert not day.holds(datetime(2023, 2, 8, 8, tzinfo=UTC))
    assert not day.holds(datetime(2023, 2, 20, 8, tzinfo=UTC))
