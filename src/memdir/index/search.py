"""Hybrid search over the index: keyword (FTS5, BM25) and semantic (cosine), fused.

Ranking, in order:
1. Candidates: the best ``DEPTH`` items by BM25 over an OR of the query's
   words (stopwords dropped unless nothing else is left), and the best
   ``DEPTH`` by cosine to the query's vector, both under the same filters.
2. Score fusion: BM25 scaled by the best BM25 of the query, cosine scaled
   from the embedder's similarity floor (below it, no semantic hit at all) to
   the best candidate, summed with ``SEMANTIC_WEIGHT`` on the cosine side. A
   semantic-only hit still ranks; a merely unrelated one does not show up.
3. Neighbours: in narrative files (journals, conversation logs, documents) an
   item next to a strong hit takes ``NEIGHBOUR_SHARE`` of its score: the turn
   before an answer often holds the question's words.
4. Subject: an item whose heading names a word of the query (a speaker, a
   card's entity, a section's topic) is weighted up by ``SUBJECT_BOOST``.
5. Another value: when the query names a weekday or a month, an item naming
   another one and not the query's keeps ``OTHER_VALUE_SHARE`` of its score.
6. Exact: an item holding the query's words in order, as written, ranks above
   every item that does not: an exact match is never lost to the fusion.
7. Decay: the score is weighted by relevance (1.0 for core items).

With no embedder, or no vectors yet, the keyword list answers alone. The
constants were set on the LoCoMo dev conversations (bench/locomo.py) where
the results plateau, not at their peak.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from memdir.config import Decay
from memdir.index.embedders import Vectors
from memdir.index.sync import Index
from memdir.tiers import MODE_TIERS, days_since, max_age_days, relevance, tier_for
from memdir.timeutil import MONTHS, WEEKDAYS, format_ts, parse_ts

DEPTH = 200
SEMANTIC_WEIGHT = 0.4
NEIGHBOUR_SHARE = 0.4
SUBJECT_BOOST = 1.3
EXACT_BONUS = 10.0
OTHER_VALUE_SHARE = 0.7
"""an item naming another weekday or month than the query (and not the query's) keeps
this share of its score: 'every Friday' is a worse answer to 'every Thursday'"""
VALUE_CLASSES = {w: "weekday" for w in WEEKDAYS} | {
    **{w + "s": "weekday" for w in WEEKDAYS},
    **{m: "month" for m in MONTHS if m != "may"},  # 'may' is mostly a verb
}
# Below this cosine a text is not similar enough to be a semantic hit at all; an
# embedder may say otherwise with a ``similarity_floor`` attribute.
DEFAULT_SIMILARITY_FLOOR = 0.2
# A filter letting through at most this share of the items is applied before the
# vector scan (score only its items) rather than after it.
SELECTIVE_SHARE = 0.25
# A search embeds items still without a vector for about this long, no longer: a folder
# with thousands of new items answers at once (keyword hits for the rest) and later
# searches catch up. ``memdir reindex`` embeds everything.
EMBED_SECONDS = 1.0
NARRATIVE_KINDS = frozenset({"journal", "archive", "intel", "lesson", "document", "workstate"})
SNIPPET_CHARS = 240
# bm25() weights for the FTS columns: heading, body, tags, metadata words.
COLUMN_WEIGHTS = (2.0, 1.0, 1.5, 0.5)

_WORD_RE = re.compile(r"\w+", re.UNICODE)
_STOPWORDS_TEXT = """
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


@dataclass(frozen=True)
class Hit:
    path: str
    anchor: str
    kind: str
    layer: str
    title: str
    line_start: int
    line_end: int
    snippet: str
    score: float
    keyword: float | None
    """BM25 score (higher is better) if the keyword search found it"""
    semantic: float | None
    """cosine to the query if the semantic search found it"""
    relevance: float
    tier: str
    date: datetime | None
    tags: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "anchor": self.anchor,
            "kind": self.kind,
            "layer": self.layer,
            "title": self.title,
            "lines": [self.line_start, self.line_end],
            "snippet": self.snippet,
            "score": round(self.score, 6),
            "parts": {
                "keyword": None if self.keyword is None else round(self.keyword, 4),
                "semantic": None if self.semantic is None else round(self.semantic, 4),
                "relevance": round(self.relevance, 4),
            },
            "tier": self.tier,
            "date": format_ts(self.date) if self.date else None,
            "tags": list(self.tags),
        }


@dataclass(frozen=True)
class Filters:
    mode: str = "normal"
    layers: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None

    def sql(self, decay: Decay, now: datetime) -> tuple[str, list[object]]:
        """A WHERE clause over ``items`` (aliased ``i``) and its parameters."""
        clauses: list[str] = []
        params: list[object] = []
        if self.mode != "deep":
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


def query_words(query: str) -> list[str]:
    """The query's distinct words, stopwords dropped (all kept if nothing else is left)."""
    words = list(dict.fromkeys(word.lower() for word in _WORD_RE.findall(query)))
    content = [word for word in words if word not in STOPWORDS]
    return content or words


def search(
    index: Index,
    query: str,
    filters: Filters,
    *,
    k: int,
    decay: Decay,
    now: datetime,
    use_semantic: bool = True,
) -> list[Hit]:
    """The ``k`` best hits for ``query`` under ``filters``."""
    where, params = filters.sql(decay, now)
    words = query_words(query)
    if not words:
        return _recent(index, filters, where, params, k, decay, now)
    depth = max(DEPTH, k)
    keyword = _keyword(index, words, where, params, depth)
    semantic = _semantic(index, query, where, params, depth) if use_semantic else []
    fused = fuse(keyword, semantic, _floor(index))
    rows = _rows(index, list(fused))
    _add_neighbours(rows, fused)
    phrase = " " + " ".join(_WORD_RE.findall(query.lower())) + " "
    subject = set(words)
    asked = _values(words)
    kw_scores, sem_scores = dict(keyword), dict(semantic)
    ranked: list[tuple[float, int]] = []
    for item_id, score in fused.items():
        row = rows[item_id]
        heading_words = {word.lower() for word in _WORD_RE.findall(row["heading"])}
        if heading_words & subject:
            score *= SUBJECT_BOOST
        keyword_hit = item_id in kw_scores  # only a keyword hit can hold the whole query
        if asked or keyword_hit:
            tokens = _WORD_RE.findall(f"{row['heading']} {row['body']}".lower())
            if asked and _other_value(asked, _values(tokens)):
                score *= OTHER_VALUE_SHARE
            if keyword_hit and phrase.strip() and phrase in f" {' '.join(tokens)} ":
                score += EXACT_BONUS
        ranked.append((score * (0.5 + 0.5 * _relevance(row, decay, now)), item_id))
    ranked.sort(key=lambda pair: (-pair[0], rows[pair[1]]["path"], rows[pair[1]]["ordinal"]))
    return [
        _hit(
            rows[item_id], score, kw_scores.get(item_id), sem_scores.get(item_id), words, decay, now
        )
        for score, item_id in ranked[:k]
    ]


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


def _floor(index: Index) -> float:
    return float(getattr(index.embedder, "similarity_floor", DEFAULT_SIMILARITY_FLOOR))


def fuse(
    keyword: list[tuple[int, float]], semantic: list[tuple[int, float]], floor: float
) -> dict[int, float]:
    """BM25 scaled by the query's best, plus cosine scaled from ``floor`` (0) to the
    query's best (1), weighted ``1 - SEMANTIC_WEIGHT`` and ``SEMANTIC_WEIGHT``."""
    fused: dict[int, float] = defaultdict(float)
    if keyword:
        best = keyword[0][1] or 1.0
        for item_id, score in keyword:
            fused[item_id] += (1.0 - SEMANTIC_WEIGHT) * score / best
    if semantic:
        spread = max(semantic[0][1] - floor, 1e-9)
        for item_id, score in semantic:
            fused[item_id] += SEMANTIC_WEIGHT * (score - floor) / spread
    return fused


def _keyword(
    index: Index, words: list[str], where: str, params: list[object], depth: int
) -> list[tuple[int, float]]:
    quoted = ['"' + word.replace('"', '""') + '"' for word in words]
    # Only stopwords: match them as a phrase, or nearly every item would match.
    phrase_only = all(word in STOPWORDS for word in words)
    match = " + ".join(quoted) if phrase_only else " OR ".join(quoted)
    weights = ", ".join(str(weight) for weight in COLUMN_WEIGHTS)
    sql = (
        f"SELECT i.id, -bm25(items_fts, {weights}) FROM items_fts "
        f"JOIN items AS i ON i.id = items_fts.rowid "
        f"WHERE items_fts MATCH ? AND {where} ORDER BY bm25(items_fts, {weights}) LIMIT ?"
    )
    with index.lock:
        return [(int(a), float(b)) for a, b in index.db.execute(sql, [match, *params, depth])]


def _semantic(
    index: Index, query: str, where: str, params: list[object], depth: int
) -> list[tuple[int, float]]:
    if index.embedder is None or index.vectors is None:
        return []
    try:
        index.ensure_vectors(seconds=EMBED_SECONDS)
        index.vectors.refresh(index.db)
        if len(index.vectors) == 0:
            return []
        vector = index.embedder.embed([query])[0]
    except Exception:  # a broken model must not take keyword search down with it
        return []
    floor = _floor(index)
    if where != "1":
        with index.lock:
            count = index.db.execute(
                f"SELECT count(*) FROM items AS i WHERE {where}", params
            ).fetchone()[0]
        if count <= len(index.vectors) * SELECTIVE_SHARE:
            return _semantic_among(index, vector, where, params, depth, floor)
    if where == "1":
        return [pair for pair in index.vectors.top(vector, depth) if pair[1] >= floor]
    wanted = depth * 4
    candidates = [pair for pair in index.vectors.top(vector, wanted) if pair[1] >= floor]
    allowed = _allowed(index, [item_id for item_id, _ in candidates], where, params)
    kept = [(item_id, score) for item_id, score in candidates if item_id in allowed]
    if len(kept) >= depth or len(candidates) < wanted:
        return kept[:depth]  # enough, or every item above the floor was looked at
    return _semantic_among(index, vector, where, params, depth, floor)


def _semantic_among(
    index: Index, vector: Vectors, where: str, params: list[object], depth: int, floor: float
) -> list[tuple[int, float]]:
    """Cosine over just the items a selective filter lets through."""
    with index.lock:
        sql = f"SELECT i.id FROM items AS i WHERE {where}"
        matching = [row[0] for row in index.db.execute(sql, params)]
    assert index.vectors is not None
    best = index.vectors.top_among(vector, matching, depth)
    return [(item_id, score) for item_id, score in best if score >= floor]


def _allowed(index: Index, ids: list[int], where: str, params: list[object]) -> set[int]:
    allowed: set[int] = set()
    with index.lock:
        for start in range(0, len(ids), 900):
            chunk = ids[start : start + 900]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT i.id FROM items AS i WHERE i.id IN ({marks}) AND {where}"
            allowed.update(row[0] for row in index.db.execute(sql, [*chunk, *params]))
    return allowed


_COLUMNS = (
    "id", "path", "anchor", "ordinal", "kind", "layer", "title", "heading", "body", "tags",
    "line_start", "line_end", "date", "decay_from", "tier", "relevance",
)  # fmt: skip


def _rows(index: Index, ids: list[int]) -> dict[int, dict[str, Any]]:
    rows: dict[int, dict[str, Any]] = {}
    with index.lock:
        for start in range(0, len(ids), 900):
            chunk = ids[start : start + 900]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT {', '.join(_COLUMNS)} FROM items WHERE id IN ({marks})"
            for values in index.db.execute(sql, chunk):
                row = dict(zip(_COLUMNS, values, strict=True))
                rows[row["id"]] = row
    return rows


def _add_neighbours(rows: dict[int, dict[str, Any]], fused: dict[int, float]) -> None:
    """Each item gains a share of the best score among its file neighbours."""
    if NEIGHBOUR_SHARE <= 0:
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
            fused[item_id] += NEIGHBOUR_SHARE * max(around)


def _relevance(row: dict[str, Any], decay: Decay, now: datetime) -> float:
    if row["relevance"] is not None:
        return float(row["relevance"])
    if row["tier"] == "core":
        return 1.0
    moment = parse_ts(row["decay_from"])
    if moment is None:
        return 1.0
    return relevance(days_since(moment, now), decay)


def _tier(row: dict[str, Any], decay: Decay, now: datetime) -> str:
    if row["tier"] is not None:
        return str(row["tier"])
    moment = parse_ts(row["decay_from"])
    return "active" if moment is None else tier_for(days_since(moment, now), decay)


def _hit(
    row: dict[str, Any],
    score: float,
    keyword: float | None,
    semantic: float | None,
    words: list[str],
    decay: Decay,
    now: datetime,
) -> Hit:
    return Hit(
        path=row["path"],
        anchor=row["anchor"],
        kind=row["kind"],
        layer=row["layer"],
        title=row["title"],
        line_start=row["line_start"],
        line_end=row["line_end"],
        snippet=snippet(row["body"], words),
        score=score,
        keyword=keyword,
        semantic=semantic,
        relevance=_relevance(row, decay, now),
        tier=_tier(row, decay, now),
        date=parse_ts(row["date"]),
        tags=tuple(tag for tag in str(row["tags"]).split(",") if tag),
    )


def _recent(
    index: Index,
    filters: Filters,
    where: str,
    params: list[object],
    k: int,
    decay: Decay,
    now: datetime,
) -> list[Hit]:
    """An empty query lists the most recent observations (or of the kinds asked for)."""
    if not filters.kinds:
        where += " AND i.kind = 'observation'"
    sql = (
        f"SELECT i.id FROM items AS i WHERE {where} "
        f"ORDER BY i.date IS NULL, i.date DESC, i.id DESC LIMIT ?"
    )
    with index.lock:
        ids = [row[0] for row in index.db.execute(sql, [*params, k])]
    rows = _rows(index, ids)
    return [_hit(rows[item_id], 0.0, None, None, [], decay, now) for item_id in ids]


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def snippet(body: str, words: list[str], width: int = SNIPPET_CHARS) -> str:
    """A window of ``body`` around the densest run of query words, each marked **so**."""
    flat = " ".join(body.split())
    if not words:
        return flat[:width] + ("…" if len(flat) > width else "")
    stems = sorted({_stem(word) for word in words}, key=len, reverse=True)
    pattern = re.compile(r"\b(" + "|".join(re.escape(stem) for stem in stems) + r")\w*", re.I)
    matches = list(pattern.finditer(flat))
    start = 0
    if matches and len(flat) > width:
        # The first match with the most matches less than ``width`` after it: one
        # sliding window, linear in the matches (a huge body holds very many).
        starts = [match.start() for match in matches]
        best, most, end = 0, 0, 0
        for i, first in enumerate(starts):
            while end < len(starts) and starts[end] - first < width:
                end += 1
            if end - i > most:
                best, most = i, end - i
        start = max(0, matches[best].start() - width // 4)
        if start:
            space = flat.find(" ", start)
            start = space + 1 if 0 <= space < matches[best].start() else start
    window = flat[start : start + width]
    marked = pattern.sub(lambda m: f"**{m.group(0)}**", window)
    return ("…" if start else "") + marked + ("…" if start + width < len(flat) else "")


def creative(index: Index, n: int, *, decay: Decay, now: datetime, rng: random.Random) -> list[Hit]:
    """A random sample of cold and archived items: deliberately not ranked by any query."""
    cutoff = format_ts(now - timedelta(days=decay.warm_days + 1))
    sql = (
        "SELECT i.id FROM items AS i WHERE i.tier IN ('cold', 'archive') "
        "OR (i.tier IS NULL AND i.decay_from < ?) ORDER BY i.id"
    )
    with index.lock:
        ids = [row[0] for row in index.db.execute(sql, (cutoff,))]
    chosen = rng.sample(ids, min(n, len(ids)))
    rows = _rows(index, chosen)
    return [_hit(rows[item_id], 0.0, None, None, [], decay, now) for item_id in chosen]
