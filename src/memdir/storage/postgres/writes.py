"""``PgIndex``'s write path: a file's rows from its text, many files' in bulk, vectors.

``IndexWrites`` diffs a file's items with its rows by (anchor, content hash), as
``index.sync`` does on SQLite, and writes them in the folder lock's transaction, so a
store's write commits its file and its rows together. Inside ``bulk`` (a push, a
reindex, a scan's batch, ``Memory.files_changed``) the new rows are held and sent
``bulk.FLUSH_ROWS`` at a time, each with its vector where one is known at insert
time; with an embedder, each new text is embedded just before its row is inserted
(docs/team.md, "Bulk writes"; short narrative items in their windows, whole files a
batch: ``window_vectors``), unless a search made its vector and could not store it
(``unstored``: it is taken from there). Vectors made later are one statement a batch.

Words are cut as FTS5's ``unicode61 remove_diacritics 2`` cuts them (letters and
digits, diacritics off, lower case) before PostgreSQL stems them (``memdir``
configuration: English Snowball, no stopwords). An item's text is cut at
``MAX_TOKENS`` tokens per column (a tsvector holds 1 MB at most).
"""

from __future__ import annotations

import contextlib
import re
import time
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, cast

from psycopg import sql

from memdir.config import Layer
from memdir.files.encoding import clean
from memdir.files.sections import Parsed
from memdir.index import windows
from memdir.index.embedders import Embedder, Vectors
from memdir.index.extract import Item, extract
from memdir.index.ranking import NARRATIVE_KINDS
from memdir.index.rows import FileState, file_hash, placement
from memdir.results import Progress
from memdir.storage.postgres import bulk, item_log, window_vectors
from memdir.storage.postgres.db import Connection, Database, Folder
from memdir.storage.postgres.unstored import Unstored
from memdir.storage.seam import Extracted
from memdir.timeutil import format_ts

MAX_TOKENS = 50_000
_DIFFED = (
    "id, anchor, content_hash, vector_key, ordinal, line_start, line_end, layer, tier, "
    "decay_from, relevance"
)
"""what ``_diff`` reads of a file's rows"""
EMBED_BATCH = 256
BUDGET_BATCH = 64  # under a time budget (a search): small batches, kept to closely
_TOKEN_RE = re.compile(r"[^\W_]+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """``text``'s words as FTS5's unicode61 tokenizer with ``remove_diacritics 2`` has them."""
    folded = unicodedata.normalize("NFKD", text.lower())
    plain = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return _TOKEN_RE.findall(plain)[:MAX_TOKENS]


def _placed(path: str, layer_name: str, layer: Layer, text: str) -> list[tuple[Item, Any]]:
    return [
        (item, placement(item, layer_name, layer))
        for item in extract(layer.store, path, clean(text))
    ]


class IndexWrites:
    """One agent's index rows written (``IndexRows``' write half); ``PgIndex`` reads."""

    def __init__(
        self,
        db: Database,
        agent: str,
        *,
        folder: Folder | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.folder = folder or Folder(db, agent)
        self.agent = agent
        self.embedder = embedder
        """the folder's embedder: ``reindex`` embeds each new text before it inserts it"""
        # a bulk job's inserts, held until FLUSH_ROWS or its end (``bulk``); only the
        # thread holding the folder lock touches them
        self._depth = 0
        self._embedding: Embedder | None = None
        self._pending: list[tuple[object, ...]] = []
        self._pending_paths: set[str] = set()
        self._carried: dict[str, tuple[object, str]] = {}
        # each held file's narrative items (embedded text, key) in file order, for the
        # windows a bulk job's embedder runs (``_flush``)
        self._entries: dict[str, list[tuple[str, str]]] = {}
        self._windows_checked = False  # the agent's window version (``_check_windows``)
        self._delta = (0, 0)  # a bulk job's change to index_stats, not yet written
        self._prefetched: dict[str, list[tuple[Any, ...]]] | None = None  # (refill)
        # ids whose vector the lock's transaction changed, logged at its commit
        self._changed: set[int] = set()
        self._changed_whole = False
        self._unstored = Unstored()  # vectors a search made and could not store
        # what this bulk block took from ``_unstored`` (model -> key -> vector): given back
        # if the block fails, as its rows are rolled back with them
        self._taken: dict[str, dict[str, Any]] = {}

    def _conn(self) -> Connection:
        return self.folder.conn()

    # -- writing rows ----------------------------------------------------------

    def write(self, state: FileState, parsed: Parsed | None = None) -> str:
        """``IndexRows.write``: the file's items extracted whole (``parsed`` is not
        needed: extraction reads the text) and diffed with its rows (``apply``)."""
        text = state.text
        digest = file_hash(text).hexdigest()
        with self._held():
            self._check_windows()
            conn = self.folder.lock.connection()
            row = self._indexed(conn, state.relpath)
            if row is not None and row[0] == digest and row[1] == state.layer_name:
                return self._touch(conn, state.relpath, state.mtime_ns, state.size)
            placed = _placed(state.relpath, state.layer_name, state.layer, text)
            return self._apply(
                conn, row, state.relpath, state.layer_name, state.layer.store, placed,
                mtime_ns=state.mtime_ns, size=state.size, digest=digest, force=False,
            )  # fmt: skip

    def _held(self) -> AbstractContextManager[object]:
        """The folder lock, or nothing more inside a ``bulk`` this thread holds it for: a
        file's write there needs no savepoint of its own (an exception ends the bulk)."""
        if self._depth > 0 and self.folder.lock.is_held:
            return contextlib.nullcontext()
        return self.folder.lock

    def _indexed(self, conn: Connection, path: str) -> tuple[Any, ...] | None:
        """(hash, layer) of ``path`` as last indexed, or None."""
        return conn.execute(
            "SELECT hash, layer FROM index_files WHERE agent = %s AND path = %s",
            (self.agent, path),
        ).fetchone()

    def _touch(self, conn: Connection, path: str, mtime_ns: int, size: int) -> str:
        conn.execute(
            "UPDATE index_files SET mtime_ns = %s, size = %s WHERE agent = %s AND path = %s",
            (mtime_ns, size, self.agent, path),
        )
        return "unchanged"

    def batch(self) -> AbstractContextManager[None]:
        """The folder lock: its transaction holds every write inside, and the new rows
        are sent a batch at a time (``bulk``, with no embedding)."""
        return self.bulk()

    @contextlib.contextmanager
    def bulk(self, embedder: Embedder | None = None) -> Iterator[None]:
        """Many files' rows written in the folder lock's transaction, their inserts sent
        ``bulk.FLUSH_ROWS`` at a time (and at the end), each row with its vector where
        one is known. With ``embedder``, every new text without a vector from it is
        embedded before its row is inserted (a push, a reindex: the row is written once,
        not inserted and then updated). An exception out of it drops what it held (the
        lock's savepoint rolls back what it sent)."""
        # what an enclosing bulk holds goes first, outside this block's savepoint: an
        # exception in here then drops only this block's rows, as the savepoint rolls
        # back only its writes
        self._flush()
        with self.folder.lock:
            previous, outer_taken = self._embedding, self._taken
            self._depth += 1
            self._taken = {}
            if embedder is not None:
                self._embedding = embedder
            try:
                yield
                self._flush()
            except BaseException:
                self._drop_pending()
                for model, vectors in self._taken.items():  # (their rows rolled back)
                    self._unstored.keep(model, vectors)
                self._taken = {}
                raise
            finally:
                self._depth -= 1
                self._embedding = previous
                for model, vectors in self._taken.items():  # the enclosing block's now
                    outer_taken.setdefault(model, {}).update(vectors)
                self._taken = outer_taken if self._depth else {}
                if self._depth == 0:
                    self._carried = {}

    def _drop_pending(self) -> None:
        self._pending = []
        self._pending_paths = set()
        self._entries = {}
        self._carried = {}
        self._delta = (0, 0)

    def _flush(self) -> None:
        """Insert the rows held, with the vectors known or made for them, and write the
        counts held."""
        if not self._pending and self._delta == (0, 0):
            return
        rows, carried, delta = self._pending, self._carried, self._delta
        entries, self._entries = self._entries, {}
        self._pending, self._pending_paths, self._delta = [], set(), (0, 0)
        conn = self.folder.lock.connection()
        if delta != (0, 0):
            depth, self._depth = self._depth, 0
            try:
                self._count(conn, *delta)
            finally:
                self._depth = depth
        if not rows:
            return
        embedder = self._embedding
        vectors = {key: found for key, found in carried.items()}
        if embedder is not None:
            texts: dict[str, str] = {}
            for row in rows:
                key = str(row[11])
                found = vectors.get(key)
                if key not in texts and (found is None or found[1] != embedder.id):
                    # heading, meta, body: the text ``ensure_vectors`` embeds
                    texts[key] = "\n".join(str(p) for p in (row[5], row[7], row[6]) if p)
            # what a search made for these texts and could not store (their rows were
            # held, by this write or another: ``unstored``) is not embedded again
            taken = self._unstored.take(embedder.id, list(texts))
            for key, vector in taken.items():
                texts.pop(key)
                vectors[key] = (vector, embedder.id)
            if taken and self._depth > 0:
                self._taken.setdefault(embedder.id, {}).update(taken)
            for key in bulk.keys_with_vectors(conn, self.agent, list(texts), embedder.id):
                texts.pop(key)
                vectors.pop(key, None)  # the agent's own vector from this embedder
            made = window_vectors.embed_held(
                conn, self.agent, embedder, rows, texts, vectors, entries, EMBED_BATCH
            )
        chosen = embedder or self.embedder
        prefer = chosen.id if chosen is not None else None
        self._vectors_changed(bulk.insert_items(conn, self.agent, rows, vectors, prefer))
        if embedder is not None:  # a window's items of rows kept, given a vector by its run
            made.difference_update(str(row[11]) for row in rows)
            others = [(key, vectors[key][0]) for key in sorted(made)]
            changed = bulk.store_vectors(conn, self.agent, embedder.id, others, locked=True)
            self._vectors_changed(item_id for item_id, _ in changed)

    def _vectors_changed(self, ids: Iterable[int], *, whole: bool = False) -> None:
        """Note ``ids`` (or, ``whole``, every item) as given or stripped of a vector by
        this write, for ``item_log.bump`` just before the lock's transaction commits."""
        noted = set(ids)
        if not noted and not whole:
            return
        if self.folder.lock.before_commit(f"item_log {id(self)}", self._log_vectors):
            self._changed, self._changed_whole = set(), False  # (a rolled-back write's)
        self._changed |= noted
        self._changed_whole = self._changed_whole or whole

    def _log_vectors(self, conn: Connection) -> None:
        changed, whole = self._changed, self._changed_whole
        self._changed, self._changed_whole = set(), False
        item_log.bump(conn, self.agent, sorted(changed), whole=whole)

    def refill(
        self,
        files: Iterable[Extracted],
        total: int,
        progress: Progress | None = None,
        *,
        prune_vectors: bool = False,
    ) -> None:
        """Every file's rows diffed afresh (even where its digest is the same: the
        extractor may have changed), the rows of files not among them dropped, in one
        transaction. An item whose text is kept keeps its vector (vectors live on the
        rows, one model each: ``ensure_vectors`` replaces another model's). A reindex
        (``prune_vectors``) embeds each new text with the folder's embedder before its row
        is inserted (``bulk``); a first scan leaves that to ``ensure_vectors``."""
        with self.bulk(self.embedder if prune_vectors else None):
            self._check_windows()
            conn = self.folder.lock.connection()
            seen: set[str] = set()
            done = 0
            # every file's rows read at once, not a lookup a file (each of which reads
            # every row of an agent the planner's statistics do not know yet)
            self._prefetched = {}
            for path, *row in conn.execute(
                f"SELECT path, {_DIFFED} FROM items WHERE agent = %s", (self.agent,)
            ):
                self._prefetched.setdefault(str(path), []).append(tuple(row))
            try:
                for done, found in enumerate(files, 1):
                    seen.add(found.path)
                    self.apply(
                        found.path, found.layer, found.store, found.items,
                        mtime_ns=found.mtime_ns, size=found.size, digest=found.digest,
                        force=True,
                    )  # fmt: skip
                    if progress is not None and (done % 500 == 0):
                        progress(done, total)
            finally:
                self._prefetched = None
            for path in set(self.file_states()) - seen:
                self.remove_file(path)
            self._flush()
            if prune_vectors:  # after the commit: inside, it holds a lock every
                # other agent's reindex would wait for until this one commits
                self.folder.lock.after_commit("ANALYZE items, index_files")
            if progress is not None:
                progress(done, total)

    def tidy(self) -> None:
        """Nothing to trim: PostgreSQL keeps no item log."""

    def file_states(self) -> dict[str, tuple[int, int, str]]:
        rows = self._conn().execute(
            "SELECT path, mtime_ns, size, layer FROM index_files WHERE agent = %s", (self.agent,)
        )
        return {str(p): (int(m), int(s), str(layer)) for p, m, s, layer in rows}

    def apply(
        self,
        path: str,
        layer_name: str,
        store: str,
        items: Sequence[tuple[Item, tuple[object, ...]]],
        *,
        mtime_ns: int,
        size: int,
        digest: str,
        force: bool = False,
    ) -> str:
        """The file's rows replaced by ``items`` (each with its placement), diffed by
        (anchor, content hash); 'unchanged' when the digest and layer are the same
        (unless ``force``)."""
        with self._held():
            self._check_windows()
            conn = self.folder.lock.connection()
            return self._apply(
                conn, self._indexed(conn, path), path, layer_name, store, items,
                mtime_ns=mtime_ns, size=size, digest=digest, force=force,
            )  # fmt: skip

    def _apply(
        self,
        conn: Connection,
        row: tuple[Any, ...] | None,
        path: str,
        layer_name: str,
        store: str,
        items: Sequence[tuple[Item, tuple[object, ...]]],
        *,
        mtime_ns: int,
        size: int,
        digest: str,
        force: bool,
    ) -> str:
        """``apply`` with the file's index row (``row``) read."""
        same = row is not None and row[0] == digest and row[1] == layer_name
        if same and not force:
            return self._touch(conn, path, mtime_ns, size)
        if path in self._pending_paths or len(self._pending) >= bulk.FLUSH_ROWS:
            self._flush()  # (a path written twice in a batch is diffed with its rows)
        # a file never indexed has no rows (they come and go with its index_files row):
        # a bulk job does not look (while an agent is new to the planner's statistics,
        # finding a path's rows reads every row of the agent: 7 ms at 10,000)
        self._diff(conn, path, items, look=row is not None or self._depth == 0)
        conn.execute(
            "INSERT INTO index_files (agent, path, layer, store, mtime_ns, size, hash) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (agent, path) DO UPDATE SET "
            "layer = excluded.layer, store = excluded.store, mtime_ns = excluded.mtime_ns, "
            "size = excluded.size, hash = excluded.hash",
            (self.agent, path, layer_name, store, mtime_ns, size, digest),
        )
        return "added" if row is None else "unchanged" if same else "updated"

    def _diff(
        self,
        conn: Connection,
        path: str,
        items: Sequence[tuple[Item, tuple[object, ...]]],
        *,
        look: bool = True,
    ) -> None:
        existing: dict[tuple[str, str, str], list[tuple[int, tuple[object, ...]]]] = {}
        found: Iterable[tuple[Any, ...]] = ()
        if look and self._prefetched is not None:
            found = self._prefetched.pop(path, [])
        elif look:
            found = conn.execute(
                f"SELECT {_DIFFED} FROM items WHERE agent = %s AND path = %s", (self.agent, path)
            )
        # a row kept is one of the same text whose window reads the same texts before it
        # (its key): an edit before a short item re-keys it as a rebuild would
        for item_id, anchor, content_hash, key, *where in found:
            existing.setdefault((anchor, content_hash, key), []).append((item_id, tuple(where)))
        keys = windows.file_keys([(i.kind, i.embed_text, placed[0]) for i, placed in items])
        inserts: list[tuple[object, ...]] = []
        updates: list[tuple[object, ...]] = []
        added_tokens = 0
        for (item, placed), key in zip(items, keys, strict=True):
            matches = existing.get((item.anchor, item.content_hash, key))
            if matches:
                item_id, old = matches.pop()
                if old != placed:
                    updates.append((*placed, item_id))
                continue
            row, count = self._row(path, item, placed, key)
            inserts.append(row)
            added_tokens += count
        if inserts and windows.embeds_windows(self._embedding):
            self._entries[path] = [
                (items[n][0].embed_text, keys[n])
                for n in sorted(range(len(items)), key=lambda n: cast(int, items[n][1][0]))
                if items[n][0].kind in NARRATIVE_KINDS
            ]
        stale = [item_id for rows in existing.values() for item_id, _ in rows]
        removed_tokens = 0
        carried: dict[str, tuple[object, str]] = {}
        if stale:
            gone = conn.execute(
                "DELETE FROM items WHERE agent = %s AND id = ANY(%s) "
                "RETURNING ntokens, vector_key, embedding, model, id, heading, meta, body",
                (self.agent, stale),
            ).fetchall()
            self._vectors_changed(int(row[4]) for row in gone if row[2] is not None)
            removed_tokens = sum(int(n) for n, *_ in gone)
            # a text moved or rewritten keeps its vector (inserted with it); in a bulk
            # job, also one moved to a file written later in it
            wanted = {str(row[11]) for row in inserts}
            carried = {
                str(key): (vector, str(model))
                for _, key, vector, model, *_ in gone
                if vector is not None and (self._depth > 0 or str(key) in wanted)
            }
            carried |= window_vectors.lone(self._embedding, [(r[2], r[3], *r[5:]) for r in gone])
        if updates:
            with conn.cursor() as cur:
                cur.executemany(
                    "UPDATE items SET ordinal = %s, line_start = %s, line_end = %s, layer = %s, "
                    "tier = %s, decay_from = %s, relevance = %s WHERE id = %s",
                    updates,
                )
        self._carried.update(carried)
        if inserts:
            self._pending.extend(inserts)
            self._pending_paths.add(path)
        if self._depth == 0:  # one file's write: its rows now
            self._flush()
            self._carried = {}
        if inserts or stale:
            self._count(conn, len(inserts) - len(stale), added_tokens - removed_tokens)

    def _count(self, conn: Connection, items: int, tokens: int) -> None:
        if self._depth > 0:  # a bulk job's counts are written once, with its rows
            self._delta = (self._delta[0] + items, self._delta[1] + tokens)
            return
        conn.execute(
            "INSERT INTO index_stats AS s (agent, items, tokens) VALUES (%s, %s, %s) "
            "ON CONFLICT (agent) DO UPDATE SET items = s.items + excluded.items, "
            "tokens = s.tokens + excluded.tokens",
            (self.agent, items, tokens),
        )

    def _row(
        self, path: str, item: Item, placed: tuple[object, ...], key: str
    ) -> tuple[tuple[object, ...], int]:
        tags = ",".join(item.tags)
        columns = [tokens(part) for part in (item.heading, tags, item.body, item.meta)]
        row = (
            self.agent, path, item.anchor, item.kind, item.title, item.heading, item.body,
            item.meta, tags, format_ts(item.date) if item.date else None, item.content_hash,
            key, *placed, sum(len(c) for c in columns),
            *(" ".join(c) for c in columns),
        )  # fmt: skip
        return row, sum(len(c) for c in columns)

    def remove_file(self, path: str) -> None:
        if path in self._pending_paths:
            self._flush()
        with self._held():
            conn = self.folder.lock.connection()
            gone = conn.execute(
                "DELETE FROM items WHERE agent = %s AND path = %s "
                "RETURNING ntokens, id, vector_key, embedding, model, heading, meta, body",
                (self.agent, path),
            ).fetchall()
            self._vectors_changed(int(row[1]) for row in gone if row[3] is not None)
            if self._depth > 0:  # in a bulk job, a text moved to a file written later keeps
                # its vector, as ``_diff`` carries a rewritten file's
                self._carried.update(
                    (str(key), (vector, str(model)))
                    for _, _, key, vector, model, *_ in gone
                    if vector is not None
                )
                self._carried |= window_vectors.lone(self._embedding, [row[3:] for row in gone])
            conn.execute(
                "DELETE FROM index_files WHERE agent = %s AND path = %s", (self.agent, path)
            )
            if gone:
                self._count(conn, -len(gone), -sum(int(n) for n, *_ in gone))

    def clear(self) -> None:
        with self.folder.lock:
            self._drop_pending()
            self._unstored.clear()  # (no row left to store them on)
            conn = self.folder.lock.connection()
            self._vectors_changed((), whole=True)
            for table in ("items", "index_files", "index_stats"):
                conn.execute(
                    sql.SQL("DELETE FROM {} WHERE agent = %s").format(sql.Identifier(table)),
                    (self.agent,),
                )

    # -- vectors ---------------------------------------------------------------

    def store_vectors(
        self, model: str, dim: int, vectors: Sequence[tuple[str, Vectors]]
    ) -> set[str]:
        """Give every item whose text has ``vector_key`` its vector from ``model``: one
        statement (``dim`` is the vectors' size; no index is built on it, see ``bulk``);
        the keys some row was given its vector for. Outside the folder lock
        (``Index.ensure_vectors`` does not take it) the one statement is its own
        transaction (no BEGIN and COMMIT of their own), and passes over the rows a
        locked write holds: their keys are not among those answered."""
        if not self.folder.lock.is_held:  # one statement, a transaction of its own
            # (autocommit), the agent's version bumped in it (``item_log.logged``)
            reader = self.folder.db.reader()
            changed = bulk.store_vectors(reader, self.agent, model, vectors, locked=False)
            return {key for _, key in changed}
        conn = self._conn()
        with conn.transaction():
            changed = bulk.store_vectors(conn, self.agent, model, vectors, locked=True)
            self._vectors_changed(item_id for item_id, _ in changed)
        return {key for _, key in changed}

    def ensure_vectors(
        self,
        embedder: Embedder,
        progress: Progress | None = None,
        *,
        seconds: float | None = None,
        limit: int | None = None,
    ) -> int:
        """Embed the texts with no vector from ``embedder`` (an item with another
        model's vector counts as none: it is replaced); how many texts were stored (a
        row a locked write holds is passed over: its text's vector is kept, ``unstored``,
        for the next call to store without embedding it again). A batch's keys are in
        file order (files in path order), and each window holding one of them is run
        once (``window_vectors``). With ``seconds``, stop after the batch that passes
        it; with ``limit``, after that many texts listed."""
        self._check_windows()
        conn = self._conn()
        done = 0
        listed = 0
        began = time.monotonic()
        size = EMBED_BATCH if seconds is None else BUDGET_BATCH
        after = window_vectors.START  # the items in file order, from where a batch ended
        while limit is None or listed < limit:
            batch = size if limit is None else min(size, limit - listed)
            rows, after = window_vectors.missing(conn, self.agent, embedder.id, after, batch)
            if not rows:
                break
            listed += len(rows)
            keys = [key for _, key, _ in rows]
            made = self._unstored.take(embedder.id, keys)
            todo = [(key, text) for _, key, text in rows if key not in made]
            if todo:
                paths = sorted({path for path, _, _ in rows})
                made.update(window_vectors.embed(conn, self.agent, embedder, todo, paths)[0])
            stored = self.store_vectors(embedder.id, embedder.dim, list(made.items()))
            if not self.folder.lock.is_held:  # (under it, a row not stored is gone)
                self._unstored.keep(embedder.id, {k: v for k, v in made.items() if k not in stored})
            done += len(stored)
            if progress is not None:
                progress(done, done)
            if seconds is not None and time.monotonic() - began >= seconds:
                break
        return done

    def _check_windows(self) -> None:
        """Once: the agent's items re-keyed if another window version made their keys
        (``window_vectors.check_version``; not by a process that may not write). Outside
        the folder lock (``ensure_vectors``) it is taken only if they need it."""
        if self._windows_checked or self.folder.lock.writable() is not None:
            return
        if not self.folder.lock.is_held and window_vectors.current(self._conn(), self.agent):
            self._windows_checked = True
            return
        with self._held():
            changed = window_vectors.check_version(self.folder.lock.connection(), self.agent)
            if changed:
                self._vectors_changed(changed)
        self._windows_checked = True

    def vector_counts(self, model: str) -> tuple[int, int]:
        row = (
            self._conn()
            .execute(
                "SELECT count(DISTINCT vector_key), count(DISTINCT vector_key) FILTER "
                "(WHERE model = %s) FROM items WHERE agent = %s",
                (model, self.agent),
            )
            .fetchone()
        )
        return (int(row[1]), int(row[0])) if row else (0, 0)

    def vectors_ready(self, model: str) -> bool:
        row = (
            self._conn()
            .execute(
                "SELECT 1 FROM items WHERE agent = %s AND model = %s LIMIT 1", (self.agent, model)
            )
            .fetchone()
        )
        return row is not None
