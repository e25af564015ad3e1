"""Scoring the candidates a search found: steps 2-9 of ``memdir.index.search``.

``Ranking`` names each part and its weight. ``Index.ranking`` holds the one a
folder's searches use: the defaults, always, for every caller of memdir. It is
private to the benchmarks, which switch parts off in turn for their ablation
tables (bench/ablation.py) without editing code.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from memdir.config import Decay
from memdir.index.when import time_windows
from memdir.index.words import WORD_RE
from memdir.tiers import days_since, relevance, tier_ceiling
from memdir.timeutil import MONTHS, WEEKDAYS, parse_ts

VALUE_CLASSES = {w: "weekday" for w in WEEKDAYS} | {
    **{w + "s": "weekday" for w in WEEKDAYS},
    **{m: "month" for m in MONTHS if m != "may"},  # 'may' is mostly a verb
}
NARRATIVE_KINDS = frozenset({"journal", "archive", "intel", "lesson", "document", "workstate"})


@dataclass(frozen=True)
class Ranking:
    """The parts of the ranking and their weights (a part weighing nothing is off)."""

    depth: int = 300
    """candidates fetched on each side (BM25 and cosine) before any of this is scored:
    300 each, up from 200, lifts both benchmarks (the evidence of a multi-hop question
    and the older sessions of a project sit past 200) at about 1.1x the query time;
    400 adds little more at 1.2x (bench/RESULTS.md, issue 16)"""
    semantic_weight: float = 0.4
    """the cosine side's share of the fused score (the BM25 side has the rest)"""
    neighbour_share: float = 0.4
    """in narrative files an item takes this share of its best file neighbour's score"""
    subject_boost: float = 1.3
    """an item whose heading names a query word is weighted up by this"""
    other_value_share: float = 0.7
    """an item naming another weekday or month than the query (and not the query's) keeps
    this share of its score: 'every Friday' is a worse answer to 'every Thursday'"""
    exact_bonus: float = 10.0
    """added to an item holding the query's words in order: it outranks every other"""
    decay: bool = True
    """weigh each score by ``0.5 + 0.5 x relevance`` (the forgetting curve)"""
    session_share: float = 0.4
    """a narrative item gains this share of its file's score (the sum of its best
    ``session_items`` candidates' scores, scaled by the best file's): a turn of a
    conversation that is about the query outranks a lone lucky match elsewhere"""
    session_items: int = 5
    """how many of a file's best candidates make its score"""
    date_boost: float = 1.3
    """an item dated in a time the query names ("in May 2023", "last week") is
    weighted up by this (``memdir.index.when``)"""
    day_boost: float = 1.3
    """an item dated within days of a day the query names to the day ("on 9 February,
    2023") is weighted up by this again, beyond ``date_boost`` for its month"""


DEFAULT = Ranking()


class Ranked(NamedTuple):
    score: float
    """the final score: (match + exact bonus) x decay"""
    match: float
    """the score without the exact bonus, what the floor compares"""
    exact: bool
    item_id: int


Pairs = list[tuple[int, float]]


def fuse(
    keyword: Pairs, semantic: Pairs, floor: float, semantic_weight: float = DEFAULT.semantic_weight
) -> dict[int, float]:
    """BM25 scaled by the query's best, plus cosine scaled from ``floor`` (0) to the
    query's best (1), weighted ``1 - semantic_weight`` and ``semantic_weight``."""
    fused: dict[int, float] = defaultdict(float)
    if keyword:
        best = max(score for _, score in keyword) or 1.0
        for item_id, score in keyword:
            fused[item_id] += (1.0 - semantic_weight) * score / best
    if semantic:
        spread = max(max(score for _, score in semantic) - floor, 1e-9)
        for item_id, score in semantic:
            fused[item_id] += semantic_weight * (score - floor) / spread
    return fused


def rank(
    ranking: Ranking,
    rows: dict[int, dict[str, Any]],
    query: str,
    words: list[str],
    keyword: Pairs,
    semantic: Pairs,
    floor: float,
    decay: Decay,
    now: datetime,
) -> list[Ranked]:
    """Every candidate's score, best first. ``rows`` holds each candidate's row."""
    fused = fuse(keyword, semantic, floor, ranking.semantic_weight)
    add_neighbours(rows, fused, ranking.neighbour_share)
    add_session(rows, fused, ranking.session_share, ranking.session_items)
    tokens = WORD_RE.findall(query.lower())
    phrase = " " + " ".join(tokens) + " "
    longest = max(tokens, key=len, default="")
    subject = set(words)
    asked = _values(words)
    windows = time_windows(tokens, now) if ranking.date_boost != 1.0 else []
    kw_scores = dict(keyword)
    ranked: list[Ranked] = []
    for item_id, score in fused.items():
        row = rows[item_id]
        heading_words = {word.lower() for word in WORD_RE.findall(row["heading"])}
        if heading_words & subject:
            score *= ranking.subject_boost
        if windows:
            moment = parse_ts(row["date"])
            if moment is not None and any(window.holds(moment) for window in windows):
                score *= ranking.date_boost
                if any(window.day and window.holds(moment) for window in windows):
                    score *= ranking.day_boost
        exact = False
        text = ""
        could_be_exact = item_id in kw_scores and bool(longest)
        if could_be_exact:  # only a keyword hit can hold the query, and its longest word
            text = f"{row['heading']} {row['body']}".lower()
            could_be_exact = longest in text
        if asked or could_be_exact:
            text = text or f"{row['heading']} {row['body']}".lower()
            body_tokens = WORD_RE.findall(text)
            if asked and _other_value(asked, _values(body_tokens)):
                score *= ranking.other_value_share
            exact = could_be_exact and phrase in f" {' '.join(body_tokens)} "
        weight = 0.5 + 0.5 * item_relevance(row, decay, now) if ranking.decay else 1.0
        total = (score + (ranking.exact_bonus if exact else 0.0)) * weight
        ranked.append(Ranked(total, score * weight, exact, item_id))
    ranked.sort(key=lambda e: (-e.score, rows[e.item_id]["path"], rows[e.item_id]["ordinal"]))
    return ranked


def add_neighbours(rows: dict[int, dict[str, Any]], fused: dict[int, float], share: float) -> None:
    """Each narrative item gains ``share`` of the best score among its file neighbours."""
    if share <= 0:
        return
    by_place = {(row["path"], row["ordinal"]): item_id for item_id, row in rows.items()}
    base = dict(fused)
    for item_id, row in rows.items():
        if row["kind"] not in NARRATIVE_KINDS:
            continue
        around = [
            base[by_place[(row["path"], row["ordinal"] + step)]]
            for step in (-1, 1)
            if (row["path"], row["ordinal"] + step) in by_place
        ]
        if around:
            fused[item_id] += share * max(around)


def add_session(
    rows: dict[int, dict[str, Any]], fused: dict[int, float], share: float, items: int
) -> None:
    """Each narrative item gains ``share`` of what the rest of its file holds: the sum of
    the ``items`` best scores among the file's other candidates, over ``items`` times the
    query's best score (so 0 to ``share``). A lone match gains nothing."""
    if share <= 0 or not fused:
        return
    by_file: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for item_id, score in fused.items():
        row = rows[item_id]
        if row["kind"] in NARRATIVE_KINDS:
            by_file[row["path"]].append((score, item_id))
    scale = share / (items * (max(fused.values()) or 1.0))
    for scored in by_file.values():
        if len(scored) < 2:
            continue
        scored.sort(reverse=True)
        total = sum(score for score, _ in scored[:items])
        next_best = scored[items][0] if len(scored) > items else 0.0
        for place, (score, item_id) in enumerate(scored):
            # the best ``items`` of the others: for one of the file's best, the next one in
            others = total - score + next_best if place < items else total
            fused[item_id] += scale * others


def _values(words: list[str]) -> dict[str, set[str]]:
    """The words of ``words`` that name one value of a class: a weekday, a month."""
    found: dict[str, set[str]] = {}
    for word in words:
        kind = VALUE_CLASSES.get(word)
        if kind is not None:
            found.setdefault(kind, set()).add(word)
    return found


def _other_value(asked: dict[str, set[str]], has: dict[str, set[str]]) -> bool:
    """The item names another value of a class the query names, and not the query's."""
    return any(has.get(kind) and not (has[kind] & wanted) for kind, wanted in asked.items())


def item_relevance(row: dict[str, Any], decay: Decay, now: datetime) -> float:
    if row["relevance"] is not None:
        return float(row["relevance"])
    if row["tier"] == "core":
        return 1.0
    moment = parse_ts(row["decay_from"])
    fresh = 1.0 if moment is None else relevance(days_since(moment, now), decay)
    return fresh if row["tier"] is None else min(fresh, tier_ceiling(row["tier"], decay))
