"""Scoring the candidates a search found: steps 2-9 of ``memdir.index.search``.

``Ranking`` names each part and its weight. ``Index.ranking`` holds the one a
folder's searches use: the defaults, always, for every caller of memdir. It is
private to the benchmarks, which switch parts off in turn for their ablation
tables (bench/ablation.py) without editing code.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple

from memdir.config import Decay
from memdir.index.when import Window, time_windows
from memdir.index.words import WORD_RE
from memdir.tiers import days_since, relevance, tier_ceiling, tier_for
from memdir.timeutil import MONTHS, WEEKDAYS, parse_ts

VALUE_CLASSES = {w: "weekday" for w in WEEKDAYS} | {
    **{w + "s": "weekday" for w in WEEKDAYS},
    **{m: "month" for m in MONTHS if m != "may"},  # 'may' is mostly a verb
}
_VALUE_NAMES = tuple(
    name
    for name in VALUE_CLASSES
    if not any(other != name and other in name for other in VALUE_CLASSES)
)
"""the words of ``VALUE_CLASSES`` holding no other (a plural holds its singular): a text
holding none of them names no value"""
HEADINGS_KEPT = 4096
"""headings whose words are kept (``heading_words``)"""
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
    cosine_origin: float = 1.0
    """the cosine side is scaled from this share of the embedder's similarity floor (0)
    to the query's best cosine (1). At 0.5 (MiniLM: from 0.1) RealMem gains .004 of
    R@10 and LoCoMo .006, but LoCoMo asked as if its conversations had just ended (the
    older sessions decayed, bench/widening.py) loses .021 in deep mode and .027 in
    normal: a cosine scaled from the floor itself it is (bench/RESULTS.md, issue 16
    phase 10)"""
    neighbour_share: float = 0.4
    """in narrative files an item takes this share of its best file neighbour's score"""
    subject_boost: float = 1.45
    """an item whose heading names a query word is weighted up by this (1.3 before
    2026-12-03: 1.45 lifts LoCoMo, whose headings are its speakers, on both halves of
    its questions, holds it as bench/widening.py asks it, and leaves RealMem, whose
    headings are User and Assistant, as it was)"""
    other_value_share: float = 0.7
    """an item naming another weekday or month than the query (and not the query's) keeps
    this share of its score: 'every Friday' is a worse answer to 'every Thursday'"""
    exact_bonus: float = 10.0
    """added to an item holding the query's words in order: it outranks every other"""
    decay: bool = True
    """weigh each score by ``1 - decay_share + decay_share x relevance`` (the forgetting
    curve)"""
    decay_share: float = 0.5
    """the share of a score that decay may take away (an item at relevance 0 keeps the
    rest)"""
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
    keyword: Pairs, semantic: Pairs, origin: float, semantic_weight: float = DEFAULT.semantic_weight
) -> dict[int, float]:
    """BM25 scaled by the query's best, plus cosine scaled from ``origin`` (0) to the
    query's best (1), weighted ``1 - semantic_weight`` and ``semantic_weight``."""
    fused: dict[int, float] = defaultdict(float)
    if keyword:
        best = max(score for _, score in keyword) or 1.0
        for item_id, score in keyword:
            fused[item_id] += (1.0 - semantic_weight) * score / best
    if semantic:
        spread = max(max(score for _, score in semantic) - origin, 1e-9)
        for item_id, score in semantic:
            fused[item_id] += semantic_weight * (score - origin) / spread
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
    ages: Ages | None = None,
) -> list[Ranked]:
    """Every candidate's score, best first. ``rows`` holds each candidate's row;
    ``ages``: the search's, if it has one (its hits read them again)."""
    fused = fuse(keyword, semantic, floor * ranking.cosine_origin, ranking.semantic_weight)
    add_neighbours(rows, fused, ranking.neighbour_share)
    add_session(rows, fused, ranking.session_share, ranking.session_items)
    tokens = WORD_RE.findall(query.lower())
    exact = Phrase(tokens)
    subject = set(words)
    asked = _values(words)
    windows = time_windows(tokens, now) if ranking.date_boost != 1.0 else []
    dated = When(windows, ranking) if windows else None
    ages = ages or Ages(decay, now)
    in_keyword = {item_id for item_id, _ in keyword}
    ranked: list[Ranked] = []
    keys: list[tuple[float, str, int]] = []
    for item_id, score in fused.items():
        row = rows[item_id]
        if not subject.isdisjoint(heading_words(row["heading"])):
            score *= ranking.subject_boost
        if dated is not None:
            date_boost, day_boost = dated.boosts(row["date"])
            score = score * date_boost * day_boost  # 1.0 each outside the windows
        holds = False
        could_be_exact = bool(exact.longest) and item_id in in_keyword
        if asked or could_be_exact:  # only a keyword hit can hold the query
            text = f"{row['heading']} {row['body']}".lower()
            if asked and _other_value(asked, _text_values(text)):
                score *= ranking.other_value_share
            holds = could_be_exact and exact.found_in(text)
        weight = (
            1.0 - ranking.decay_share + ranking.decay_share * ages.relevance(row)
            if ranking.decay
            else 1.0
        )
        total = (score + (ranking.exact_bonus if holds else 0.0)) * weight
        ranked.append(Ranked(total, score * weight, holds, item_id))
        keys.append((-total, row["path"], row["ordinal"]))
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return [ranked[place] for place in order]


@lru_cache(maxsize=HEADINGS_KEPT)
def heading_words(heading: str) -> frozenset[str]:
    """A heading's words, lower-cased: worked out once per heading, not once per search
    (a conversation's headings are its few speakers)."""
    return frozenset(word.lower() for word in WORD_RE.findall(heading))


class Phrase:
    """The query's words in order, as an exact match looks for them in an item's
    lower-cased text: consecutive words of the text, whatever lies between them.

    The same test as joining the text's words with spaces and looking for the query's
    joined alike, without cutting the text into words: each query word must be in the
    text (the longest first), and only then is the text searched for the words in a
    row, each whole (``\\b``) with non-word characters between."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.longest = max(tokens, key=len, default="")
        self.others = sorted(set(tokens) - {self.longest}, key=len, reverse=True)
        self._pattern: re.Pattern[str] | None = None

    def found_in(self, text: str) -> bool:
        if self.longest not in text or not all(token in text for token in self.others):
            return False
        if self._pattern is None:
            joined = r"\W+".join(map(re.escape, self.tokens))
            self._pattern = re.compile(rf"\b{joined}\b")
        return self._pattern.search(text) is not None


class When:
    """The date boosts of one query's time windows, each date's worked out once."""

    def __init__(self, windows: list[Window], ranking: Ranking) -> None:
        self.windows = windows
        self.ranking = ranking
        self._boosts: dict[str | None, tuple[float, float]] = {}

    def boosts(self, date: str | None) -> tuple[float, float]:
        """(the date boost, the day boost) an item dated ``date`` is weighted by, in
        turn: 1.0 for each it does not earn."""
        found = self._boosts.get(date)
        if found is None:
            found = (1.0, 1.0)
            moment = parse_ts(date)
            if moment is not None and any(window.holds(moment) for window in self.windows):
                day = any(window.day and window.holds(moment) for window in self.windows)
                found = (self.ranking.date_boost, self.ranking.day_boost if day else 1.0)
            self._boosts[date] = found
        return found


class Ages:
    """Each row's relevance (``item_relevance``) and tier, worked out once per
    (relevance, tier, decay date) a search meets: the turns of a session share theirs."""

    def __init__(self, decay: Decay, now: datetime) -> None:
        self.decay = decay
        self.now = now
        self._relevance: dict[tuple[object, object, object], float] = {}
        self._tiers: dict[tuple[object, object], str] = {}

    def relevance(self, row: dict[str, Any]) -> float:
        key = (row["relevance"], row["tier"], row["decay_from"])
        found = self._relevance.get(key)
        if found is None:
            found = self._relevance[key] = item_relevance(row, self.decay, self.now)
        return found

    def tier(self, row: dict[str, Any]) -> str:
        """The row's tier: its own, or the one its decay date puts it in."""
        key = (row["tier"], row["decay_from"])
        found = self._tiers.get(key)
        if found is None:
            if row["tier"] is not None:
                found = str(row["tier"])
            else:
                moment = parse_ts(row["decay_from"])
                found = (
                    "active"
                    if moment is None
                    else tier_for(days_since(moment, self.now), self.decay)
                )
            self._tiers[key] = found
        return found


def add_neighbours(rows: dict[int, dict[str, Any]], fused: dict[int, float], share: float) -> None:
    """Each narrative item gains ``share`` of the best score among its file neighbours."""
    if share <= 0:
        return
    by_place = {(row["path"], row["ordinal"]): item_id for item_id, row in rows.items()}
    gains: list[tuple[int, float]] = []  # added once all are known: each reads the fused
    for item_id, row in rows.items():
        if row["kind"] not in NARRATIVE_KINDS:
            continue
        path, ordinal = row["path"], row["ordinal"]
        before = by_place.get((path, ordinal - 1))
        after = by_place.get((path, ordinal + 1))
        if before is not None:
            best = fused[before] if after is None else max(fused[before], fused[after])
        elif after is not None:
            best = fused[after]
        else:
            continue
        gains.append((item_id, share * best))
    for item_id, gain in gains:
        fused[item_id] += gain


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


def _text_values(text: str) -> dict[str, set[str]]:
    """``_values`` of a lower-cased text's words: none unless it holds a weekday's or a
    month's name somewhere (most texts hold none, and are not cut into words)."""
    if not any(name in text for name in _VALUE_NAMES):
        return {}
    return _values(WORD_RE.findall(text))


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
