"""An agent's window vectors in PostgreSQL: its narrative items keyed and embedded by
their windows, as the SQLite index keys and embeds them (``index.windows``).

Every item's ``vector_key`` is ``windows.file_keys``' for its file (``IndexWrites``
diffs a file's rows by anchor, content hash and key, so an edit before a short item
re-keys it as a rebuild would), and its vector is made by ``windows.embed_missing``,
the code the SQLite index runs: a batch of missing keys is in file order, and each
window holding one of them is one run.

- ``missing``: the keys with no vector from a model, in file order (path order).
- ``embed``: their vectors, the windows' runs read from the agent's rows.
- ``embed_held``: a bulk job's new rows' vectors, made before they are inserted (the
  windows' runs from the files as extracted).
- ``check_version``: an agent whose keys another window version made (or none:
  an index from before the windows) is re-keyed in place, once, and the version kept
  in ``index_meta`` (``windows.VERSION``); a re-keyed item's vector is dropped.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from memdir.index import windows
from memdir.index.embedders import Embedder
from memdir.index.ranking import NARRATIVE_KINDS
from memdir.storage.postgres import bulk
from memdir.storage.postgres.db import Connection

META_KEY = "windows"
"""``index_meta``'s key of the window version the agent's keys were made by"""
_NARRATIVE = sorted(NARRATIVE_KINDS)
_MISSING = (
    "SELECT path, ordinal, id, vector_key, heading, meta, body FROM items WHERE agent = %s "
    "AND model IS DISTINCT FROM %s AND (path, ordinal, id) > (%s, %s, %s) "
    "ORDER BY path, ordinal, id LIMIT %s"
)
Place = tuple[str, int, int]
"""(path, ordinal, id): where ``missing`` goes on from"""
START: Place = ("", -(2**31), 0)


def _text(heading: object, meta: object, body: object) -> str:
    return windows.embed_text(str(heading), str(meta), str(body))


def missing(
    conn: Connection, agent: str, model: str, after: Place, limit: int
) -> tuple[list[tuple[str, str, str]], Place]:
    """(path, vector key, embedded text) of up to ``limit`` items with no vector from
    ``model``, in file order (files in path order) from ``after``, each key once (where
    it first comes); and where the next batch goes on from. A window a batch's end cuts
    is run for the batch's keys, and gives the keys after them in it their vectors too,
    so the next batch does not list them again."""
    rows = conn.execute(_MISSING, (agent, model, *after, limit)).fetchall()
    found: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for path, _, _, key, heading, meta, body in rows:
        if key not in seen:
            seen.add(key)
            found.append((str(path), str(key), _text(heading, meta, body)))
    last = rows[-1] if rows else None
    return found, (after if last is None else (str(last[0]), int(last[1]), int(last[2])))


def embed(
    conn: Connection,
    agent: str,
    embedder: Embedder,
    todo: Sequence[tuple[str, str]],
    paths: Sequence[str],
) -> tuple[dict[str, Any], int]:
    """``windows.embed_missing`` for ``todo`` (key, text), whose items are in ``paths``."""
    return windows.embed_missing(
        embedder,
        todo,
        lambda wanted: runs(conn, agent, paths, wanted),
        lambda keys: bulk.keys_with_vectors(conn, agent, keys, embedder.id),
        lambda keys: stored(conn, agent, keys, embedder.id),
    )


def runs(conn: Connection, agent: str, paths: Sequence[str], wanted: set[str]) -> list[windows.Run]:
    """The runs of the windows of ``paths`` holding a key of ``wanted``."""
    by_path: dict[str, list[tuple[str, str]]] = {}
    for path, heading, meta, body, key in conn.execute(
        "SELECT path, heading, meta, body, vector_key FROM items WHERE agent = %s "
        "AND path = ANY(%s) AND kind = ANY(%s) ORDER BY path, ordinal, id",
        (agent, list(paths), _NARRATIVE),
    ):
        by_path.setdefault(str(path), []).append((_text(heading, meta, body), str(key)))
    return [run for entries in by_path.values() for run in windows.file_runs(entries, wanted)]


def stored(conn: Connection, agent: str, keys: Sequence[str], model: str) -> dict[str, Any]:
    """The vectors from ``model`` of those of ``keys`` some item of ``agent`` has."""
    if not keys:
        return {}
    rows = conn.execute(
        "SELECT DISTINCT ON (vector_key) vector_key, embedding FROM items WHERE agent = %s "
        "AND vector_key = ANY(%s) AND model = %s ORDER BY vector_key, id",
        (agent, list(keys), model),
    )
    return {str(key): bulk.as_array(vector) for key, vector in rows}


def current(conn: Connection, agent: str) -> bool:
    """Whether the agent's keys were made by this window version (``windows.VERSION``)."""
    row = conn.execute(
        "SELECT value FROM index_meta WHERE agent = %s AND key = %s", (agent, META_KEY)
    ).fetchone()
    return row is not None and row[0] == windows.VERSION


def check_version(conn: Connection, agent: str) -> list[int] | None:
    """In the folder lock's transaction: re-key the agent's items if its keys were made
    by another window version than ``windows.VERSION`` (the version then kept); the ids
    of the items re-keyed, their vectors dropped (``item_log``), or None if the version
    was current."""
    if current(conn, agent):
        return None
    by_path: dict[str, list[tuple[int, str, str, str, int]]] = {}
    for item_id, path, kind, heading, meta, body, key, ordinal in conn.execute(
        "SELECT id, path, kind, heading, meta, body, vector_key, ordinal FROM items "
        "WHERE agent = %s ORDER BY path, ordinal, id",
        (agent,),
    ):
        entry = (int(item_id), str(kind), _text(heading, meta, body), str(key), int(ordinal))
        by_path.setdefault(str(path), []).append(entry)
    ids: list[int] = []
    keys: list[str] = []
    for entries in by_path.values():
        wanted = windows.file_keys([(kind, text, ordinal) for _, kind, text, _, ordinal in entries])
        for (item_id, _, _, key, _), new in zip(entries, wanted, strict=True):
            if new != key:
                ids.append(item_id)
                keys.append(new)
    dropped: list[int] = []
    if ids:
        dropped = [
            int(item_id)
            for (item_id,) in conn.execute(
                "UPDATE items AS i SET vector_key = u.key, embedding = NULL, model = NULL "
                "FROM unnest(%s::bigint[], %s::text[]) AS u(id, key) "
                "WHERE i.agent = %s AND i.id = u.id RETURNING i.id",
                (ids, keys, agent),
            )
        ]
    conn.execute(
        "INSERT INTO index_meta (agent, key, value) VALUES (%s, %s, %s) "
        "ON CONFLICT (agent, key) DO UPDATE SET value = excluded.value",
        (agent, META_KEY, windows.VERSION),
    )
    return dropped


def lone(
    embedder: Embedder | None, gone: Sequence[Sequence[object]]
) -> dict[str, tuple[object, str]]:
    """Removed rows' vectors (each row's embedding, model, heading, meta, body) under their
    text's own key, where ``embedder`` made them and makes lone vectors only (it runs
    no windows: ``windows.embeds_windows``): such a vector is its text's whatever window
    the text moves to, so a moved short item is not embedded again (``embed_missing``'s
    ``stored``)."""
    if embedder is None or windows.embeds_windows(embedder):
        return {}
    return {
        windows.own_key(_text(heading, meta, body)): (vector, str(model))
        for vector, model, heading, meta, body in gone
        if vector is not None and model == embedder.id
    }


def embed_held(
    conn: Connection,
    agent: str,
    embedder: Embedder,
    rows: Sequence[tuple[object, ...]],
    texts: dict[str, str],
    vectors: dict[str, tuple[object, str]],
    entries: dict[str, list[tuple[str, str]]],
    batch: int,
) -> set[str]:
    """A bulk job's held rows (``IndexWrites._flush``; ``PgIndex._row``'s tuples, a
    file's together) given vectors from ``embedder`` into ``vectors`` for ``texts`` (key
    -> text of those with none), whole files about ``batch`` keys at a time, in file
    order, each file's windows from ``entries`` (its narrative items' (text, key)): a
    key of a row kept that a window's run gave a vector to is added too (the caller
    stores it). The keys given a vector."""
    have = {key for key, (_, model) in vectors.items() if model == embedder.id}

    def runs(paths: set[str], wanted: set[str]) -> list[windows.Run]:
        return [run for p in paths for run in windows.file_runs(entries.get(p, []), wanted)]

    def with_vectors(keys: list[str]) -> set[str]:
        return have.intersection(keys) | bulk.keys_with_vectors(conn, agent, keys, embedder.id)

    def own(keys: list[str]) -> dict[str, Any]:
        found = stored(conn, agent, keys, embedder.id)
        return found | {key: vectors[key][0] for key in have.intersection(keys)}

    order: list[tuple[str, str]] = []  # (path, key) of each text, where it first comes
    listed: set[str] = set()
    for row in rows:
        key = str(row[11])
        if key in texts and key not in listed:
            listed.add(key)
            order.append((str(row[1]), key))
    done: set[str] = set()
    start = 0
    while start < len(order):
        end = min(start + batch, len(order))
        while end < len(order) and order[end][0] == order[end - 1][0]:
            end += 1  # the file whole
        part = order[start:end]
        start = end
        paths = {path for path, _ in part}
        made, _ = windows.embed_missing(
            embedder,
            [(key, texts[key]) for _, key in part],
            functools.partial(runs, paths),
            with_vectors,
            own,
        )
        for key, vector in made.items():
            vectors[key] = (vector, embedder.id)
        have.update(made)
        done.update(made)
    return done
