"""Which items' vectors changed, per agent and version: what the vectors in memory catch up from.

``item_versions`` holds a version per agent and ``item_log`` the ids of the items whose
vector each version changed (migration ``006``); a process holding an agent's vectors
(``vector_cache``) reads the version at each search and, when it moved, the current
vector of each id logged since the one it holds.

- Written by the write path, in the write's own transaction, so the bump commits or
  rolls back with it. Under the folder lock (every file's write, a bulk job, a push,
  a reindex) the statements that change vectors (the insert of new rows, the
  deletes, new vectors) return the ids, and ``BUMP_SQL`` logs them all at one version
  just before the commit (``FolderLock.before_commit``): one statement a transaction,
  none when no vector changed (placements rewritten, rows with no vector yet). New
  vectors stored outside the lock (``ensure_vectors`` in a search) bump in their own
  statement (``logged``).
- The version row's lock, taken by the bump and held to the commit, orders versions
  as their commits: a reader that sees version V sees every change up to V.
- No deadlock between the two kinds of writer of one agent's vectors. A locked write
  takes the folder's advisory lock, then ``items`` rows (those it deletes, moves or
  gives a vector; its inserts no one else sees), ``index_files`` and ``index_stats``
  rows, and last the version row (then ``item_log`` rows), in the pipeline of its
  commit: once it has the version row it waits for nothing more. A store outside the
  lock is one statement: it locks the rows of its texts that no transaction holds
  and passes over the others (``FOR UPDATE SKIP LOCKED``: a locked write's, stored by
  a later search), then takes the version row (``bumped`` reads every changed row
  first), then ``item_log`` rows, and commits. So a store waits only for the version
  row, whose holder waits for nothing more; a locked write waits for a store's rows
  at most while that one statement runs, and holds no version row while it waits.
  A store that waited for a row
  while holding others was a deadlock (the locked write wanting one of them next),
  which PostgreSQL broke by failing one side after a second
  (tests/test_storage_pg_vector_race.py found it).
- The last ``KEEP`` versions of an agent are kept (trimmed at one bump in
  ``TRIM_EVERY``); a process older than that loads the agent whole (``clear`` moves
  the version ``KEEP`` on: every holder reloads).
"""

from __future__ import annotations

from collections.abc import Iterable

from memdir.storage.postgres.db import Connection

KEEP = 1000
"""versions of an agent's ``item_log`` kept: a process whose vectors are older reloads"""
TRIM_EVERY = 64
"""the log is trimmed (to ``KEEP`` versions) by one bump in this many: the delete cost a
one-vector store 1.4 ms at each (bench/RESULTS.md)"""
_TRIM = f"AND b.version %% {TRIM_EVERY} = 0 AND l.version <= b.version - {KEEP}"

BUMP_SQL = (
    "WITH bumped AS (INSERT INTO item_versions AS v (agent, version) "
    "VALUES (%(agent)s, %(step)s) ON CONFLICT (agent) DO UPDATE "
    "SET version = v.version + %(step)s RETURNING version), "
    "trimmed AS (DELETE FROM item_log AS l USING bumped AS b "
    f"WHERE l.agent = %(agent)s {_TRIM}), "
    "noted AS (INSERT INTO item_log (agent, version, item_id) "
    "SELECT %(agent)s, b.version, u.id FROM bumped AS b CROSS JOIN "
    "unnest(string_to_array(%(ids)s, ',')::bigint[]) AS u(id)) "
    "SELECT version FROM bumped"
)
"""the agent's version moved on by ``step`` and ``ids`` (one string, ``,`` between:
a list of ints is dumped element by element) logged at it"""


def bump(conn: Connection, agent: str, ids: Iterable[int], *, whole: bool = False) -> None:
    """``BUMP_SQL``: ``ids`` logged at the agent's next version, or (``whole``) the
    version moved past every holder's log (they load the agent whole)."""
    step = KEEP if whole else 1
    conn.execute(
        BUMP_SQL, {"agent": agent, "step": step, "ids": "" if whole else ",".join(map(str, ids))}
    )


def logged(change: str) -> str:
    """``change`` (an UPDATE of ``items AS i`` that gives rows a vector, no RETURNING)
    made to bump its agent's version and log the ids it changed, in that statement
    (the one write of vectors outside the folder lock; ``change`` locks its rows with
    ``SKIP LOCKED``, see the module): the bump comes after the rows are locked and the
    statement commits at once, so the version row's lock is held no longer than a
    locked write's. It answers each changed row's id and vector key (the rows passed
    over are not among them)."""
    return (
        f"WITH changed AS ({change} RETURNING i.id, i.agent, i.vector_key), "
        "bumped AS (INSERT INTO item_versions AS v (agent, version) "
        "SELECT DISTINCT agent, 1 FROM changed "
        "ON CONFLICT (agent) DO UPDATE SET version = v.version + 1 RETURNING agent, version), "
        "trimmed AS (DELETE FROM item_log AS l USING bumped AS b "
        f"WHERE l.agent = b.agent {_TRIM}), "
        "noted AS (INSERT INTO item_log (agent, version, item_id) "
        "SELECT b.agent, b.version, c.id FROM changed AS c JOIN bumped AS b USING (agent)) "
        "SELECT id, vector_key FROM changed"
    )
