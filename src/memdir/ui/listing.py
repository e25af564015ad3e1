"""What the page knows of the folder's files without walking them.

Each layer's files come from the index's own file list (``IndexRows.file_states``:
path, mtime, size and owning layer as last indexed), brought up to date first by the
index's due rescan (``Memory._fresh_index``: every ``[index] rescan_seconds``, the same
rule search and the boot context follow). Every write memdir makes, in this process
or another, updates that list in the same call, so the page sees it at the next load.
On disk, a file added, removed or renamed by hand is seen at the next load too: the
folders' mtimes tell (``Survey.names_moved``: a stat per folder), and the index
rescans at once; a file edited in place by hand is seen at the next due rescan. On
SQLite the list is read again only when the database changed (``PRAGMA
data_version``), so a load over an unchanged 10k-card vault stats no file. Layers the
index leaves out (sessions, the history) are few files: listed through the seam.

A file belongs to one layer, the first whose paths match it (as the index says), so a
catch-all layer (``notes``: ``**/*.md``) does not count the vault's cards again.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import TYPE_CHECKING

from memdir.config import STATE_DIR, static_prefix
from memdir.index.survey import indexed

if TYPE_CHECKING:
    from memdir.config import Layer
    from memdir.memory import Memory


Listed = tuple[int, ...]
"""one file as the page counts it: its size first, then what changes when it does
(its mtime; its inode too, or its version in the database)"""
Survey = dict[str, dict[str, Listed]]
"""layer name -> memory-folder path -> ``Listed``"""


def survey(memory: Memory) -> Survey:
    """Every layer's files, without reading them (see the module)."""
    found: Survey = {name: {} for name in memory.manifest.layers}
    if any(indexed(layer) for layer in memory.manifest.layers.values()):
        index = memory._fresh_index()
        if index.files is None and index.survey.names_moved():  # by hand: scan now
            index.scanned_at = None
            index = memory._fresh_index()

        def states() -> dict[str, tuple[int, int, str]]:
            with index.lock:
                return index.rows.file_states()

        for path, (mtime_ns, size, owner) in index.guard(states).items():
            if owner in found:
                found[owner][path] = (size, mtime_ns)
    for name, layer in memory.manifest.layers.items():
        if not indexed(layer):
            found[name] = _unindexed(memory, name, layer)
    return found


def _unindexed(memory: Memory, name: str, layer: Layer) -> dict[str, Listed]:
    if memory.backend == "local":
        return {
            path: (stat.st_size, stat.st_mtime_ns, stat.st_ino)
            for path, stat in memory.space.stats(name, layer).items()
        }
    base = f"{name}/" if layer.mount is not None else ""
    listed: dict[str, Listed] = {}
    for prefix in sorted({base + static_prefix(pattern) for pattern in layer.paths}):
        for stat in memory.files.list(prefix):
            if stat.path not in listed and memory.space.matches(name, layer, stat.path):
                listed[stat.path] = (stat.size, stat.version)
    return listed


def fingerprint(memory: Memory, files: Survey, stores: Collection[str] | None = None) -> int:
    """What the files of the layers backed by ``stores`` (all: None) are now, and with
    all, today and which memdir databases there are (their inode: a search or a write
    moves their size and mtime; a rebuilt or moved-aside one is another file)."""
    parts: list[frozenset[tuple[str, Listed]]] = []
    for name, layer in memory.manifest.layers.items():
        if stores is None or layer.store in stores:
            parts.append(frozenset(files[name].items()))
    extra: tuple[object, ...] = ()
    if stores is None:
        extra = (memory.clock().date(), _databases(memory))
    return hash((tuple(parts), extra))


def _databases(memory: Memory) -> tuple[tuple[str, int], ...]:
    if memory.backend != "local":
        return ()
    try:
        with os.scandir(memory.root / STATE_DIR) as entries:
            return tuple(sorted((e.name, e.inode()) for e in entries if e.name.endswith(".db")))
    except OSError:
        return ()
