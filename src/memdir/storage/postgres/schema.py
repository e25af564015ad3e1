"""The PostgreSQL schema: named, ordered migrations, each in a transaction, recorded in
``<schema>.migrations`` (``db.migrate``), as ``memdir.sqlite.migrate`` does for SQLite.

Every table is keyed by ``agent`` first: every call touches one agent, so the tables
partition by it (Citus's distribution column, or a schema per tenant) with no change.

- ``files``: each file's exact bytes with its sha256, size, mtime (ns) and version.
- ``index_files``, ``items``, ``index_meta``, ``index_stats``: the index, as
  ``index.db``'s ``files``, ``items`` and ``meta`` (same columns; ``items.agent`` is the
  folder's agent, which the SQLite column holds too), plus: ``tsv``, the weighted
  ``tsvector`` (A heading, B tags, C body, D metadata words), GIN indexed; ``tf``, each
  stem's frequency summed with FTS5's column weights (``COLUMN_WEIGHTS``: BM25's f,
  read by key instead of unnesting the tsvector); ``ntokens``, the item's length in
  tokens (BM25's |D|); ``embedding`` and ``model``, the vector and the embedder's id
  that made it (NULL: none yet). An embedder's HNSW cosine index over
  ``embedding::vector(dim)`` where ``model`` is its id (``vector_index``; one column
  holds vectors of any size) is built only on demand (migration ``005``).
  ``index_stats`` keeps per agent the item count and the tokens (BM25's N and avgdl).
- ``item_versions``, ``item_log``: per agent, a version bumped by each write that
  changes items' vectors (an insert, a delete, a new vector) and the ids it changed at
  that version, written by the write path in the write's transaction (``item_log``;
  migration ``006``), the last ``item_log.KEEP`` versions kept: what a process's
  vectors in memory catch up from (``vector_cache``).
- ``activities``, ``activity_logs``, ``mailbox_items``, ``decisions``,
  ``context_usage``: the history, as ``history.db``'s tables (``history_schema``).
- ``tokens``: the team server's bearer tokens (``tokens``): an id, the sha256 of the
  secret (never the secret), the agents it reaches, read-only, created, expires,
  last used, revoked.
- The text search configuration ``memdir``: English Snowball stems with no stopwords
  (FTS5's porter tokenizer keeps every word too; search drops stopwords itself).
"""

from __future__ import annotations

import hashlib

from psycopg import sql

from memdir.storage.postgres.db import Connection, Migration
from memdir.stores.history_schema import ACTIVITY_TYPES, LOG_TYPES

TS_CONFIG = "memdir"
COLUMN_WEIGHTS = (2.0, 1.0, 1.5, 0.5)
"""FTS5's bm25 weights for heading, body, tags, metadata words (``index.search``'s);
the tsvector's labels A, C, B, D"""
WEIGHT_OF = (
    f"CASE w WHEN 'A' THEN {COLUMN_WEIGHTS[0]} WHEN 'B' THEN {COLUMN_WEIGHTS[2]} "
    f"WHEN 'C' THEN {COLUMN_WEIGHTS[1]} ELSE {COLUMN_WEIGHTS[3]} END"
)


def _m001_files(conn: Connection, schema: str) -> None:
    conn.execute(
        """
        CREATE TABLE files (
            agent TEXT NOT NULL,
            path TEXT NOT NULL,
            data BYTEA NOT NULL,
            sha256 TEXT NOT NULL,
            size BIGINT NOT NULL,
            mtime_ns BIGINT NOT NULL,
            version BIGINT NOT NULL,
            PRIMARY KEY (agent, path)
        )
        """
    )


def _create_vector(conn: Connection) -> None:
    """``vector`` in ``public`` when this migration creates it: under the migration's
    ``search_path`` it would land in the first schema, where another schema's tables
    (a schema per tenant) never find its type."""
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    public = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'public'").fetchone()
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector" + (" SCHEMA public" if public else ""))


def _m002_index(conn: Connection, schema: str) -> None:
    _create_vector(conn)
    conn.execute(
        "CREATE TEXT SEARCH DICTIONARY memdir_stem (TEMPLATE = snowball, Language = english)"
    )
    conn.execute(f"CREATE TEXT SEARCH CONFIGURATION {TS_CONFIG} (COPY = pg_catalog.english)")
    conn.execute(
        f"ALTER TEXT SEARCH CONFIGURATION {TS_CONFIG} ALTER MAPPING FOR asciiword, asciihword, "
        "hword_asciipart, word, hword, hword_part WITH memdir_stem"
    )
    conn.execute(
        f"""
        CREATE FUNCTION memdir_tf(tsv TSVECTOR) RETURNS JSONB IMMUTABLE PARALLEL SAFE
        LANGUAGE sql AS $$
            SELECT coalesce(jsonb_object_agg(u.lexeme, (SELECT sum({WEIGHT_OF})
                                                        FROM unnest(u.weights) AS w)), '{{}}')
            FROM unnest(tsv) AS u
        $$"""
    )
    for statement in (
        """
        CREATE TABLE index_meta (
            agent TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
            PRIMARY KEY (agent, key)
        )""",
        """
        CREATE TABLE index_files (
            agent TEXT NOT NULL,
            path TEXT NOT NULL,
            layer TEXT NOT NULL,
            store TEXT NOT NULL,
            mtime_ns BIGINT NOT NULL,
            size BIGINT NOT NULL,
            hash TEXT NOT NULL,
            PRIMARY KEY (agent, path)
        )""",
        """
        CREATE TABLE items (
            id BIGSERIAL PRIMARY KEY,
            agent TEXT NOT NULL,
            path TEXT NOT NULL,
            anchor TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            layer TEXT NOT NULL,
            kind TEXT NOT NULL,
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
            relevance DOUBLE PRECISION,
            content_hash TEXT NOT NULL,
            vector_key TEXT NOT NULL,
            tsv TSVECTOR NOT NULL,
            tf JSONB GENERATED ALWAYS AS (memdir_tf(tsv)) STORED,
            ntokens INTEGER NOT NULL,
            embedding VECTOR,
            model TEXT
        )""",
        # An item's row stays whole up to a page: a search reads tsv, tf and the
        # vector of each candidate, and past 2 kB (a 384-float vector is 1.5 kB)
        # PostgreSQL would move the vector out of the row, fetched again at every
        # distance: 9.4 ms for 600 rows of a 2,400-row table, 1.6 ms kept inside.
        "ALTER TABLE items SET (toast_tuple_target = 8160)",
        "CREATE INDEX items_by_path ON items (agent, path, ordinal)",
        "CREATE INDEX items_by_vector ON items (agent, vector_key)",
        "CREATE INDEX items_by_date ON items (agent, kind, date)",
        "CREATE INDEX items_by_tier ON items (agent, tier, decay_from)",
        "CREATE INDEX items_by_model ON items (agent, model)",
        "CREATE INDEX items_tsv ON items USING gin (tsv)",
        """
        CREATE TABLE index_stats (
            agent TEXT PRIMARY KEY,
            items BIGINT NOT NULL DEFAULT 0,
            tokens BIGINT NOT NULL DEFAULT 0
        )""",
    ):
        conn.execute(statement)


def _m003_history(conn: Connection, schema: str) -> None:
    types = ", ".join(f"'{t}'" for t in ACTIVITY_TYPES)
    log_types = ", ".join(f"'{t}'" for t in LOG_TYPES)
    for statement in (
        f"""
        CREATE TABLE activities (
            agent TEXT NOT NULL,
            id TEXT NOT NULL,
            type TEXT NOT NULL CHECK (type IN ({types})),
            label TEXT NOT NULL,
            task_id TEXT,
            summary TEXT,
            keywords TEXT,
            started_at TIMESTAMPTZ NOT NULL,
            ended_at TIMESTAMPTZ,
            total_tokens BIGINT NOT NULL DEFAULT 0,
            total_tools BIGINT NOT NULL DEFAULT 0,
            success BOOLEAN,
            seq BIGSERIAL,
            tsv TSVECTOR GENERATED ALWAYS AS (
                setweight(to_tsvector('{schema}.{TS_CONFIG}', label), 'A')
                || setweight(to_tsvector('{schema}.{TS_CONFIG}', coalesce(keywords, '')), 'B')
                || setweight(to_tsvector('{schema}.{TS_CONFIG}', coalesce(summary, '')), 'C')
            ) STORED,
            PRIMARY KEY (agent, id)
        )""",
        "CREATE INDEX activities_by_time ON activities (agent, started_at)",
        "CREATE INDEX activities_by_type ON activities (agent, type, started_at)",
        "CREATE INDEX activities_by_task ON activities (agent, task_id, started_at)",
        "CREATE INDEX activities_tsv ON activities USING gin (tsv)",
        f"""
        CREATE TABLE activity_logs (
            agent TEXT NOT NULL,
            activity_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            type TEXT NOT NULL CHECK (type IN ({log_types})),
            content TEXT NOT NULL,
            metadata JSONB NOT NULL DEFAULT '{{}}',
            created_at TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (agent, activity_id, seq),
            FOREIGN KEY (agent, activity_id) REFERENCES activities (agent, id)
        )""",
        """
        CREATE TABLE mailbox_items (
            agent TEXT NOT NULL,
            id TEXT NOT NULL,
            source TEXT NOT NULL,
            kind TEXT NOT NULL,
            content TEXT NOT NULL,
            metadata JSONB NOT NULL DEFAULT '{}',
            received_at TIMESTAMPTZ NOT NULL,
            activity_id TEXT,
            PRIMARY KEY (agent, id)
        )""",
        "CREATE INDEX mailbox_by_time ON mailbox_items (agent, received_at)",
        """
        CREATE TABLE decisions (
            agent TEXT NOT NULL,
            id TEXT NOT NULL,
            mailbox_item_id TEXT,
            activity_id TEXT,
            decision TEXT NOT NULL,
            reason TEXT,
            metadata JSONB NOT NULL DEFAULT '{}',
            decided_at TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (agent, id)
        )""",
        "CREATE INDEX decisions_by_time ON decisions (agent, decided_at)",
        """
        CREATE TABLE context_usage (
            agent TEXT NOT NULL,
            session_id TEXT NOT NULL,
            used_tokens INTEGER NOT NULL,
            window_tokens INTEGER NOT NULL,
            recorded_at TIMESTAMPTZ NOT NULL,
            flushed_at TIMESTAMPTZ,
            PRIMARY KEY (agent, session_id)
        )""",
    ):
        conn.execute(statement)


def _m004_tokens(conn: Connection, schema: str) -> None:
    # the team server's bearer tokens (storage.postgres.tokens): a hash, never the token
    conn.execute(
        """
        CREATE TABLE tokens (
            id TEXT PRIMARY KEY,
            hash TEXT NOT NULL,
            agents TEXT[] NOT NULL,
            read_only BOOLEAN NOT NULL DEFAULT false,
            created_at TIMESTAMPTZ NOT NULL,
            expires_at TIMESTAMPTZ,
            last_used_at TIMESTAMPTZ,
            revoked_at TIMESTAMPTZ
        )
        """
    )


def _m005_no_hnsw_on_write(conn: Connection, schema: str) -> None:
    # The per-embedder HNSW indexes that vector writes used to build: no search reads
    # them (the vector primitive scores the agent's items exactly, and an index walk
    # over many agents' items, filtered after the walk, would miss most of one
    # agent's), and each vector written into one cost ten times the rest of its row
    # (bench/RESULTS.md, "PostgreSQL bulk writes"). ``vector_index`` builds one on
    # demand, after the vectors are in.
    rows = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND tablename = 'items' "
        "AND indexname LIKE 'items\\_hnsw\\_%%'",
        (schema,),
    ).fetchall()
    for (name,) in rows:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(str(name))))


def _m006_item_log(conn: Connection, schema: str) -> None:
    # Which items' vectors changed, by agent and version, for the vectors a process keeps
    # in memory (``vector_cache``). Written by the write path itself, once a transaction
    # just before its commit (``item_log``): no trigger, so a write pays for it only
    # where vectors change, and placements rewritten row by row pay nothing.
    conn.execute("CREATE TABLE item_versions (agent TEXT PRIMARY KEY, version BIGINT NOT NULL)")
    conn.execute(
        "CREATE TABLE item_log (agent TEXT NOT NULL, version BIGINT NOT NULL, "
        "item_id BIGINT NOT NULL)"
    )
    conn.execute("CREATE INDEX item_log_by_version ON item_log (agent, version)")


MIGRATIONS: list[tuple[str, Migration]] = [
    ("001_files", _m001_files),
    ("002_index", _m002_index),
    ("003_history", _m003_history),
    ("004_tokens", _m004_tokens),
    ("005_no_hnsw_on_write", _m005_no_hnsw_on_write),
    ("006_item_log", _m006_item_log),
]


def vector_index(conn: Connection, model: str, dim: int) -> str:
    """Create (once) the HNSW cosine index over the vectors of embedder ``model``; its name.

    Nothing writes or searches through it by default (migration ``005``): the vector
    primitive scores exactly, and every vector written into an HNSW index costs ten
    times the rest of its row. Build it, after the vectors are in, for a walk
    (``PgIndex.semantic(method="hnsw")``, bench/pg_search.py): from then on each
    vector written is added to it. Built in the caller's transaction, so writers wait
    for it."""
    name = "items_hnsw_" + hashlib.sha256(model.encode()).hexdigest()[:12]
    found = conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()
    if found is not None and found[0] is not None:
        return name  # (CREATE INDEX IF NOT EXISTS would lock out writers to find out)
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON items USING hnsw "
            "((embedding::vector({})) vector_cosine_ops) WHERE model = {}"
        ).format(sql.Identifier(name), sql.Literal(dim), sql.Literal(model))
    )
    return name
