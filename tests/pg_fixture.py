"""PostgreSQL for the tests, started for real: one server for the whole session.

``MEMDIR_TEST_DATABASE_URL`` names a server to use instead (it needs the ``vector``
extension available). Otherwise ``pgserver`` (PostgreSQL 16 with pgvector, from PyPI:
the ``dev`` extra installs it) starts one in a temporary folder the first time a test
asks for it, and stops and deletes it at the end. Run as root, pgserver runs the
server as a system user of its own (``pgserver``, created with ``useradd``), so its
folder is made outside pytest's private (0700) temporary root. Each test gets a schema
of its own, dropped after it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memdir.storage.postgres.db import Database


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """The URL of the session's PostgreSQL (with the ``vector`` extension created)."""
    url = os.environ.get("MEMDIR_TEST_DATABASE_URL")
    server = None
    base = None
    if not url:
        with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR in a container
            warnings.simplefilter("ignore")
            import pgserver

            base = Path(tempfile.mkdtemp(prefix="memdir-pg-"))
            server = pgserver.get_server(base / "pgdata", cleanup_mode="delete")
        url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    try:
        yield url
    finally:
        if server is not None:
            server.cleanup()
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_schema(pg_url: str) -> Iterator[str]:
    """A schema of this test's own, dropped (with everything in it) after the test."""
    schema = f"t_{secrets.token_hex(6)}"
    try:
        yield schema
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture
def pg_db(pg_url: str, pg_schema: str) -> Iterator[Database]:
    """The memdir schema migrated into this test's schema."""
    db = Database(pg_url, schema=pg_schema)
    try:
        yield db
    finally:
        db.close()


@pytest.fixture(params=["sqlite", "postgres"])
def index_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test on both index backends: on ``postgres`` every ``Memory`` the test
    opens keeps its index rows in this test's schema (``postgres_index``: the real
    ``Index`` and search over ``PgIndex``), one agent per folder (two opens of one
    folder share its rows). Files and history stay on disk (the seam's other parts)."""
    if request.param == "postgres":
        import functools
        import hashlib

        from memdir.memory import Memory
        from memdir.storage.postgres.index import postgres_index

        db: Database = request.getfixturevalue("pg_db")

        def index(self: Memory) -> object:
            agent = hashlib.sha256(str(self.root.resolve()).encode()).hexdigest()[:16]
            return postgres_index(
                self.root, self.manifest, db, embedder=self._embedder(), clock=self.clock,
                agent=agent, lock=self.lock, on_notice=self.notices.append,
            )  # fmt: skip

        prop = functools.cached_property(index)
        prop.__set_name__(Memory, "index")
        monkeypatch.setattr(Memory, "index", prop)
    return str(request.param)
