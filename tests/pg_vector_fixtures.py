"""What the PostgreSQL vector-cache tests share (registered in conftest.py): a fresh
cache (``pytestmark = pytest.mark.usefixtures("fresh_vector_cache")``: nothing held at
the start, every agent held whatever its size, as the tests' agents are small and
``MIN_ITEMS``'s own tests set it), the hashing embedder, and a journal written
through the index."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import memdir
from memdir.index.embedders import Embedder, load_embedder
from memdir.storage.postgres import vector_cache
from memdir.storage.postgres.index import PgIndex, index_text

PATH = "journal/2026-11-29.md"


@pytest.fixture
def fresh_vector_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(vector_cache.ENV, raising=False)
    monkeypatch.setenv(vector_cache.MIN_ITEMS_ENV, "0")
    vector_cache.REGISTRY.clear()
    yield
    vector_cache.REGISTRY.clear()


@pytest.fixture
def embedder() -> Embedder:
    found = load_embedder("hashing")
    assert found is not None
    return found


def write_journal(memory: memdir.Memory, pg: PgIndex, text: str, path: str = PATH) -> None:
    """``text`` as the journal file ``path``, indexed through ``pg``."""
    layer = memory.manifest.layers["journal"]
    index_text(pg, path, text, "journal", layer, mtime_ns=1, size=len(text))
