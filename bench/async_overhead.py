"""What the async surface costs, and what it buys (issue 18).

    .venv/bin/python bench/async_overhead.py [--items 1000] [--rounds 200]

Cost: each ``AsyncMemory`` call is its sync twin plus a hop to the folder's worker
thread and back. The same calls run both ways, interleaved (sync, async, sync, ...)
on one folder of ``--items`` observations (hashing embedder), and the ratio
async / sync is printed per call, median over the rounds: ``notebook.get`` (the
cheapest call: the hop itself), ``knowledge.save`` and ``search``.

Gain: while a search runs, can the event loop do anything else? A ticker coroutine
that sleeps 1 ms at a time counts its ticks during 20 searches run through the
sync ``Memory`` from a coroutine (as the MCP server did before) and through
``AsyncMemory`` (as it does now); the figure is ticks per search, 0 when the loop
was blocked throughout.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import memdir
from memdir.aio import AsyncMemory


def build(root: Path, items: int) -> None:
    memdir.init(root)
    with memdir.open(root, embedder="hashing") as memory:
        for i in range(items):
            memory.knowledge.save(
                f"Observation {i}: the deploy of service {i % 37} needs step {i}."
            )
        memory.notebook.update("focus", "benchmarking the async surface")
        memory.search("warm up the index")


async def cost(memory: memdir.Memory, rounds: int) -> dict[str, float]:
    am = AsyncMemory(memory)
    ratios: dict[str, list[float]] = {"notebook.get": [], "knowledge.save": [], "search": []}
    hops: list[float] = []
    for i in range(rounds):
        pairs = {
            "notebook.get": (
                lambda: memory.notebook.get("focus"),
                lambda: am.notebook.get("focus"),
            ),
            "knowledge.save": (
                lambda i=i: memory.knowledge.save(f"Sync fact {i}."),
                lambda i=i: am.knowledge.save(f"Async fact {i}."),
            ),
            "search": (
                lambda i=i: memory.search(f"deploy service {i % 37}"),
                lambda i=i: am.search(f"deploy service {i % 37}"),
            ),
        }
        for name, (sync_call, async_call) in pairs.items():
            start = time.perf_counter()
            sync_call()
            sync_s = time.perf_counter() - start
            start = time.perf_counter()
            await async_call()
            async_s = time.perf_counter() - start
            ratios[name].append(async_s / sync_s)
            if name == "notebook.get":
                hops.append(async_s - sync_s)
    medians = {name: statistics.median(values) for name, values in ratios.items()}
    medians["hop_us"] = statistics.median(hops) * 1e6
    return medians


async def ticks_during(searches: object) -> float:
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            await asyncio.sleep(0.001)
            ticks += 1

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)  # the ticker is waiting
    n = await searches  # type: ignore[misc]
    done.set()
    await task
    return ticks / n


async def gain(memory: memdir.Memory) -> tuple[float, float]:
    am = AsyncMemory(memory)
    n = 20

    async def blocking() -> int:
        for i in range(n):
            memory.search(f"deploy service {i}")  # on the loop, as before
        return n

    async def off_loop() -> int:
        for i in range(n):
            await am.search(f"deploy service {i}")
        return n

    before = await ticks_during(blocking())
    after = await ticks_during(off_loop())
    await am.close()
    return before, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mem"
        build(root, args.items)
        with memdir.open(root, embedder="hashing") as memory:
            ratios = asyncio.run(cost(memory, args.rounds))
            before, after = asyncio.run(gain(memory))
    print(f"async / sync, median of {args.rounds} interleaved rounds ({args.items} items):")
    hop = ratios.pop("hop_us")
    for name, ratio in ratios.items():
        print(f"  {name:<16} {ratio:5.2f}x")
    print(f"  the hop itself (async - sync notebook.get): {hop:.0f} us")
    print("event-loop ticks (1 ms sleeps) per search while searching:")
    print(f"  sync Memory on the loop  {before:6.1f}")
    print(f"  AsyncMemory              {after:6.1f}")


if __name__ == "__main__":
    main()
