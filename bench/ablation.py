"""What each part of the ranking buys, on LoCoMo and on RealMem: every part switched
off in turn, the same searches on the same folders, one process.

    .venv/bin/python bench/ablation.py --keep /tmp/bench-keep     # build once, reuse
    .venv/bin/python bench/ablation.py --only locomo --keep ...   # or --only realmem
    .venv/bin/python bench/ablation.py --only realmem --keep ... \
        --variants '[["on", {}], ["no decay", {"decay": false}]]'   # your own variants

The folders are built as bench/locomo.py and bench/realmem.py build them (kept
under ``--keep`` so a rerun only searches). A part is switched off through
``Index.ranking`` (``memdir.index.ranking.Ranking``, the candidate depth
included), never by editing code.
Figures: LoCoMo dev, categories 1-4, evidence recall@5/@10, all@10 and recall@10
per category; RealMem dev, on sessions, recall@5/@10 and all@10, in ``deep``
mode as bench/realmem.py runs. Every variant runs on each question in turn, so a
change in the machine's load hits them alike; query p50 at k=100 is printed as a
ratio to the variant with every part on.
"""

from __future__ import annotations

import argparse
import json
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
    ("without the date boost (time words; the day boost with it)", {"date_boost": 1.0}),
    ("without the day boost (a day named with its month and year)", {"day_boost": 1.0}),
    ("without neighbours", {"neighbour_share": 0.0}),
    ("without the subject boost", {"subject_boost": 1.0}),
    ("without the other-value check", {"other_value_share": 1.0}),
    ("without the exact bonus", {"exact_bonus": 0.0}),
    ("without decay", {"decay": False}),
    ("without the semantic side (cosine weighs 0)", {"semantic_weight": 0.0}),
    ("subject boost 1.3 (phase 9's)", {"subject_boost": 1.3}),
    ("cosine scaled from half the floor (tried in phase 10)", {"cosine_origin": 0.5}),
    ("200 candidates a side instead of 300 (phase 1's depth)", {"depth": 200}),
    ("400 candidates a side", {"depth": 400}),
    (
        "before issue 16 (no session share, no date boost, 200 a side)",
        {"session_share": 0.0, "date_boost": 1.0, "depth": 200},
    ),
]


def _mean(rows: list[dict[str, float]], key: str) -> float:
    return sum(row[key] for row in rows) / len(rows) if rows else 0.0


def locomo_runner(keep: Path) -> tuple[Any, ...]:
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

    def one(q: dict[str, Any]) -> dict[str, Any]:
        row: dict[str, Any] = locomo_bench.score_ranking(
            retriever.search(q["conv"], q["question"], 100), q["evidence"]
        )
        row["category"] = q["category"]
        return row

    def line(rows: list[dict[str, Any]]) -> str:
        cats = " | ".join(
            f"{_mean([r for r in rows if r['category'] == c], 'recall@10'):.3f}"
            for c in (1, 2, 3, 4)
        )
        return (f"{_mean(rows, 'recall@5'):.3f} | {_mean(rows, 'recall@10'):.3f} | "
                f"{_mean(rows, 'all@10'):.3f} | {cats}")  # fmt: skip

    return retriever.memories, questions, one, line


def realmem_runner(keep: Path) -> tuple[Any, ...]:
    os.environ["MEMDIR_BENCH_KEEP"] = str(keep / "realmem")
    import realmem
    import realmem_bench  # type: ignore[import-not-found]

    hay, docs, questions = realmem_bench.load(str(SHARED / "realmem-dev.json"), None)
    retriever = realmem.MemdirRetriever()
    for hid in hay:
        retriever.index(hid, docs[hid], hay[hid])
    session_of = {d["id"]: d["session"] for hid in docs for d in docs[hid]}

    def one(q: dict[str, Any]) -> dict[str, Any]:
        got = retriever.search(q["haystack"], q, 100)
        row: dict[str, Any] = realmem_bench.score(
            realmem_bench.to_sessions(got, session_of), q["gold"]
        )
        row["multi"] = q["session_type"] == "multi_session"
        return row

    def line(rows: list[dict[str, Any]]) -> str:
        multi = [r for r in rows if r["multi"]]
        return (f"{_mean(rows, 'recall@5'):.3f} | {_mean(rows, 'recall@10'):.3f} | "
                f"{_mean(rows, 'all@10'):.3f} | {_mean(multi, 'recall@10'):.3f}")  # fmt: skip

    return retriever.memories, questions, one, line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True, help="folder for the built memories (reused)")
    parser.add_argument("--only", choices=["locomo", "realmem"])
    parser.add_argument(
        "--variants",
        help="JSON list of [label, Ranking changes] run instead of the table's parts "
        "(the first is the baseline the times are a ratio to), e.g. "
        '\'[["on", {}], ["no decay", {"decay": false}]]\'',
    )
    args = parser.parse_args()
    variants = [tuple(pair) for pair in json.loads(args.variants)] if args.variants else VARIANTS
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
        memories, questions, one, line = runner(keep)
        defaults = {key: memory.index.ranking for key, memory in memories.items()}
        rows: list[list[dict[str, Any]]] = [[] for _ in variants]
        times: list[list[float]] = [[] for _ in variants]
        for q in questions[:3]:
            one(q)  # warm: the model loaded, the vectors in memory
        for q in questions:  # every variant on each question in turn: load hits all alike
            for n, (_, change) in enumerate(variants):
                for key, memory in memories.items():
                    memory.index.ranking = replace(defaults[key], **change)
                start = time.perf_counter()
                rows[n].append(one(q))
                times[n].append(time.perf_counter() - start)
        for key, memory in memories.items():
            memory.index.ranking = defaults[key]
        print(f"\n{name}\n\n{heads[name]}", flush=True)
        base = statistics.median(times[0])
        for n, (label, _) in enumerate(variants):
            p50 = statistics.median(times[n])
            print(f"| {label} | {line(rows[n])} | {p50 / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
