"""Hybrid search over the index: keyword (FTS5, BM25) and semantic (cosine), fused.

Ranking, in order (steps 2-9 in ``memdir.index.ranking``, whose ``Ranking`` holds
each part's weight):
1. Candidates: the best ``depth`` items (``Ranking.depth``, ``DEPTH``) by BM25
   over an OR of the query's words (``memdir.index.words``: no possessive ``'s``
   or other one-letter token, stopwords dropped, each unless nothing else is
   left), and the best ``depth`` by cosine to the query's vector, both under the
   same filters.
2. Score fusion: BM25 scaled by the best BM25 of the query, cosine scaled
   from the embedder's similarity floor (below it, no semantic hit at all) to
   the best candidate (``cosine_origin``), summed with ``semantic_weight`` on
   the cosine side. A semantic-only hit still ranks; a merely unrelated one does
   not show up.
3. Neighbours: in narrative files (journals, conversation logs, documents) an
   item next to a strong hit takes ``neighbour_share`` of its score: the turn
   before an answer often holds the question's words.
4. Conversation: a narrative item gains ``session_share`` of what the rest of
   its file holds for the query (its other candidates' best scores): a turn of
   a conversation about the query outranks a lone match in an unrelated one.
5. Subject: an item whose heading names a word of the query (a speaker, a
   card's entity, a section's topic) is weighted up by ``subject_boost``.
6. Time words: an item dated in a time the query names ("in May 2023", "last
   week", ``memdir.index.when``) is weighted up by ``date_boost``, and by
   ``day_boost`` again when the query names its day ("on 9 February, 2023").
7. Another value: when the query names a weekday or a month, an item naming
   another one and not the query's keeps ``other_value_share`` of its score.
8. Exact: an item holding the query's words in order, as written, ranks above
   every item that does not: an exact match is never lost to the fusion.
9. Decay: the score is weighted by relevance (1.0 for core items).
10. Floor: a hit scoring under ``FLOOR_SHARE`` of the best hit (the exact bonus left
   out of both; an exact hit always stays) is dropped: an identity file sharing one
   common word with the query is not a result.

Widening (``normal`` mode only; ``heartbeat`` never widens, ``deep`` has nothing
colder): the candidates are the radius's best (core, active, warm) and the best
over every tier (not the archive folder: what memdir moved out of memory stays
out of default queries), ranked together on one scale (the best BM25 and the best
cosine over both). The radius holds a strong
hit when its best hit scores at least ``STRONG_SHARE`` of the best colder hit,
that is, when no colder hit outranks it. If not, the search widens: the colder
hits join the list, ranked with the rest (decay weighs them down, so a fresh
memory wins a tie). Otherwise the list keeps to the radius and counts the colder
hits over the floor that it leaves out (``Hits.colder``). An empty query is a
listing, not a ranking: the most recent observations, newest first.

With no embedder, or no vectors yet, the keyword list answers alone. The
constants were set on the LoCoMo dev conversations (bench/locomo.py, and
bench/widening.py for the floor and the widening) and checked on the RealMem dev
personas (bench/realmem.py; bench/ablation.py switches each part off) where the
results plateau,
not at their peak.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from memdir.config import Decay
from memdir.index.embedders import EmbedderUnavailable, Vectors, embed_query
from memdir.index.hits import Hit as Hit
from memdir.index.hits import Hits as Hits
from memdir.index.ranking import DEFAULT, Ages, Pairs, rank
from memdir.index.sqlite_rows import COLUMN_WEIGHTS as COLUMN_WEIGHTS
from memdir.index.sqlite_rows import COLUMNS
from memdir.index.sqlite_vectors import SELECTIVE_SHARE as SELECTIVE_SHARE
from memdir.index.sync import Index
from memdir.index.words import SNIPPET_CHARS as SNIPPET_CHARS
from memdir.index.words import STOPWORDS as STOPWORDS
from memdir.index.words import Marker
from memdir.index.words import query_words as query_words
from memdir.index.words import snippet as snippet
from memdir.storage.seam import Scope
from memdir.tiers import (
    MODE_TIERS,
    max_age_days,
)
from memdir.timeutil import format_ts, parse_ts

DEPTH = DEFAULT.depth
"""the candidates fetched on each side by default (``Ranking.depth``)"""
# Below this cosine a text is not similar enough to be a semantic hit at all; an
# embedder may say otherwise with a ``similarity_floor`` attribute.
DEFAULT_SIMILARITY_FLOOR = 0.2
# A search embeds items still without a vector for about this long, no longer: a folder
# with thousands of new items answers at once (keyword hits for the rest) and later
# searches catch up. ``memdir reindex`` embeds everything.
EMBED_SECONDS = 1.0
FLOOR_SHARE = 0.1
"""a hit scoring under this share of the best hit is no result (exact bonus left out)"""
STRONG_SHARE = 1.0
"""the radius's best hit is strong when it scores this share of the best colder hit: at
1.0, when no colder hit outranks it. Decay already weighs colder hits down (an archived
item needs 1.8 times the match of a fresh one to tie), so this needs no margin of its own"""
WIDENS = frozenset({"normal"})
"""the modes that widen to the colder tiers when their radius holds no strong hit"""


@dataclass(frozen=True)
class Filters:
    mode: str = "normal"
    layers: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None

    def sql(self, decay: Decay, now: datetime, *, wide: bool = False) -> tuple[str, list[object]]:
        """A WHERE clause over ``items`` (aliased ``i``) and its parameters: the items of
        the mode's tiers, or with ``wide`` of every tier but the archive folder's."""
        clauses: list[str] = []
        params: list[object] = []
        if wide:
            if "archive" not in self.kinds:
                # What memdir moved out of memory (evicted, trimmed, deleted) stays out of
                # default queries, as the vault specification says; deep mode or
                # kinds=["archive"] reaches it.
                clauses.append("i.kind != 'archive'")
        elif self.mode != "deep":
            allowed = sorted(MODE_TIERS[self.mode])
            age = max_age_days(self.mode, decay)
            cutoff = format_ts(now - timedelta(days=(age or 0) + 1))
            marks = ",".join("?" * len(allowed))
            # Three OR terms SQLite can each answer from the (tier, decay_from) index.
            clauses.append(
                f"(i.tier IN ({marks}) OR (i.tier IS NULL AND i.decay_from >= ?) "
                f"OR (i.tier IS NULL AND i.decay_from IS NULL))"
            )
            params += [*allowed, cutoff]
        for column, values in (("layer", self.layers), ("kind", self.kinds)):
            if values:
                clauses.append(f"i.{column} IN ({','.join('?' * len(values))})")
                params += list(values)
        if self.tags:
            clauses.append(
                "(" + " OR ".join("(',' || i.tags || ',') LIKE ?" for _ in self.tags) + ")"
            )
            params += [f"%,{tag},%" for tag in self.tags]
        if self.since is not None:
            clauses.append("i.date >= ?")
            params.append(format_ts(self.since))
        if self.until is not None:
            clauses.append("i.date <= ?")
            params.append(format_ts(self.until))
        return (" AND ".join(clauses) or "1"), params


def search(
    index: Index,
    query: str,
    filters: Filters,
    *,
    k: int,
    decay: Decay,
    now: datetime,
    use_semantic: bool = True,
) -> Hits:
    """The ``k`` best hits for ``query`` under ``filters``; in a mode that widens, the
    colder tiers' too when the mode's radius holds no strong hit (see the module)."""
    words = query_words(query)
    widens = filters.mode in WIDENS
    if not words:
        return _recent(index, filters, k, decay, now, widens=widens)
    depth = max(index.ranking.depth, k)
    vector = _query_vector(index, query) if use_semantic else None
    scope = Scope(filters, decay, now)
    # the radius's candidates and, in a mode that widens, the best over every tier too,
    # asked together (one round trip on PostgreSQL)
    scopes = [scope, Scope(filters, decay, now, wide=True)] if widens else [scope]
    found = _candidates(index, words, vector, scopes, depth)
    keyword, semantic = found[0]
    radius = {item_id for item_id, _ in keyword + semantic}
    more: list[int] = []
    if widens:  # the colder items join the candidates
        wide = found[1]
        keyword = _merged(keyword, wide[0])
        semantic = _merged(semantic, wide[1])
        more = [item_id for item_id, _ in wide[0] + wide[1] if item_id not in radius]
    rows, inside = index.rows.rows_within(list(dict(keyword) | dict(semantic)), more, scope)
    radius |= inside  # in the radius, past its depth
    ages = Ages(decay, now)
    floor = _floor(index)
    ranked = rank(index.ranking, rows, query, words, keyword, semantic, floor, decay, now, ages)
    if ranked:
        least = FLOOR_SHARE * max(entry.match for entry in ranked)
        ranked = [entry for entry in ranked if entry.exact or entry.match >= least]
    widened, colder = False, None
    if widens:
        strongest = max((e.score for e in ranked if e.item_id in radius), default=0.0)
        colder_best = max((e.score for e in ranked if e.item_id not in radius), default=0.0)
        widened = strongest < STRONG_SHARE * colder_best or not ranked
        if not widened:
            colder = sum(1 for entry in ranked if entry.item_id not in radius)
            ranked = [entry for entry in ranked if entry.item_id in radius]
    kw_scores, sem_scores = dict(keyword), dict(semantic)
    marker = Marker(words)
    hits = (
        _hit(rows[e.item_id], e.score, kw_scores.get(e.item_id), sem_scores.get(e.item_id),
             marker, ages)
        for e in ranked[:k]
    )  # fmt: skip
    return Hits(hits, mode=filters.mode, widened=widened, colder=colder)


_Pairs = Pairs
NO_WORDS = Marker([])


def _merged(first: _Pairs, second: _Pairs) -> _Pairs:
    """Two candidate lists as one, best first, each item once."""
    scores = dict(first) | dict(second)
    return sorted(scores.items(), key=lambda pair: -pair[1])


def _candidates(
    index: Index, words: list[str], vector: Vectors | None, scopes: list[Scope], depth: int
) -> list[tuple[_Pairs, _Pairs]]:
    """The best ``depth`` keyword and the best ``depth`` semantic candidates in each of
    ``scopes``."""
    model = index.embedder.id if index.embedder is not None else ""
    return index.rows.candidates(words, vector, model, scopes, depth, _floor(index))


def _floor(index: Index) -> float:
    return float(getattr(index.embedder, "similarity_floor", DEFAULT_SIMILARITY_FLOOR))


def _keyword(index: Index, words: list[str], scope: Scope, depth: int) -> _Pairs:
    """BM25 over an OR of ``words`` (a phrase when all are stopwords), FTS5's weights."""
    return index.rows.keyword(words, scope, depth)


def _query_vector(index: Index, query: str) -> Vectors | None:
    """The query's vector, once the index's vectors are current; None: keywords only."""
    if index.embedder is None:
        return None
    try:  # the vectors' cache asks the embedder its dimension: a server, for some
        index.ensure_vectors(seconds=EMBED_SECONDS)
        if not index.rows.vectors_ready(index.embedder.id):
            return None
        embedder = index.embedder
        vector = index.query_vectors.get(embedder, query, lambda: embed_query(embedder, query))
    except Exception as exc:  # a broken model must not take keyword search down with it
        if isinstance(exc, EmbedderUnavailable):  # the model's failure, not the database's
            _say_once(index, f"keyword search only: {str(exc) or type(exc).__name__}")
        return None
    degraded = getattr(embedder, "degraded", None)  # slower than it should be, and why
    if degraded:
        _say_once(index, f"search is slower than it should be: {degraded}")
    return vector


def _say_once(index: Index, message: str) -> None:
    """Say once (per index and message) why a search went by keyword only (a model file
    that failed its check, an embedding server that is down) or ran slower."""
    from memdir.results import Notice

    said: set[str] = index.__dict__.setdefault("_semantic_failures", set())
    if index.on_notice is not None and message not in said:
        said.add(message)
        index.on_notice(Notice("index", message))


def _semantic(index: Index, vector: Vectors, scope: Scope, depth: int) -> _Pairs:
    """Cosine to ``vector`` (the embedder's vectors only), at least the floor."""
    assert index.embedder is not None
    return index.rows.semantic(vector, index.embedder.id, scope, depth, _floor(index))


_COLUMNS = COLUMNS


def _rows(index: Index, ids: list[int]) -> dict[int, dict[str, Any]]:
    return index.rows.rows(ids) if ids else {}


def _hit(
    row: dict[str, Any],
    score: float,
    keyword: float | None,
    semantic: float | None,
    marker: Marker,
    ages: Ages,
) -> Hit:
    return Hit.made(
        {
            "path": row["path"],
            "anchor": row["anchor"],
            "kind": row["kind"],
            "layer": row["layer"],
            "title": row["title"],
            "line_start": row["line_start"],
            "line_end": row["line_end"],
            "score": score,
            "keyword": keyword,
            "semantic": semantic,
            "relevance": ages.relevance(row),
            "tier": ages.tier(row),
            "date": parse_ts(row["date"]),
            "tags": _tags(str(row["tags"])),
            "body": row["body"],
            "marker": marker,
        }
    )


def _tags(text: str) -> tuple[str, ...]:
    return tuple(tag for tag in text.split(",") if tag) if text else ()


def _recent(
    index: Index, filters: Filters, k: int, decay: Decay, now: datetime, *, widens: bool
) -> Hits:
    """An empty query lists the most recent observations (or of the kinds asked for),
    newest first; in a mode that widens, older tiers fill what the radius leaves."""
    ids: list[int] = []
    widened = False
    for wide in (False, True) if widens else (False,):
        if len(ids) >= k:
            break
        scope = Scope(filters, decay, now, wide=wide)
        found = index.rows.recent(scope, k + len(ids), observations=not filters.kinds)
        seen = set(ids)
        older = [item_id for item_id in found if item_id not in seen][: k - len(ids)]
        widened = widened or (wide and bool(older))
        ids += older
    rows = _rows(index, ids)
    ages = Ages(decay, now)
    hits = (_hit(rows[item_id], 0.0, None, None, NO_WORDS, ages) for item_id in ids)
    return Hits(hits, mode=filters.mode, widened=widened, listing=True)


def creative(index: Index, n: int, *, decay: Decay, now: datetime, rng: random.Random) -> list[Hit]:
    """A random sample of cold and archived items: deliberately not ranked by any query."""
    ids = index.rows.cold(format_ts(now - timedelta(days=decay.warm_days + 1)))
    chosen = rng.sample(ids, min(n, len(ids)))
    rows = _rows(index, chosen)
    ages = Ages(decay, now)
    return [_hit(rows[item_id], 0.0, None, None, NO_WORDS, ages) for item_id in chosen]
