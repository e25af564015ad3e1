"""A process that searches runs its vector scans on one BLAS thread, unless it says to
keep its own (memdir.index.blas). Each case runs in a fresh process: the setting is
one per process, and the test session's own must not leak into another test."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from memdir.index.blas import threads_wanted

SEARCHES = """
import threading
import numpy as np
from threadpoolctl import threadpool_info
from memdir.index.vectors import VectorCache

def threads():
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

seen = [("before", threads())]
cache = VectorCache("model", 4)
rows = np.eye(4, dtype=np.float32)
cache._append([(n, rows[n].tobytes()) for n in range(4)])
query = np.array([0, 0, 1, 0], dtype=np.float32)

def search():
    assert cache.top(query, 1) == [(2, 1.0)]
    assert [item for item, _ in cache.top_among(query, [1, 2], 2)] == [2, 1]
    seen.append(("in the searching thread", threads()))

worker = threading.Thread(target=search) if IN_WORKER else None
if worker is not None:  # as a server searches: on a worker thread
    worker.start()
    worker.join(10)
else:
    search()
seen.append(("after", threads()))
print(seen)
"""


def searched(*, in_worker: bool, setting: str | None) -> list[tuple[str, list[int]]]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2"}  # the process's own: two
    env.pop("MEMDIR_BLAS_THREADS", None)
    if setting is not None:
        env["MEMDIR_BLAS_THREADS"] = setting
    code = f"IN_WORKER = {in_worker}\n{SEARCHES}"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    seen: list[tuple[str, list[int]]] = ast.literal_eval(done.stdout.strip())
    if seen[0][1] == []:
        pytest.skip("numpy has no BLAS that threadpoolctl controls")
    return seen


@pytest.mark.parametrize("in_worker", [False, True])
def test_a_search_leaves_blas_on_one_thread(in_worker: bool) -> None:
    seen = searched(in_worker=in_worker, setting=None)
    assert seen == [("before", [2]), ("in the searching thread", [1]), ("after", [1])]


def test_keep_leaves_the_process_threads_as_they_are() -> None:
    seen = searched(in_worker=False, setting="keep")
    assert seen == [("before", [2]), ("in the searching thread", [2]), ("after", [2])]


def test_a_number_of_threads_is_taken() -> None:
    seen = searched(in_worker=False, setting="3")
    assert seen[-1] == ("after", [3])


@pytest.mark.parametrize(
    ("setting", "wanted"),
    [("", 1), ("keep", None), (" KEEP ", None), ("4", 4), ("0", 1), ("-2", 1), ("lots", 1)],
)
def test_the_setting_is_read_leniently(setting: str, wanted: int | None) -> None:
    assert threads_wanted(setting) == wanted
