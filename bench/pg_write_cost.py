"""What the vector cache's version costs PostgreSQL's writes: this tree against another.

    git archive main src | tar -x -C /tmp/main-tree
    .venv/bin/python bench/pg_write_cost.py --baseline /tmp/main-tree/src [--items 2000]

One PostgreSQL (pgserver, or ``MEMDIR_TEST_DATABASE_URL``), one schema for each tree
(their migrations differ: this tree's ``006_item_log``), one worker process for each
tree (its ``src`` first on ``PYTHONPATH``). Each worker pushes a folder of ``--items``
journal items (bench/scale.py's corpus, ten sections a file) into an agent, makes
every vector (hashing embedder, 256 floats) and ``VACUUM ANALYZE``s; then, round after
round, the two workers are told the same operation in turn (the order swapped each
round, so the machine's load falls on both alike):

- ``save``: ``memory.knowledge.save`` of a new fact (its file, its rows, its
  history), and ``ensure_vectors`` (its vector: the statement that bumps the agent's
  version), each timed; ``--saves`` of them a round, p50;
- ``push``: ``storage.transfer.push`` of the folder into a new agent, then every
  vector made (``ensure_vectors``, 256 a statement): the bulk writes of a team
  server's agent moving in;
- ``reindex``: ``memory.reindex()`` of the first agent: every row deleted and
  inserted again with its vector kept by content (every row logged).

Printed per operation: each tree's median and the median of the round-by-round
ratio to the baseline (``--also NAME=SRC``: more trees beside them, in turn).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def worker(url: str, schema: str, folder: Path) -> None:
    """Answer the driver's operations, one line each, with their times (JSON)."""
    import psycopg

    import memdir
    from memdir.opening import open_agent
    from memdir.storage.transfer import push

    def reply(found: dict[str, Any]) -> None:
        print("RESULT " + json.dumps(found), flush=True)

    # a copy of its own: a push records in the folder what it exported where
    own = Path(tempfile.mkdtemp(prefix="memdir-bench-pgwc-")) / "agent"
    shutil.copytree(folder, own)
    folder = own
    atexit.register(shutil.rmtree, own.parent, ignore_errors=True)

    push(url, "base", folder, force=True, create=True, schema=schema)
    memory = open_agent(url, "base", embedder="hashing", schema=schema)
    memory.index.ensure_vectors()
    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("items", "files", "index_files", "index_stats"):
            conn.execute(f"VACUUM ANALYZE {schema}.{table}")
    reply({"ready": memdir.__file__})
    n = 0
    for line in sys.stdin:
        op, *rest = line.split()
        if op == "save":
            saves, embeds = [], []
            for _ in range(int(rest[0])):
                n += 1
                t0 = time.perf_counter()
                memory.knowledge.save(f"Fact {n}: the harbour crane lifts {n} crates at dawn")
                t1 = time.perf_counter()
                memory.index.ensure_vectors()
                t2 = time.perf_counter()
                saves.append((t1 - t0) * 1000)
                embeds.append((t2 - t1) * 1000)
            reply({"save": statistics.median(saves), "embed": statistics.median(embeds)})
        elif op == "push":
            n += 1
            t0 = time.perf_counter()
            push(url, f"moved-{n}", folder, force=True, create=True, schema=schema)
            t1 = time.perf_counter()
            with open_agent(url, f"moved-{n}", embedder="hashing", schema=schema) as moved:
                moved.index.ensure_vectors()
            t2 = time.perf_counter()
            reply({"push": (t1 - t0) * 1000, "push embed": (t2 - t1) * 1000})
        elif op == "reindex":
            t0 = time.perf_counter()
            memory.reindex()
            reply({"reindex": (time.perf_counter() - t0) * 1000})
        elif op == "quit":
            break
    memory.close()


class Worker:
    def __init__(self, src: Path, url: str, schema: str, folder: Path) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(HERE)]))
        argv = [sys.executable, str(Path(__file__).resolve()), "--worker", url, schema]
        self.process = subprocess.Popen(
            [*argv, str(folder)], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self.ready = self.read()

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("RESULT "):
                found: dict[str, Any] = json.loads(line[7:])
                return found
        raise RuntimeError(f"worker ended: {self.process.wait()}")

    def ask(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("quit\n")
        self.process.stdin.close()
        self.process.wait()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], Path(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the other tree's src")
    parser.add_argument(
        "--also", action="append", default=[], metavar="NAME=SRC",
        help="another tree measured beside them (its ratio to the baseline too)",
    )  # fmt: skip
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--ops", default="save,push,reindex", help="which, in turn")
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()

    import psycopg
    from pg_search import start_database
    from scale import Corpus, write_journal

    import memdir

    work = Path(tempfile.mkdtemp(prefix="memdir-bench-pgwc-"))
    folder = work / "agent"
    memdir.init(folder)
    write_journal(folder, Corpus(args.seed), max(args.items // 10, 1))
    url, stop = start_database()
    trees = {"this": HERE.parent / "src", "baseline": args.baseline.resolve()}
    for extra in args.also:
        name, _, src = extra.partition("=")
        trees[name] = Path(src).resolve()
    workers: dict[str, Worker] = {}
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        for name, src in trees.items():
            workers[name] = Worker(src, url, f"bench_wc_{name.replace('-', '_')}", folder)
            print(f"{name}: {workers[name].ready['ready']}", flush=True)
        times: dict[tuple[str, str], list[float]] = {}
        for round_ in range(args.rounds):
            names = list(workers)  # each round another tree first
            order = names[round_ % len(names) :] + names[: round_ % len(names)]
            ops = args.ops.split(",")
            for command in (f"save {args.saves}" if op == "save" else op for op in ops):
                for name in order:
                    for op, ms in workers[name].ask(command).items():
                        times.setdefault((op, name), []).append(ms)
        print(f"{args.items:,} items an agent, {args.rounds} rounds, {args.saves} saves a round")
        others = [name for name in workers if name != "baseline"]
        print(
            "| operation | baseline ms | "
            + " | ".join(f"{name} ms | {name} / baseline" for name in others)
            + " |"
        )
        print("|---|---:|" + "---:|---:|" * len(others))
        for op in dict.fromkeys(op for op, _ in times):
            theirs = times[(op, "baseline")]
            cells = [f"{statistics.median(theirs):.2f}"]
            for name in others:
                mine = times[(op, name)]
                ratio = statistics.median(a / b for a, b in zip(mine, theirs, strict=True))
                cells += [f"{statistics.median(mine):.2f}", f"{ratio:.3f}"]
            print(f"| {op} | " + " | ".join(cells) + " |")
        print("(ratios: the median of the round-by-round ratios)")
        with psycopg.connect(url, autocommit=True) as conn:  # the bumps were made
            logged = conn.execute(
                "SELECT (SELECT count(*) FROM bench_wc_this.item_versions), "
                "(SELECT count(*) FROM bench_wc_this.item_log)"
            ).fetchone()
        print(f"this tree's item_versions rows {logged[0]}, item_log rows {logged[1]}")
        print(f"load average {os.getloadavg()[0]:.2f}")
    finally:
        for found in workers.values():
            found.close()
        stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
