"""Fakes for tests, shipped with the library so users can test their agents too."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from memdir.index.embedders import HashingEmbedder, Vectors

__all__ = ["ConceptEmbedder", "FakeClock", "HashingEmbedder"]


class FakeClock:
    """A clock that stands still until moved: pass it as ``memdir.open(path, clock=...)``."""

    def __init__(self, start: datetime | str = "2026-11-30T10:00:00Z") -> None:
        if isinstance(start, str):
            start = datetime.fromisoformat(start.replace("Z", "+00:00"))
        self.now = start if start.tzinfo else start.replace(tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        """Move forward by ``timedelta(**delta)``, e.g. ``clock.advance(days=8)``."""
        self.now += timedelta(**delta)
        return self.now


class ConceptEmbedder:
    """An embedder whose meaning you write down: each concept is a list of words.

    A text's vector has weight 1 on each concept one of whose words it contains
    (case-insensitive, whole words), then is scaled to unit length; a text with
    none is the zero vector. ``ConceptEmbedder({"cat": ["cat", "feline"]})``
    makes "feline" and "cat" the same to semantic search and unlike anything else,
    so tests can tell semantic hits from keyword hits.
    """

    def __init__(self, concepts: dict[str, list[str]], *, version: str = "1") -> None:
        self.concepts = {name: {word.lower() for word in words} for name, words in concepts.items()}
        self.names = list(self.concepts)
        self.version = version
        self.similarity_floor = 0.5

    @property
    def id(self) -> str:
        return f"concepts-{self.version}-{len(self.names)}"

    @property
    def dim(self) -> int:
        return len(self.names)

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = set(re.findall(r"\w+", text.lower()))
            for column, name in enumerate(self.names):
                if words & self.concepts[name]:
                    out[row, column] = 1.0
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
        return out
