"""A soft thread of the best hit's session, by absolute closeness (research, issue 16
phase 13; nothing in ``src`` changes).

    PYTHONPATH=bench .venv/bin/python bench/thread_probe.py --realmem /tmp/k/realmem \
        --locomo /tmp/k/locomo --floors 0.3,0.5 --weights 0.25,0.5,1

Phase 10's soft thread (``central_probe.py``) scaled each session's closeness to the
best session over the query's candidates, so one conversation whose sessions are all
alike (LoCoMo) got the same spread of boosts as a memory of many projects (RealMem),
and lost. Here a hit's score is multiplied by ``1 + g x max(0, c - t) / (1 - t)``, ``c``
the cosine between its file's mean item vector and the best hit's file's, ``t`` a
floor: a file is lifted for how like the best one it is, not for how much more like
it than the other candidates. Sessions that are all alike are all lifted about
alike, and the order within them stays memdir's. Printed: LoCoMo dev (categories 1-4)
evidence R@5 / R@10 / All@10 and R@10 by category; RealMem dev session R@5 / R@10 /
All@10, as their scorers count them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from central_probe import session_vectors  # noqa: E402

Ways = list[tuple[str, float, float]]


def rethread(
    hits: list[Any], vectors: dict[str, np.ndarray], floor: float, weight: float
) -> list[Any]:
    """``hits`` re-ordered by their scores lifted by their file's closeness to the best's."""
    if not hits or weight == 0.0 or hits[0].path not in vectors:
        return hits
    best = vectors[hits[0].path]

    def lifted(hit: Any) -> float:
        vector = vectors.get(hit.path)
        closeness = float(vector @ best) if vector is not None else 0.0
        return hit.score * (1.0 + weight * max(0.0, closeness - floor) / (1.0 - floor))

    return sorted(hits, key=lambda hit: -lifted(hit))


def ways(floors: list[float], weights: list[float]) -> Ways:
    return [("memdir", 0.0, 0.0)] + [(f"t {t}, g {g}", t, g) for t in floors for g in weights]


def realmem_scores(keep: str, all_ways: Ways) -> dict[str, list[float]]:
    from datetime import timedelta

    import realmem

    data, retriever = realmem.kept(keep)
    vectors = {
        hid: session_vectors(Path(keep) / retriever.folder(hid).name / ".memdir" / "index.db")
        for hid in data["haystacks"]
    }
    totals = {name: [0.0, 0.0, 0.0] for name, _, _ in all_ways}
    for q in data["questions"]:
        hid = q["haystack"]
        asked = realmem.moment_of(q["before_moment"])
        retriever.now = asked
        hits = list(
            retriever.memories[hid].search(
                q["question"], k=100, mode=realmem.MODE, until=asked - timedelta(seconds=1)
            )
        )
        for name, floor, weight in all_ways:
            sessions: list[str] = []
            for hit in rethread(hits, vectors[hid], floor, weight):
                if hit.path not in sessions:
                    sessions.append(hit.path)
            gold = [realmem.session_path(s) for s in sessions_of(data, hid, q["gold"])]
            top5, top10 = set(sessions[:5]), set(sessions[:10])
            totals[name][0] += sum(g in top5 for g in gold) / len(gold)
            totals[name][1] += sum(g in top10 for g in gold) / len(gold)
            totals[name][2] += all(g in top10 for g in gold)
    n = len(data["questions"])
    return {name: [value / n for value in values] for name, values in totals.items()}


def sessions_of(data: dict[str, Any], hid: str, ids: list[str]) -> list[dict[str, Any]]:
    by_id = {s["id"]: s for s in data["haystacks"][hid]}
    return [by_id[i] for i in ids]


def locomo_kept(keep: str) -> tuple[Any, dict[str, Any], list[dict[str, Any]], Any]:
    """LoCoMo's dev conversations in their kept folders: the retriever, each folder's
    file vectors, the questions of categories 1-4, and the conversations' turns."""
    os.environ["MEMDIR_BENCH_KEEP"] = keep
    import locomo
    import locomo_bench  # type: ignore[import-not-found]

    convs, questions, _ = locomo_bench.load_locomo(locomo_bench.DEFAULT_DATA)
    wanted = locomo_bench.SPLITS["dev"]
    retriever = locomo.MemdirRetriever()
    for conv in wanted:
        retriever.index(conv, convs[conv])
    vectors = {
        conv: session_vectors(Path(keep) / retriever.folder(conv).name / ".memdir" / "index.db")
        for conv in wanted
    }
    asked = [
        q
        for q in questions
        if q["conv"] in wanted and q["evidence"] and q["category"] in (1, 2, 3, 4)
    ]
    return retriever, vectors, asked, {conv: convs[conv] for conv in wanted}


def locomo_scores(keep: str, all_ways: Ways) -> dict[str, list[float]]:
    retriever, vectors, asked, _ = locomo_kept(keep)
    totals: dict[str, list[float]] = {name: [0.0, 0.0, 0.0] for name, _, _ in all_ways}
    kinds: dict[str, dict[int, list[float]]] = {name: defaultdict(list) for name, _, _ in all_ways}
    for q in asked:
        conv = q["conv"]
        hits = list(retriever.memories[conv].search(q["question"], k=100, mode="deep"))
        for name, floor, weight in all_ways:
            ranked = retriever.found(conv, rethread(hits, vectors[conv], floor, weight))
            evidence = set(q["evidence"])
            r5 = len(evidence & set(ranked[:5])) / len(evidence)
            r10 = len(evidence & set(ranked[:10])) / len(evidence)
            totals[name][0] += r5
            totals[name][1] += r10
            totals[name][2] += r10 == 1.0
            kinds[name][q["category"]].append(r10)
    n = len(asked)
    return {
        name: [value / n for value in values]
        + [float(np.mean(kinds[name][c])) for c in (1, 2, 3, 4)]
        for name, values in totals.items()
    }


def widening_scores(keep: str, all_ways: Ways) -> dict[str, list[float]]:
    """LoCoMo as bench/widening.py asks it (each conversation as if it had just ended: the
    clock a day after its last session, so decay and the tiers weigh its older
    sessions): R@5 and R@10 in normal mode (which widens) and in deep mode."""
    from datetime import timedelta

    import locomo

    import memdir
    from memdir.testing import FakeClock

    retriever, vectors, asked, convs = locomo_kept(keep)
    dated = {}
    for conv, turns in convs.items():
        last = max(m for m in (locomo.session_moment(d["date"]) for d in turns) if m)
        folder = Path(keep) / retriever.folder(conv).name
        dated[conv] = memdir.open(
            folder, embedder="minilm", clock=FakeClock(last + timedelta(days=1))
        )
    totals = {name: [0.0, 0.0, 0.0, 0.0] for name, _, _ in all_ways}
    for q in asked:
        conv, evidence = q["conv"], set(q["evidence"])
        for column, mode in ((0, "normal"), (2, "deep")):
            hits = list(dated[conv].search(q["question"], k=100, mode=mode))
            for name, floor, weight in all_ways:
                ranked = retriever.found(conv, rethread(hits, vectors[conv], floor, weight))
                totals[name][column] += len(evidence & set(ranked[:5])) / len(evidence)
                totals[name][column + 1] += len(evidence & set(ranked[:10])) / len(evidence)
    return {name: [value / len(asked) for value in values] for name, values in totals.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--realmem", required=True)
    parser.add_argument("--locomo", required=True)
    parser.add_argument("--floors", default="0.3,0.5")
    parser.add_argument("--weights", default="0.25,0.5,1")
    parser.add_argument("--widening", action="store_true", help="LoCoMo as widening.py asks it")
    args = parser.parse_args()
    shared = Path(os.environ.get("MEMDIR_SHARED_BENCH", HERE.parent.parent / "shared" / "bench"))
    sys.path.insert(0, str(shared))
    all_ways = ways(
        [float(t) for t in args.floors.split(",")], [float(g) for g in args.weights.split(",")]
    )
    if args.widening:
        wide = widening_scores(args.locomo, all_ways)
        print("| way | normal (widens) R@5 / R@10 | deep R@5 / R@10 |\n|---|---|---|")
        for name, _, _ in all_ways:
            a = wide[name]
            print(f"| {name} | {a[0]:.3f} / {a[1]:.3f} | {a[2]:.3f} / {a[3]:.3f} |")
        return
    lo = locomo_scores(args.locomo, all_ways)
    rm = realmem_scores(args.realmem, all_ways)
    print(
        "| way | LoCoMo R@5 / R@10 / All@10 (multi-hop, temporal, open-domain, single-hop) "
        "| RealMem R@5 / R@10 / All@10 |\n|---|---|---|"
    )
    for name, _, _ in all_ways:
        a, b = lo[name], rm[name]
        print(
            f"| {name} | {a[0]:.3f} / {a[1]:.3f} / {a[2]:.3f} ({a[3]:.3f}, {a[4]:.3f}, "
            f"{a[5]:.3f}, {a[6]:.3f}) | {b[0]:.3f} / {b[1]:.3f} / {b[2]:.3f} |"
        )


if __name__ == "__main__":
    main()
