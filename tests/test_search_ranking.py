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
