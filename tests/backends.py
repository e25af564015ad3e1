"""A ``memory`` fixture over both storage backends: ``local`` (the folder on disk, as
conftest's) and ``postgres`` (the same starter folder pushed into this test's schema of
a real PostgreSQL, then opened with ``open_agent``: files, index rows and history all
in the database). A test module imports ``backend`` and ``memory`` from here to run
its tests on both; tests of other modules imported into it run there on both too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import memdir
from memdir.config import MANIFEST_NAME, load_manifest
from memdir.storage.postgres.db import Database, close_shared
from memdir.storage.transfer import push
from memdir.testing import FakeClock


@pytest.fixture(params=["local", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def memory(
    backend: str, folder: Path, clock: FakeClock, request: pytest.FixtureRequest
) -> Iterator[memdir.Memory]:
    """The starter folder opened with a fake clock and the hashing embedder, on disk or
    in PostgreSQL."""
    if backend == "local":
        with memdir.open(folder, clock=clock, embedder="hashing") as opened:
            yield opened
        return
    url: str = request.getfixturevalue("pg_url")
    schema: str = request.getfixturevalue("pg_schema")
    agent = load_manifest(folder / MANIFEST_NAME).agent
    push(url, agent, folder, schema=schema)
    db = Database(url, schema=schema)
    try:
        with memdir.open_agent(url, agent, clock=clock, embedder="hashing", db=db) as opened:
            yield opened
    finally:
        db.close()
        close_shared()


def open_again(memory: memdir.Memory, clock: FakeClock | None = None) -> memdir.Memory:
    """Another ``Memory`` over the same folder (another process, or host, would open)."""
    if memory.backend == "local":
        return memdir.open(memory.root, clock=clock or memory.clock, embedder="hashing")
    storage = memory.storage
    db: Database = storage.db  # type: ignore[attr-defined]
    agent: str = storage.agent  # type: ignore[attr-defined]
    return memdir.open_agent(db.url, agent, clock=clock or memory.clock, embedder="hashing", db=db)
