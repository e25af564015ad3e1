"""What finding a damaged database costs on the happy path, and what mending costs.

Every ``History`` method runs through ``History.guard`` (a ``stat`` of the file before
each write and at most once a second before a read, to follow another process that
set it aside) and every search through ``Index.guard``.
This times each call guarded and unguarded (the method under the guard,
``__wrapped__``) in the same run and prints the ratio; then the time to mend: a
history restarted and 2,000 activities read back past one zeroed page, and an index
rebuilt from the files.

    .venv/bin/python bench/db_guard.py [--activities 10000] [--runs 2000]
"""

from __future__ import annotations

import argparse
import gc
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# bench/secrets.py would shadow the standard library's module for memdir: import memdir
# first, then the bench's own timing helper.
HERE = str(Path(__file__).resolve().parent)
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != Path(HERE)]

import memdir  # noqa: E402
from memdir.index.search import Filters  # noqa: E402
from memdir.index.search import search as run_search  # noqa: E402
from memdir.maintain.databases import repair  # noqa: E402
from memdir.stores.history import History  # noqa: E402
from memdir.testing import FakeClock  # noqa: E402

sys.path.insert(0, HERE)
from timing import once  # noqa: E402


def alternate(
    first: Callable[[int], object], second: Callable[[int], object], runs: int
) -> tuple[float, float]:
    """p50 in ms of each, called in turns (so a warmer cache or a busier machine
    favours neither)."""
    times: tuple[list[float], list[float]] = ([], [])
    for n in range(runs):
        for action, samples in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            action(n)
            samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(times[0]), statistics.median(times[1])


def ratio(name: str, guarded: float, bare: float) -> None:
    print(f"{name:<28} guarded {guarded:8.4f} ms  bare {bare:8.4f} ms  ratio {guarded / bare:5.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--activities", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=2_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mem"
        memdir.init(root)
        clock = FakeClock()
        memory = memdir.open(root, embedder="hashing", clock=clock)
        history = memory.history
        ids = []
        for n in range(args.activities):
            clock.advance(milliseconds=1)  # ids carry the millisecond and 24 random bits
            ids.append(history.start_activity("task", f"Task {n}: reconcile the invoices"))
        for n in range(200):
            memory.journal.append("context", f"note {n}: the deploy pipeline runs on Fridays")
        memory.search("deploy")
        index = memory.index
        filters = Filters(mode="normal", layers=(), kinds=(), tags=(), since=None, until=None)

        print(f"history of {args.activities} activities, {args.runs} calls each (p50)")
        recent = History.recent.__wrapped__  # type: ignore[attr-defined]
        get = History.get.__wrapped__  # type: ignore[attr-defined]
        usage = History.usage.__wrapped__  # type: ignore[attr-defined]
        record = History.record_usage.__wrapped__  # type: ignore[attr-defined]
        pairs = [
            ("history.recent(20)", lambda _: history.recent(20), lambda _: recent(history, 20)),
            ("history.get(id)", lambda n: history.get(ids[n]), lambda n: get(history, ids[n])),
            ("history.usage(session)", lambda _: history.usage("s"), lambda _: usage(history, "s")),
            (
                "history.record_usage (write)",
                lambda n: history.record_usage(f"s{n}", n, 1000),
                lambda n: record(history, f"b{n}", n, 1000),
            ),
        ]
        for name, guarded, bare in pairs:
            alternate(guarded, bare, 200)  # warm
            ratio(name, *alternate(guarded, bare, args.runs))
        now = memory.clock()

        def searched(_: int) -> object:
            return index.guard(
                lambda: run_search(
                    index, "deploy Fridays", filters, k=10, decay=memory.manifest.decay, now=now
                )
            )

        def bare_search(_: int) -> object:
            return run_search(
                index, "deploy Fridays", filters, k=10, decay=memory.manifest.decay, now=now
            )

        alternate(searched, bare_search, 50)
        ratio("index search", *alternate(searched, bare_search, args.runs // 10))
        memory.close()

        # Mending: one zeroed page in the activities, then `memdir doctor --repair`.
        gc.collect()
        path = root / ".memdir" / "history.db"
        with sqlite3.connect(path) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            page_size = db.execute("PRAGMA page_size").fetchone()[0]
            root_page = db.execute(
                "SELECT rootpage FROM sqlite_master WHERE name = 'agent_activities'"
            ).fetchone()[0]
        data = path.read_bytes()[(root_page - 1) * page_size : root_page * page_size]
        pointer = int.from_bytes(data[12:14], "big")
        leaf = int.from_bytes(data[pointer : pointer + 4], "big")
        with path.open("r+b") as handle:
            handle.seek((leaf - 1) * page_size)
            handle.write(b"\0" * page_size)
        (root / ".memdir" / "index.db").write_bytes(b"garbage" * 1000)
        with memdir.open(root, embedder="hashing") as damaged:
            seconds, done = once(lambda: repair(damaged))
            back = len(damaged.history.recent(args.activities * 2))
        print(f"repair: {seconds:.2f} s for {back} of {args.activities} activities back")
        for line in done:
            print(f"  {line[:150]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
