"""What each part of the ranking buys, on LoCoMo and on RealMem: every part switched
off in turn, the same searches on the same folders, one process.

    .venv/bin/python bench/ablation.py --keep /tmp/bench-keep     # build once, reuse
    .venv/bin/python bench/ablation.py --only locomo --keep ...   # or --only realmem

The folders are built as bench/locomo.py and bench/realmem.py build them (kept
under ``--keep`` so a rerun only searches). A part is switched off through
``Index.ranking`` (``memdir.index.ranking.Ranking``), never by editing code.
Figures: LoCoMo dev, categories 1-4, evidence recall@5/@10, all@10 and recall@10
per category; RealMem dev, on sessions, recall@5/@10 and all@10, in ``deep``
mode as bench/realmem.py runs. Query p50 at k=100 is printed as a ratio to the
run with every part on (timings swing with the machine's load).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("MEMDIR_SHARED_BENCH", HERE.parent.parent / "shared" / "bench"))

VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("everything on", {}),
    ("without the session share (rest of the conversation)", {"session_share": 0.0}),
    ("without the date boost (time words)", {"date_boost": 1.0}),
    ("without neighbours", {"neighbour_share": 0.0}),
    ("without the subject boost", {"subject_boost": 1.0}),
    ("without the other-value check", {"other_value_share": 1.0}),
    ("without the exact bonus", {"exact_bonus": 0.0}),
    ("without decay", {"decay": False}),
    ("without the semantic side (cosine weighs 0)", {"semantic_weight": 0.0}),
    (
        "before issue 16 (no session share, no date boost)",
        {"session_share": 0.0, "date_boost": 1.0},
    ),
]


def _mean(rows: list[dict[str, float]], key: str) -> float:
    return sum(row[key] for row in rows) / len(rows) if rows else 0.0


def locomo_runner(keep: Path) -> tuple[Any, Any]:
    os.environ["MEMDIR_BENCH_KEEP"] = str(keep / "locomo")
    import locomo
    import locomo_bench  # type: ignore[import-not-found]

    convs, questions, _ = locomo_bench.load_locomo(SHARED / "locomo10-dev.json")
    convs = {c: convs[c] for c in locomo_bench.SPLITS["dev"]}
    questions = [q for q in questions if q["conv"] in convs and q["evidence"]]
    questions = [q for q in questions if q["category"] in (1, 2, 3, 4)]
    retriever = locomo.MemdirRetriever()
    for conv, docs in convs.items():
        retriever.index(conv, docs)

    def run() -> tuple[str, list[float]]:
        rows, lat = [], []
        for q in questions:
            start = time.perf_counter()
            got = retriever.search(q["conv"], q["question"], 100)
            lat.append(time.perf_counter() - start)
            row = locomo_bench.score_ranking(got, q["evidence"])
            row["category"] = q["category"]
            rows.append(row)
        cats = " | ".join(
            f"{_mean([r for r in rows if r['category'] == c], 'recall@10'):.3f}"
            for c in (1, 2, 3, 4)
        )
        line = (f"{_mean(rows, 'recall@5'):.3f} | {_mean(rows, 'recall@10'):.3f} | "
                f"{_mean(rows, 'all@10'):.3f} | {cats}")  # fmt: skip
        return line, lat

    return retriever.memories, run


def realmem_runner(keep: Path) -> tuple[Any, Any]:
    os.environ["MEMDIR_BENCH_KEEP"] = str(keep / "realmem")
    import realmem
    import realmem_bench  # type: ignore[import-not-found]

    hay, docs, questions = realmem_bench.load(str(SHARED / "realmem-dev.json"), None)
    retriever = realmem.MemdirRetriever()
    for hid in hay:
        retriever.index(hid, docs[hid], hay[hid])
    session_of = {d["id"]: d["session"] for hid in docs for d in docs[hid]}

    def run() -> tuple[str, list[float]]:
        rows, lat = [], []
        for q in questions:
            start = time.perf_counter()
            got = retriever.search(q["haystack"], q, 100)
            lat.append(time.perf_counter() - start)
            row = realmem_bench.score(realmem_bench.to_sessions(got, session_of), q["gold"])
            row["multi"] = q["session_type"] == "multi_session"
            rows.append(row)
        multi = [r for r in rows if r["multi"]]
        line = (f"{_mean(rows, 'recall@5'):.3f} | {_mean(rows, 'recall@10'):.3f} | "
                f"{_mean(rows, 'all@10'):.3f} | {_mean(multi, 'recall@10'):.3f}")  # fmt: skip
        return line, lat

    return retriever.memories, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True, help="folder for the built memories (reused)")
    parser.add_argument("--only", choices=["locomo", "realmem"])
    args = parser.parse_args()
    sys.path.insert(0, str(SHARED))
    sys.path.insert(0, str(HERE))
    keep = Path(args.keep)
    heads = {
        "locomo": "| variant | R@5 | R@10 | All@10 | multi-hop | temporal | open-domain "
        "| single-hop | p50 x |\n|---|---|---|---|---|---|---|---|---|",
        "realmem": "| variant | R@5 | R@10 | All@10 | R@10 multi-session | p50 x |\n"
        "|---|---|---|---|---|---|",
    }
    for name, runner in (("locomo", locomo_runner), ("realmem", realmem_runner)):
        if args.only and args.only != name:
            continue
        memories, run = runner(keep)
        defaults = {key: memory.index.ranking for key, memory in memories.items()}
        run()  # warm: the model loaded, the vectors in memory
        print(f"\n{name}\n\n{heads[name]}", flush=True)
        base = None
        for label, change in VARIANTS:
            for key, memory in memories.items():
                memory.index.ranking = replace(defaults[key], **change)
            line, lat = run()
            p50 = statistics.median(lat)
            base = base or p50
            print(f"| {label} | {line} | {p50 / base:.2f} |", flush=True)
        for key, memory in memories.items():
            memory.index.ranking = defaults[key]


if __name__ == "__main__":
    main()
