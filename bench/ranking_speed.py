"""A search's own time (not the model's) against a baseline tree, and proof that both
trees answer alike: every RealMem dev query and every LoCoMo dev query, k = 100.

    git -C /work/main archive main src | tar -x -C /tmp/rankfast-base
    .venv/bin/python bench/ranking_speed.py --baseline /tmp/rankfast-base/src \
        --keep /tmp/bench-keep [--rounds 3]

``--keep`` holds the folders bench/realmem.py and bench/locomo.py built (``realmem/``
and ``locomo/`` under it, as bench/ablation.py lays them out; built there first if
they are not). Each tree gets its own copy of them, in a temporary folder, and its
own process (this tree's ``src`` or ``--baseline``, imported alone); the two answer
each query in turn, the first of them alternating query by query.

Round 0 asks every query once in each tree: it fills each index's cache of query
vectors (``index.query_vectors``, 256 a folder, more than any folder here has
queries), so the rounds timed after it run no model at all, and it checks that the
trees return the same hits: the same items in the same order, every field equal
(scores, BM25, cosine and relevance within 1e-9; the snippets too), and the same
widening. Every timed round checks the hits again. Any difference is printed and the
exit status is 1.

Printed per benchmark: the p50 of each tree's search time (``Memory.search``, the
query's vector taken from the cache) and of its parts: ``rank`` (steps 2-9,
``memdir.index.ranking``), the candidates (``IndexRows.candidates``), the rows
(``IndexRows.rows_within``) and the rest (the hits built, the floor); each as this
tree over the baseline, p50 over p50, measured in the same run. Timings only ever as
ratios: other jobs share the machine.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
SHARED = Path(os.environ.get("MEMDIR_SHARED_BENCH", HERE.parent.parent / "shared" / "bench"))
K = 100
TOLERANCE = 1e-9
PARTS = ("search", "rank", "candidates", "rows", "rest")
LOCOMO_NOW = datetime(2026, 12, 2, tzinfo=UTC)
"""LoCoMo's folders run on the wall clock: fixed here, so decay weighs alike in both trees"""


# -- the worker: one tree's process ---------------------------------------------------


class Timers:
    """Seconds spent in each timed part during one search."""

    def __init__(self) -> None:
        self.spent = dict.fromkeys(PARTS[1:4], 0.0)

    def wrap(self, owner: Any, name: str, part: str) -> None:
        """Time every call of ``owner.name`` (a module's function or a class's method)."""
        inner = getattr(owner, name)
        spent = self.spent

        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[part] += time.perf_counter() - began

        setattr(owner, name, timed)

    def reset(self) -> None:
        for part in self.spent:
            self.spent[part] = 0.0


def _realmem(keep: Path) -> list[Callable[[], Any]]:
    import realmem

    data, retriever = realmem.kept(str(keep / "realmem"))

    def ask(q: dict[str, Any]) -> Any:
        asked = realmem.moment_of(q["before_moment"])
        retriever.now = asked
        until = asked - timedelta(seconds=1)
        memory = retriever.memories[q["haystack"]]
        return memory.search(q["question"], k=K, mode=realmem.MODE, until=until)

    return [lambda q=q: ask(q) for q in data["questions"] if q["haystack"] in retriever.memories]


def _locomo(keep: Path) -> list[Callable[[], Any]]:
    os.environ["MEMDIR_BENCH_KEEP"] = str(keep / "locomo")
    import locomo
    import locomo_bench  # type: ignore[import-not-found]

    convs, questions, _ = locomo_bench.load_locomo(SHARED / "locomo10-dev.json")
    retriever = locomo.MemdirRetriever()
    for conv in locomo_bench.SPLITS["dev"]:
        retriever.index(conv, convs[conv])
        retriever.memories[conv].clock = lambda: LOCOMO_NOW
    return [
        lambda q=q: retriever.memories[q["conv"]].search(q["question"], k=K, mode="deep")
        for q in questions
        if q["conv"] in retriever.memories
    ]


def _shape(hits: Any, snippets: bool) -> dict[str, Any]:
    """What a search returned, as JSON: every hit's fields (snippets if asked) and how
    the search found them."""
    rows = []
    for hit in hits:
        row = [
            hit.path, hit.anchor, hit.kind, hit.layer, hit.title, hit.line_start, hit.line_end,
            hit.score, hit.keyword, hit.semantic, hit.relevance, hit.tier,
            hit.date.isoformat() if hit.date else None, list(hit.tags),
        ]  # fmt: skip
        if snippets:
            row.append(hit.snippet)
        rows.append(row)
    return {"hits": rows, "widened": hits.widened, "colder": hits.colder, "mode": hits.mode}


def worker(keep: Path) -> None:
    """Answer the driver's requests, one JSON line each way, on a private stdout."""
    out: IO[str] = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever else prints goes to stderr
    sys.path.insert(0, str(SHARED))
    sys.path.insert(0, str(HERE))
    import memdir.index.search as search_module
    from memdir.index.sqlite_rows import SqliteRows

    timers = Timers()
    timers.wrap(search_module, "rank", "rank")
    timers.wrap(SqliteRows, "candidates", "candidates")
    timers.wrap(SqliteRows, "rows_within", "rows")
    asks = {"realmem": _realmem(keep), "locomo": _locomo(keep)}
    out.write(json.dumps({name: len(calls) for name, calls in asks.items()}) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        timers.reset()
        began = time.perf_counter()
        hits = asks[request["set"]][request["i"]]()
        took = time.perf_counter() - began
        spent = {"search": took, **timers.spent}
        spent["rest"] = took - sum(timers.spent.values())
        out.write(json.dumps({"spent": spent, **_shape(hits, request["snippets"])}) + "\n")
        out.flush()


# -- the driver -----------------------------------------------------------------------


class Tree:
    """One tree's worker process."""

    def __init__(self, name: str, src: Path, keep: Path) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{HERE}"}
        argv = [sys.executable, str(Path(__file__).resolve()), "--worker", str(keep)]
        self.process = subprocess.Popen(
            argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.counts: dict[str, int] = self._read()

    def _read(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.name} worker stopped")
        return json.loads(line)

    def ask(self, name: str, i: int, snippets: bool) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"set": name, "i": i, "snippets": snippets}) + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = self._read()
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def differences(mine: dict[str, Any], base: dict[str, Any]) -> list[str]:
    """How two answers differ (nothing: the same hits, floats within ``TOLERANCE``)."""
    found = [
        f"{key}: {mine[key]!r} != {base[key]!r}"
        for key in ("widened", "colder", "mode")
        if mine[key] != base[key]
    ]
    if len(mine["hits"]) != len(base["hits"]):
        found.append(f"{len(mine['hits'])} hits != {len(base['hits'])}")
    for place, (one, two) in enumerate(zip(mine["hits"], base["hits"], strict=False)):
        for a, b in zip(one, two, strict=True):
            same = (
                a is not None and b is not None and abs(a - b) <= TOLERANCE
                if isinstance(a, float) or isinstance(b, float)
                else a == b
            )
            if not same:
                found.append(f"hit {place}: {one[:2]} {a!r} != {two[:2]} {b!r}")
                break
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", type=Path, help="the src folder to compare with")
    parser.add_argument("--keep", type=Path, help="holds realmem/ and locomo/")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds after round 0")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker)
        return
    if args.baseline is None or args.keep is None:
        parser.error("--baseline and --keep are needed")
    sources = {"this": SRC.resolve(), "baseline": args.baseline.resolve()}
    for src in sources.values():
        compileall.compile_dir(str(src / "memdir"), quiet=1)
    with tempfile.TemporaryDirectory(prefix="memdir-rankspeed-") as tmp:
        trees = []
        for name, src in sources.items():
            copy = Path(tmp) / name
            for bench in ("realmem", "locomo"):
                if (args.keep / bench).is_dir():
                    shutil.copytree(args.keep / bench, copy / bench, symlinks=True)
            trees.append(Tree(name, src, copy))
        this, base = trees
        if this.counts != base.counts:
            raise SystemExit(f"the trees see other queries: {this.counts} != {base.counts}")
        times: dict[tuple[str, str, str], list[float]] = {}
        wrong = 0
        for round_ in range(args.rounds + 1):
            for name, count in this.counts.items():
                for i in range(count):
                    order = trees if (i + round_) % 2 == 0 else trees[::-1]
                    answers = {tree.name: tree.ask(name, i, not round_) for tree in order}
                    found = differences(answers["this"], answers["baseline"])
                    if found:
                        wrong += 1
                        if wrong <= 10:
                            print(f"{name} query {i}: " + "; ".join(found[:3]), file=sys.stderr)
                    if round_:
                        for tree, answer in answers.items():
                            for part, took in answer["spent"].items():
                                times.setdefault((name, tree, part), []).append(took)
            label = " (round 0: the vectors cached, the hits compared)" if not round_ else ""
            print(f"round {round_}/{args.rounds} done{label}", file=sys.stderr, flush=True)
        for tree in trees:
            tree.close()
    asked = ", ".join(f"{count} {name}" for name, count in this.counts.items())
    print(f"{asked} queries, k = {K}, {args.rounds} timed rounds; answers differing: {wrong}")
    print()
    print("| benchmark | part | baseline p50 ms | this p50 ms | this / baseline |")
    print("|---|---|---|---|---|")
    for name in this.counts:
        for part in PARTS:
            mine = statistics.median(times[(name, "this", part)])
            theirs = statistics.median(times[(name, "baseline", part)])
            ratio = mine / theirs if theirs else float("nan")
            print(f"| {name} | {part} | {theirs * 1e3:.2f} | {mine * 1e3:.2f} | {ratio:.2f} |")
    if wrong:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
