"""The ``Files`` seam on both backends: on disk (``LocalFiles``) and in a real PostgreSQL
(``PgFiles``), with what only the database does (one transaction per lock, across
connections and processes) tested on it alone."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from memdir.errors import LockTimeout
from memdir.storage import Files, VersionConflict
from memdir.storage.local import LocalFiles
from memdir.storage.postgres.db import Database
from memdir.storage.postgres.files import PgFiles

ODD_BYTES = [
    b"",
    b"# Notebook\r\n\r\n## task\r\nline one\r\nline two\r\n",
    b"caf\xc3\xa9 and a stray \xff\xfe byte, no newline at the end",
    b"\x00binary\x00\n" * 3,
    "emoji \U0001f9e0 and CJK \u8a18\u61b6\n".encode(),
]


@pytest.fixture(params=["local", "postgres"])
def files(request: pytest.FixtureRequest, tmp_path: Path) -> Files:
    if request.param == "local":
        return LocalFiles(tmp_path / "mem")
    db: Database = request.getfixturevalue("pg_db")
    return PgFiles(db, "agent-a")


def test_files_fulfil_the_protocol(files: Files) -> None:
    assert isinstance(files, Files)


@pytest.mark.parametrize("data", ODD_BYTES)
def test_exact_bytes_round_trip(files: Files, data: bytes) -> None:
    stat = files.write("notes/odd.md", data)
    assert files.read("notes/odd.md") == data
    assert stat.size == len(data)
    again = files.stat("notes/odd.md")
    assert (
        again is not None
        and again.sha256 == stat.sha256 == __import__("hashlib").sha256(data).hexdigest()
    )


def test_a_write_replaces_the_file_whole_and_moves_the_version_on(files: Files) -> None:
    first = files.write("NOTEBOOK.md", b"old text that is rather long\n")
    second = files.write("NOTEBOOK.md", b"new\n")
    third = files.write("NOTEBOOK.md", b"new\n")
    assert files.read("NOTEBOOK.md") == b"new\n"
    assert first.version < second.version < third.version


def test_a_stale_version_is_a_conflict_and_writes_nothing(files: Files) -> None:
    read = files.write("knowledge.md", b"v1\n")
    files.write("knowledge.md", b"v2 by someone else\n")
    with pytest.raises(VersionConflict) as caught:
        files.write("knowledge.md", b"v2 by me\n", expected_version=read.version)
    assert caught.value.expected == read.version
    assert files.read("knowledge.md") == b"v2 by someone else\n"
    current = files.stat("knowledge.md")
    assert current is not None
    files.write("knowledge.md", b"v3\n", expected_version=current.version)
    assert files.read("knowledge.md") == b"v3\n"


def test_expected_version_zero_creates_only(files: Files) -> None:
    files.write("state.md", b"mine\n", expected_version=0)
    with pytest.raises(VersionConflict):
        files.write("state.md", b"theirs\n", expected_version=0)
    assert files.read("state.md") == b"mine\n"


def test_list_stat_remove_rename(files: Files) -> None:
    files.write("journal/2026-11-30.md", b"a\n")
    files.write("journal/2026-12-01.md", b"bb\n")
    files.write("journal_x.md", b"not in journal/\n")
    files.write("NOTEBOOK.md", b"n\n")
    assert [s.path for s in files.list("journal/")] == [
        "journal/2026-11-30.md",
        "journal/2026-12-01.md",
    ]
    assert [s.size for s in files.list("journal/")] == [2, 3]
    moved = files.rename("journal/2026-11-30.md", "archive/journal/2026-11-30.md")
    assert files.read("journal/2026-11-30.md") is None
    assert files.read("archive/journal/2026-11-30.md") == b"a\n"
    assert moved.path == "archive/journal/2026-11-30.md"
    assert files.remove("NOTEBOOK.md") is True
    assert files.remove("NOTEBOOK.md") is False
    assert files.stat("NOTEBOOK.md") is None and files.read("NOTEBOOK.md") is None


def test_append_adds_at_the_end(files: Files) -> None:
    files.append("sessions/s1.jsonl", b'{"id": 1}\n')
    stat = files.append("sessions/s1.jsonl", b'{"id": 2}\r\n')
    assert files.read("sessions/s1.jsonl") == b'{"id": 1}\n{"id": 2}\r\n'
    assert stat.size == 21
    assert stat.sha256 == __import__("hashlib").sha256(b'{"id": 1}\n{"id": 2}\r\n').hexdigest()


def test_paths_outside_the_folder_are_refused(files: Files) -> None:
    for bad in ("../escape.md", "/etc/passwd", "a/../../b.md"):
        with pytest.raises(ValueError):
            files.write(bad, b"x")


def _hammer(files: Files, path: str, writer: str, times: int) -> None:
    for n in range(times):
        with files.lock:
            current = files.read(path) or b""
            files.write(path, current + f"{writer} {n}\n".encode())


def test_writers_in_threads_under_the_lock_lose_nothing(files: Files) -> None:
    threads = [
        threading.Thread(target=_hammer, args=(files, "log.md", f"t{i}", 15)) for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = (files.read("log.md") or b"").decode().splitlines()
    assert sorted(lines) == sorted(f"t{i} {n}" for i in range(4) for n in range(15))


# -- PostgreSQL only ------------------------------------------------------------


def test_versions_count_writes(pg_db: Database) -> None:
    files = PgFiles(pg_db, "agent-a")
    assert [files.write("a.md", b"x").version for _ in range(3)] == [1, 2, 3]
    assert files.append("a.md", b"y").version == 4
    files.remove("a.md")
    assert files.write("a.md", b"again").version == 1


def test_agents_do_not_see_each_others_files(pg_db: Database) -> None:
    PgFiles(pg_db, "agent-a").write("NOTEBOOK.md", b"a's\n")
    other = PgFiles(pg_db, "agent-b")
    assert other.read("NOTEBOOK.md") is None
    assert other.list() == []


def test_what_a_lock_wrote_commits_together_or_not_at_all(pg_db: Database) -> None:
    files = PgFiles(pg_db, "agent-a")
    files.write("knowledge.md", b"before\n")
    with pytest.raises(RuntimeError), files.lock:
        files.write("knowledge.md", b"after\n")
        files.write("archive/knowledge/2026-11.md", b"kept\n")
        assert files.read("knowledge.md") == b"after\n"  # re-read under the lock sees it
        raise RuntimeError("killed mid-write")
    assert files.read("knowledge.md") == b"before\n"
    assert files.read("archive/knowledge/2026-11.md") is None


def test_a_nested_block_that_raises_rolls_back_only_its_own_writes(pg_db: Database) -> None:
    files = PgFiles(pg_db, "agent-a")
    with files.lock:
        files.write("a.md", b"kept\n")
        with pytest.raises(ValueError), files.lock:
            files.write("b.md", b"refused\n")
            raise ValueError("a refusal")
        files.write("c.md", b"kept too\n")
    assert [s.path for s in files.list()] == ["a.md", "c.md"]


def test_other_connections_see_a_write_only_once_committed(pg_db: Database, pg_url: str) -> None:
    files = PgFiles(pg_db, "agent-a")
    schema = pg_db.schema
    with psycopg.connect(pg_url, autocommit=True) as other:
        with files.lock:
            files.write("NOTEBOOK.md", b"new\n")
            row = other.execute(f"SELECT count(*) FROM {schema}.files").fetchone()
            assert row == (0,)
        row = other.execute(f"SELECT data FROM {schema}.files").fetchone()
        assert row is not None and bytes(row[0]) == b"new\n"


def test_a_lock_held_elsewhere_times_out(pg_db: Database, pg_url: str) -> None:
    files = PgFiles(pg_db, "agent-a")
    files.lock.timeout = 0.2
    with psycopg.connect(pg_url) as other:
        other.execute("SELECT pg_advisory_xact_lock(%s)", (files.lock.key,))
        with pytest.raises(LockTimeout):
            files.write("a.md", b"x")
        other.rollback()
    files.write("a.md", b"x")  # free again
    assert files.read("a.md") == b"x"


_WRITER = """
import sys
from memdir.storage.postgres.db import Database
from memdir.storage.postgres.files import PgFiles
url, schema, name = sys.argv[1:4]
db = Database(url, schema=schema)
files = PgFiles(db, "agent-a")
for n in range(10):
    with files.lock:
        current = files.read("log.md") or b""
        files.write("log.md", current + f"{name} {n}\\n".encode())
db.close()
"""


def test_writers_in_two_processes_lose_nothing(pg_db: Database, pg_url: str) -> None:
    env = {**os.environ}
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, pg_url, pg_db.schema, name], env=env)
        for name in ("p1", "p2")
    ]
    assert [proc.wait(timeout=120) for proc in procs] == [0, 0]
    lines = (PgFiles(pg_db, "agent-a").read("log.md") or b"").decode().splitlines()
    assert sorted(lines) == sorted(f"{p} {n}" for p in ("p1", "p2") for n in range(10))


def test_an_append_to_a_large_file_keeps_every_byte_and_counts_the_write(pg_db: Database) -> None:
    import hashlib

    files = PgFiles(pg_db, "agent-a")
    # 3 MB of lines, CRLF and bytes that are not UTF-8 among them: past TOAST's threshold
    base = b"".join(b'{"n": %d, "text": "caf\xc3\xa9 \xff line"}\r\n' % n for n in range(75_000))
    first = files.write("sessions/long.jsonl", base)
    added = [b'{"n": "a"}\n', b"\x00\xfe no newline", b"\r\nlast\n"]
    stats = [files.append("sessions/long.jsonl", chunk) for chunk in added]
    whole = base + b"".join(added)
    assert files.read("sessions/long.jsonl") == whole
    assert [s.version for s in stats] == [first.version + 1, first.version + 2, first.version + 3]
    assert stats[-1].size == len(whole) and stats[-1].sha256 == hashlib.sha256(whole).hexdigest()
    assert files.stat("sessions/long.jsonl") == stats[-1]
    # the row itself: its size column and its bytes agree
    conn = pg_db.reader()
    row = conn.execute(
        "SELECT size, length(data), sha256 FROM files WHERE agent = %s AND path = %s",
        ("agent-a", "sessions/long.jsonl"),
    ).fetchone()
    assert row == (len(whole), len(whole), hashlib.sha256(whole).hexdigest())


def test_appends_from_two_connections_are_all_there_once(pg_db: Database, pg_url: str) -> None:
    import hashlib

    other_db = Database(pg_url, schema=pg_db.schema)  # connections of its own
    try:
        writers = [PgFiles(pg_db, "agent-a"), PgFiles(other_db, "agent-a")]

        def append(files: PgFiles, name: str) -> None:
            for n in range(25):
                files.append("sessions/shared.jsonl", f"{name} {n}\n".encode())

        threads = [
            threading.Thread(target=append, args=(files, f"w{i}"))
            for i, files in enumerate(writers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        data = writers[0].read("sessions/shared.jsonl") or b""
        lines = data.decode().splitlines()
        assert sorted(lines) == sorted(f"w{i} {n}" for i in range(2) for n in range(25))
        stat = writers[1].stat("sessions/shared.jsonl")
        assert stat is not None
        assert (stat.version, stat.size) == (50, len(data))
        assert stat.sha256 == hashlib.sha256(data).hexdigest()
    finally:
        other_db.close()


def test_two_schemas_of_a_fresh_database_both_migrate(pg_url: str) -> None:
    """The first migration creates ``vector`` in ``public`` (not in its own schema), so a
    schema per tenant in the same database finds its type too."""
    import secrets

    from psycopg.conninfo import make_conninfo

    name = f"t_fresh_{secrets.token_hex(4)}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # no extension in it yet
    url = make_conninfo(pg_url, dbname=name)
    try:
        for schema in ("tenant_a", "tenant_b"):
            db = Database(url, schema=schema)
            try:
                assert PgFiles(db, "alice").write("a.md", schema.encode()).version == 1
            finally:
                db.close()
        with psycopg.connect(url) as conn:
            where = conn.execute(
                "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()
        assert where == ("public",)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
