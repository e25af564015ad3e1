"""A query asked again: its vector kept (``memdir.index.query_vectors``) against the
first time, on RealMem's chatty queries, in one process.

    .venv/bin/python bench/query_repeat.py --keep /tmp/bench-keep/realmem

Each query is searched (k = 100, deep mode, as bench/realmem.py asks it) twice in a
row; the first pays the model run, the second finds the vector kept. Prints the p50 of
each and the second as a ratio to the first, and checks they return the same hits.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("MEMDIR_SHARED_BENCH", HERE.parent.parent / "shared" / "bench"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--keep", required=True, help="the realmem folders (bench/realmem.py --keep)"
    )
    args = parser.parse_args()
    os.environ["MEMDIR_BENCH_KEEP"] = args.keep
    sys.path.insert(0, str(HERE))
    import realmem

    data = json.loads((SHARED / "realmem-dev.json").read_text(encoding="utf-8"))
    retriever = realmem.MemdirRetriever()
    for hid, sessions in data["haystacks"].items():
        retriever.index(hid, [], sessions)
    questions = data["questions"]
    for q in questions[:3]:  # warm: the model loaded, the vectors in memory
        retriever.search(q["haystack"], {**q, "question": q["question"] + " (warm)"}, 100)
    first: list[float] = []
    again: list[float] = []
    for q in questions:
        times = []
        found = []
        for _ in range(2):
            start = time.perf_counter()
            found.append(retriever.search(q["haystack"], q, 100))
            times.append(time.perf_counter() - start)
        assert found[0] == found[1], q["id"]
        first.append(times[0])
        again.append(times[1])
    a, b = statistics.median(first) * 1000, statistics.median(again) * 1000
    print(f"RealMem dev, {len(questions)} queries, k = 100, each asked twice in a row")
    print(f"first: p50 {a:.1f} ms; asked again: p50 {b:.1f} ms, {b / a:.2f}x the first")


if __name__ == "__main__":
    main()
