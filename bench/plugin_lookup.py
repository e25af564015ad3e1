"""What resolving a plugin name costs a fresh process: memdir's own, a third party's
read from its dist-info (``plugins._installed_value``), and the same name found through
``importlib.metadata`` (what every third-party name cost before): each lookup timed
inside a fresh process that has imported the modules, and the whole process, the
three interleaved round by round.

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

READY = "import time, memdir.plugins, memdir.index.embedders"  # what a search imports anyway
LOOKUPS = {
    "own": "memdir.plugins.resolve('embedders', 'hashing')",
    "third party": "memdir.plugins.resolve('embedders', 'outside')",
    "through importlib.metadata": (
        "[e.load() for e in __import__('importlib.metadata').metadata.entry_points("
        "group='memdir.embedders') if e.name == 'outside']"
    ),
}


def fresh(lookup: str, env: dict[str, str]) -> tuple[float, float]:
    """(the whole process, the lookup inside it) in seconds: a new interpreter that
    imports the modules, then times ``lookup`` (its first use of anything it imports)."""
    code = f"{READY}\nbegan = time.perf_counter()\n{lookup}\nprint(time.perf_counter() - began)"
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True
    )
    return time.perf_counter() - began, float(done.stdout.split()[-1])


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
        whole: dict[str, list[float]] = {name: [] for name in LOOKUPS}
        inside: dict[str, list[float]] = {name: [] for name in LOOKUPS}
        for lookup in LOOKUPS.values():  # warm-up: the files in the page cache
            fresh(lookup, env)
        for _ in range(args.rounds):
            for name, lookup in LOOKUPS.items():
                process, call = fresh(lookup, env)
                whole[name].append(process)
                inside[name].append(call)
    print(f"rounds: {args.rounds}, each lookup in a fresh process after importing the modules")
    for name in LOOKUPS:
        print(
            f"{name}: the lookup {statistics.median(inside[name]) * 1e3:.2f} ms, "
            f"the whole process {statistics.median(whole[name]) * 1e3:.0f} ms"
        )
    for name in ("own", "third party"):
        pairs = zip(whole[name], whole["through importlib.metadata"], strict=True)
        ratio = statistics.median(mine / old for mine, old in pairs)
        print(f"{name} / through importlib.metadata, whole process, round by round: {ratio:.2f}")


if __name__ == "__main__":
    main()
