"""Cold start: how long a fresh process takes to answer (issue 14).

    .venv/bin/python bench/cold_start.py [--items 10000] [--runs 7] [--baseline SRC]

Every figure is a whole new process, as an agent shelling out to ``memdir`` or a
host starting ``memdir serve`` per conversation pays it:

- ``python -c pass``: the floor, the interpreter alone;
- ``import memdir``; ``memdir --help``;
- ``memdir save TEXT`` into a copy of the folder (a new text each run);
- ``memdir search QUERY`` over ``--items`` items (journal sections of
  bench/scale.py's synthetic text, each with a vector), the MiniLM model loaded;
- MCP over stdio: the real ``mcp`` client starts ``memdir serve``, initializes and
  calls ``memory_search``; the time from the spawn to that first tool result.

Beside them, what no change to memdir can take away, in the same rounds: the
interpreter importing typer and rich (every command), numpy and onnxruntime (a
semantic search; memdir tokenises in plain Python since issue 18), and the MCP
SDK's server (``memdir serve``).

The commands run in turn, round after round (A B C ... A B C ...), so a machine
that slows down slows every command alike; each figure is the median over the
rounds, and beside it the median of its ratio to ``python -c pass`` in the same
round. ``--baseline SRC`` (a ``src`` folder of another checkout, such as memdir
before this change) runs every memdir command from there too, interleaved, and
prints the ratio of this tree's time to it, round by round.

Both trees are byte-compiled first (as ``pip install`` does), so no run pays for
compiling sources. Targets (issue 14): --help and save at most about 300 ms,
search at 10k items at most about 700 ms, MCP initialize to first result under 1 s.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
QUERY = "what did we decide about the release checklist"
FLOORS = {
    "floor: import typer, rich.console": "import typer, rich.console",
    "floor: import numpy, onnxruntime": "import numpy, onnxruntime",
    "floor: import mcp.server.mcpserver": "import mcp.server.mcpserver",
}
"""third-party imports, timed beside memdir's commands: the part memdir cannot remove"""
TARGETS = {
    "memdir --help": "<= ~300 ms",
    "memdir save": "<= ~300 ms",
    "memdir search": "<= ~700 ms at 10k",
    "MCP stdio: spawn to first search result": "< 1 s",
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build_folder(folder: Path, items: int, model_ids: set[str], seed: int = 7) -> None:
    """``items`` journal sections with synthetic vectors (bench/scale.py's corpus) under
    each of ``model_ids`` (the trees' MiniLM ids, which a change of model moves), built
    by this process; the measured processes only read it (or write to a copy)."""
    sys.path.insert(0, str(HERE))
    import scale

    import memdir

    corpus = scale.Corpus(seed)
    memdir.init(folder)
    scale.write_journal(folder, corpus, max(items // scale.SECTIONS, 1))
    with memdir.open(folder, embedder="none") as keyword:
        keyword.reindex()
        _, anchors = scale.embed_sample(200, seed)
        for model_id in sorted(model_ids):
            scale.fake_vectors(keyword, anchors, seed, model_id)
        keyword.index.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def minilm_id(src: Path) -> str:
    """The MiniLM embedder's id in the tree at ``src``."""
    code = "from memdir.index.embedders import MiniLMEmbedder; print(MiniLMEmbedder().id)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=child_env(src), capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def child_env(src: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed memdir has its .pyc files
    env["PYTHONPATH"] = str(src)
    return env


def run_process(argv: list[str], env: dict[str, str]) -> float:
    """Seconds from the spawn to the exit of ``argv``; a failure stops the benchmark."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr.decode()}")
    return took


def mcp_first_result(folder: Path, env: dict[str, str]) -> float:
    """Seconds from starting ``memdir serve`` over stdio to the first memory_search result,
    through the real MCP client (the 2025 protocol's initialize, as hosts speak it today)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memdir", "serve", "--dir", str(folder), "--maintain-every", "0"],
        env=env,
    )
    took = 0.0

    async def main() -> None:
        nonlocal took
        start = time.perf_counter()
        async with Client(params, read_timeout_seconds=120, mode="legacy") as client:
            result = await client.call_tool("memory_search", {"query": QUERY})
            took = time.perf_counter() - start
            if result.is_error:
                raise SystemExit(f"memory_search failed: {result.content}")

    anyio.run(main)
    return took


def commands(src: Path, folder: Path, scratch: Path) -> dict[str, Callable[[int], float]]:
    env = child_env(src)
    py = [sys.executable]
    memdir = [*py, "-m", "memdir"]
    return {
        "import memdir": lambda n: run_process([*py, "-c", "import memdir"], env),
        "memdir --help": lambda n: run_process([*memdir, "--help"], env),
        "memdir save": lambda n: run_process(
            [
                *memdir,
                "save",
                f"Cold start note {n}: the release checklist lives with Dana.",
                "--dir",
                str(scratch),
            ],
            env,
        ),  # fmt: skip
        "memdir search": lambda n: run_process(
            [*memdir, "search", QUERY, "--dir", str(folder)], env
        ),
        "MCP stdio: spawn to first search result": lambda n: mcp_first_result(folder, env),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7, help="rounds counted (after one warm-up)")
    parser.add_argument("--baseline", type=Path, help="the src folder of the tree to compare with")
    parser.add_argument("--only", help="comma-separated names: run only these commands")
    parser.add_argument("--keep", type=Path, help="build the folder here (reused if it exists)")
    args = parser.parse_args()

    trees = {"this": SRC.resolve()}
    if args.baseline is not None:
        trees["baseline"] = args.baseline.resolve()
    for src in trees.values():
        compileall.compile_dir(str(src / "memdir"), quiet=1)

    with tempfile.TemporaryDirectory(prefix="memdir-cold-") as tmp:
        folder = (args.keep or Path(tmp)) / f"cold-{args.items}"
        if not (folder / "memdir.toml").is_file():
            log(f"building {args.items:,} items in {folder} ...")
            build_folder(folder, args.items, {minilm_id(src) for src in trees.values()})
        table: dict[tuple[str, str], Callable[[int], float]] = {
            ("python -c pass", "this"): lambda n: run_process(
                [sys.executable, "-c", "pass"], child_env(SRC)
            )
        }
        for floor, code in FLOORS.items():
            table[(floor, "this")] = lambda n, code=code: run_process(
                [sys.executable, "-c", code], child_env(SRC)
            )
        for tree, src in trees.items():
            scratch = Path(tmp) / f"save-{tree}"
            shutil.copytree(folder, scratch)
            for name, action in commands(src, folder, scratch).items():
                if args.only is None or name in args.only.split(","):
                    table[(name, tree)] = action

        samples: dict[tuple[str, str], list[float]] = {key: [] for key in table}
        for round_ in range(args.runs + 1):  # round 0 warms the caches and is not counted
            for key, action in table.items():
                took = action(round_)
                if round_:
                    samples[key].append(took)
            log(f"round {round_}/{args.runs} done" + (" (warm-up)" if not round_ else ""))

    floor = samples[("python -c pass", "this")]
    print(f"Cold start, {args.items:,} items, median of {args.runs} interleaved rounds")
    print()
    head = "| command | ms | x python -c pass |"
    rule = "|---|---|---|"
    if "baseline" in trees:
        head += " baseline ms | this / baseline |"
        rule += "---|---|"
    print(head + " target |")
    print(rule + "---|")
    for (name, tree), values in samples.items():
        if tree != "this":
            continue
        ratio = statistics.median(v / f for v, f in zip(values, floor, strict=True))
        row = f"| {name} | {statistics.median(values) * 1000:.0f} | {ratio:.1f} |"
        if "baseline" in trees:
            base = samples.get((name, "baseline"))
            if base:
                pair = statistics.median(v / b for v, b in zip(values, base, strict=True))
                row += f" {statistics.median(base) * 1000:.0f} | {pair:.2f} |"
            else:
                row += " | |"
        print(row + f" {TARGETS.get(name, '')} |")


if __name__ == "__main__":
    main()
