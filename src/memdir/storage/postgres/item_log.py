"""Which items' vectors changed, per agent and version: what the vectors in memory catch up from.

``item_versions`` holds a version per agent and ``item_log`` the ids of the items whose
vector each version changed (migration ``006``); a process holding an agent's vectors
(``vector_cache``) reads the version at each search and, when it moved, the current
vector of each id logged since the one it holds.

- Written by the write path, in the very statement that changes vectors (``logged``
  wraps it: an insert, a delete, a new vector), so the bump commits or rolls back with
  the write, a savepoint's included, and costs no round trip. Placements rewritten
  row by row (``_diff``'s updates) change no vector and write nothing here.
- The version row's lock, taken by the bump and held to the commit, orders versions
  as their commits: a reader that sees version V sees every change up to V.
- The last ``KEEP`` versions of an agent are kept; a process older than that loads the
  agent whole.
- Every statement that changes ``items``' vectors goes through ``logged``
  (``writes``, ``bulk``); one that did not would leave other processes' matrices
  stale until their next load, so a test asserts each write path bumps.
"""

from __future__ import annotations

from collections.abc import Sequence

KEEP = 1000
"""versions of an agent's ``item_log`` kept: a process whose vectors are older reloads"""


def logged(change: str, returning: Sequence[str] = (), *, table: str = "items") -> str:
    """``change`` (an INSERT, UPDATE or DELETE of ``items``, called ``table`` in it, with
    no RETURNING) made to bump its agent's version and log the ids of the rows it left
    with a vector (or deleted with one), in the same statement. It answers
    ``returning``'s columns of the changed rows, as ``change RETURNING ...`` would; with
    none, one row: how many rows changed."""
    back = "".join(f", {table}.{column}" for column in returning)
    answer = ", ".join(returning) if returning else "count(*)"
    return (
        f"WITH changed AS ({change} RETURNING {table}.id AS logged_id, "
        f"{table}.agent AS logged_agent, {table}.embedding IS NOT NULL AS logged{back}), "
        "bumped AS (INSERT INTO item_versions AS v (agent, version) "
        "SELECT DISTINCT logged_agent, 1 FROM changed WHERE logged "
        "ON CONFLICT (agent) DO UPDATE SET version = v.version + 1 RETURNING agent, version), "
        "trimmed AS (DELETE FROM item_log AS l USING bumped AS b "
        f"WHERE l.agent = b.agent AND l.version <= b.version - {KEEP}), "
        "noted AS (INSERT INTO item_log (agent, version, item_id) "
        "SELECT b.agent, b.version, c.logged_id FROM changed AS c "
        "JOIN bumped AS b ON b.agent = c.logged_agent WHERE c.logged) "
        f"SELECT {answer} FROM changed"
    )
