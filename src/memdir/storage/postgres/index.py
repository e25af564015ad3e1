"""The index in PostgreSQL: ``IndexRows`` over ``items`` (see ``schema``).

Rows are what ``index.sync`` makes of a file (the same items, diffed by anchor and
content hash, the same placement), written under the folder lock, so a store's write
commits its file and its rows together: ``writes.IndexWrites``, many files' rows and
their vectors a statement a batch. The primitives search ranks with:

- ``keyword``: BM25 as FTS5 computes it (k1 1.2, b 0.75, IDF ln((N - n + 0.5) /
  (n + 0.5)) floored at 1e-6, a term's frequency summed over the columns with FTS5's
  weights, |D| all of the item's tokens, N and avgdl over the agent's items): the
  candidates are the GIN index's matches of each of the query's stems, scored in one
  statement from ``tf`` (each stem's weighted frequency, made from the ``tsvector``
  when the row is written): bench/RESULTS.md has the steps that took it from 21x
  SQLite's time to about 5x. ``ts_rank_cd`` is not BM25 (no IDF, no length normalisation of this
  kind); ``scorer="ts_rank_cd"`` is kept to measure it by (bench/pg_search.py).
- ``semantic``: cosine (``<=>``) to the query among the agent's items with a vector of
  that embedder under the filters. ``method="exact"`` scores every such item, as the
  SQLite path's matrix does; ``"hnsw"`` walks the embedder's HNSW index (forced: the
  planner scans a small table instead), with ``ef_search`` = depth. pgvector 0.6
  filters after the walk, so a filter or other agents' items crowd the result:
  bench/pg_search.py measures it with several agents in one table.

Words are cut as FTS5's ``unicode61 remove_diacritics 2`` cuts them (letters and
digits, diacritics off, lower case) before PostgreSQL stems them (``memdir``
configuration: English Snowball, no stopwords). An item's text is cut at
``MAX_TOKENS`` tokens per column (a tsvector holds 1 MB at most).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
from psycopg import sql

from memdir.config import Layer, Manifest
from memdir.index.embedders import Embedder, Vectors
from memdir.index.rows import FileState
from memdir.index.rows import placement as placement
from memdir.index.sqlite_rows import COLUMNS as _COLUMNS
from memdir.index.sync import Index
from memdir.index.words import STOPWORDS
from memdir.results import Notice
from memdir.storage.postgres import vector_cache
from memdir.storage.postgres.db import Database, Folder
from memdir.storage.postgres.schema import COLUMN_WEIGHTS, TS_CONFIG
from memdir.storage.postgres.vector_cache import Held
from memdir.storage.postgres.writes import MAX_TOKENS as MAX_TOKENS
from memdir.storage.postgres.writes import IndexWrites
from memdir.storage.postgres.writes import tokens as tokens
from memdir.storage.seam import Files, Pairs, Scope
from memdir.timeutil import Clock

HNSW_MAX_EF = 1000
_K1, _B = 1.2, 0.75
# ts_rank's weights are given for D, C, B, A (metadata, body, tags, heading), at most 1:
# FTS5's, scaled by the largest (the order they give is the same).
_TS_WEIGHTS = (
    "{" + ", ".join(str(COLUMN_WEIGHTS[i] / max(COLUMN_WEIGHTS)) for i in (3, 1, 2, 0)) + "}"
)


def index_text(
    index: PgIndex, path: str, text: str, layer_name: str, layer: Layer, *, mtime_ns: int,
    size: int,
) -> str:  # fmt: skip
    """Bring ``path``'s rows up to date with ``text`` (what ``Index._apply`` does on
    SQLite: the same items, placement and digest); 'added', 'updated' or 'unchanged'."""
    return index.write(FileState(path, layer_name, layer, text, mtime_ns, size))


def where_sql(scope: Scope) -> tuple[str, list[object]]:
    """``Filters.sql`` in PostgreSQL's dialect (one WHERE for both backends)."""
    where, params = scope.filters.sql(scope.decay, scope.now, wide=scope.wide)
    return ("TRUE" if where == "1" else where.replace("?", "%s")), params


class PgIndex(IndexWrites):
    """One agent's index rows in the database (``IndexRows``): written as
    ``writes.IndexWrites`` writes them, read by the primitives here."""

    def __init__(
        self,
        db: Database,
        agent: str,
        *,
        folder: Folder | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        super().__init__(db, agent, folder=folder, embedder=embedder)
        self._ready: set[str] = set()  # models some item has a vector of (vectors_ready)

    def close(self) -> None:
        """Nothing of its own to close: the ``Database`` is its opener's."""

    def vectors_ready(self, model: str) -> bool:
        """Read until true, then remembered by this process: a search that goes semantic
        over an index whose vectors were since dropped finds no semantic hit, which is
        what going by keywords alone would rank (so no read a search)."""
        if model in self._ready:
            return True
        ready = super().vectors_ready(model)
        if ready:
            self._ready.add(model)
        return ready

    # -- the primitives --------------------------------------------------------

    def keyword(
        self, words: Sequence[str], scope: Scope, depth: int, *, scorer: str = "bm25"
    ) -> Pairs:
        statement = self._keyword_sql(words, scope, depth, scorer)
        if statement is None:
            return []
        rows = self._conn().execute(*statement).fetchall()
        return [(int(item_id), float(score)) for item_id, score in rows]

    def _keyword_sql(
        self, words: Sequence[str], scope: Scope, depth: int, scorer: str = "bm25"
    ) -> tuple[str, list[object]] | None:
        """``keyword``'s statement and its values (None: no word to look for)."""
        text = " ".join(token for word in words for token in tokens(word))
        if not text:
            return None
        phrase = all(word in STOPWORDS for word in words)
        where, params = where_sql(scope)
        query = (
            f"(SELECT CASE WHEN %s THEN phraseto_tsquery('{TS_CONFIG}', %s) ELSE "
            f"(SELECT string_agg(quote_literal(u.lexeme), ' | ')::tsquery FROM "
            f"unnest(to_tsvector('{TS_CONFIG}', %s)) AS u) END)"
        )
        args: list[object] = [phrase, text, text]
        if scorer in ("ts_rank_cd", "ts_rank"):
            sql_text = (
                f"SELECT i.id, {scorer}('{_TS_WEIGHTS}', i.tsv, q.query) AS score "
                f"FROM items AS i, (SELECT {query} AS query) AS q "
                f"WHERE i.agent = %s AND i.tsv @@ q.query AND {where} "
                f"ORDER BY score DESC, i.id LIMIT %s"
            )
            values = [*args, self.agent, *params, depth]
        elif scorer == "bm25":
            # one (item, stem) pair per stem an item holds, found by the GIN index; the
            # filters are a flag on each pair (N, avgdl and df count every item, as FTS5's)
            both = f" AND i.tsv @@ phraseto_tsquery('{TS_CONFIG}', %s)" if phrase else ""
            sql_text = (
                "WITH q AS (SELECT (SELECT array_agg(DISTINCT u.lexeme) FROM "
                f"unnest(to_tsvector('{TS_CONFIG}', %s)) AS u) AS lexemes), "
                "stats AS (SELECT greatest(s.items, 1)::float8 AS n, "
                "greatest(s.tokens::float8 / greatest(s.items, 1), 1e-9) AS avgdl "
                "FROM index_stats AS s WHERE s.agent = %s), "
                "hits AS (SELECT i.id, i.ntokens, u.lexeme, (i.tf ->> u.lexeme)::float8 AS f, "
                f"({where}) AS ok FROM q CROSS JOIN LATERAL unnest(q.lexemes) AS u(lexeme) "
                "JOIN items AS i ON i.agent = %s AND i.tsv @@ quote_literal(u.lexeme)::tsquery"
                f"{both}), "
                "df AS (SELECT lexeme, count(*)::float8 AS n FROM hits GROUP BY lexeme), "
                "scored AS (SELECT h.id, bool_and(h.ok) AS ok, "
                "sum(greatest(ln((s.n - df.n + 0.5) / (df.n + 0.5)), 1e-6) * h.f * "
                f"{_K1 + 1} / (h.f + {_K1} * ({1 - _B} + {_B} * h.ntokens / s.avgdl))) AS score "
                "FROM hits AS h JOIN df USING (lexeme) CROSS JOIN stats AS s GROUP BY h.id) "
                "SELECT id, score FROM scored WHERE ok ORDER BY score DESC, id LIMIT %s"
            )
            values = [text, self.agent, *params, self.agent, *([text] if phrase else []), depth]
        else:
            raise ValueError(f"unknown scorer {scorer!r}")
        return sql_text, values

    def _semantic_sql(
        self, vector: Vectors, model: str, scope: Scope, depth: int
    ) -> tuple[str, list[object]]:
        """The exact ``semantic``'s statement and its values."""
        where, params = where_sql(scope)
        query = np.asarray(vector, dtype=np.float32)
        # a vector of another size under the same model id is passed over, as the
        # SQLite matrix passes it over (the id promised one model; it lied)
        return (
            "SELECT i.id, 1 - (i.embedding <=> %s) FROM items AS i WHERE i.agent = %s "
            f"AND i.model = %s AND vector_dims(i.embedding) = %s AND {where} "
            "ORDER BY i.embedding <=> %s, i.id LIMIT %s",
            [query, self.agent, model, int(query.shape[0]), *params, query, depth],
        )

    def candidates(
        self,
        words: Sequence[str],
        vector: Vectors | None,
        model: str,
        scopes: Sequence[Scope],
        depth: int,
        floor: float,
    ) -> list[tuple[Pairs, Pairs]]:
        """``keyword`` and the exact ``semantic`` for each scope, their statements sent
        together in one pipeline: the same statements, one wait for all the answers.
        With the agent's vectors held in memory (``vector_cache``), the semantic side
        is the matrix's, checked by version in that same pipeline (an agent of
        ``vector_cache.min_items`` items or more; a smaller one's search is these
        statements, its item count read with them once a minute)."""
        ask: vector_cache.Key | None = None
        if vector is not None:
            key = self._vector_key(model, vector)
            held, asks = vector_cache.REGISTRY.held(key)
            if held is not None:
                return self._candidates_held(
                    words, vector, model, scopes, depth, floor, (key, held), asks
                )
            ask = key if asks else None
        conn = self._conn()
        asked: list[tuple[Any, Any]] = []
        with conn.pipeline():
            for scope in scopes:
                statement = self._keyword_sql(words, scope, depth)
                keyword = None if statement is None else conn.execute(*statement)
                semantic = (
                    None
                    if vector is None
                    else conn.execute(*self._semantic_sql(vector, model, scope, depth))
                )
                asked.append((keyword, semantic))
            size = None if ask is None else conn.execute(vector_cache.SIZE_SQL, (self.agent,))
        if ask is not None and size is not None:
            vector_cache.REGISTRY.sized(ask, _count(size))
        found: list[tuple[Pairs, Pairs]] = []
        for keyword, semantic in asked:
            kw = [] if keyword is None else [(int(i), float(s)) for i, s in keyword.fetchall()]
            sem = [] if semantic is None else [(int(i), float(s)) for i, s in semantic.fetchall()]
            found.append((kw, [(i, s) for i, s in sem if s >= floor]))
        return found

    def _vector_key(self, model: str, vector: Vectors) -> vector_cache.Key:
        """What this agent's vectors from ``model`` are held under (``vector_cache``)."""
        dim = int(np.asarray(vector).shape[-1])
        return (self.folder.db.url, self.folder.db.schema, self.agent, model, dim)

    def _candidates_held(
        self,
        words: Sequence[str],
        vector: Vectors,
        model: str,
        scopes: Sequence[Scope],
        depth: int,
        floor: float,
        found_held: tuple[vector_cache.Key, Held],
        ask: bool = False,
    ) -> list[tuple[Pairs, Pairs]]:
        """``candidates`` with the semantic side from the matrix held: the keyword
        statements, the version check and each filtered scope's check of the matrix's
        best in one pipeline (with the item count if ``ask``); again (the check and the
        scopes') if the version moved."""
        key, held = found_held
        query = vector_cache.normalised(vector)
        filtered = [where_sql(scope)[0] != "TRUE" for scope in scopes]
        conn = self._conn()
        args = {"agent": self.agent, "model": model, "dim": key[4]}
        with held.lock:
            guesses = held.best(query, depth, floor, filtered)
            asked: list[tuple[Any, Any]] = []
            with conn.pipeline():
                check = conn.execute(
                    vector_cache.CHECK_SQL, {**args, "held": held.version}, binary=True
                )
                for scope, guess, f in zip(scopes, guesses, filtered, strict=True):
                    statement = self._keyword_sql(words, scope, depth)
                    keyword = None if statement is None else conn.execute(*statement)
                    allowed = (
                        conn.execute(*self._excluded_sql([i for i, _ in guess], scope))
                        if f and guess
                        else None
                    )
                    asked.append((keyword, allowed))
                counted = conn.execute(vector_cache.SIZE_SQL, (self.agent,)) if ask else None
            kept = held.version
            moved = not held.apply(check.fetchall(), whole=False)
            items = None if counted is None else _count(counted)
            if moved:  # none held, or past the log's reach: load whole
                if items is None:
                    items = _count(conn.execute(vector_cache.SIZE_SQL, (self.agent,)))
                ask = True
            if ask and items is not None:
                vector_cache.REGISTRY.sized(key, items)
            if moved and items is not None:
                if items < vector_cache.min_items() or not vector_cache.REGISTRY.fits(key, items):
                    return self._candidates_sql(asked, vector, model, scopes, depth, floor)
                held.apply(conn.execute(vector_cache.LOAD_SQL, args, binary=True).fetchall(),
                           whole=True)  # fmt: skip
            if held.version != kept or moved:
                if not vector_cache.REGISTRY.settle(key):
                    return self._candidates_sql(asked, vector, model, scopes, depth, floor)
                guesses = held.best(query, depth, floor, filtered)
                with conn.pipeline():
                    again = [
                        conn.execute(*self._excluded_sql([i for i, _ in guess], scope))
                        if f and guess
                        else None
                        for scope, guess, f in zip(scopes, guesses, filtered, strict=True)
                    ]
                asked = [(kw, allowed) for (kw, _), allowed in zip(asked, again, strict=True)]
        results: list[tuple[Pairs, Pairs]] = []
        short: list[int] = []  # scopes whose filter left too few of the matrix's best
        for n, ((keyword, allowed), guess) in enumerate(zip(asked, guesses, strict=True)):
            kw = [] if keyword is None else [(int(i), float(s)) for i, s in keyword.fetchall()]
            sem = guess
            if filtered[n] and allowed is not None:
                out = set((allowed.fetchone() or [None])[0] or ())
                sem = [pair for pair in guess if pair[0] not in out]
                if len(sem) < depth and len(guess) == depth * vector_cache.WIDEN:
                    short.append(n)
            results.append((kw, sem[:depth]))
        if short:
            with conn.pipeline():
                exact = [
                    conn.execute(*self._semantic_sql(vector, model, scopes[n], depth))
                    for n in short
                ]
            for n, cursor in zip(short, exact, strict=True):
                pairs = [(int(i), float(s)) for i, s in cursor.fetchall()]
                results[n] = (results[n][0], [(i, s) for i, s in pairs if s >= floor])
        return results

    def _excluded_sql(self, ids: Sequence[int], scope: Scope) -> tuple[str, list[object]]:
        """Which of ``ids`` the scope leaves out, as one array: the matrix's best are
        mostly in (one row back, not one an id), and the ids go as one string (a list
        of ints is dumped element by element)."""
        where, params = where_sql(scope)
        return (
            "SELECT array_agg(i.id) FROM items AS i WHERE i.agent = %s "
            f"AND i.id = ANY(string_to_array(%s, ',')::bigint[]) AND ({where}) IS NOT TRUE",
            [self.agent, ",".join(map(str, ids)), *params],
        )

    def _candidates_sql(
        self,
        asked: list[tuple[Any, Any]],
        vector: Vectors,
        model: str,
        scopes: Sequence[Scope],
        depth: int,
        floor: float,
    ) -> list[tuple[Pairs, Pairs]]:
        """The keyword answers ``asked`` and pgvector's semantic side for each scope (an
        agent over the cache's bound)."""
        conn = self._conn()
        with conn.pipeline():
            exact = [conn.execute(*self._semantic_sql(vector, model, s, depth)) for s in scopes]
        results: list[tuple[Pairs, Pairs]] = []
        for (keyword, _), cursor in zip(asked, exact, strict=True):
            kw = [] if keyword is None else [(int(i), float(s)) for i, s in keyword.fetchall()]
            sem = [(int(i), float(s)) for i, s in cursor.fetchall()]
            results.append((kw, [(i, s) for i, s in sem if s >= floor]))
        return results

    def semantic(
        self,
        vector: Vectors,
        model: str,
        scope: Scope,
        depth: int,
        floor: float,
        *,
        method: str = "exact",
    ) -> Pairs:
        if method == "exact" and vector_cache.REGISTRY.held(self._vector_key(model, vector))[0]:
            return self.candidates([], vector, model, [scope], depth, floor)[0][1]
        where, params = where_sql(scope)
        query = np.asarray(vector, dtype=np.float32)
        conn = self._conn()
        if method == "exact":
            rows = conn.execute(*self._semantic_sql(vector, model, scope, depth)).fetchall()
        elif method == "hnsw":
            dim = sql.Literal(int(query.shape[0]))
            distance = sql.SQL("i.embedding::vector({d}) <=> %s::vector({d})").format(d=dim)
            statement = sql.SQL(
                "SELECT i.id, 1 - ({distance}) FROM items AS i WHERE i.model = {model} "
                "AND i.agent = %s AND {where} ORDER BY {distance} LIMIT %s"
            ).format(distance=distance, model=sql.Literal(model), where=sql.SQL(where))
            with conn.transaction():
                conn.execute(f"SET LOCAL hnsw.ef_search = {min(max(depth, 40), HNSW_MAX_EF)}")
                # the walk itself, as the planner takes it on a large table (on a small
                # one it scans and sorts, which is the exact answer)
                conn.execute("SET LOCAL enable_seqscan = off")
                conn.execute("SET LOCAL enable_sort = off")
                rows = conn.execute(
                    statement, [query, self.agent, *params, query, depth]
                ).fetchall()
        else:
            raise ValueError(f"unknown method {method!r}")
        return [(int(i), float(score)) for i, score in rows if float(score) >= floor]

    # -- reading rows ----------------------------------------------------------

    def allowed(self, ids: Sequence[int], scope: Scope) -> set[int]:
        rows = self._conn().execute(*self._allowed_sql(ids, scope))
        return {int(row[0]) for row in rows}

    def _allowed_sql(self, ids: Sequence[int], scope: Scope) -> tuple[str, list[object]]:
        where, params = where_sql(scope)
        return (
            f"SELECT i.id FROM items AS i WHERE i.agent = %s AND i.id = ANY(%s) AND {where}",
            [self.agent, list(ids), *params],
        )

    def rows(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        return _by_id(self._conn().execute(*self._rows_sql(ids)))

    def _rows_sql(self, ids: Sequence[int]) -> tuple[str, list[object]]:
        return (
            f"SELECT {', '.join(_COLUMNS)} FROM items WHERE agent = %s AND id = ANY(%s)",
            [self.agent, list(ids)],
        )

    def rows_within(
        self, ids: Sequence[int], among: Sequence[int], scope: Scope
    ) -> tuple[dict[int, dict[str, Any]], set[int]]:
        """``rows`` and ``allowed`` in one pipeline (one wait)."""
        conn = self._conn()
        with conn.pipeline():
            rows = conn.execute(*self._rows_sql(ids)) if ids else None
            allowed = conn.execute(*self._allowed_sql(among, scope)) if among else None
        return (
            {} if rows is None else _by_id(rows),
            set() if allowed is None else {int(row[0]) for row in allowed.fetchall()},
        )

    def recent(self, scope: Scope, limit: int, *, observations: bool) -> list[int]:
        where, params = where_sql(scope)
        if observations:
            where += " AND i.kind = 'observation'"
        rows = self._conn().execute(
            f"SELECT i.id FROM items AS i WHERE i.agent = %s AND {where} "
            "ORDER BY i.date IS NULL, i.date DESC, i.id DESC LIMIT %s",
            [self.agent, *params, limit],
        )
        return [int(row[0]) for row in rows]

    def cold(self, cutoff: str) -> list[int]:
        rows = self._conn().execute(
            "SELECT i.id FROM items AS i WHERE i.agent = %s AND (i.tier IN ('cold', 'archive') "
            "OR (i.tier IS NULL AND i.decay_from < %s)) ORDER BY i.id",
            (self.agent, cutoff),
        )
        return [int(row[0]) for row in rows]

    def select(
        self, *, kind: str | None = None, tier: str | None = None, layer: str | None = None
    ) -> list[dict[str, Any]]:
        clauses, params = ["agent = %s"], [self.agent]
        for column, value in (("kind", kind), ("tier", tier), ("layer", layer)):
            if value is not None:
                clauses.append(f"{column} = %s")
                params.append(value)
        rows = self._conn().execute(
            f"SELECT {', '.join(_COLUMNS)} FROM items WHERE {' AND '.join(clauses)} "
            "ORDER BY path, ordinal",
            params,
        )
        return [dict(zip(_COLUMNS, values, strict=True)) for values in rows]

    def count(self) -> int:
        row = (
            self._conn()
            .execute("SELECT count(*) FROM items WHERE agent = %s", (self.agent,))
            .fetchone()
        )
        return int(row[0]) if row else 0


def _count(cursor: Any) -> int:
    """``vector_cache.SIZE_SQL``'s answer."""
    row = cursor.fetchone()
    return int(row[0]) if row else 0


def _by_id(cursor: Any) -> dict[int, dict[str, Any]]:
    found = {}
    for values in cursor.fetchall():
        row = dict(zip(_COLUMNS, values, strict=True))
        found[int(row["id"])] = row
    return found


def postgres_index(
    root: Path,
    manifest: Manifest,
    db: Database,
    *,
    embedder: Embedder | None,
    clock: Clock,
    agent: str | None = None,
    lock: AbstractContextManager[object] | None = None,
    on_notice: Callable[[Notice], None] | None = None,
    files: Files | None = None,
) -> Index:
    """The real ``Index`` (sync, and through it ``index.search``) over the folder at
    ``root`` (or over ``files``, a ``PgFiles``: then nothing is read from disk), its rows
    in ``db`` as agent ``agent`` (the manifest's unless given)."""
    rows = PgIndex(db, agent or manifest.agent, embedder=embedder)
    return Index(
        root, manifest, embedder=embedder, clock=clock, lock=lock, on_notice=on_notice,
        rows=rows, files=files,
    )  # fmt: skip
