"""A newcomer's first commands on a fresh install: how long each waits.

    .venv/bin/python bench/first_run.py [--runs 2] [--baseline SRC]

Each run is a fresh ``$MEMDIR_HOME`` and a fresh model cache (as after ``pip
install``), then the README's commands through the real CLI: ``memdir init --agent
assistant``, ``memdir save``, ``memdir search`` twice. The one-time step is
MiniLM's int8 conversion for queries (``index.quantised_model``): whichever command
meets it first pays it. ``--baseline SRC`` (another checkout's ``src``) runs the
same commands on that tree in the same rounds, alternating, and the table gives
each command's median and the ratio to the baseline's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
STEPS = (
    ("init", ("init", "--agent", "assistant")),
    ("save", ("save", "Deploys happen on Tuesdays", "--agent", "assistant")),
    ("first search", ("search", "when do we deploy", "--agent", "assistant")),
    ("second search", ("search", "when do we deploy", "--agent", "assistant")),
)


def one_run(src: Path) -> list[float]:
    """Seconds each step took in a fresh home and model cache, on the tree ``src``."""
    with tempfile.TemporaryDirectory(prefix="memdir-first-") as scratch:
        env = dict(os.environ, MEMDIR_HOME=f"{scratch}/home", PYTHONPATH=str(src))
        env["MEMDIR_MODEL_CACHE"] = f"{scratch}/home/cache/models"
        env.pop("MEMDIR_EMBEDDER", None)
        times = []
        for _, args in STEPS:
            began = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "memdir", *args], env=env, capture_output=True, text=True
            )
            times.append(time.perf_counter() - began)
            if done.returncode != 0:
                raise SystemExit(f"memdir {' '.join(args)} failed: {done.stderr}")
        return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="another checkout's src folder")
    args = parser.parse_args()
    trees = [("this tree", SRC)] + ([("baseline", args.baseline)] if args.baseline else [])
    measured: dict[str, list[list[float]]] = {name: [] for name, _ in trees}
    for _ in range(args.runs):
        for name, src in trees:
            measured[name].append(one_run(src))
    heads = " | ".join(name for name, _ in trees)
    print(f"| step | {heads} |" + (" ratio |" if args.baseline else ""))
    print("|---|" + "---|" * (len(trees) + bool(args.baseline)))
    for n, (step, _) in enumerate(STEPS):
        medians = [statistics.median(run[n] for run in measured[name]) for name, _ in trees]
        cells = " | ".join(f"{m:.2f} s" for m in medians)
        ratio = f" {medians[0] / medians[1]:.2f} |" if args.baseline else ""
        print(f"| {step} | {cells} |{ratio}")
    totals = [statistics.median(sum(run) for run in measured[name]) for name, _ in trees]
    print(f"| all four | {' | '.join(f'{t:.2f} s' for t in totals)} |"
          + (f" {totals[0] / totals[1]:.2f} |" if args.baseline else ""))  # fmt: skip


if __name__ == "__main__":
    main()
