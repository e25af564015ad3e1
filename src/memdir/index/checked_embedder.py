"""A third party's embedder, its every answer checked before the index stores it.

``load_embedder`` wraps an embedder another package's entry point made (memdir's own
are trusted). ``embed`` (and ``embed_queries``) must give one row of ``dim`` finite
numbers per text: a float32 array as the ``Embedder`` Protocol says, or anything
``numpy.asarray`` makes one of (a list of lists of floats, as many clients return);
the rows are L2-normalised here. Anything else, or an exception from the plugin, is an
``EmbedderUnavailable`` naming it: search goes on by keyword with that notice, and
``memdir reindex`` fails with it, as for an embedding server that is down, never a
traceback from the vector store. Every other attribute (``id``, ``dim``, ``degraded``,
``duplicate_threshold``, the plugin's own) is the plugin's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memdir.index.embedders import Embedder, EmbedderUnavailable, normalise

if TYPE_CHECKING:
    from memdir.index.embedders import Vectors


class CheckedEmbedder:
    def __init__(self, embedder: Embedder, plugin: str) -> None:
        self.embedder = embedder
        self.plugin = plugin

    @property
    def id(self) -> str:
        return self.embedder.id

    @property
    def dim(self) -> int:
        return self.embedder.dim

    def __getattr__(self, name: str) -> Any:  # the plugin's own attributes
        if name in ("embedder", "plugin"):  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.embedder, name)

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._checked(self.embedder.embed, texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        own = getattr(self.embedder, "embed_queries", None)
        return self._checked(own if callable(own) else self.embedder.embed, texts)

    def _checked(self, embed: Callable[[Sequence[str]], Any], texts: Sequence[str]) -> Vectors:
        import numpy as np

        try:
            given = embed(texts)
        except EmbedderUnavailable:
            raise
        except Exception as exc:  # the plugin's own failure: name it
            raise EmbedderUnavailable(f"the embedder {self.plugin!r} failed: {exc}") from exc
        expected = f"{len(texts)} vectors of {self.dim} numbers"
        try:
            matrix = np.asarray(given, dtype=np.float32)
        except (TypeError, ValueError):
            matrix = None
        if matrix is None or matrix.shape != (len(texts), self.dim):
            shape = "" if matrix is None else f" of shape {matrix.shape}"
            raise EmbedderUnavailable(
                f"the embedder {self.plugin!r} gave {type(given).__name__}{shape} for "
                f"{len(texts)} texts; expected {expected}"
            )
        if not np.isfinite(matrix).all():
            raise EmbedderUnavailable(
                f"the embedder {self.plugin!r} gave a vector holding NaN or infinity"
            )
        return normalise(matrix)
