"""Timing shared by the benchmarks: p50 and p95 of a repeated call, in milliseconds;
the seconds of one call that cannot be repeated (a first search, a cold open)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def measure(action: Callable[[int], object], runs: int) -> tuple[float, float]:
    """p50 and p95 in milliseconds of ``action(0)`` ... ``action(runs - 1)``."""
    samples = []
    for n in range(runs):
        start = time.perf_counter()
        action(n)
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[max(int(len(samples) * 0.95) - 1, 0)]


def once(action: Callable[[], T]) -> tuple[float, T]:
    """Seconds taken by ``action()``, and what it returned."""
    start = time.perf_counter()
    outcome = action()
    return time.perf_counter() - start, outcome
