"""Memory folders the retrieval benchmarks build (bench/locomo.py, bench/realmem.py).

A benchmark writes its files into a fresh folder and reindexes it; with a kept root
(``--keep DIR`` or ``MEMDIR_BENCH_KEEP``) a folder built before from the same files
with the same embedder is opened as it is, its index and vectors included, so a rerun
spends its time on the searches only.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import memdir

BUILT = ".bench-built"
"""a file in a kept folder naming what it was built from (the files' hash, the embedder)"""


def built_folder(
    folder: Path, files: dict[str, str], embedder: str, open_it: Callable[[Path], memdir.Memory]
) -> memdir.Memory:
    """The memory in ``folder`` holding ``files`` (relpath -> text), indexed."""
    joined = "\x00".join(f"{relpath}\x00{text}" for relpath, text in sorted(files.items()))
    stamp = f"{hashlib.sha256(joined.encode()).hexdigest()[:16]} {embedder}"
    marker = folder / ".memdir" / BUILT
    if marker.is_file() and marker.read_text() == stamp:
        return open_it(folder)
    if folder.exists():
        shutil.rmtree(folder)
    memdir.init(folder)
    for relpath, text in files.items():
        (folder / relpath).write_text(text, encoding="utf-8")
    memory = open_it(folder)
    memory.reindex()
    marker.write_text(stamp)
    return memory
