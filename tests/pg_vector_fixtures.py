"""What the PostgreSQL vector-cache tests share (registered in conftest.py): a fresh
cache (``pytestmark = pytest.mark.usefixtures("fresh_vector_cache")``: nothing held at
the start, every agent held whatever its size, as the tests' agents are small and
``MIN_ITEMS``'s own tests set it), the hashing embedder, and a journal written
through the index; and how two searches' candidates are compared."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import memdir
from memdir.index.embedders import Embedder, load_embedder
from memdir.storage.postgres import vector_cache
from memdir.storage.postgres.index import PgIndex, index_text
from memdir.storage.seam import Pairs

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


def tied_blocks(pairs: Pairs) -> list[set[int]]:
    """The ids in runs of scores within float32 rounding of each other (the hashing
    embedder makes many texts score alike, which float32 in numpy and in pgvector round
    apart), but the last run, which the cut may split."""
    blocks: list[list[tuple[int, float]]] = []
    for item_id, score in pairs:
        if blocks and abs(blocks[-1][-1][1] - score) < 1e-5:
            blocks[-1].append((item_id, score))
        else:
            blocks.append([(item_id, score)])
    return [{i for i, _ in block} for block in blocks[:-1]]


def same_candidates(held: list[tuple[Pairs, Pairs]], sql: list[tuple[Pairs, Pairs]]) -> None:
    """The matrix's candidates are pgvector's (or another matrix's): the same keyword
    side, the same ids in the same order but within float32 rounding, the same scores
    to 1e-5."""
    for (kw_sql, sem_sql), (kw_held, sem_held) in zip(sql, held, strict=True):
        assert kw_held == kw_sql
        assert tied_blocks(sem_held) == tied_blocks(sem_sql)
        for (_, mine), (_, theirs) in zip(sem_held, sem_sql, strict=True):
            assert mine == pytest.approx(theirs, abs=1e-5)
