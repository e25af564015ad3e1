"""A query asked again is not embedded again (memdir.index.query_vectors)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import memdir
from memdir.index.embedders import HashingEmbedder, Vectors
from memdir.index.query_vectors import QueryVectors
from memdir.testing import FakeClock


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the texts it is given one call at a time."""

    def __init__(self, name: str = "hashing-counted") -> None:
        super().__init__(dim=64)
        self.name = name
        self.asked: list[str] = []

    @property
    def id(self) -> str:
        return self.name

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.asked += list(texts)
        return super().embed(texts)


def test_a_repeated_query_is_embedded_once_and_finds_the_same(
    folder: Path, clock: FakeClock
) -> None:
    embedder = CountingEmbedder()
    memory = memdir.open(folder, clock=clock, embedder=embedder)
    memory.knowledge.save("The deploy window is Tuesday morning")
    memory.knowledge.save("Invoices are sent on the first of the month")
    first = [(h.anchor, h.score) for h in memory.search("when is the deploy window")]
    embedder.asked.clear()
    again = [(h.anchor, h.score) for h in memory.search("when is the deploy window")]
    assert again == first and first
    assert "when is the deploy window" not in embedder.asked
    memory.search("when are invoices sent")
    assert "when are invoices sent" in embedder.asked  # another text is embedded


def test_a_write_between_two_searches_is_still_found(folder: Path, clock: FakeClock) -> None:
    embedder = CountingEmbedder()
    memory = memdir.open(folder, clock=clock, embedder=embedder)
    memory.knowledge.save("The staging database lives in Frankfurt")
    assert any(h.semantic is not None for h in memory.search("staging database"))
    saved = memory.knowledge.save("The staging database moved to Dublin")
    found = {h.anchor: h for h in memory.search("staging database")}
    assert saved.key in found and found[saved.key].semantic is not None  # its vector made


def test_another_embedder_never_answers_with_the_first_ones_vector() -> None:
    kept = QueryVectors()
    one, other = CountingEmbedder("a"), CountingEmbedder("b")
    made = kept.get(one, "same words", lambda: one.embed(["same words"])[0])
    kept.get(other, "same words", lambda: np.zeros(64, dtype=np.float32))
    assert kept.get(one, "same words", lambda: pytest.fail("embedded again")) is made
    assert not kept.get(other, "same words", lambda: pytest.fail("embedded again")).any()


def test_the_least_recently_used_query_goes_first_and_vectors_are_read_only() -> None:
    kept = QueryVectors(size=2)
    embedder = CountingEmbedder()

    def vector_of(text: str) -> Vectors:
        return kept.get(embedder, text, lambda: embedder.embed([text])[0])

    vector_of("a")
    vector_of("b")
    vector_of("a")  # "a" used again: "b" is now the oldest
    vector_of("c")
    assert len(kept) == 2
    embedder.asked.clear()
    vector_of("a")
    vector_of("b")
    assert embedder.asked == ["b"]
    with pytest.raises(ValueError):
        vector_of("a")[0] = 1.0
