"""The dream's merge decision on hand-written pairs (not generated): how many
wordings of one fact the offline planner merges, and how many pairs of different
facts it keeps apart.

    .venv/bin/python bench/dream_pairs.py [--embedder minilm] [--show] [--data FILE]

The pairs are in ``bench/data/dream_pairs.json``: 40 "same" (two wordings of one
fact) and 40 "different" (another value, person, object, a relation turned
round, a negation); ``dream_pairs_fresh.json`` is a second set of 30 + 30,
written after the planner's guards were built from the first. Each pair is
planned alone, as two observations of one knowledge.md, by ``OfflinePlanner``
with the embedder's duplicate threshold.
Target: every "different" pair kept apart (a false merge loses a fact from the
live file); "same" pairs merged is the measure of how much a dream tidies.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memdir.dream import Entry, OfflinePlanner
from memdir.index.embedders import load_embedder

DATA = Path(__file__).resolve().parent / "data" / "dream_pairs.json"


def merged(planner: OfflinePlanner, one: str, other: str) -> bool:
    start = datetime(2026, 11, 1, tzinfo=UTC)
    entries = [
        Entry("obs_a", "fact", start, (), one),
        Entry("obs_b", "fact", start + timedelta(minutes=1), (), other),
    ]
    return bool(planner.plan(entries).merge)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--show", action="store_true", help="print every pair decided wrong")
    parser.add_argument("--data", type=Path, default=DATA, help="the pairs file")
    args = parser.parse_args()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    embedder = load_embedder(args.embedder)
    planner = OfflinePlanner(embedder, theme_min=10**6)
    began = time.perf_counter()
    wrong: list[tuple[str, float, str, str]] = []
    counts: dict[str, tuple[int, int]] = {}
    for kind, want in (("same", True), ("different", False)):
        right = 0
        for one, other in data[kind]:
            if merged(planner, one, other) == want:
                right += 1
            else:
                vectors = np.asarray(embedder.embed([one, other]), dtype=np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                wrong.append((kind, float(vectors[0] @ vectors[1]), one, other))
        counts[kind] = (right, len(data[kind]))
    seconds = time.perf_counter() - began
    same, different = counts["same"], counts["different"]
    total = sum(n for _, n in counts.values())
    print(f"Offline planner, embedder {args.embedder} (duplicate cosine "
          f"{planner.threshold:.2f}), {total} hand-written pairs "
          f"({args.data.name}):\n")  # fmt: skip
    print("| measure | value | target |\n|---|---|---|")
    print(f"| same fact, two wordings: merged | {same[0]}/{same[1]} ({same[0] / same[1]:.0%}) | |")
    print(f"| different facts: kept apart | {different[0]}/{different[1]} | all |")
    print(f"| run time | {seconds:.2f} s | |")
    if args.show:
        for kind, cosine, one, other in wrong:
            verb = "not merged" if kind == "same" else "MERGED"
            print(f"{verb} (cosine {cosine:.3f}): {one!r} / {other!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
