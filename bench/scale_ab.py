"""Issue 14's growth costs, this tree against a baseline tree, in alternating processes.

    .venv/bin/python bench/scale_ab.py --baseline DIR [--rounds 3] [--keep DIR]

DIR is another checkout's ``src`` (``git worktree add /tmp/base <commit>``, then
``--baseline /tmp/base/src``). Each measurement runs in a fresh process, the baseline's
and this tree's taking turns, ``--rounds`` times, so load swings on a shared machine hit
both alike; the table gives medians. The folders are bench/scale.py's journal files
(10k and 100k items) and bench/decay.py's cards (10k), written once; each tree indexes
a copy of its own (one may not read the other's index):

- reindex: ``memory.reindex()`` at 10k and 100k items, us per item, and 100k / 10k;
- vector open: a fresh process's first ``refresh`` of 100k MiniLM-sized vectors (a
  search's load; this tree reads the copy a process of its own wrote first, after the
  last reindex), its peak RSS rise against the matrix's 147 MB, and the floor: one
  readinto of as many bytes;
- due rescan: ``context()`` with a rescan due over 10,012 files, beside a bare
  ``os.scandir`` walk that stats every file (the floor), interleaved, 30 each;
- decay: ``memory.decay()`` of 10k cards (a fresh copy each run), beside the floor of
  bench/scale.py (read every card, atomically rewrite the changed ones).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"


def phase(name: str, folder: Path) -> dict[str, float]:
    """One measurement, in this process (the parent chose which memdir it imports)."""
    import resource

    import memdir

    def peak() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    if name == "reindex":
        memory = memdir.open(folder, embedder="none")
        start = time.perf_counter()
        memory.reindex()
        seconds = time.perf_counter() - start
        items = memory.index.db.execute("SELECT count(*) FROM items").fetchone()[0]
        return {"us": seconds / items * 1e6}
    if name == "vectors":
        from memdir.index.embedders import MiniLMEmbedder

        memory = memdir.open(folder, embedder=MiniLMEmbedder())  # the model is not loaded
        index, before = memory.index, peak()
        assert index.vectors is not None
        start = time.perf_counter()
        index.vectors.refresh(index.db)
        ms, rise = (time.perf_counter() - start) * 1000, peak() - before
        memory.close()
        import numpy as np

        floor = np.empty(len(index.vectors) * 384, dtype=np.float32)
        start = time.perf_counter()
        with (folder / "matrix.floor").open("rb") as handle:
            handle.readinto(memoryview(floor).cast("B"))
        return {"ms": ms, "rss": rise, "floor": (time.perf_counter() - start) * 1000}
    if name == "rescan":
        from scale import walk_floor

        memory = memdir.open(folder, embedder="none")
        memory.scan()
        memory.context()
        due, floor = [], []
        for _ in range(30):
            memory.index.scanned_at = None
            start = time.perf_counter()
            memory.context()
            due.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            walk_floor(folder)
            floor.append((time.perf_counter() - start) * 1000)
        return {"ms": statistics.median(due), "floor": statistics.median(floor)}
    if name == "decay":
        from decay import NOW
        from scale import rewrite_floor

        from memdir.testing import FakeClock

        work = folder.with_name(f"{folder.name}-run")
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(folder, work, symlinks=True)
        memory = memdir.open(work, clock=FakeClock(NOW), embedder="none")
        memory.scan()
        start = time.perf_counter()
        report = memory.decay()
        seconds = time.perf_counter() - start
        cards = sorted((work / "vault").rglob("*.md"))
        floor = rewrite_floor(cards, [memory.space.real(path) for path in report.changed])
        shutil.rmtree(work, ignore_errors=True)
        return {"s": seconds, "floor": floor}
    raise ValueError(name)


def build(base: Path) -> dict[str, Path]:
    """The folders' files, written once (each tree then indexes a copy of its own: the
    two may not read each other's index)."""
    from decay import FOLDERS, card
    from scale import SECTIONS, Corpus, write_journal

    import memdir

    folders = {}
    for size in (10_000, 100_000):
        folder = folders[f"journal-{size}"] = base / f"journal-{size}"
        if not folder.exists():
            memdir.init(folder)
            write_journal(folder, Corpus(7), size // SECTIONS)
    vault = folders["cards-10000"] = base / "cards-10000"
    if not vault.exists():
        memdir.init(vault, layout="vault")
        rng, names = random.Random(7), [f"card-{n}" for n in range(10_000)]
        for n, name in enumerate(names):
            sub = list(FOLDERS)[n % len(FOLDERS)]
            path = vault / "vault" / sub / f"{name}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(card(rng, name, names, FOLDERS[sub], n % 500 == 0)[0], "utf-8")
    return folders


def prepare(folder: Path) -> dict[str, float]:
    """Index a tree's copy of a folder, with synthetic vectors for the journal ones."""
    import numpy as np
    from scale import fake_vectors

    import memdir

    memory = memdir.open(folder, embedder="none")
    memory.reindex()
    if folder.name.startswith("journal"):
        anchors = np.random.default_rng(7).standard_normal((1000, 384), dtype=np.float32)
        fake_vectors(memory, anchors, 7)
        memory.index.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        items = memory.index.db.execute("SELECT count(*) FROM items").fetchone()[0]
        (folder / "matrix.floor").write_bytes(bytes(items * 384 * 4))
    memory.close()
    return {}


def run(src: Path, name: str, folder: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(HERE)])}
    command = [sys.executable, __file__, "--phase", name, "--folder", str(folder)]
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", type=Path, help="another checkout's src folder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build the folders here and keep them")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        found = prepare(args.folder) if args.phase == "prepare" else phase(args.phase, args.folder)
        print(json.dumps(found))
        return
    if args.baseline is None:
        parser.error("--baseline is required")
    base = args.keep or Path(tempfile.mkdtemp(prefix="memdir-scale-ab-"))
    try:
        sys.path.insert(0, str(HERE))
        files = build(base)
        trees = (("baseline", args.baseline), ("this tree", SRC))
        mine: dict[tuple[str, str], Path] = {}
        for tree, src in trees:
            for name, folder in files.items():
                copy = mine[(tree, name)] = base / f"{name}-{'base' if src != SRC else 'this'}"
                if not copy.exists():
                    shutil.copytree(folder, copy, symlinks=True)
                    run(src, "prepare", copy)
        groups = [[("reindex", "journal-10000"), ("reindex", "journal-100000")],
                  [("vectors", "journal-100000")], [("rescan", "journal-100000")],
                  [("decay", "cards-10000")]]  # fmt: skip
        results: dict[tuple[str, str, str], list[dict[str, float]]] = {}
        for jobs in groups:
            if jobs[0][0] == "vectors":  # after the last reindex: this tree writes its copy
                run(SRC, "vectors", mine[("this tree", jobs[0][1])])
            for n in range(args.rounds):
                for name, folder in jobs:
                    for tree, src in trees:
                        found = run(src, name, mine[(tree, folder)])
                        results.setdefault((name, folder, tree), []).append(found)
                        print(f"round {n + 1} {name} {folder} {tree}: {found}", file=sys.stderr)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    report(results)


def report(results: dict[tuple[str, str, str], list[dict[str, float]]]) -> None:
    def med(name: str, folder: str, tree: str, key: str) -> float:
        return statistics.median(found[key] for found in results[(name, folder, tree)])

    rows: list[list[Any]] = []
    for tree in ("baseline", "this tree"):
        small = med("reindex", "journal-10000", tree, "us")
        big = med("reindex", "journal-100000", tree, "us")
        rows.append([tree, f"{small:.0f}", f"{big:.0f}", f"{big / small:.2f}x",
                     f"{med('vectors', 'journal-100000', tree, 'ms'):.0f} "
                     f"(floor {med('vectors', 'journal-100000', tree, 'floor'):.0f}), "
                     f"+{med('vectors', 'journal-100000', tree, 'rss'):.0f} MB",
                     f"{med('rescan', 'journal-100000', tree, 'ms'):.1f} "
                     f"(floor {med('rescan', 'journal-100000', tree, 'floor'):.1f})",
                     f"{med('decay', 'cards-10000', tree, 's'):.2f} "
                     f"(floor {med('decay', 'cards-10000', tree, 'floor'):.2f})"])  # fmt: skip
    print("| tree | reindex 10k (us/item) | reindex 100k (us/item) | 100k / 10k | "
          "vector open 100k (ms), peak RSS rise | context(), rescan due, 10,012 files (ms) "
          "| decay 10k cards (s) |\n|---|---|---|---|---|---|---|")  # fmt: skip
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")


if __name__ == "__main__":
    main()
