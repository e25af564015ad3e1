"""Long items' windows, tried in the real search before the index holds them: an
item's cosine as its best window's, or as its windows' mean (the first 254 word
pieces as today, then windows of 254 every 192), on the same kept folders, in one
process. Tried and left out (bench/RESULTS.md, issue 16 phase 4).

    .venv/bin/python bench/windows_probe.py --keep /tmp/bench-keep   # locomo/ and realmem/
    .venv/bin/python bench/windows_probe.py --keep ... --only realmem --window 128 --stride 96

Each folder is built as bench/ablation.py builds it (bench/locomo.py's and
bench/realmem.py's retrievers, under ``--keep``). Every item whose embedded text
(heading, meta, body, as ``SqliteRows.embed_texts`` gives it) runs past ``--window``
content tokens gets its further windows embedded by the folder's own MiniLM (kept in
``<keep>/<bench>/<folder>.windows-W-S.npz`` for the next run) and held beside the
process's ``VectorCache``, whose ``top`` and ``top_among`` are wrapped here: with
the windows on, each item is scored once, by the best of its first vector and its
windows ("max") or by the normalised mean of them all ("mean"). No code in src
changes. Every variant runs on each question in turn (the load hits them alike),
with the cosine at its default weight and alone (``semantic_weight`` 1: the rest of
the ranking, neighbours, the session share and decay, still on); p50 at k = 100 is a
ratio to today's, and each row counts the questions whose recall@10 went up or down.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("MEMDIR_SHARED_BENCH", HERE.parent.parent / "shared" / "bench"))
WINDOW, STRIDE = 254, 192


class Windows:
    """One cache's extra windows: rows of item ids and their vectors."""

    mode = "off"  # "off" (today), "max" (the best window), "mean" (normalised mean)

    def __init__(self, owners: np.ndarray, matrix: np.ndarray) -> None:
        self.owners = owners
        self.matrix = matrix
        self.place: np.ndarray | None = None  # each window's row in the cache
        self.means: tuple[np.ndarray, np.ndarray] | None = None  # (rows, mean vectors)

    def prepare(self, cache: Any) -> None:
        if self.place is not None:  # the cache does not change during the run
            return
        where = cache.rows
        self.place = np.array([where.get(int(i), -1) for i in self.owners], dtype=np.int64)
        ok = self.place >= 0
        rows = np.unique(self.place[ok])
        sums = cache.matrix[rows].astype(np.float64)
        index = np.searchsorted(rows, self.place[ok])
        np.add.at(sums, index, self.matrix[ok])
        sums /= np.linalg.norm(sums, axis=1, keepdims=True)
        self.means = (rows, sums.astype(np.float32))


def extra_windows(memory: Any, window: int, stride: int) -> tuple[np.ndarray, np.ndarray, int]:
    from memdir.index.embedders import _vocab_path
    from memdir.index.wordpiece import WordPiece

    rows = memory.index.rows
    embedder = memory.index.embedder
    embedder._load()
    full = WordPiece(_vocab_path(), 10**9)
    ids = [r[0] for r in rows.db.execute("SELECT id FROM items")]
    texts = rows.embed_texts(ids)
    owners: list[int] = []
    encs: list[list[int]] = []
    for item_id, text in texts.items():
        tokens = full.encode(text)[1:-1]
        start = stride
        while len(tokens) > start + (window - stride) and start < len(tokens):
            encs.append([full.cls, *tokens[start : start + window], full.sep])
            owners.append(item_id)
            if start + window >= len(tokens):
                break
            start += stride
    dim = embedder.dim
    out = np.zeros((len(encs), dim), dtype=np.float32)
    order = sorted(range(len(encs)), key=lambda i: len(encs[i]))
    for b in range(0, len(order), 8):
        chunk = order[b : b + 8]
        lengths = np.array([len(encs[i]) for i in chunk], dtype=np.int64)
        out[chunk] = embedder._run([encs[i] for i in chunk], lengths)
    return np.array(owners, dtype=np.int64), out, len(texts)


def patch() -> None:
    from memdir.index import vectors as module

    cache_class = module.VectorCache
    plain_top, plain_among = cache_class.top, cache_class.top_among

    def boosted(cache: Any, query: np.ndarray, scores: np.ndarray, rows: np.ndarray | None) -> None:
        """Each item's score in ``scores`` (over ``rows``, or every row) as the mode says."""
        extra: Windows | None = getattr(cache, "windows", None)
        if extra is None or Windows.mode == "off" or extra.owners.size == 0:
            return
        extra.prepare(cache)
        assert extra.place is not None and extra.means is not None
        if Windows.mode == "max":
            target, values = extra.place, extra.matrix @ query
        else:
            target, values = extra.means[0], extra.means[1] @ query
        if rows is not None:
            pos = np.full(cache.size, -1, dtype=np.int64)
            pos[rows] = np.arange(rows.size)
            target = np.where(target >= 0, pos[np.clip(target, 0, None)], -1)
        ok = target >= 0
        if Windows.mode == "max":
            np.maximum.at(scores, target[ok], values[ok])
        else:
            scores[target[ok]] = values[ok]

    def top(cache: Any, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        if getattr(cache, "windows", None) is None or Windows.mode == "off":
            return plain_top(cache, query, limit)
        with cache._lock:
            if cache.size == 0:
                return []
            scores = (cache.matrix[: cache.size] @ query).astype(np.float32)
            boosted(cache, query, scores, None)
            scores = np.where(cache.alive[: cache.size], scores, -np.inf).astype(np.float32)
            limit = min(limit, int(cache.alive[: cache.size].sum()))
            if limit <= 0:
                return []
            best = np.argpartition(-scores, limit - 1)[:limit]
            best = best[np.argsort(-scores[best], kind="stable")]
            return [(int(cache.ids[row]), float(scores[row])) for row in best]

    def top_among(cache: Any, query: np.ndarray, item_ids: Any, limit: int) -> Any:
        if getattr(cache, "windows", None) is None or Windows.mode == "off":
            return plain_among(cache, query, item_ids, limit)
        with cache._lock:
            rows = np.fromiter((cache.rows[i] for i in item_ids if i in cache.rows), dtype=np.int64)
            if rows.size == 0:
                return []
            scores = (cache.matrix[rows] @ query).astype(np.float32)
            boosted(cache, query, scores, rows)
            limit = min(limit, rows.size)
            best = np.argpartition(-scores, limit - 1)[:limit]
            best = best[np.argsort(-scores[best], kind="stable")]
            return [(int(cache.ids[rows[i]]), float(scores[i])) for i in best]

    cache_class.top = top  # type: ignore[method-assign]
    cache_class.top_among = top_among  # type: ignore[method-assign]


VARIANTS: list[tuple[str, str, dict[str, Any]]] = [
    ("first window (today)", "off", {}),
    ("best window (max)", "max", {}),
    ("mean of the windows", "mean", {}),
    ("semantic side only (cosine weighs 1), first window", "off", {"semantic_weight": 1.0}),
    ("semantic side only, best window", "max", {"semantic_weight": 1.0}),
    ("semantic side only, mean of the windows", "mean", {"semantic_weight": 1.0}),
]


def windows_of(memory: Any, cached: Path, window: int, stride: int) -> tuple[np.ndarray, ...]:
    """The folder's extra windows, embedded once and kept in ``cached`` (a probe's file)."""
    if cached.is_file():
        found = np.load(cached)
        return found["owners"], found["matrix"], found["items"]
    owners, matrix, items = extra_windows(memory, window, stride)
    np.savez(cached, owners=owners, matrix=matrix, items=np.array(items))
    return owners, matrix, np.array(items)


def main() -> None:
    from dataclasses import replace

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True)
    parser.add_argument("--only", choices=["locomo", "realmem"])
    parser.add_argument("--window", type=int, default=WINDOW)
    parser.add_argument("--stride", type=int, default=STRIDE)
    parser.add_argument("--out", help="write each question's scores per variant here (JSON)")
    args = parser.parse_args()
    sys.path.insert(0, str(SHARED))
    sys.path.insert(0, str(HERE))
    from ablation import locomo_runner, realmem_runner

    patch()
    keep = Path(args.keep)
    for name, runner in (("locomo", locomo_runner), ("realmem", realmem_runner)):
        if args.only and args.only != name:
            continue
        memories, questions, one, line = runner(keep)
        for q in questions[:3]:
            one(q)  # warm: the model loaded, the vectors in memory
        began = time.perf_counter()
        items = windows = long_items = 0
        for key, memory in memories.items():
            cached = keep / name / f"{key}.windows-{args.window}-{args.stride}.npz"
            owners, matrix, count = windows_of(memory, cached, args.window, args.stride)
            memory.index.vectors.windows = Windows(owners, matrix)
            items += int(count)
            windows += len(owners)
            long_items += len(np.unique(owners))
        print(f"\n{name}: {items} items, {long_items} past {args.window} tokens, "
              f"{windows} extra windows "
              f"({time.perf_counter() - began:.0f} s to embed or read)", flush=True)  # fmt: skip
        defaults = {key: memory.index.ranking for key, memory in memories.items()}
        rows: list[list[dict[str, Any]]] = [[] for _ in VARIANTS]
        times: list[list[float]] = [[] for _ in VARIANTS]
        for q in questions:
            for n, (_, mode, change) in enumerate(VARIANTS):
                Windows.mode = mode
                for key, memory in memories.items():
                    memory.index.ranking = replace(defaults[key], **change)
                start = time.perf_counter()
                rows[n].append(one(q))
                times[n].append(time.perf_counter() - start)
        Windows.mode = "off"
        for key, memory in memories.items():
            memory.index.ranking = defaults[key]
        if args.out:
            import json

            dump = {label: found for (label, _, _), found in zip(VARIANTS, rows, strict=True)}
            Path(f"{args.out}.{name}.json").write_text(json.dumps(dump, default=str))
        base = statistics.median(times[0])
        for n, (label, _, _) in enumerate(VARIANTS):
            p50 = statistics.median(times[n])
            pairs = list(zip(rows[0], rows[n], strict=True))
            up = sum(b["recall@10"] > a["recall@10"] for a, b in pairs)
            down = sum(b["recall@10"] < a["recall@10"] for a, b in pairs)
            print(f"| {label} | {line(rows[n])} | {p50 / base:.2f} | {p50 * 1000:.1f} "
                  f"| {up} up, {down} down |")  # fmt: skip


if __name__ == "__main__":
    main()
