"""The web page's views on big vaults: time to first byte and to the whole page.

    python bench/ui.py                      # 1,000 and 10,000 cards
    python bench/ui.py --sizes 200 --runs 3 # a quick look

A folder of the default layout with N cards (each linking to three others, tiers
spread by their last access), a few observations, a journal day and a dream, served
by the real app (uvicorn on loopback, in this process's thread). Each view is fetched
``--runs`` times, interleaved with a trivial page (a small file's view: the same
guard, worker thread and template, nearly no data) whose time is the floor; the
report gives each view's median time to first byte and to the last byte, and its
ratio to the floor measured in the same rounds; beside the search view, the library's
``memory.search`` alone (what that view waits for), timed in the same process. The
first fetch of each view (which builds the index and reads cold files) is left out
and shown apart; so is how long the overview took to show doctor's findings (doctor
runs in a thread beside the page, cached until a file changes). Every item is
embedded before the rounds (the steady state; a vault just written is embedded by its
first searches, a second's worth each).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import memdir  # noqa: E402
from memdir.dream.cycle import run_dream  # noqa: E402
from memdir.testing import FakeClock  # noqa: E402
from memdir.ui import build_app  # noqa: E402
from ui_browser import LiveServer  # noqa: E402

TODAY = date(2026, 11, 30)
FLOOR = "/ui/file?path=state.md"


def build(root: Path, size: int) -> FakeClock:
    clock = FakeClock("2026-11-30T10:00:00Z")
    memdir.init(root)
    rng = random.Random(size)
    folder = root / "vault"
    for n in range(size):
        links = sorted({f"card-{rng.randrange(size)}" for _ in range(3)} - {f"card-{n}"})
        seen = TODAY - timedelta(days=rng.choice([0, 3, 10, 30, 90]))
        body = " ".join(f"[[{link}]]" for link in links)
        (folder / f"card-{n}.md").write_text(
            "---\n"
            f"type: {rng.choice(['person', 'project', 'company', 'idea'])}\n"
            "tags: [bench]\n"
            f"created: {seen - timedelta(days=5)}\n"
            f"updated: {seen}\n"
            f"last_accessed: {seen}\n"
            "access_count: 1\n"
            f"links: [{', '.join(links)}]\n"
            "---\n"
            f"# Card {n}\nWorks on topic {n % 97} with {body}.\n",
            encoding="utf-8",
        )
    with memdir.open(root, clock=clock, embedder="hashing") as memory:
        for n in range(20):
            memory.knowledge.save(f"Observation {n} about topic {n % 7}.", tags=("bench",))
        memory.knowledge.update(section="conventions", content="- Deploys on Tuesdays.")
        memory.journal.append("decision", "Benchmarked the page.")
        run_dream(memory, force=True)
        memory.decay()
        # the steady state: every item embedded (a vault just written is embedded by its
        # first searches, about a second of it each, which would be timed as the view's)
        memory.index.ensure_vectors()
    return clock


def views(size: int) -> dict[str, str]:
    middle = f"vault/card-{size // 2}.md"
    return {
        "overview": "/ui/",
        "memory": "/ui/memory",
        "search": "/ui/search?q=topic+works&mode=deep",
        "vault": "/ui/vault",
        "vault graph, focused": f"/ui/vault?focus={middle}",
        "card": f"/ui/vault/card?path={middle}",
        "episodes": "/ui/episodes",
        "consolidation": "/ui/consolidation",
        "history": "/ui/history",
    }


def fetch(client: httpx.Client, url: str) -> tuple[float, float, int]:
    """Seconds to the first byte of the body, to the last, and the bytes."""
    start = time.perf_counter()
    first = None
    size = 0
    with client.stream("GET", url) as response:
        assert response.status_code == 200, (url, response.status_code)
        for chunk in response.iter_bytes():
            if first is None:
                first = time.perf_counter()
            size += len(chunk)
    end = time.perf_counter()
    return (first or end) - start, end - start, size


def run(size: int, runs: int, work: Path) -> list[tuple[str, float, float, float, float, int]]:
    root = work / f"ui-{size}"
    began = time.perf_counter()
    clock = build(root, size)
    print(f"{size} cards built in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    rows = []
    with (
        memdir.open(root, clock=clock, embedder="hashing") as memory,
        LiveServer(build_app(memory)) as base,
        httpx.Client(base_url=base, timeout=300) as client,
    ):
        pages = views(size)
        cold = {name: fetch(client, url)[1] for name, url in pages.items()}
        began = time.perf_counter()  # doctor runs beside the overview: wait until it is in
        while "still checking" in client.get(pages["overview"]).text:
            time.sleep(1)
        doctor = time.perf_counter() - began + cold["overview"]
        fetch(client, FLOOR)
        samples: dict[str, list[tuple[float, float, int]]] = {n: [] for n in pages}
        floors: list[tuple[float, float, int]] = []
        for _ in range(runs):
            for name, url in pages.items():
                floors.append(fetch(client, FLOOR))
                samples[name].append(fetch(client, url))
        alone = []
        for _ in range(runs):  # what the search view waits for: the library's own call
            began = time.perf_counter()
            memory.search("topic works", k=20, mode="deep")
            alone.append(time.perf_counter() - began)
        floor_first = statistics.median(s[0] for s in floors)
        floor_load = statistics.median(s[1] for s in floors)
        rows.append(("trivial page (floor)", floor_first, floor_load, 1.0, 0.0, floors[0][2]))
        rows.append(("  doctor's findings in (s)", doctor, doctor, 0.0, 0.0, 0))
        for name, got in samples.items():
            first = statistics.median(s[0] for s in got)
            load = statistics.median(s[1] for s in got)
            rows.append((name, first, load, load / floor_load, cold[name], got[0][2]))
            if name == "search":
                took = statistics.median(alone)
                rows.append(("  memory.search alone", took, took, took / floor_load, 0.0, 0))
    shutil.rmtree(root, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memdir-bench-ui-"))
    try:
        results = {size: run(size, args.runs, work) for size in args.sizes}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    head = " | ".join(
        f"{size:,} cards: first byte / load ms (x floor; first fetch)" for size in results
    )
    print(f"| view | {head} |")
    print("|---|" + "---|" * len(results))
    names = [row[0] for row in next(iter(results.values()))]
    for n, name in enumerate(names):
        cells = []
        for rows in results.values():
            _, first, load, ratio, cold, size = rows[n]
            if name.startswith("  doctor"):
                cells.append(f"{first:.1f} s after the first fetch began")
                continue
            extra = f"; first {cold * 1000:.0f}" if cold else ""
            cells.append(
                f"{first * 1000:.1f} / {load * 1000:.1f} ({ratio:.1f}x{extra}; {size // 1024} KB)"
            )
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
