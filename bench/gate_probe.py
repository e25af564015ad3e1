"""Probe: ranking variants interleaved (as bench/ablation.py), with each query's
feedback signals, per question, to a JSON file.

    .venv/bin/python bench/gate_probe.py --keep /tmp/keep --out /tmp/probe.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ablation  # noqa: E402

from memdir.index import feedback  # noqa: E402

VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("base", {}),
    ("fb .4 ungated", {"feedback": 0.4, "feedback_gate": "none"}),
    ("fb .4 coherence", {"feedback": 0.4, "feedback_gate": "coherence"}),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keep", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", choices=["locomo", "realmem"])
    parser.add_argument("--variants", default="")
    args = parser.parse_args()
    sys.path.insert(0, str(ablation.SHARED))
    variants = VARIANTS
    if args.variants:
        variants = [("base", {})] + [
            (text, json.loads(text)) for text in args.variants.split(";") if text
        ]
    out: dict[str, Any] = {}
    for name, runner in (("locomo", ablation.locomo_runner), ("realmem", ablation.realmem_runner)):
        if args.only and args.only != name:
            continue
        memories, questions, one, line = runner(Path(args.keep))
        defaults = {key: memory.index.ranking for key, memory in memories.items()}
        rows: list[list[dict[str, Any]]] = [[] for _ in variants]
        times: list[list[float]] = [[] for _ in variants]
        signals: list[list[dict[str, float]]] = [[] for _ in variants]
        for q in questions[:3]:
            one(q)
        for q in questions:
            for n, (_, change) in enumerate(variants):
                for key, memory in memories.items():
                    memory.index.ranking = replace(defaults[key], **change)
                feedback.LAST.clear()
                start = time.perf_counter()
                row = one(q)
                times[n].append(time.perf_counter() - start)
                rows[n].append(row)
                signals[n].append(dict(feedback.LAST))
        for key, memory in memories.items():
            memory.index.ranking = defaults[key]
        base = statistics.median(times[0])
        print(f"\n{name}", flush=True)
        for n, (label, _) in enumerate(variants):
            p50 = statistics.median(times[n])
            print(f"| {label} | {line(rows[n])} | {p50 / base:.2f} |", flush=True)
        out[name] = {
            "variants": [label for label, _ in variants],
            "rows": rows,
            "signals": signals,
            "questions": [q.get("question") for q in questions],
        }
    Path(args.out).write_text(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
