"""The vectors of recent queries, kept so that asking again does not run the model again.

A query's embedding is most of a search's time: MiniLM on one core takes 12 ms for a
few words and 30 ms for a chatty 50-token message (bench/RESULTS.md, issue 16 phase
5), and an embedding server costs a round trip. Agents ask the same thing again: a
context rebuilt each turn for the same task, a tool call repeating what the context
already searched, a heartbeat's fixed questions. The last ``SIZE`` queries' vectors
are kept per index, keyed by the embedder (the object and its id, so a swapped or
reconfigured model never answers with another's vector) and the query's exact text.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from memdir.index.embedders import Embedder, Vectors

SIZE = 256
"""queries kept per index: a vector is 1.5 kB (384 float32), so at most ~400 kB"""


class QueryVectors:
    """A least-recently-used map from (embedder, query text) to the query's vector."""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._kept: OrderedDict[tuple[int, str, str], Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, embedder: Embedder, query: str, embed: Callable[[], Vectors]) -> Vectors:
        """The vector of ``query`` under ``embedder``: kept, or ``embed()``'s, then kept.
        The vector is read-only: it is shared by every search asking the same."""
        key = (id(embedder), embedder.id, query)
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return found
        vector = embed()  # outside the lock: another query need not wait for this one
        vector.flags.writeable = False
        with self._lock:
            self._kept[key] = vector
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return vector

    def __len__(self) -> int:
        return len(self._kept)
