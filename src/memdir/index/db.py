"""The index database, ``.memdir/index.db``: schema and its migrations.

Derived from the files and safe to delete: ``memdir reindex`` (or the next
open) rebuilds it. A damaged file is moved aside to ``index.db.corrupt-<UTC
stamp>`` and rebuilt by a full scan where it is found (``Index.guard``), with a
notice; ``memdir doctor`` runs ``PRAGMA quick_check`` on it. Tables:

- ``files``: one row per indexed file with the mtime, size and hash seen last.
- ``items``: one row per searchable item (path, anchor, kind, layer, title,
  body, metadata words, tags, dates, tier, relevance, content hash and the key
  of its vector).
- ``places``: where each item sits in its file (ordinal, line range), by item id:
  narrow rows of their own, so a write that moves many items (archiving the
  oldest of 500 observations moves the other 499) rewrites little.
- ``items_fts``: FTS5 over title, body, tags and metadata words, Porter
  stemming over unicode61, kept in step with ``items`` by triggers.
- ``vectors``: one vector per (embedded text, embedder id). Items share a
  vector when their text is equal; a new embedder id simply has none yet.
- ``item_log``: item ids inserted and deleted, in order, so a process holding
  the vectors in memory can catch up without reloading them all.
- ``migrations``: the named, ordered schema steps applied, each in a transaction.
- ``meta``: the extractor version the rows were made by, and ``database_id``, a
  random id given to each new database, which derived copies (the vector matrix on
  disk, ``index.matrix``) name so that they never pass for another database's.

A full rebuild (``refilling``) sets the indexes and triggers on ``items`` aside
inside its transaction: the rows go in bare, each index is then built once by a
sort, FTS5 once by ``'rebuild'``, and the log takes one ``reset``. No other
connection ever sees the table without them (SQLite's DDL is transactional).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memdir import sqlite
from memdir.sqlite import Migration, run_script, transaction

__all__ = [
    "INSERT_FILE",
    "INSERT_ITEM",
    "INSERT_PLACE",
    "MIGRATIONS",
    "clear_items",
    "connect",
    "log_bounds",
    "refilling",
    "shrink_wal",
    "transaction",
]

ITEM_COLUMNS = (
    "id, path, anchor, kind, agent, title, heading, body, meta, tags, date, content_hash, "
    "vector_key, layer, tier, decay_from, relevance"
)
INSERT_ITEM = f"INSERT INTO items ({ITEM_COLUMNS}) VALUES ({', '.join('?' * 17)})"
INSERT_PLACE = "INSERT INTO places (id, ordinal, line_start, line_end) VALUES (?, ?, ?, ?)"
INSERT_FILE = (
    "INSERT INTO files (path, layer, store, mtime_ns, size, hash) VALUES (?, ?, ?, ?, ?, ?)"
)


# Kept apart: reindex drops it while it empties the tables (one FTS rebuild
# instead of a delete per row), then puts it back.
DELETE_TRIGGER = """
        CREATE TRIGGER items_ad AFTER DELETE ON items BEGIN
            INSERT INTO items_fts (items_fts, rowid, heading, body, tags, meta)
            VALUES ('delete', old.id, old.heading, old.body, old.tags, old.meta);
            INSERT INTO item_log (item_id, op) VALUES (old.id, 'del');
            DELETE FROM places WHERE id = old.id;
        END;
"""
_DELETE_TRIGGER_001 = """
        CREATE TRIGGER items_ad AFTER DELETE ON items BEGIN
            INSERT INTO items_fts (items_fts, rowid, heading, body, tags, meta)
            VALUES ('delete', old.id, old.heading, old.body, old.tags, old.meta);
            INSERT INTO item_log (item_id, op) VALUES (old.id, 'del');
        END;
"""


def _m001_initial(db: sqlite3.Connection) -> None:
    run_script(
        db,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE files (
            path TEXT PRIMARY KEY,
            layer TEXT NOT NULL,
            store TEXT NOT NULL,
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            hash TEXT NOT NULL
        );
        CREATE TABLE items (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL,
            anchor TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            layer TEXT NOT NULL,
            kind TEXT NOT NULL,
            agent TEXT NOT NULL,
            title TEXT NOT NULL,
            heading TEXT NOT NULL,
            body TEXT NOT NULL,
            meta TEXT NOT NULL,
            tags TEXT NOT NULL,
            line_start INTEGER NOT NULL,
            line_end INTEGER NOT NULL,
            date TEXT,
            decay_from TEXT,
            tier TEXT,
            relevance REAL,
            content_hash TEXT NOT NULL,
            vector_key TEXT NOT NULL
        );
        CREATE INDEX items_by_path ON items (path, ordinal);
        CREATE INDEX items_by_vector ON items (vector_key);
        CREATE INDEX items_by_date ON items (kind, date);
        CREATE INDEX items_by_tier ON items (tier, decay_from);
        CREATE VIRTUAL TABLE items_fts USING fts5 (
            heading, body, tags, meta,
            content = 'items', content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER items_ai AFTER INSERT ON items BEGIN
            INSERT INTO items_fts (rowid, heading, body, tags, meta)
            VALUES (new.id, new.heading, new.body, new.tags, new.meta);
            INSERT INTO item_log (item_id, op) VALUES (new.id, 'add');
        END;
        """
        + _DELETE_TRIGGER_001
        + """
        CREATE TABLE vectors (
            id INTEGER PRIMARY KEY,
            vector_key TEXT NOT NULL,
            model TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vector BLOB NOT NULL,
            UNIQUE (vector_key, model)
        );
        CREATE TABLE item_log (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            item_id INTEGER NOT NULL,
            op TEXT NOT NULL
        );
        """,
    )


def _m002_database_id(db: sqlite3.Connection) -> None:
    db.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('database_id', lower(hex(randomblob(16))))"
    )


def _m003_places(db: sqlite3.Connection) -> None:
    """Ordinals and line ranges move to ``places``. The index is derived: its items
    are emptied and the next scan builds them again (vectors are kept, by text)."""
    run_script(
        db,
        """
        DROP TRIGGER items_ai;
        DROP TRIGGER items_ad;
        DROP TABLE items_fts;
        DROP TABLE items;
        DELETE FROM files;
        CREATE TABLE items (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL,
            anchor TEXT NOT NULL,
            layer TEXT NOT NULL,
            kind TEXT NOT NULL,
            agent TEXT NOT NULL,
            title TEXT NOT NULL,
            heading TEXT NOT NULL,
            body TEXT NOT NULL,
            meta TEXT NOT NULL,
            tags TEXT NOT NULL,
            date TEXT,
            decay_from TEXT,
            tier TEXT,
            relevance REAL,
            content_hash TEXT NOT NULL,
            vector_key TEXT NOT NULL
        );
        CREATE TABLE places (
            id INTEGER PRIMARY KEY,
            ordinal INTEGER NOT NULL,
            line_start INTEGER NOT NULL,
            line_end INTEGER NOT NULL
        );
        CREATE INDEX items_by_path ON items (path);
        CREATE INDEX items_by_vector ON items (vector_key);
        CREATE INDEX items_by_date ON items (kind, date);
        CREATE INDEX items_by_tier ON items (tier, decay_from);
        CREATE VIRTUAL TABLE items_fts USING fts5 (
            heading, body, tags, meta,
            content = 'items', content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER items_ai AFTER INSERT ON items BEGIN
            INSERT INTO items_fts (rowid, heading, body, tags, meta)
            VALUES (new.id, new.heading, new.body, new.tags, new.meta);
            INSERT INTO item_log (item_id, op) VALUES (new.id, 'add');
        END;
        """
        + DELETE_TRIGGER
        + """
        INSERT INTO item_log (item_id, op) VALUES (0, 'reset');
        """,
    )


MIGRATIONS: list[tuple[str, Migration]] = [
    ("001_initial", _m001_initial),
    ("002_database_id", _m002_database_id),
    ("003_places", _m003_places),
]


def log_bounds(db: sqlite3.Connection) -> tuple[int, int]:
    """The first and last position in ``item_log`` (0, 0 when empty); two index lookups."""
    low, high = db.execute(
        "SELECT (SELECT min(seq) FROM item_log), (SELECT max(seq) FROM item_log)"
    ).fetchone()
    return int(low or 0), int(high or 0)


def clear_items(db: sqlite3.Connection) -> None:
    """Empty ``items`` and ``files`` at once (inside the caller's transaction).

    One FTS rebuild instead of a delete per row; a ``reset`` entry in the log
    tells every process's vector cache to reload.
    """
    db.execute("DROP TRIGGER items_ad")
    db.execute("DELETE FROM items")
    db.execute("DELETE FROM places")
    db.execute("DELETE FROM files")
    db.execute("INSERT INTO items_fts (items_fts) VALUES ('rebuild')")
    run_script(db, DELETE_TRIGGER)
    db.execute("INSERT INTO item_log (item_id, op) VALUES (0, 'reset')")


@contextmanager
def refilling(db: sqlite3.Connection) -> Iterator[None]:
    """Empty ``items`` and ``files`` for the block to fill (inside the caller's
    transaction), with the indexes and triggers on ``items`` set aside until it ends.

    They are read from the schema as it stands and put back as they were, so a later
    migration's index or trigger is covered too. If the block raises, nothing is put
    back: the caller's transaction rolls the whole rebuild back.
    """
    saved = db.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE tbl_name = 'items' "
        "AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY type, name"
    ).fetchall()
    for kind, name, _ in saved:
        db.execute(f'DROP {"INDEX" if kind == "index" else "TRIGGER"} "{name}"')
    db.execute("DELETE FROM items")  # no trigger left: SQLite's truncate, not a row at a time
    db.execute("DELETE FROM places")
    db.execute("DELETE FROM files")
    yield
    for _, _, sql in saved:  # indexes before triggers ('index' < 'trigger')
        db.execute(sql)
    db.execute("INSERT INTO items_fts (items_fts) VALUES ('rebuild')")
    db.execute("INSERT INTO item_log (item_id, op) VALUES (0, 'reset')")


def shrink_wal(db: sqlite3.Connection) -> None:
    """Truncate the write-ahead log after a rebuild wrote the whole database through it
    (left alone, it keeps that size). Never waits: with a reader in the way, the next
    checkpoint does it."""
    timeout = db.execute("PRAGMA busy_timeout").fetchone()[0]
    db.execute("PRAGMA busy_timeout = 0")
    try:
        with contextlib.suppress(sqlite3.OperationalError):
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        db.execute(f"PRAGMA busy_timeout = {int(timeout)}")


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if need be) the index at ``path`` with its schema up to date."""
    return sqlite.connect(path, MIGRATIONS)
