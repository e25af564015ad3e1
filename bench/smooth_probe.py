"""Neighbour-smoothed item vectors at query time (research, issue 16 phase 7).

Phase 6's contextual vectors (each item embedded with the turn before it) lifted
LoCoMo and cost RealMem, and needed a second model run per item. This probe asks
whether the same context can come from the vectors memdir already holds: an item's
vector summed with its file neighbours' (``normalize(v + a * v_prev + b * v_next)``),
in memory, no model run, no new vectors on disk, for every narrative item or only
for short ones (a reply too short to stand alone). Nothing in src changes: the
probe swaps the matrix ``VectorCache.top`` scans for the smoothed one, variant by
variant, on each question in turn (bench/ablation.py's runners and folders).

    .venv/bin/python bench/smooth_probe.py --keep /tmp/lead-keep [--only locomo] \\
        --variants '[["off", 0, 0, 0], ["prev .3", 0.3, 0, 0], ["prev .3 <200", 0.3, 0, 200]]'

A variant is [label, a (previous item's weight), b (next item's), shorter-than chars
(0: every item)].
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import ablation
import numpy as np

from memdir.index import sqlite_rows, vectors
from memdir.index.ranking import NARRATIVE_KINDS

CURRENT: tuple[float, float, int] = (0.0, 0.0, 0)


def _neighbours(rows: Any, cache: vectors.VectorCache) -> tuple[Any, Any, Any]:
    """Each matrix row's previous and next row in its file (-1: none) and its body's
    length."""
    size = cache.size
    prev = np.full(size, -1, dtype=np.int64)
    nxt = np.full(size, -1, dtype=np.int64)
    length = np.zeros(size, dtype=np.int64)
    place: dict[tuple[str, int], int] = {}
    info: list[tuple[int, str, int]] = []
    with rows.lock:
        found = rows.db.execute(
            "SELECT i.id, i.path, p.ordinal, i.kind, length(i.body) FROM items AS i "
            "JOIN places AS p ON p.id = i.id"
        ).fetchall()
    where = cache.rows
    for item_id, path, ordinal, kind, chars in found:
        row = where.get(int(item_id))
        if row is None:
            continue
        length[row] = int(chars or 0)
        place[(path, int(ordinal))] = row
        if kind in NARRATIVE_KINDS:
            info.append((row, path, int(ordinal)))
    for row, path, ordinal in info:
        prev[row] = place.get((path, ordinal - 1), -1)
        nxt[row] = place.get((path, ordinal + 1), -1)
    return prev, nxt, length


def _smoothed(rows: Any, cache: vectors.VectorCache, key: tuple[float, float, int]) -> Any:
    store: dict[Any, Any] = cache.__dict__.setdefault("_smooth", {})
    if key in store:
        return store[key]
    if "shape" not in store:
        store["shape"] = _neighbours(rows, cache)
    prev, nxt, length = store["shape"]
    a, b, short = key
    base = cache.matrix[: cache.size]
    out = base.copy()
    gate = (length < short) if short else np.ones(cache.size, dtype=bool)
    for weight, side in ((a, prev), (b, nxt)):
        if weight:
            has = (side >= 0) & gate
            out[has] += weight * base[side[has]]
    out /= np.linalg.norm(out, axis=1, keepdims=True).clip(1e-9)
    store[key] = out.astype(np.float32)
    return store[key]


_plain_semantic = sqlite_rows.SqliteRows.semantic
_plain_top = vectors.VectorCache.top


def semantic(self: Any, vector: Any, model: str, scope: Any, depth: int, floor: float) -> Any:
    cache = self.vectors
    if cache is not None and CURRENT != (0.0, 0.0, 0):
        cache.__dict__["_use"] = _smoothed(self, cache, CURRENT)
    elif cache is not None:
        cache.__dict__["_use"] = None
    return _plain_semantic(self, vector, model, scope, depth, floor)


def top(self: Any, query: Any, limit: int) -> list[tuple[int, float]]:
    use = self.__dict__.get("_use")
    if use is None:
        return _plain_top(self, query, limit)
    scores = use @ query
    scores = np.where(self.alive[: self.size], scores, -np.inf).astype(np.float32)
    limit = min(limit, int(self.alive[: self.size].sum()))
    best = vectors._best(scores, self.ids[: self.size], limit)
    return list(zip(self.ids[best].tolist(), scores[best].tolist(), strict=True))


_plain_among = vectors.VectorCache.top_among


def top_among(self: Any, query: Any, item_ids: Any, limit: int) -> list[tuple[int, float]]:
    use = self.__dict__.get("_use")
    if use is None:
        return _plain_among(self, query, item_ids, limit)
    rows = np.fromiter((self.rows[i] for i in item_ids if i in self.rows), dtype=np.int64)
    if rows.size == 0:
        return []
    scores = use[rows] @ query
    best = vectors._best(scores, self.ids[rows], min(limit, rows.size))
    return [(int(self.ids[rows[i]]), float(scores[i])) for i in best]


vectors.VectorCache.top_among = top_among  # type: ignore[method-assign]
sqlite_rows.SqliteRows.semantic = semantic  # type: ignore[method-assign]
vectors.VectorCache.top = top  # type: ignore[method-assign]


def main() -> None:
    global CURRENT
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True)
    parser.add_argument("--only", choices=["locomo", "realmem"])
    parser.add_argument("--variants", required=True)
    args = parser.parse_args()
    variants = [tuple(v) for v in json.loads(args.variants)]
    sys.path.insert(0, str(ablation.SHARED))
    from pathlib import Path

    keep = Path(args.keep)
    for name, runner in (("locomo", ablation.locomo_runner), ("realmem", ablation.realmem_runner)):
        if args.only and args.only != name:
            continue
        _, questions, one, line = runner(keep)
        rows: list[list[dict[str, Any]]] = [[] for _ in variants]
        times: list[list[float]] = [[] for _ in variants]
        for q in questions[:3]:
            one(q)
        for q in questions:
            for n, (_, a, b, short) in enumerate(variants):
                CURRENT = (float(a), float(b), int(short))
                start = time.perf_counter()
                rows[n].append(one(q))
                times[n].append(time.perf_counter() - start)
        CURRENT = (0.0, 0.0, 0)
        print(f"\n{name}", flush=True)
        base = statistics.median(times[0])
        for n, (label, *_rest) in enumerate(variants):
            print(f"| {label} | {line(rows[n])} | {statistics.median(times[n]) / base:.2f} |",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
