"""Latency of the stores' writes and reads on a real folder (files + fsync + lock).

    .venv/bin/python bench/bench_stores.py [--runs N]

Prints p50 / p95 in milliseconds for: memory_save into a knowledge.md holding
0, 250 and 500 observations (at 500 each save also archives the oldest),
update_notebook, state_update, and reading all observations back.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from timing import measure

import memdir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "mem"
        memdir.init(folder)
        memory = memdir.open(folder)
        text = "The payments API allows 50 requests per second per key; retries need idempotency."
        for fill in (0, 250, 500):
            have = len(memory.knowledge.observations())
            for n in range(have, fill):
                memory.knowledge.save(f"{text} ({n})")
            p50, p95 = measure(lambda n: memory.knowledge.save(f"{text} [{n}]"), args.runs)
            rows.append((f"memory_save at {fill} observations", p50, p95))
            if fill < 500:  # keep the fill level for the next row
                ids = [o.id for o in memory.knowledge.observations()[-args.runs :]]
                memory.knowledge.delete_observations(ids)
        rows.append(
            (
                "update_notebook (6 keys)",
                *measure(lambda n: memory.notebook.update(f"k{n % 6}", f"{text} {n}"), args.runs),
            )
        )
        rows.append(
            ("state_update", *measure(lambda n: memory.state.set(f"s{n % 10}", text), args.runs))
        )
        reopened = memdir.open(folder)
        rows.append(
            (
                "read 500 observations (fresh open)",
                *measure(
                    lambda n: memdir.open(folder).knowledge.observations(), max(args.runs // 10, 5)
                ),
            )
        )
        del reopened
    print(f"{'operation':<40} {'p50 ms':>8} {'p95 ms':>8}")
    for name, p50, p95 in rows:
        print(f"{name:<40} {p50:>8.2f} {p95:>8.2f}")


if __name__ == "__main__":
    main()
