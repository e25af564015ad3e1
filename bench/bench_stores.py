"""Latency of the stores' writes and reads on a real folder (files + fsync + lock),
each write against its floor measured in the same run.

    .venv/bin/python bench/bench_stores.py [--runs N] [--sizes 0,250,500]

The floor of a write is what any durable store must pay for it: one atomic write of
a file of the same size (``memdir.files.atomic.atomic_write``: temp file, fsync,
rename, fsync of its folder) plus one row upserted into a SQLite database (WAL,
``synchronous = NORMAL``, as the index). Each run takes one floor sample, sized as
the file the operation writes is at that moment, then one sample of the operation,
so both see the same disk and the same load; the ratio is the operation's p50 over
its floor's p50.

Prints p50 / p95 in milliseconds, the floor's p50 and the ratio, and the operation's
CPU time (p50 of the process's user + system time per call: what the load of the
machine changes least; the floor's is a fraction of a millisecond) for: memory_save
into a knowledge.md holding 0, 250 and 500 observations (at 500 each save also
archives the oldest), update_notebook (6 keys over a cap of 4: each write evicts one
to the archive), state_update, a journal line and a card update; then reading all
observations back (a read: no floor).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from timing import measure

import memdir
from memdir.files.atomic import atomic_write

TEXT = "The payments API allows 50 requests per second per key; retries need idempotency."


class Floor:
    """One atomic write of a file the size of ``target`` plus one SQLite row upsert."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir()
        self.path = folder / "floor.md"
        self.db = sqlite3.connect(folder / "floor.db", isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")
        self.db.execute("CREATE TABLE files (path TEXT PRIMARY KEY, size INTEGER, hash TEXT)")

    def __call__(self, size: int, n: int) -> None:
        atomic_write(self.path, b"x" * size)
        self.db.execute(
            "INSERT INTO files (path, size, hash) VALUES ('floor.md', ?, ?) "
            "ON CONFLICT (path) DO UPDATE SET size = excluded.size, hash = excluded.hash",
            (size, str(n)),
        )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def paired(
    floor: Floor, target: Path, action: Callable[[int], object], runs: int
) -> tuple[float, float, float, float, float]:
    """p50 and p95 of ``action``, and of the floor for ``target``, interleaved run by run;
    and the p50 of ``action``'s CPU time."""
    ops: list[float] = []
    floors: list[float] = []
    cpu: list[float] = []
    for n in range(runs):
        size = _size(target)
        start = time.perf_counter()
        floor(size, n)
        floors.append((time.perf_counter() - start) * 1000)
        start, used = time.perf_counter(), time.process_time()
        action(n)
        ops.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - used) * 1000)
    return (*_p50_p95(ops), *_p50_p95(floors), statistics.median(cpu))


def _p50_p95(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(int(len(ordered) * 0.95) - 1, 0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--sizes", default="0,250,500", help="observation counts for memory_save")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    rows: list[tuple[str, float, float, float | None, float | None, float | None]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "mem"
        memdir.init(folder)
        memory = memdir.open(folder)
        floor = Floor(Path(tmp) / "floor")
        knowledge = folder / memory.knowledge.store
        for fill in sizes:
            have = len(memory.knowledge.observations())
            for n in range(have, fill):
                memory.knowledge.save(f"{TEXT} ({n})")
            measured = paired(
                floor, knowledge, lambda n: memory.knowledge.save(f"{TEXT} [{n}]"), args.runs
            )
            rows.append((f"memory_save at {fill} observations", *measured))
            if fill < max(sizes):  # keep the fill level for the next row
                ids = [o.id for o in memory.knowledge.observations()[-args.runs :]]
                memory.knowledge.delete_observations(ids)
        writes: list[tuple[str, Path, Callable[[int], object]]] = [
            (
                "update_notebook (6 keys)",
                folder / memory.notebook.store,
                lambda n: memory.notebook.update(f"k{n % 6}", f"{TEXT} {n}"),
            ),
            (
                "state_update (10 keys)",
                folder / memory.state.store,
                lambda n: memory.state.set(f"s{n % 10}", f"{TEXT} {n}"),
            ),
            (
                "journal line",
                folder / memory.journal.path(memory.clock().date()),
                lambda n: memory.journal.append("learning", f"{TEXT} {n}"),
            ),
        ]
        memory.vault.write("payments-api", TEXT, type="project")
        card = folder / (memory.vault.resolve("payments-api") or "")
        writes.append(
            (
                "card update",
                card,
                lambda n: memory.vault.write("payments-api", f"{TEXT} {n}"),
            )
        )
        for name, target, action in writes:
            rows.append((name, *paired(floor, target, action, args.runs)))
        rows.append(
            (
                f"read {len(memory.knowledge.observations())} observations (fresh open)",
                *measure(
                    lambda n: memdir.open(folder).knowledge.observations(), max(args.runs // 10, 5)
                ),
                None,
                None,
                None,
            )
        )
    print(
        f"{'operation':<34} {'p50 ms':>7} {'p95 ms':>7} {'floor p50':>9} {'x floor':>7} "
        f"{'cpu ms':>7}"
    )
    for name, p50, p95, f50, _, cpu in rows:
        ratio = f"{p50 / f50:>7.2f}" if f50 else f"{'-':>7}"
        base = f"{f50:>9.2f}" if f50 is not None else f"{'-':>9}"
        used = f"{cpu:>7.2f}" if cpu is not None else f"{'-':>7}"
        print(f"{name:<34} {p50:>7.2f} {p95:>7.2f} {base} {ratio} {used}")


if __name__ == "__main__":
    main()
