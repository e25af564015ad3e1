"""Bulk writes into the PostgreSQL backend: a push of a whole folder and its vectors,
against SQLite's ``reindex`` of the same folder and a bare INSERT of the same rows.

    .venv/bin/python bench/pg_bulk.py [--sizes 2000,20000] [--agents-before 2]

For each size, one folder of journal files (ten ``##`` sections each: N items are
N/10 files, bench/scale.py's seeded synthetic text) is written on disk; the
database (pgserver, started here) already holds ``--agents-before`` agents of the
same size, as a team's database does when one more agent moves in. Then, each
timed on its own, in this order, with the ``hashing`` embedder (no model to load):

- ``sqlite reindex``: ``memory.reindex()`` on disk (the rows, then every vector): the
  single-machine figure a push is held to;
- ``floor insert``: the same rows, each with its vector, sent by COPY into a table
  of the same columns with no index, no trigger and no generated column: what any
  bulk write of these rows costs this server;
- ``push``: ``storage.transfer.push`` of the folder into a new agent (the rows, and
  the vectors where the tree makes them in the push);
- ``embed after push``: ``memory.index.ensure_vectors()`` on the agent: what is left
  to make after the push (0 when the push made them all);
- ``pg reindex``: ``memory.reindex()`` of the agent in the database (``memdir reindex
  --agent``): every row rebuilt, every vector kept by content;
- ``pg re-embed``: every vector replaced (the model id changed), ``ensure_vectors``.

Printed: seconds and milliseconds per item of each, each as a ratio to SQLite's
reindex and to the floor measured in the same run, and the load average. Run from
any tree (its ``src`` first on ``PYTHONPATH``): before and after a change.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.conninfo import make_conninfo
from scale import Corpus, write_journal

import memdir


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def start_postgres(base: Path) -> tuple[Any, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        server = pgserver.get_server(base / "pgdata", cleanup_mode="stop")
    url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE DATABASE bench")
    return server, make_conninfo(url, dbname="bench")


def folder_of(home: Path, name: str, items: int, seed: int) -> Path:
    folder = home / name
    memdir.init(folder)
    write_journal(folder, Corpus(seed), max(items // 10, 1))
    return folder


def floor_insert(url: str, memory: memdir.Memory) -> float:
    """COPY the folder's rows (as SQLite holds them, with their vectors) into a bare
    table: no index, no generated column; seconds."""
    db = memory.index.db
    embedder = memory.index.embedder
    assert embedder is not None
    vectors = dict(
        db.execute("SELECT vector_key, vector FROM vectors WHERE model = ?", (embedder.id,))
    )
    rows = db.execute(
        "SELECT path, anchor, heading, body, meta, tags, vector_key FROM items"
    ).fetchall()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET search_path = memdir, public")  # where the vector type is
        register_vector(conn)
        conn.execute(
            "CREATE TEMP TABLE bare (agent TEXT, path TEXT, anchor TEXT, heading TEXT, "
            "body TEXT, meta TEXT, tags TEXT, vector_key TEXT, embedding vector)"
        )
        began = time.perf_counter()
        statement = (
            "COPY bare (agent, path, anchor, heading, body, meta, tags, vector_key, "
            "embedding) FROM STDIN (FORMAT BINARY)"
        )
        with conn.transaction(), conn.cursor() as cur, cur.copy(statement) as copy:
            copy.set_types(["text"] * 8 + ["vector"])
            for row in rows:
                copy.write_row(("floor", *row, np.frombuffer(vectors[row[6]], dtype=np.float32)))
        return time.perf_counter() - began


def timed(call: Any) -> float:
    began = time.perf_counter()
    call()
    return time.perf_counter() - began


def one_size(url: str, home: Path, items: int, before: int, seed: int) -> dict[str, Any]:
    from memdir.storage.agents import open_agent
    from memdir.storage.transfer import push

    for n in range(before):  # the database as a team's holds it before this agent
        other = folder_of(home, f"before-{items}-{n}", items, seed + 100 + n)
        push(url, f"before-{items}-{n}", other, force=True, create=True)
        with open_agent(url, f"before-{items}-{n}", embedder="hashing") as memory:
            memory.index.ensure_vectors()
    folder = folder_of(home, f"agent-{items}", items, seed)
    spent: dict[str, float] = {}
    with memdir.open(folder, embedder="hashing") as memory:
        spent["sqlite reindex"] = timed(memory.reindex)
        count = int(memory.index.db.execute("SELECT count(*) FROM items").fetchone()[0])
        spent["floor insert"] = floor_insert(url, memory)
    agent = f"agent-{items}"
    spent["push"] = timed(lambda: push(url, agent, folder, force=True, create=True))
    with open_agent(url, agent, embedder="hashing") as memory:
        left = memory.index.vector_counts()
        spent["embed after push"] = timed(memory.index.ensure_vectors)
        made = memory.index.vector_counts()
    spent["push + embed"] = spent["push"] + spent["embed after push"]
    with open_agent(url, agent, embedder="hashing") as memory:
        spent["pg reindex"] = timed(memory.reindex)
        after_reindex = memory.index.vector_counts()
    with psycopg.connect(url, autocommit=True) as conn:  # another model's vectors: all stale
        conn.execute("UPDATE memdir.items SET model = 'old-model' WHERE agent = %s", (agent,))
    with open_agent(url, agent, embedder="hashing") as memory:
        spent["pg re-embed"] = timed(memory.index.ensure_vectors)
        re_embedded = memory.index.vector_counts()
    sqlite, floor = spent["sqlite reindex"], spent["floor insert"]
    return {
        "items": count,
        "vectors after push (made, texts)": list(left),
        "vectors after embed": list(made),
        "vectors after pg reindex": list(after_reindex),
        "vectors after re-embed": list(re_embedded),
        "rows": {
            name: {
                "s": round(seconds, 2),
                "ms/item": round(seconds * 1000 / count, 3),
                "x sqlite reindex": round(seconds / sqlite, 2),
                "x floor": round(seconds / floor, 1),
            }
            for name, seconds in spent.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000,20000")
    parser.add_argument("--agents-before", type=int, default=2)
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memdir-bench-pgbulk-"))
    os.chmod(work, 0o777)  # pgserver, run as root, runs PostgreSQL as a user of its own
    home = work / "home"
    os.environ.update(MEMDIR_HOME=str(home), MEMDIR_EMBEDDER="hashing")
    pg, url = start_postgres(work)
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            log(f"size {size:,} ...")
            load = os.getloadavg()
            found = one_size(url, home, size, args.agents_before, args.seed)
            found["load average (1, 5, 15 min) before, after"] = [
                [round(x, 2) for x in load],
                [round(x, 2) for x in os.getloadavg()],
            ]
            print(f"size {size:,}: " + json.dumps(found["rows"]))
            print(json.dumps({k: v for k, v in found.items() if k != "rows"}))
            for name, row in found["rows"].items():
                print(
                    f"| {size:,} | {name} | {row['s']} | {row['ms/item']} | "
                    f"{row['x sqlite reindex']}x | {row['x floor']}x |"
                )
            sys.stdout.flush()
    finally:
        from memdir.storage.agents import close_databases

        close_databases()
        pg.cleanup()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
