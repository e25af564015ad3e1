"""An agent's vectors kept in memory by the process that searches it, on PostgreSQL.

Semantic search on disk scans a matrix in memory (``index.vectors.VectorCache``);
here the same ``VectorCache`` is kept per process for each agent and embedder, in place
of pgvector's cosine over every item in SQL at every search (``PgIndex._semantic_sql``,
still the path when the cache is off, too small for the agent, or a filter leaves too
few of the matrix's best):

- Kept in step by ``item_versions`` and ``item_log`` (migration ``006``): each write
  transaction that inserts, deletes or re-embeds items with vectors bumps their
  agent's version and logs their ids at it before it commits (``item_log``). A search
  sends ``CHECK_SQL`` (the version, and the current vector of each item logged since
  the one held: one statement, one snapshot) with its keyword statements; a held matrix
  older than the log reaches, or none, is loaded whole (``load_sql``).
- The scope (tiers, dates, kinds, tags, until) is applied as on disk, in SQL over the
  matrix's best: the ``depth`` best for a scope with no filter, else the ``4 x depth``
  best checked by ``PgIndex._allowed_sql`` (sent in that same pipeline, on the
  matrix as held: if the version moved, both are redone), and if fewer than ``depth``
  pass while more were above the floor, that scope goes to pgvector's statement.
- The rows are normalised as they arrive and so is the query: the dot product is
  pgvector's cosine (``<=>``), up to float32 rounding.
- Only for agents of ``MIN_ITEMS`` items or more (``MEMDIR_PG_VECTOR_CACHE_ITEMS``):
  below that pgvector's statement over the agent's rows is the faster. The count is
  ``index_stats``' (``SIZE_SQL``), read in a search's pipeline when this process has
  none younger than ``RECHECK_SECONDS``: a smaller agent's search is the SQL path's
  statements, plus that one statement once a minute.
- Bounded: ``MEMDIR_PG_VECTOR_CACHE`` megabytes across every agent of the process
  (or ``k``/``g``; default ``DEFAULT_MB``), the least recently searched dropped
  first; ``off`` (or 0) keeps none. An agent bigger than the bound alone is searched
  in SQL, and looked at again after ``RECHECK_SECONDS``.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from memdir.index.embedders import Vectors
from memdir.index.vectors import VectorCache
from memdir.storage.postgres.item_log import KEEP as ITEM_LOG_KEEP

ENV = "MEMDIR_PG_VECTOR_CACHE"
"""how much of PostgreSQL's agents' vectors a process keeps in memory: megabytes, or a
number with ``k``, ``m`` or ``g``; ``off`` (or 0): none"""
DEFAULT_MB = 256
MIN_ITEMS_ENV = "MEMDIR_PG_VECTOR_CACHE_ITEMS"
"""the fewest items an agent has for its vectors to be held (a whole number; 0: every
agent); below it pgvector's statement is the faster (bench/RESULTS.md)"""
MIN_ITEMS = 5000
"""``MIN_ITEMS_ENV``'s default: the crossover measured (bench/pg_vector_cache.py)"""
RECHECK_SECONDS = 60.0
"""how long an agent's item count (or its being over the bound) is taken as known"""
WIDEN = 4
"""a filtered scope checks this many times ``depth`` of the matrix's best (as on disk)"""

Key = tuple[str, str, str, str, int]
"""(database URL, schema, agent, model, dimension)"""

# the version, then each item logged since the version held, with its vector now (NULL:
# deleted, another model's, or another size); nothing logged when the log no longer
# reaches back to it (then the matrix is loaded whole)
CHECK_SQL = (
    "WITH v AS (SELECT coalesce((SELECT version FROM item_versions WHERE agent = %(agent)s), "
    "0) AS version) "
    "SELECT v.version, NULL::bigint, NULL::bytea FROM v UNION ALL "
    "SELECT NULL, l.item_id, substring(vector_send(i.embedding) FROM 5) FROM v CROSS JOIN "
    "(SELECT DISTINCT item_id FROM item_log WHERE agent = %(agent)s AND version > %(held)s) "
    "AS l LEFT JOIN items AS i ON i.id = l.item_id AND i.agent = %(agent)s "
    "AND i.model = %(model)s AND vector_dims(i.embedding) = %(dim)s "
    f"WHERE %(held)s >= 0 AND v.version - %(held)s < {ITEM_LOG_KEEP}"
)
LOAD_SQL = (
    "SELECT coalesce((SELECT version FROM item_versions WHERE agent = %(agent)s), 0), "
    "NULL::bigint, NULL::bytea UNION ALL "
    "SELECT NULL, i.id, substring(vector_send(i.embedding) FROM 5) FROM items AS i "
    "WHERE i.agent = %(agent)s AND i.model = %(model)s AND vector_dims(i.embedding) = %(dim)s"
)
SIZE_SQL = "SELECT coalesce((SELECT items FROM index_stats WHERE agent = %s), 0)"


def limit_bytes(setting: str | None = None) -> int:
    """``MEMDIR_PG_VECTOR_CACHE`` read (or ``setting``): the bound in bytes, 0 for off."""
    text = (os.environ.get(ENV, "") if setting is None else setting).strip().lower()
    if text in ("off", "no", "false", "none"):
        return 0
    unit = {"k": 2**10, "m": 2**20, "g": 2**30}.get(text[-1:], 0)
    number = text[:-1] if unit else text
    if not number.isdigit():
        return DEFAULT_MB * 2**20  # unset, or unreadable: the default
    return int(number) * (unit or 2**20)


def min_items(setting: str | None = None) -> int:
    """``MEMDIR_PG_VECTOR_CACHE_ITEMS`` read (or ``setting``): unset or unreadable, the
    default ``MIN_ITEMS``."""
    text = (os.environ.get(MIN_ITEMS_ENV, "") if setting is None else setting).strip()
    return int(text) if text.isdigit() else MIN_ITEMS


def row_bytes(dim: int) -> int:
    return dim * 4 + 8 + 1  # the row, its id, its alive flag


@dataclass
class Held:
    """One agent's vectors from one model, and the ``item_versions`` version they are at
    (-1: none loaded yet)."""

    vectors: VectorCache
    version: int = -1
    lock: threading.Lock = field(default_factory=threading.Lock)

    def best(
        self, query: Vectors, depth: int, floor: float, filtered: list[bool]
    ) -> list[list[Pair]]:
        """The matrix's best for each scope: ``depth``, or ``WIDEN x depth`` for one to
        filter (one scan: the first is a prefix of the second)."""
        wanted = depth * WIDEN if any(filtered) else depth
        found = [pair for pair in self.vectors.top(query, wanted) if pair[1] >= floor]
        return [found if f else found[:depth] for f in filtered]

    def apply(self, rows: list[tuple[object, ...]], *, whole: bool) -> bool:
        """A ``CHECK_SQL`` (or, ``whole``, ``LOAD_SQL``) answer applied; False when the
        check could not catch up (then load whole)."""
        version = int(rows[0][0])  # type: ignore[call-overload]
        changed = [(int(r[1]), r[2]) for r in rows[1:]]  # type: ignore[call-overload]
        if whole:
            ids, block = _block([(i, b) for i, b in changed if b is not None], self.vectors.dim)
            self.vectors.load(ids, block)
            self.version = version
            return True
        if version == self.version and self.version >= 0:
            return True
        if self.version < 0 or not 0 < version - self.version < ITEM_LOG_KEEP:
            return False  # none held, past the log's reach, or another history
        ids, block = _block([(i, b) for i, b in changed if b is not None], self.vectors.dim)
        kept = set(ids)
        gone = [item_id for item_id, _ in changed if item_id not in kept]
        self.vectors.update(gone, ids, block)
        self.version = version
        return True


Pair = tuple[int, float]


def _block(rows: list[tuple[int, object]], dim: int) -> tuple[list[int], Vectors]:
    """Item ids and their rows, normalised (``vector_send``'s big-endian floats). A zero
    vector is left out: its cosine in pgvector is NaN, which passes no floor."""
    if not rows:
        return [], np.zeros((0, dim), dtype=np.float32)
    data = b"".join(bytes(blob) for _, blob in rows)  # type: ignore[call-overload]
    block = np.frombuffer(data, dtype=">f4").astype(np.float32).reshape(len(rows), dim)
    norms = np.linalg.norm(block, axis=1)
    some = norms > 0
    block = block[some] / norms[some, None]
    return [item_id for (item_id, _), ok in zip(rows, some, strict=True) if ok], block


def normalised(vector: Vectors) -> Vectors:
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(query))
    return query / norm if norm > 0 else query


class Registry:
    """The process's held vectors, least recently searched first, within the bound."""

    def __init__(self) -> None:
        self._held: OrderedDict[Key, Held] = OrderedDict()
        self._too_big: dict[Key, float] = {}  # when an agent was found over the bound
        self._sizes: dict[Key, tuple[int, float]] = {}  # agents' item counts, when read
        self._lock = threading.Lock()

    def held(self, key: Key) -> tuple[Held | None, bool]:
        """The agent's entry (made empty if new), or None: the cache is off, the agent
        has fewer than ``min_items`` items (or its count is not known yet), or it was
        over the bound within ``RECHECK_SECONDS``; and whether its item count is to be
        read (``SIZE_SQL``, in the search's pipeline: not known, or older than
        ``RECHECK_SECONDS``), then told to ``sized``."""
        if limit_bytes() == 0:  # (what was held stays until evicted or ``clear``)
            return None, False
        least = min_items()
        with self._lock:
            now = time.monotonic()
            known = self._sizes.get(key)
            ask = least > 0 and (known is None or now - known[1] >= RECHECK_SECONDS)
            found = self._held.get(key)
            if least > 0 and known is not None and known[0] < least:
                self._held.pop(key, None)  # (held while the setting was lower)
                return None, ask
            if found is not None:
                self._held.move_to_end(key)
                return found, ask
            if least > 0 and known is None:
                return None, ask
            since = self._too_big.get(key)
            if since is not None and now - since < RECHECK_SECONDS:
                return None, False
            self._too_big.pop(key, None)
            entry = Held(VectorCache(key[3], key[4]))
            self._held[key] = entry
            return entry, ask

    def sized(self, key: Key, items: int) -> None:
        """The agent has ``items`` items (``index_stats``): below ``min_items`` what is
        held of it is dropped, and its next searches until ``RECHECK_SECONDS`` are SQL."""
        with self._lock:
            self._sizes[key] = (items, time.monotonic())
            if items < min_items():
                self._held.pop(key, None)

    def fits(self, key: Key, rows: int) -> bool:
        """Whether ``rows`` of this key's size fit the bound at all; else noted."""
        if rows * row_bytes(key[4]) <= limit_bytes():
            return True
        self.forget(key, too_big=True)
        return False

    def settle(self, key: Key) -> bool:
        """After a load or catch-up: drop the least recently searched past the bound;
        False when this key alone is past it (it is dropped too)."""
        limit = limit_bytes()
        with self._lock:
            total = sum(entry.vectors.nbytes for entry in self._held.values())
            for other in list(self._held):
                if total <= limit:
                    break
                if other != key:
                    total -= self._held.pop(other).vectors.nbytes
            if total <= limit:
                return True
        self.forget(key, too_big=True)
        return False

    def forget(self, key: Key, *, too_big: bool = False) -> None:
        with self._lock:
            self._held.pop(key, None)
            if too_big:
                self._too_big[key] = time.monotonic()

    def held_keys(self) -> list[Key]:
        """What is held, least recently searched first."""
        with self._lock:
            return list(self._held)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._too_big.clear()
            self._sizes.clear()


REGISTRY = Registry()
"""this process's (a forked child's copy is checked by version like any other)"""
