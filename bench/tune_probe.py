"""Are the ranking's weights at a joint optimum of both benchmarks? Coordinate ascent
over ``Ranking``'s weights (and the embedder's similarity floor) on half of each
benchmark's questions, each step checked on the other half.

    PYTHONPATH=bench .venv/bin/python bench/tune_probe.py --keep /tmp/lead-keep

Research, not a part of memdir: it prints what it tried and where it ended; a weight
is only worth changing in ``memdir.index.ranking`` if the held-out half gains on both
benchmarks too. The halves split each benchmark's questions by a hash of their text,
so a step that helps the tuning half by luck shows as no gain on the other.

The objective, on each half: LoCoMo R@10 + RealMem R@10 + (LoCoMo All@10 + RealMem
All@10) / 2, the issue's two recall targets weighed first. A step is taken when the
tuning half gains more than ``--eps`` and neither benchmark's R@10 falls on it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ablation import SHARED, locomo_runner, realmem_runner  # noqa: E402

import memdir.index.ranking as ranking_module  # noqa: E402
from memdir.index.search import _floor  # noqa: E402

_FUSE = ranking_module.fuse
PROBE_KEYS = {"floor", "bm25_power", "bm25_origin", "cos_power"}
"""settings that are not Ranking's fields: the embedder's floor, and the fusion's shape
(research: ``_probe_fuse``)"""


def _probe_fuse(setting: dict[str, Any]) -> Any:
    """``ranking.fuse`` as it is, or reshaped: each BM25 scaled from ``bm25_origin`` x the
    query's best (0) to its best (1) and raised to ``bm25_power``; the cosine side's
    scaled value raised to ``cos_power``."""
    power = setting.get("bm25_power", 1.0)
    origin = setting.get("bm25_origin", 0.0)
    cos_power = setting.get("cos_power", 1.0)
    if power == 1.0 and origin == 0.0 and cos_power == 1.0:
        return _FUSE

    def fuse(keyword: Any, semantic: Any, cos_origin: float, weight: float) -> Any:
        out: dict[int, float] = {}
        if keyword:
            best = max(score for _, score in keyword) or 1.0
            low = origin * best
            for item_id, score in keyword:
                scaled = max(score - low, 0.0) / max(best - low, 1e-9)
                out[item_id] = out.get(item_id, 0.0) + (1 - weight) * scaled**power
        if semantic:
            spread = max(max(score for _, score in semantic) - cos_origin, 1e-9)
            for item_id, score in semantic:
                scaled = max(score - cos_origin, 0.0) / spread
                out[item_id] = out.get(item_id, 0.0) + weight * scaled**cos_power
        return out

    return fuse


GRID: dict[str, list[float]] = {
    "semantic_weight": [0.3, 0.35, 0.45, 0.5, 0.55],
    "neighbour_share": [0.25, 0.3, 0.5, 0.6],
    "session_share": [0.25, 0.3, 0.5, 0.6],
    "session_items": [3, 4, 7, 10],
    "subject_boost": [1.2, 1.3, 1.6],
    "cosine_origin": [0.0, 0.25, 0.75, 1.0],
    "other_value_share": [0.5, 0.85],
    "date_boost": [1.15, 1.5],
    "day_boost": [1.15, 1.5],
}


def half(text: str) -> int:
    return hashlib.sha256(text.encode()).digest()[0] % 2


class Bench:
    """One benchmark's memories and questions, each question scored under a setting."""

    def __init__(self, name: str, runner: Any, keep: Path) -> None:
        self.name = name
        self.memories, self.questions, self.one, self.line = runner(keep)
        self.defaults = {key: m.index.ranking for key, m in self.memories.items()}
        self.halves = [half(str(q.get("question"))) for q in self.questions]
        self.floors = {key: _floor(m.index) for key, m in self.memories.items()}

    def score(self, setting: dict[str, Any]) -> list[tuple[float, float]]:
        """(R@10, All@10) for each question under ``setting``."""
        change = {k: v for k, v in setting.items() if k not in PROBE_KEYS}
        ranking_module.fuse = _probe_fuse(setting)
        for key, memory in self.memories.items():
            memory.index.ranking = replace(self.defaults[key], **change)
            memory.index.embedder.similarity_floor = setting.get("floor", self.floors[key])
        self.rows = [self.one(q) for q in self.questions]
        return [(row["recall@10"], row["all@10"]) for row in self.rows]

    def means(self, scores: list[tuple[float, float]], part: int) -> tuple[float, float]:
        picked = [s for s, h in zip(scores, self.halves, strict=True) if h == part]
        return (
            sum(s[0] for s in picked) / len(picked),
            sum(s[1] for s in picked) / len(picked),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True)
    parser.add_argument("--eps", type=float, default=0.002)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--part", type=int, default=0, help="the tuning half (0 or 1)")
    parser.add_argument(
        "--settings", help="JSON list of [label, setting]: each scored on every question"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(SHARED))
    keep = Path(args.keep)
    benches = [Bench("locomo", locomo_runner, keep), Bench("realmem", realmem_runner, keep)]
    cache: dict[str, list[list[tuple[float, float]]]] = {}

    def evaluate(setting: dict[str, Any]) -> list[list[tuple[float, float]]]:
        key = json.dumps(setting, sort_keys=True)
        if key not in cache:
            cache[key] = [bench.score(setting) for bench in benches]
        return cache[key]

    def summary(setting: dict[str, Any], part: int) -> tuple[float, list[tuple[float, float]]]:
        per = [b.means(s, part) for b, s in zip(benches, evaluate(setting), strict=True)]
        return sum(r + a / 2 for r, a in per), per

    def show(label: str, setting: dict[str, Any]) -> None:
        cells = []
        for part in (args.part, 1 - args.part):
            total, per = summary(setting, part)
            cells.append(f"{total:.4f} (" + ", ".join(f"{r:.3f}/{a:.3f}" for r, a in per) + ")")
        print(f"| {label} | {cells[0]} | {cells[1]} |", flush=True)

    if args.settings:
        print(
            "| setting | LoCoMo R@5 / R@10 / All@10 (multi-hop, temporal, open-domain, "
            "single-hop) | RealMem R@5 / R@10 / All@10 (multi-session) |\n|---|---|---|"
        )
        for label, setting in json.loads(args.settings):
            cells = []
            for bench in benches:
                bench.score(setting)
                cells.append(bench.line(bench.rows))
            print(f"| {label} | {cells[0]} | {cells[1]} |", flush=True)
        print("\nby half (objective, LoCoMo R@10/All@10, RealMem): half 0 | half 1\n")
        for label, setting in json.loads(args.settings):
            show(label, setting)
        return
    print("| setting | tuning half: objective (LoCoMo R@10/All@10, RealMem) | held-out half |")
    print("|---|---|---|")
    best: dict[str, Any] = {}
    show("defaults", best)
    for round_ in range(args.rounds):
        moved = False
        for name, values in GRID.items():
            base, base_per = summary(best, args.part)
            choice = None
            for value in values:
                trial = {**best, name: value}
                total, per = summary(trial, args.part)
                show(f"r{round_} {name}={value}", trial)
                falls = any(p[0] < b[0] - 1e-9 for p, b in zip(per, base_per, strict=True))
                if total > base + args.eps and not falls:
                    base, base_per, choice = total, per, value
            if choice is not None:
                best = {**best, name: choice}
                moved = True
                show(f"r{round_} taken: {json.dumps(best)}", best)
        if not moved:
            break
    print(f"\nended at {json.dumps(best)}")
    show("final", best)


if __name__ == "__main__":
    main()
