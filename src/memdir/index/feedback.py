"""Feedback from the first hits (pseudo-relevance feedback), over the candidates.

The words the best few hits share, and the query does not say, are searched for
among the other candidates: a chatty query about a running project finds the
project's other sessions through the project's own words. Feedback is only as good
as the first hits, so each query's feedback is weighed by how much those hits
agree with each other beyond what any candidates would (``coherence``): hits
about one thing make trustworthy feedback, hits about several things (the two
halves of a multi-hop question) make drift.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from memdir.index.words import STOPWORDS, WORD_RE, is_word


def item_words(row: dict[str, Any]) -> frozenset[str]:
    """An item's distinct content words, lower-cased (stopwords and one-letter tokens out)."""
    text = f"{row['heading']} {row['body']}".lower()
    return frozenset(
        token for token in WORD_RE.findall(text) if token not in STOPWORDS and is_word(token)
    )


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def pair_agreement(sets: list[frozenset[str]]) -> float:
    """The mean Jaccard overlap over every pair of ``sets``."""
    total, pairs = 0.0, 0
    for n, first in enumerate(sets):
        for second in sets[n + 1 :]:
            total += _jaccard(first, second)
            pairs += 1
    return total / pairs if pairs else 0.0


def feedback_words(
    first: list[frozenset[str]], pool: list[frozenset[str]], query: set[str], count: int
) -> dict[str, float]:
    """The ``count`` words most telling of the first hits: held by most of them and by
    few of the pool's items (idf over the pool), not the query's; each with its idf."""
    held = Counter(word for words in first for word in words if word not in query)
    df = Counter(word for words in pool for word in words)
    size = len(pool)
    chosen: list[tuple[float, str]] = []
    for word, hits in held.items():
        if df[word] < 2 and hits < 2:
            continue  # in one item only: it leads nowhere
        idf = math.log((size + 1) / (df[word] + 0.5))
        chosen.append((hits * idf, word))
    chosen.sort(key=lambda pair: (-pair[0], pair[1]))
    return {word: math.log((size + 1) / (df[word] + 0.5)) for _, word in chosen[:count]}


LAST: dict[str, float] = {}
"""probe only: the last query's signals"""


def plan(
    rows: dict[int, dict[str, Any]],
    order: list[int],
    query: set[str],
    *,
    hits: int = 3,
    count: int = 8,
    pool: int = 100,
    gate: str = "coherence",
    distinct: bool = True,
    select: str = "shared",
) -> tuple[list[str], float]:
    """The feedback words for a second pass, and how far to trust it (0 to 1), from the
    first pass's ranking ``order`` (best first): the words of the best hit of each of
    the ``hits`` best files, rarest among the ``pool`` best candidates."""
    top = order[:pool]
    sets = {i: item_words(rows[i]) for i in top}
    first: list[int] = []
    files: set[str] = set()
    for i in top:
        if rows[i]["path"] not in files or not distinct:
            files.add(rows[i]["path"])
            first.append(i)
        if len(first) == hits:
            break
    if select == "rare":
        df0 = Counter(word for words_ in sets.values() for word in words_)
        held = {w for i in first for w in sets[i] if w not in query and not w.isdigit()}
        words = dict.fromkeys(sorted(held, key=lambda w: (df0[w], -len(w), w))[:count], 1.0)
    else:
        words = feedback_words([sets[i] for i in first], [sets[i] for i in top], query, count)
    agree = pair_agreement([sets[i] for i in first])
    rest = [sets[i] for i in top if i not in first]
    base = sum(_jaccard(a, b) for a, b in zip(rest[::2], rest[1::2], strict=False))
    base /= max(len(rest) // 2, 1)
    # clarity: KL of the first hits' words against the pool's (items as bags of sets)
    df = Counter(word for words_ in sets.values() for word in words_)
    tf = Counter(word for i in order[:10] for word in sets[i])
    total_df, total_tf = sum(df.values()) or 1, sum(tf.values()) or 1
    clarity = sum(
        (n / total_tf) * math.log((n / total_tf) / (df[w] / total_df)) for w, n in tf.items()
    )
    LAST.clear()
    LAST.update(
        agree=agree, base=base, clarity=clarity, words=len(query),
        files10=len({rows[i]["path"] for i in order[:10]}),
        poolfiles=len({rows[i]["path"] for i in top}),
        fwshare=sum(1 for i in top if sets[i] & set(words)) / max(len(top), 1),
    )  # fmt: skip
    if gate == "coherence":
        trust = max(0.0, 1.0 - base / agree) if agree > 0 else 0.0
    elif gate == "agree":
        trust = 1.0 if agree > base else 0.0
    else:
        trust = 1.0
    LAST["trust"] = trust
    return list(words), trust
