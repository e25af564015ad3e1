"""One BLAS thread for the vector scans of a process that searches.

A scan is a matrix-vector product (``VectorCache.top``, ``top_among``):
memory-bound, and one core does it about as fast as many (100,000 rows of 384
floats: 16.2 ms on one thread, 16.0 ms on all of this machine's). OpenBLAS,
numpy's BLAS, splits every product over 9,216 elements across its threads,
which then spin waiting for more work, on the cores the next query's embedding
and the rest of the machine need. On a loaded two-core machine that doubles a
search: RealMem's p50 was 83-86 ms with OpenBLAS's default threads against
43-44 ms with one, in alternating runs at load 2 (bench/RESULTS.md, issue 16).

``single_thread()`` sets BLAS to one thread, once per process, before its first
scan, through threadpoolctl (the scikit-learn maintainers' library for exactly
this). It stays set: OpenBLAS's thread count is one per process, and a limit
taken and given back around each scan, from the several threads a server
searches in, was seen to leave the count wrong (given back in one thread, read
as still one in another). A process that wants its BLAS threads for work of its
own sets ``MEMDIR_BLAS_THREADS=keep`` (memdir leaves them as they are) or a
number of threads. Without a BLAS threadpoolctl knows, nothing is changed.
"""

from __future__ import annotations

import os
import threading

ENV = "MEMDIR_BLAS_THREADS"
"""``keep``: leave BLAS's threads as the process has them; a number: that many; unset: 1"""

_lock = threading.Lock()
_done = False


def single_thread() -> None:
    """Set BLAS's threads for this process's scans (see the module), the first time."""
    global _done
    if _done:
        return
    with _lock:
        if _done:
            return
        _done = True
        wanted = threads_wanted(os.environ.get(ENV, ""))
        if wanted is None:
            return
        from threadpoolctl import ThreadpoolController

        blas = ThreadpoolController().select(user_api="blas")
        if blas.lib_controllers:
            blas.limit(limits=wanted)  # kept: nothing gives it back


def threads_wanted(setting: str) -> int | None:
    """``MEMDIR_BLAS_THREADS`` read: None for ``keep``, else the threads (1 unless a
    positive number is given)."""
    text = setting.strip().lower()
    if text == "keep":
        return None
    return int(text) if text.isdigit() and int(text) > 0 else 1
