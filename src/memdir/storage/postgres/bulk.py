"""Writing many index rows and vectors at once: one statement per batch.

``PgIndex`` hands its inserts here a batch at a time (a file's new items, or up to
``FLUSH_ROWS`` of a bulk job's) and its vectors a batch at a time (``ensure_vectors``):

- ``insert_items``: one ``INSERT ... SELECT FROM unnest(...)`` per batch, each row
  with its vector where it is known at insert time: made by the caller (a bulk
  job embeds before it inserts), carried over from a row the same write removed
  (a moved item), or copied from another of the agent's items with the same text
  (``vector_key``), so a row is written once instead of inserted and then updated.
- ``store_vectors``: one ``UPDATE ... FROM unnest(...)`` per batch.
- ``keys_with_vectors``: which texts already have a vector from a model.

Both answer the ids given a vector, which the caller logs at its commit
(``item_log``, for the processes holding the agent's vectors in memory); vectors
stored outside the folder lock are logged by their own statement, which waits for
no row a write holds (it passes over them: ``item_log`` has why; the vectors it
passed over are kept for the next search by ``unstored``).

Measured in bench/RESULTS.md ("PostgreSQL bulk writes"): on a write, an HNSW
index costs ten times the rest of the row (pgvector inserts each vector into the
graph), so none is kept on the write path (migration ``005``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pgvector import Vector

from memdir.storage.postgres.db import Connection
from memdir.storage.postgres.item_log import logged
from memdir.storage.postgres.schema import TS_CONFIG

FLUSH_ROWS = 512
"""a bulk job's inserts are sent this many rows at a time"""

# (column, SQL array type) of an items row as PgIndex._row makes it, after the agent
ROW_COLUMNS = (
    ("path", "text"), ("anchor", "text"), ("kind", "text"), ("title", "text"),
    ("heading", "text"), ("body", "text"), ("meta", "text"), ("tags", "text"),
    ("date", "text"), ("content_hash", "text"), ("vector_key", "text"),
    ("ordinal", "int4"), ("line_start", "int4"), ("line_end", "int4"), ("layer", "text"),
    ("tier", "text"), ("decay_from", "text"), ("relevance", "float8"), ("ntokens", "int4"),
)  # fmt: skip
_TOKENS = ("t_heading", "t_tags", "t_body", "t_meta")
_NAMES = [name for name, _ in ROW_COLUMNS]
# every array in binary (``%b``): psycopg quotes each element of a text array in Python
_UNNEST = ", ".join(f"%b::{kind}[]" for _, kind in ROW_COLUMNS)
_TSV = " || ".join(
    f"setweight(to_tsvector('{TS_CONFIG}', u.{column}), '{weight}')"
    for column, weight in zip(_TOKENS, "ABCD", strict=True)
)
_INSERT = (
    f"INSERT INTO items (agent, {', '.join(_NAMES)}, tsv, embedding, model) "
    f"SELECT %s, {', '.join('u.' + n for n in _NAMES)}, {_TSV}, "
    "coalesce(u.embedding, k.embedding), "
    "CASE WHEN u.embedding IS NOT NULL THEN u.model ELSE k.model END "
    f"FROM unnest({_UNNEST}, {', '.join(['%b::text[]'] * 4)}, %b::vector[], %b::text[]) "
    f"WITH ORDINALITY AS u({', '.join(_NAMES)}, {', '.join(_TOKENS)}, embedding, model, n) "
    # a text the agent already has a vector for keeps it (this embedder's first)
    "LEFT JOIN LATERAL (SELECT o.embedding, o.model FROM items AS o WHERE o.agent = %s "
    "AND o.vector_key = u.vector_key AND o.embedding IS NOT NULL AND u.embedding IS NULL "
    "ORDER BY o.model IS NOT DISTINCT FROM %s DESC, o.id LIMIT 1) AS k ON TRUE "
    "ORDER BY u.n RETURNING id, embedding IS NOT NULL"
)
_STORE = (
    "UPDATE items AS i SET embedding = u.embedding, model = %s "
    "FROM unnest(%b::text[], %b::vector[]) AS u(key, embedding) "
    "WHERE i.agent = %s AND i.vector_key = u.key"
)
# outside the folder lock: only the rows no transaction holds, locked without waiting
# (a locked write's are left for the next search), then the version row (``logged``):
# a store that waited for a row while holding others could hold one the locked write
# wants next, a deadlock PostgreSQL breaks by failing one of them (item_log)
_STORE_FREE = (
    "UPDATE items AS i SET embedding = f.embedding, model = %s FROM (SELECT o.id, "
    "u.embedding FROM unnest(%b::text[], %b::vector[]) AS u(key, embedding) "
    "JOIN items AS o ON o.vector_key = u.key WHERE o.agent = %s "
    "FOR UPDATE OF o SKIP LOCKED) AS f WHERE i.id = f.id"
)
_STORE_LOGGED = logged(_STORE_FREE)
Known = Mapping[str, tuple[object, str]]
"""vector_key -> (vector, the model that made it)"""


def insert_items(
    conn: Connection,
    agent: str,
    rows: Sequence[tuple[object, ...]],
    vectors: Known,
    prefer: str | None,
) -> list[int]:
    """Insert ``rows`` (``PgIndex._row``'s tuples: the agent, ``ROW_COLUMNS``, then the
    four columns' words) in one statement, each with the vector ``vectors`` has for
    its text, else one of the agent's items with the same text has (``prefer``'s
    model first), else none; the ids of those inserted with a vector (``item_log``)."""
    if not rows:
        return []
    width = 1 + len(ROW_COLUMNS)
    columns: list[list[object]] = [[row[i] for row in rows] for i in range(1, width + 4)]
    keys = [str(row[11]) for row in rows]
    found = [vectors.get(key) for key in keys]
    embeddings = [None if hit is None else as_array(hit[0]) for hit in found]
    models = [None if hit is None else hit[1] for hit in found]
    inserted = conn.execute(_INSERT, [agent, *columns, embeddings, models, agent, prefer])
    return [int(item_id) for item_id, has in inserted.fetchall() if has]


def store_vectors(
    conn: Connection,
    agent: str,
    model: str,
    vectors: Sequence[tuple[str, object]],
    *,
    locked: bool,
) -> list[tuple[int, str]]:
    """Every item of ``agent`` whose text is one of ``vectors``' keys gets its vector
    from ``model``: one statement; (id, vector key) of each row it changed. ``locked``
    (in the folder lock's transaction): the caller logs the ids at the commit; else the
    statement bumps the agent's version itself (``item_log.logged``) and passes over
    the rows another transaction holds (a locked write's: not among those answered,
    the next search stores them)."""
    if not vectors:
        return []
    values = (model, [k for k, _ in vectors], [as_array(v) for _, v in vectors], agent)
    statement = _STORE_LOGGED if not locked else _STORE + " RETURNING i.id, i.vector_key"
    return [(int(item_id), str(key)) for item_id, key in conn.execute(statement, values)]


def keys_with_vectors(conn: Connection, agent: str, keys: Sequence[str], model: str) -> set[str]:
    """Those of ``keys`` some item of ``agent`` has a vector from ``model`` for."""
    if not keys:
        return set()
    rows = conn.execute(
        "SELECT DISTINCT vector_key FROM items WHERE agent = %s AND vector_key = ANY(%s) "
        "AND model = %s",
        (agent, list(keys), model),
    )
    return {str(row[0]) for row in rows}


def as_array(value: object) -> object:
    """A vector as numpy float32 (pgvector's ``Vector``, as read back, included), so every
    element of an array parameter is dumped alike."""
    if isinstance(value, Vector):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)
