"""A ``Memory``'s search index: opened on first use, fed by every write, rescanned
when stale, searched.

The index is derived from the files, so nothing here may lose a write: a write the
index could not follow leaves a notice and marks the index stale (the next scan
catches up), and a disk that refuses the scan leaves the search answering from the
index as it was, with a notice. On disk the index is ``.memdir/index.db`` (a private
copy in a folder this process cannot write: ``readonly.private_index``); a storage
that keeps index rows of its own (PostgreSQL) is read through the seam.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from memdir.config import STATE_DIR
from memdir.errors import StorageError
from memdir.readonly import private_index
from memdir.results import Notice
from memdir.sqlite import disk_refused
from memdir.timeutil import check_window, moment_argument

if TYPE_CHECKING:
    from memdir.config.manifest import IndexSettings
    from memdir.index.embedders import Embedder
    from memdir.index.search import Hit, Hits
    from memdir.index.sync import Index
    from memdir.memory import Memory

HITS_MAX = 2**31 - 1
"""The most hits a search returns: a larger ``k`` asks for every hit there is."""


def open_index(memory: Memory) -> Index:
    """The index ``Memory.index`` opens: through the storage's rows, or on disk."""
    from memdir.index.sync import INDEX_FILE, Index

    embedder = choose_embedder(memory)
    rows = memory.storage.index_rows(embedder)
    if rows is not None:  # kept beside the files (PostgreSQL): read through the seam
        return Index(
            memory.root,
            memory.manifest,
            embedder=embedder,
            clock=memory.clock,
            lock=memory.lock,
            on_notice=memory.notices.append,
            rows=rows,
            files=memory.files,
        )
    path = None
    if memory.read_only is not None:
        path = private_index(memory.root / STATE_DIR / INDEX_FILE)
    return Index(
        memory.root,
        memory.manifest,
        embedder=embedder,
        clock=memory.clock,
        path=path,
        # a damaged index.db is moved aside under the folder lock, then rebuilt
        lock=memory.lock if path is None else None,
        on_notice=memory.notices.append,
    )


def embedder_named(
    settings: IndexSettings, given: str | None = None
) -> tuple[str, Mapping[str, object] | None]:
    """The embedder's name and options, for ``load_embedder``: ``given`` (``open``'s),
    else ``MEMDIR_EMBEDDER``, else the manifest's ``[index] embedder`` (``settings``).
    The options are the manifest's embedder's: not for another one chosen here. What
    every opener chooses by, and the team server warms by (``IndexSettings()``)."""
    name = given or os.environ.get("MEMDIR_EMBEDDER") or settings.embedder
    return name, settings.embedder_options if name == settings.embedder else None


def choose_embedder(memory: Memory) -> Embedder | None:
    """The embedder given to ``open``, else ``MEMDIR_EMBEDDER``, else the manifest's;
    None (keyword search only, with a notice) when it cannot be loaded."""
    from memdir.index.embedders import EmbedderUnavailable, load_embedder

    choice = memory._embedder_choice
    if choice is not None and not isinstance(choice, str):
        return choice
    try:
        return load_embedder(*embedder_named(memory.manifest.index, choice))
    except EmbedderUnavailable as exc:
        memory.notices.append(Notice("index", f"keyword search only: {exc}"))
        return None


def embedder_problem(memory: Memory) -> str | None:
    """Why the folder has no embedder when one is configured (``memdir reindex`` fails
    with it rather than rebuild a keyword-only index as if all were well); None when
    it has one, or was told to have none."""
    from memdir.index.embedders import EmbedderUnavailable, load_embedder

    choice = memory._embedder_choice
    if memory.index.embedder is not None or (choice is not None and not isinstance(choice, str)):
        return None
    name, options = embedder_named(memory.manifest.index, choice)
    if name == "none":
        return None
    try:
        load_embedder(name, options)
    except EmbedderUnavailable as exc:
        return str(exc)
    return None


def warm_search(memory: Memory) -> None:
    """Make the search model ready beside a server's start (``memdir serve``, ``memdir
    ui``; MiniLM's int8 conversion, once per model cache): the first search finds it done,
    or waits under the embedder's lock for the rest of it, instead of paying all of it."""
    from memdir.index.embedders import prepare_in_background

    said = len(memory.notices)
    embedder = choose_embedder(memory)
    del memory.notices[said:]  # a model that cannot load: the index says so when it opens
    prepare_in_background(embedder)


def follow_writes(memory: Memory, what: str, update: Callable[[Index], object]) -> None:
    """Run ``update`` on the index after files were written. The files are the truth:
    if the index cannot follow, say so and mark it stale, so the next scan catches up."""
    try:
        update(memory.index)
    except Exception as exc:
        memory.notices.append(Notice("index", f"could not index {what}: {exc}"))
        if "index" in memory.__dict__:
            memory.index.scanned_at = None


def fresh_index(memory: Memory) -> Index:
    """The index, rescanned first if the last scan is older than ``[index] rescan_seconds``."""
    index = memory.index
    interval = memory.manifest.index.rescan_seconds
    if index.scanned_at is None or time.monotonic() - index.scanned_at >= interval:
        try:
            memory.scan()
        except (StorageError, sqlite3.OperationalError) as exc:
            if isinstance(exc, sqlite3.OperationalError) and not disk_refused(exc):
                raise
            # a full or read-only disk: answer from the index as it is, and say so
            memory.notices.append(
                Notice("index", f"searching the index as it was: it could not be updated ({exc})")
            )
            index.scanned_at = time.monotonic()
    return index


def search(
    memory: Memory,
    query: str,
    k: int,
    mode: str,
    layers: Sequence[str] | None,
    kinds: Sequence[str] | None,
    tags: Sequence[str] | None,
    since: datetime | str | None,
    until: datetime | str | None,
) -> Hits:
    """``Memory.search``: the arguments checked, then the search over a fresh index."""
    from memdir.index.search import Filters
    from memdir.index.search import search as run_search
    from memdir.tiers import MODE_TIERS

    if mode not in MODE_TIERS:
        raise ValueError(f"mode must be one of {', '.join(MODE_TIERS)}, not {mode!r}")
    if k < 1:
        raise ValueError("k must be at least 1")
    k = min(k, HITS_MAX)  # more asks for every hit; SQLite's LIMIT takes 64 bits at most
    unknown = [name for name in layers or () if name not in memory.manifest.layers]
    if unknown:  # a misspelt layer would find nothing and look like an empty memory
        raise ValueError(
            f"no layer {', '.join(map(repr, unknown))} in memdir.toml; its layers "
            f"are: {', '.join(memory.manifest.layers)}"
        )
    from memdir.index.extract import ITEM_KINDS

    strange = [name for name in kinds or () if name not in ITEM_KINDS]
    if strange:  # (as a misspelt layer: it would find nothing and look like an empty memory)
        raise ValueError(
            f"no item kind {', '.join(map(repr, strange))}; the kinds are: "
            f"{', '.join(sorted(ITEM_KINDS))}"
        )
    start = moment_argument(since, "since")
    end = moment_argument(until, "until", whole_day=True)  # "on or before this day"
    check_window(start, end)
    filters = Filters(
        mode=mode,
        layers=tuple(layers or ()),
        kinds=tuple(kinds or ()),
        tags=tuple(tags or ()),
        since=start,
        until=end,
    )
    index = fresh_index(memory)
    return index.guard(  # a damaged index is rebuilt and the search run again
        lambda: run_search(
            index, query, filters, k=k, decay=memory.manifest.decay, now=memory.clock()
        )
    )


def creative(memory: Memory, n: int, seed: int | None) -> list[Hit]:
    """``Memory.creative``: ``n`` cold or archived items drawn at random."""
    from memdir.index.search import creative as run_creative

    if n < 1:
        raise ValueError("n must be at least 1")
    index = fresh_index(memory)
    return index.guard(
        lambda: run_creative(
            index, n, decay=memory.manifest.decay, now=memory.clock(), rng=random.Random(seed)
        )
    )
