"""Widening and the floor, measured on the LoCoMo dev conversations.

    .venv/bin/python bench/widening.py                 # both parts
    .venv/bin/python bench/widening.py --part widening # or --part floor

Floor: bench/locomo.py's setting (every session years old, ``mode="deep"``,
k=100), recall at 1/5/10/20 and the mean number of hits kept, for each
``FLOOR_SHARE``.

Widening: each conversation as if it had just ended, the clock one day after its
last session, so its recent sessions are active or warm and the older ones cold
or archive (tiers by the vault specification's days). Every question runs in
``normal`` mode. Recall@5/10 over all questions, over those whose evidence is all
in the normal radius ("near": a widening that costs recall shows there) and over
the others ("colder": what widening wins), and how often the search widened, for
each ``STRONG_SHARE``; beside them normal mode that never widens (memdir before)
and deep mode. The p50 of a normal search that may widen is given as a ratio to
one that never does, measured in the same run.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import memdir
from memdir.index import search as ranking
from memdir.testing import FakeClock

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from locomo import EMBEDDER, SHARED, MemdirRetriever, session_moment  # noqa: E402
from timing import measure  # noqa: E402

STRONG_SHARES = (0.5, 0.9, 1.0, 1.25, 1.5, 2.0)
FLOOR_SHARES = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)
Row = tuple[dict[str, Any], list[str], memdir.Hits]


def load() -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    sys.path.insert(0, str(SHARED))
    import locomo_bench  # type: ignore[import-not-found]

    convs, questions, _ = locomo_bench.load_locomo(SHARED / "locomo10-dev.json")
    convs = {c: convs[c] for c in locomo_bench.SPLITS["dev"]}
    kept = [q for q in questions if q["conv"] in convs and q["evidence"]]
    return convs, [q for q in kept if q["category"] in (1, 2, 3, 4)]


def run(
    retriever: MemdirRetriever,
    memories: dict[str, memdir.Memory],
    questions: list[dict[str, Any]],
    mode: str,
    k: int,
) -> list[Row]:
    rows: list[Row] = []
    for q in questions:
        hits = memories[q["conv"]].search(q["question"], k=k, mode=mode)
        mapping = retriever.ids[q["conv"]]
        ranked = [mapping[(h.path, h.anchor)] for h in hits if (h.path, h.anchor) in mapping]
        rows.append((q, ranked, hits))
    return rows


def recall(rows: list[Row], k: int) -> float:
    if not rows:
        return float("nan")
    found = [len(set(q["evidence"]) & set(r[:k])) / len(q["evidence"]) for q, r, _ in rows]
    return sum(found) / len(found)


def floor_part(retriever: MemdirRetriever, questions: list[dict[str, Any]]) -> None:
    chosen = ranking.FLOOR_SHARE
    print("\n| FLOOR_SHARE | R@1 | R@5 | R@10 | R@20 | hits kept of 100 |")
    print("|---|---|---|---|---|---|")
    for share in FLOOR_SHARES:
        ranking.FLOOR_SHARE = share
        rows = run(retriever, retriever.memories, questions, "deep", 100)
        kept = sum(len(h) for _, _, h in rows) / len(rows)
        cells = " | ".join(f"{recall(rows, k):.3f}" for k in (1, 5, 10, 20))
        mark = " (chosen)" if share == chosen else ""
        print(f"| {share:.2f}{mark} | {cells} | {kept:.1f} |")
    ranking.FLOOR_SHARE = chosen


def widening_part(
    retriever: MemdirRetriever,
    convs: dict[str, list[dict[str, Any]]],
    questions: list[dict[str, Any]],
) -> None:
    dated: dict[str, memdir.Memory] = {}
    now: dict[str, Any] = {}
    for cid, docs in convs.items():
        last = max(m for m in (session_moment(d["date"]) for d in docs) if m)
        now[cid] = last + timedelta(days=1)
        folder = Path(retriever.tmp.name) / re.sub(r"\W", "_", cid)
        dated[cid] = memdir.open(folder, embedder=EMBEDDER, clock=FakeClock(now[cid]))
    moment = {(c, d["dia_id"]): session_moment(d["date"]) for c, ds in convs.items() for d in ds}
    warm = retriever.memories[next(iter(convs))].manifest.decay.warm_days

    def near(q: dict[str, Any]) -> bool:
        return all((now[q["conv"]] - moment[(q["conv"], e)]).days <= warm for e in q["evidence"])

    n_near = sum(1 for q in questions if near(q))
    print(f"\n{len(questions)} questions, {n_near} with all their evidence in the normal radius")
    print("\n| search | widened | R@5 all / near / colder | R@10 all / near / colder |")
    print("|---|---|---|---|")

    def line(label: str, rows: list[Row]) -> None:
        widened = sum(1 for _, _, h in rows if h.widened) / len(rows)
        cells = []
        for k in (5, 10):
            parts = (rows, [r for r in rows if near(r[0])], [r for r in rows if not near(r[0])])
            cells.append(" / ".join(f"{recall(p, k):.3f}" for p in parts))
        print(f"| {label} | {widened:.0%} | {cells[0]} | {cells[1]} |", flush=True)

    chosen, widens = ranking.STRONG_SHARE, ranking.WIDENS
    ranking.WIDENS = frozenset()
    line("normal, never widens (before)", run(retriever, dated, questions, "normal", 10))
    ranking.WIDENS = widens
    for share in STRONG_SHARES:
        ranking.STRONG_SHARE = share
        mark = " (chosen)" if share == chosen else ""
        line(f"normal, STRONG_SHARE {share}{mark}", run(retriever, dated, questions, "normal", 10))
    ranking.STRONG_SHARE = chosen
    line("deep", run(retriever, dated, questions, "deep", 10))

    def timed(mode: str) -> float:
        def one(n: int) -> object:
            q = questions[n % len(questions)]
            return dated[q["conv"]].search(q["question"], k=10, mode=mode)

        return measure(one, min(len(questions), 400))[0]

    ranking.WIDENS = frozenset()
    timed("normal")  # warm up
    before = timed("normal")
    ranking.WIDENS = widens
    after, deep = timed("normal"), timed("deep")
    print(
        f"\np50 against a normal search that never widens ({before:.1f} ms): "
        f"normal {after / before:.2f}x, deep {deep / before:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["floor", "widening", "both"], default="both")
    args = parser.parse_args()
    convs, questions = load()
    retriever = MemdirRetriever()
    for cid, docs in convs.items():
        retriever.index(cid, docs)
    if args.part in ("floor", "both"):
        floor_part(retriever, questions)
    if args.part in ("widening", "both"):
        widening_part(retriever, convs, questions)


if __name__ == "__main__":
    main()
