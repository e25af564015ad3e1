"""What resolving a plugin name costs a fresh process: memdir's own, a third party's
read from its dist-info (``plugins._installed_value``), and the same name found through
``importlib.metadata`` (what every third-party name cost before), each over the floor
of importing the modules, interleaved round by round.

    .venv/bin/python bench/plugin_lookup.py [--rounds 9]

The third party is a real distribution folder on ``PYTHONPATH`` (a dist-info with its
``entry_points.txt``, as ``pip install`` leaves it) whose embedder entry point names
memdir's own ``HashingEmbedder``, so every path imports the same modules.
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

READY = "import memdir.plugins, memdir.index.embedders"  # what a search imports anyway
PATHS = {
    "floor": READY,
    "own": f"{READY}; memdir.plugins.resolve('embedders', 'hashing')",
    "third party": f"{READY}; memdir.plugins.resolve('embedders', 'outside')",
    "through importlib.metadata": (
        f"{READY}; from importlib import metadata; "
        "[e.load() for e in metadata.entry_points(group='memdir.embedders') "
        "if e.name == 'outside']"
    ),
}


def fresh(code: str, env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memdir-plugin-bench-") as tmp:
        info = Path(tmp) / "outside_plugin-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: outside-plugin\nVersion: 1.0\n"
        )
        (info / "entry_points.txt").write_text(
            "[memdir.embedders]\noutside = memdir.index.embedders:HashingEmbedder\n"
        )
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([tmp, env.get("PYTHONPATH", "")])
        times: dict[str, list[float]] = {name: [] for name in PATHS}
        for code in PATHS.values():  # warm-up: the files in the page cache
            fresh(code, env)
        for _ in range(args.rounds):
            for name, code in PATHS.items():
                times[name].append(fresh(code, env))
    floor = times["floor"]
    print(f"rounds: {args.rounds}; floor (importing the modules): "
          f"{statistics.median(floor) * 1e3:.0f} ms")  # fmt: skip
    over = {
        name: [(t - f) * 1e3 for t, f in zip(found, floor, strict=True)]
        for name, found in times.items()
        if name != "floor"
    }
    for name, extra in over.items():
        print(f"{name}: {statistics.median(extra):+.1f} ms over the floor")
    ratio = statistics.median(
        t / m
        for t, m in zip(times["third party"], times["through importlib.metadata"], strict=True)
    )
    print(f"third party / through importlib.metadata, whole process, round by round: {ratio:.2f}")


if __name__ == "__main__":
    main()
