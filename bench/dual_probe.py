"""Two vectors per item (research, issue 16 phase 8): its own, and phase 6's
contextual one (the item embedded with the turn before it), the cosine a query
meets being ``(1 - w) x own + w x contextual``. Nothing in src changes: the probe
patches ``VectorCache.top`` and ``top_among`` in this process only.

It reads two sets of kept folders built from the same data, so that their items
match by ``vector_key``: memdir's own (bench/realmem.py or bench/locomo.py
``--keep``) and phase 6's contextual ones (bench/contextual_probe.py's commands,
``MEMDIR_CONTEXT_SHORT=200`` for items under 200 characters, into
``<ctx>/locomo200`` and ``<ctx>/realmem200``; ``--short 0`` reads ``<ctx>/locomo``
and ``<ctx>/realmem``, every item with context):

    PYTHONPATH=bench .venv/bin/python bench/dual_probe.py --keep /tmp/lead-keep \\
        --ctx /tmp/ctx --short 200 --only locomo \\
        --variants '[["own",0],["ctx",0],["max",0],["mix",0.3],["mix",0.5]]'

Every variant runs on each question in turn, in one process; ``own`` is memdir as
it ranks, ``ctx`` phase 6 (the contextual vector alone), ``max`` the better of
the two cosines, ``mix w`` the weighted sum. ``--tokens`` counts what the
contextual runs would add to ingest's model work instead:

    PYTHONPATH=bench .venv/bin/python bench/dual_probe.py --keep /tmp/lead-keep --tokens
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import ablation
import numpy as np

from memdir.index.vectors import VectorCache

MODE: list[Any] = ["own", 0.0]
"""the variant running: its name and its weight"""
_top = VectorCache.top
_among = VectorCache.top_among


def _mixed(own: Any, other: Any) -> Any:
    if MODE[0] == "ctx":
        return other
    if MODE[0] == "max":
        return np.maximum(own, other)
    return (1 - MODE[1]) * own + MODE[1] * other


def _scores(own: Any, other: Any, query: Any) -> Any:
    """Each row's score: ``mixn`` normalises the mixed vector (a cosine again, as
    pgvector's distance would take it); the others mix the two cosines."""
    if MODE[0] == "mixn":
        w = MODE[1]
        mixed = (1 - w) * own + w * other
        return (mixed @ query) / np.linalg.norm(mixed, axis=1)
    return _mixed(own @ query, other @ query)


def top(self: Any, query: Any, limit: int) -> list[tuple[int, float]]:
    ctx = getattr(self, "ctx", None)
    if ctx is None or MODE[0] == "own":
        return _top(self, query, limit)
    scores = _scores(self.matrix[: self.size], ctx[: self.size], query)
    scores = np.where(self.alive[: self.size], scores, -np.inf).astype(np.float32)
    best = np.argsort(-scores)[:limit]
    return list(zip(self.ids[best].tolist(), scores[best].tolist(), strict=True))


def top_among(self: Any, query: Any, item_ids: Any, limit: int) -> list[tuple[int, float]]:
    ctx = getattr(self, "ctx", None)
    if ctx is None or MODE[0] == "own":
        return _among(self, query, item_ids, limit)
    rows = np.fromiter((self.rows[i] for i in item_ids if i in self.rows), dtype=np.int64)
    if rows.size == 0:
        return []
    scores = _scores(self.matrix[rows], ctx[rows], query)
    best = np.argsort(-scores)[:limit]
    return list(zip(self.ids[rows][best].tolist(), scores[best].tolist(), strict=True))


VectorCache.top = top  # type: ignore[method-assign]
VectorCache.top_among = top_among  # type: ignore[method-assign]


def attach(memory: Any, ctx_db: Path, late: str | None = None, own: str | None = None) -> None:
    """Give ``memory``'s vectors in memory a second matrix, row for row: each item's
    contextual vector from ``ctx_db`` (its own where that folder has none)."""
    memory.search("warm up", k=1, mode="deep")  # the vectors loaded
    rows = memory.index.rows
    cache = rows.vectors
    assert cache is not None
    if late:
        saved = np.load(Path(memory.index.rows.path).parent / f"late-{late}.npz")
        found = {key: saved[key] for key in saved.files}
    else:
        db = sqlite3.connect(f"file:{ctx_db}?mode=ro", uri=True)
        (model,) = db.execute("SELECT model FROM vectors LIMIT 1").fetchone()
        found = {
            key: np.frombuffer(blob, dtype=np.float32)
            for key, blob in db.execute(
                "SELECT vector_key, vector FROM vectors WHERE model = ?", (model,)
            )
        }
    keys = dict(rows.db.execute("SELECT id, vector_key FROM items"))
    ctx = cache.matrix.copy()
    missing = 0
    for row in range(cache.size):
        vector = found.get(keys.get(int(cache.ids[row]), ""))
        if vector is None:
            missing += 1
        else:
            ctx[row] = vector
    cache.ctx = ctx
    if own:
        saved = np.load(Path(memory.index.rows.path).parent / f"late-{own}.npz")
        mine = {key: saved[key] for key in saved.files}
        matrix = cache.matrix.copy()
        for row in range(cache.size):
            vector = mine.get(keys.get(int(cache.ids[row]), ""))
            if vector is not None:
                matrix[row] = vector
        cache.matrix = matrix
        if late:  # an item with no late vector mixes its own (the replaced one)
            for row in range(cache.size):
                if keys.get(int(cache.ids[row]), "") not in found:
                    ctx[row] = matrix[row]
    print(f"{ctx_db.parent.parent.name}: {cache.size} rows, {missing} without context")


def context_tokens(keep: Path, chars: tuple[int, ...] = (100, 150, 300)) -> None:
    """What the contextual runs would add to ingest's model work: MiniLM's tokens for
    every item as embedded now, and for each short item again with its context
    (phase 6's text: its own, then up to ``chars`` of the turn before), as a ratio."""
    from memdir.index.embedders import MiniLMEmbedder, _vocab_path
    from memdir.index.ranking import NARRATIVE_KINDS
    from memdir.index.wordpiece import WordPiece

    cut = MiniLMEmbedder.MAX_TOKENS
    tokenizer = WordPiece(_vocab_path(), cut)

    def tokens(text: str) -> int:
        return min(len(tokenizer.encode_batch([text])[0]), cut)

    for name in ("locomo", "realmem"):
        own = items = short = 0
        extra = dict.fromkeys(chars, 0)
        for db_path in sorted((keep / name).glob("*/.memdir/index.db")):
            db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
            before: tuple[str, str, str] | None = None
            for path, kind, heading, meta, body in db.execute(
                "SELECT i.path, i.kind, i.heading, i.meta, i.body FROM items AS i "
                "JOIN places AS p ON p.id = i.id ORDER BY i.path, p.ordinal"
            ):
                text = "\n".join(part for part in (heading, meta, body) if part)
                own += tokens(text)
                items += 1
                if kind in NARRATIVE_KINDS and before and before[0] == path and len(text) < 200:
                    short += 1
                    for n in chars:
                        extra[n] += tokens(f"{text}\n(after {before[1]}: {before[2][:n]})")
                before = (path, heading, body)
        ratios = ", ".join(f"{n} chars: +{extra[n] / own:.2f}x" for n in chars)
        print(f"{name}: {items} items, {short} short with a turn before, {own} tokens; {ratios}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True, help="memdir's kept folders (ablation.py's)")
    parser.add_argument("--ctx", help="contextual_probe.py's kept folders")
    parser.add_argument("--late", help="late_probe.py's vectors instead (e.g. pack-256)")
    parser.add_argument("--own", help="late_probe.py's own vectors in place of memdir's")
    parser.add_argument("--short", default="200", help="which contextual set (0: every item)")
    parser.add_argument("--only", choices=["locomo", "realmem"])
    parser.add_argument(
        "--tokens", action="store_true", help="only count the contextual runs' tokens"
    )
    parser.add_argument(
        "--variants", default='[["own",0],["ctx",0],["max",0],["mix",0.3],["mix",0.5]]'
    )
    args = parser.parse_args()
    if args.tokens:
        context_tokens(Path(args.keep))
        return
    if args.only is None or (args.ctx is None and args.late is None):
        parser.error("--only and --ctx are needed, or --tokens")
    sys.path.insert(0, str(ablation.SHARED))
    runner = ablation.locomo_runner if args.only == "locomo" else ablation.realmem_runner
    memories, questions, one, line = runner(Path(args.keep))
    for q in questions[:3]:
        one(q)  # the model loaded
    suffix = "" if args.short == "0" else args.short
    for key, memory in memories.items():
        folder = Path(args.ctx or ".") / f"{args.only}{suffix}" / str(key).replace("-", "_")
        attach(memory, folder / ".memdir" / "index.db", args.late, args.own)
    variants = json.loads(args.variants)
    rows: list[list[Any]] = [[] for _ in variants]
    for q in questions:
        for n, (mode, weight) in enumerate(variants):
            MODE[:] = [mode, weight]
            rows[n].append(one(q))
    for n, (mode, weight) in enumerate(variants):
        print(f"| {mode} {weight} | {line(rows[n])} |", flush=True)


if __name__ == "__main__":
    main()
