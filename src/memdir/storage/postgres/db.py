"""PostgreSQL plumbing: connections with the schema up to date, and the folder lock.

- ``Database(url, schema=...)``: every table lives in one schema (``memdir`` unless
  told), found through each connection's ``search_path`` (then ``public``, where the
  ``vector`` extension usually is). Opening one applies the migrations not yet
  recorded (``memdir.storage.postgres.schema``), each in its own transaction under an
  advisory lock, so two processes (or hosts) opening a fresh database apply each once.
- Connections are per thread (psycopg's are not to be shared between threads) and per
  process (a forked child opens its own), in autocommit: reads see what is committed.
- ``FolderLock``: one writer per folder across threads, processes and hosts. Taking it
  opens a transaction on the thread's writing connection and takes
  ``pg_advisory_xact_lock`` on a hash of (schema, agent, folder); everything written
  under it commits at the outermost release, together, or not at all. A nested
  acquire is a savepoint: an exception out of an inner block rolls back only what it
  wrote, as on disk a refused write leaves its file as it was. Waiting longer than
  ``timeout`` raises ``LockTimeout``; a server killed mid-write leaves the previous
  version (the transaction never committed).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from memdir.errors import LockTimeout, ReadOnlyFolder

Connection = psycopg.Connection[Any]
Migration = Callable[[Connection, str], None]
LOCK_TIMEOUT_SECONDS = 30.0
SCHEMA_RE = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def advisory_key(*parts: str) -> int:
    """A signed 64-bit key for ``pg_advisory_*lock`` from ``parts`` (sha256, first 8 bytes)."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class Database:
    """One PostgreSQL database (and schema) holding memory folders."""

    def __init__(self, url: str, *, schema: str = "memdir") -> None:
        from memdir.storage.postgres.schema import MIGRATIONS

        if not SCHEMA_RE.fullmatch(schema):
            raise ValueError(f"schema {schema!r}: use lower-case letters, digits and _")
        self.url = url
        self.schema = schema
        self._local = threading.local()
        self._all: list[Connection] = []
        self._guard = threading.Lock()
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn, schema, MIGRATIONS)

    def connect(self) -> Connection:
        """A new connection of its own (autocommit, this schema first, vectors adapted)."""
        conn = psycopg.connect(self.url, autocommit=True)
        conn.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(self.schema)))
        register_vector(conn)
        with self._guard:
            self._all.append(conn)
        return conn

    def _mine(self, name: str) -> Connection:
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            local.__dict__.clear()
            local.pid = os.getpid()
        conn: Connection | None = getattr(local, name, None)
        if conn is None or conn.closed:
            conn = self.connect()
            setattr(local, name, conn)
        return conn

    def reader(self) -> Connection:
        """This thread's connection for reads outside any write."""
        return self._mine("reader")

    def writer(self) -> Connection:
        """This thread's connection for the transactions ``FolderLock`` opens."""
        return self._mine("writer")

    def close(self) -> None:
        with self._guard:
            conns, self._all = self._all, []
        for conn in conns:
            if not conn.closed:
                conn.close()

    def folder_lock(self, agent: str, folder: str = "") -> FolderLock:
        return FolderLock(self, agent, folder)


def migrate(conn: Connection, schema: str, migrations: list[tuple[str, Migration]]) -> list[str]:
    """Apply the migrations not yet recorded in ``<schema>.migrations``; their names."""
    key = advisory_key("memdir-migrations", schema)
    done: list[str] = []
    names = sql.Identifier(schema)
    for name, step in migrations:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(names))
            conn.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {}.migrations "
                    "(name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                ).format(names)
            )
            found = conn.execute(
                sql.SQL("SELECT 1 FROM {}.migrations WHERE name = %s").format(names), (name,)
            ).fetchone()
            if found is not None:
                continue
            conn.execute(sql.SQL("SET LOCAL search_path = {}, public").format(names))
            step(conn, schema)
            conn.execute(
                sql.SQL("INSERT INTO {}.migrations (name) VALUES (%s)").format(names), (name,)
            )
            done.append(name)
    return done


class FolderLock:
    """The write lock of one folder in the database (see the module)."""

    def __init__(
        self, db: Database, agent: str, folder: str = "", timeout: float = LOCK_TIMEOUT_SECONDS
    ) -> None:
        self.db = db
        self.agent = agent
        self.folder = folder
        self.key = advisory_key("memdir-folder", db.schema, agent, folder)
        self.timeout = timeout
        self.read_only: str | None = None
        """why this process may not write the folder (a read-only token), or None"""
        self._local = threading.local()

    def _stack(self) -> list[Any]:
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            local.pid = os.getpid()
            local.stack = []
            local.after = []
            local.before = {}
        stack: list[Any] = local.stack
        return stack

    def before_commit(self, name: str, run: Callable[[Connection], None]) -> bool:
        """Call ``run`` with the lock's connection just before its outermost transaction
        commits (not if it rolls back), once per ``name`` however often asked: what is
        written last, so its row locks last only to the commit (the agent's version the
        vectors in memory are checked by, ``item_log``). If it raises, the transaction
        rolls back and the exception goes on. True if ``name`` is new to this
        transaction."""
        if not self._stack():
            raise RuntimeError(f"the lock of {self.agent!r} is not held by this thread")
        before: dict[str, Callable[[Connection], None]] = self._local.before
        if name in before:
            return False
        before[name] = run
        return True

    def after_commit(self, statement: str) -> None:
        """Run ``statement`` on this thread's writer once the lock's outermost transaction
        has committed (not if it rolls back), each statement once however often asked:
        what must not hold a table lock until the commit, such as ``ANALYZE``, whose
        table lock a second writer's ``ANALYZE`` would wait for until that commit."""
        if not self._stack():
            raise RuntimeError(f"the lock of {self.agent!r} is not held by this thread")
        after: list[str] = self._local.after
        if statement not in after:
            after.append(statement)

    @property
    def is_held(self) -> bool:
        return bool(self._stack())

    def connection(self) -> Connection:
        """The connection of the transaction this thread holds the lock in."""
        if not self._stack():
            raise RuntimeError(f"the lock of {self.agent!r} is not held by this thread")
        return self.db.writer()

    def writable(self) -> str | None:
        """None if this process may write the folder, else why not."""
        return self.read_only

    def acquire(self) -> None:
        if self.read_only is not None:
            raise ReadOnlyFolder(self.read_only)
        stack = self._stack()
        conn = self.db.writer()
        transaction = conn.transaction()
        transaction.__enter__()
        stack.append(transaction)
        if len(stack) > 1:
            return
        try:
            conn.execute(f"SET LOCAL lock_timeout = '{int(self.timeout * 1000)}ms'")
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (self.key,))
        except psycopg.errors.LockNotAvailable as exc:
            self._leave(exc)
            raise LockTimeout(
                f"another writer held the folder {self.agent!r} for over {self.timeout:g}s"
            ) from exc
        except BaseException as exc:
            self._leave(exc)
            raise

    def _leave(self, exc: BaseException | None) -> None:
        stack = self._stack()
        transaction = stack.pop()
        outermost = not stack
        after: list[str] = self._local.after
        before: dict[str, Callable[[Connection], None]] = self._local.before
        calls = list(before.values()) if outermost else []
        if outermost:
            before.clear()
        try:
            if exc is None and calls:
                _last_then_commit(self.db.writer(), transaction, calls)
            elif exc is None:
                transaction.__exit__(None, None, None)
            else:
                transaction.__exit__(type(exc), exc, exc.__traceback__)
        except BaseException:
            if outermost:
                after.clear()
            raise
        if outermost:
            statements, after[:] = list(after), []
            if exc is None:
                _run_after(self.db.writer(), statements)

    def release(self) -> None:
        self._leave(None)

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._leave(exc)


def _last_then_commit(
    conn: Connection, transaction: Any, calls: list[Callable[[Connection], None]]
) -> None:
    """``FolderLock.before_commit``'s ``calls``, then the commit, in one pipeline (one
    wait, as the commit alone). If one fails, the transaction rolls back."""
    try:
        with conn.pipeline():
            try:
                for run in calls:
                    run(conn)
            except BaseException as exc:
                transaction.__exit__(type(exc), exc, exc.__traceback__)
                raise
            transaction.__exit__(None, None, None)
    except BaseException:
        # a statement that failed in the pipeline leaves the transaction aborted, its
        # commit never run
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.rollback()
        raise


def _run_after(conn: Connection, statements: list[str]) -> None:
    """``statements`` (``FolderLock.after_commit``) on ``conn``, outside any transaction.
    What they keep up (planner statistics) is never the truth: one that fails is left
    for autovacuum, and the committed write it followed stands."""
    for statement in statements:
        with contextlib.suppress(psycopg.Error):
            conn.execute(statement)


class Folder:
    """One agent's folder in the database: its lock and the connection to use now."""

    def __init__(self, db: Database, agent: str, folder: str = "") -> None:
        if not agent:
            raise ValueError("a folder in the database needs an agent id")
        self.db = db
        self.agent = agent
        self.lock = db.folder_lock(agent, folder)

    def conn(self) -> Connection:
        """The lock's transaction when this thread holds it (a re-read under the lock
        sees what this write wrote), else the thread's reading connection."""
        return self.lock.connection() if self.lock.is_held else self.db.reader()


_shared: dict[tuple[str, str], Database] = {}
_shared_guard = threading.Lock()


def shared_database(url: str, schema: str = "memdir") -> Database:
    """This process's ``Database`` for (``url``, ``schema``): migrated on first use, then
    shared by every folder opened from it (its connections are per thread)."""
    with _shared_guard:
        found = _shared.get((url, schema))
        if found is None:
            found = _shared[(url, schema)] = Database(url, schema=schema)
        return found


def close_shared() -> None:
    """Close every shared ``Database``; the next ``shared_database`` opens afresh."""
    with _shared_guard:
        found = list(_shared.values())
        _shared.clear()
    for db in found:
        db.close()
