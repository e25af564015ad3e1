"""The vectors a search made but could not store, kept for the next search to store.

A search stores the vectors it makes outside the folder lock, passing over the rows a
locked write holds (``bulk._STORE_FREE``, ``FOR UPDATE SKIP LOCKED``: ``item_log`` has
why). While that write lasts (a push holding row locks), each search would list those
texts again and embed them again. ``Unstored`` keeps what was made and not stored, by
(embedder id, ``vector_key``), so the next search stores it without the embedder, and a
write that embeds its new rows' texts (a bulk write with an embedder: ``writes._flush``)
inserts them with the vectors kept instead of embedding those texts again.

- The key names the text embedded (``Item.vector_key``: a hash of heading, metadata and
  body) and the model, so a vector kept is right for any row that has that key: a row
  whose text changed has another key, and its old entry is never given to it.
- An entry is dropped when its text is stored (``take`` hands it out, ``keep`` puts
  back only what the store passed over; a write takes what it inserts rows with) and,
  past ``UNSTORED_BYTES``, oldest first. A bulk block that fails puts back what it took
  (its rows are rolled back with them: ``IndexWrites.bulk``); a commit that fails after
  the block ended has used its entries up, and the next search embeds those texts again
  (a cost, never a wrong vector).
- One per ``IndexWrites`` (an agent's index in this process); a lock of its own, as
  two threads may search one agent.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memdir.index.embedders import Vectors

UNSTORED_BYTES = 8 << 20
"""the vectors kept at most, in bytes (5,000 of MiniLM's 384 float32s)"""


class Unstored:
    """Vectors made and not yet stored, by (model, vector key), oldest first."""

    def __init__(self, limit: int = UNSTORED_BYTES) -> None:
        self.limit = limit
        self._held: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._held)

    def take(self, model: str, keys: Iterable[str]) -> dict[str, Vectors]:
        """The vectors kept for those of ``keys`` that have one, taken out."""
        found: dict[str, Vectors] = {}
        with self._lock:
            for key in keys:
                vector = self._held.pop((model, key), None)
                if vector is not None:
                    self._bytes -= vector.nbytes
                    found[key] = vector
        return found

    def keep(self, model: str, vectors: Mapping[str, Vectors]) -> None:
        """Keep ``vectors`` (by key) for the next search; the oldest go past the limit."""
        with self._lock:
            for key, row in vectors.items():
                vector = row.copy()  # (a row of the batch's matrix would keep all of it)
                old = self._held.pop((model, key), None)
                if old is not None:
                    self._bytes -= old.nbytes
                self._held[(model, key)] = vector
                self._bytes += vector.nbytes
            while self._bytes > self.limit and self._held:
                _, dropped = self._held.popitem(last=False)
                self._bytes -= dropped.nbytes

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._bytes = 0
