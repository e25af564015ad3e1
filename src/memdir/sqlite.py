"""SQLite plumbing shared by the index and the activity history.

- ``connect``: WAL, a busy timeout, foreign keys, autocommit (transactions are explicit).
- ``transaction``: ``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` when the block raises.
- ``migrate``: named, ordered schema steps, each in its own transaction, recorded in
  a ``migrations`` table; two processes opening a fresh database apply each once.
- ``run_script``: several statements inside the caller's transaction
  (``executescript`` would commit it first).

Damaged files. A database file can be truncated, overwritten, have a page zeroed
by a failing disk, or have a schema its migrations cannot read. Nothing checks for
that on the happy path; the owners (``Index``, ``History``) catch
``sqlite3.DatabaseError`` where they open and use a connection, and ask here:

- ``is_damage``: the error a damaged file gives (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``):
  conclusive. ``is_suspect``: a missing table or column, which a damaged schema gives
  but so would a bug: ``problem`` decides (``PRAGMA quick_check`` and the schema
  against the one the migrations build, in memory). ``was_moved``: another process
  moved the file away under this connection: reconnect, do not move anything.
- ``mended``: run an operation, and once more after the owner mended the file (only a
  thread's outermost call mends).
- ``move_aside``: rename the file with its ``-wal``/``-shm``/``-journal`` to
  ``<name>.corrupt-<UTC stamp>`` (the sidecars keep SQLite's suffixes, so the pair
  still opens together); ``moved_aside`` lists them (``folders_aside``: the folders
  ``memdir doctor --repair`` moved aside from where a database goes, the same way).
  Callers hold the folder lock and check ``file_id`` first, so two processes never
  move each other's fresh file.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from memdir.errors import MemdirError

Migration = Callable[[sqlite3.Connection], None]
log = logging.getLogger("memdir")

SQLITE_CORRUPT = 11
SQLITE_CANTOPEN = 14
SQLITE_NOTADB = 26
SQLITE_READONLY_DBMOVED = 1032  # SQLITE_READONLY | (4 << 8)
SIDECARS = ("-wal", "-shm", "-journal")
CORRUPT_MARK = ".corrupt-"
_SUSPECT = ("no such table", "no such column", "has no column named", "malformed database")


class DatabaseDamaged(MemdirError):
    """A derived database is damaged and could not be moved aside (a read-only folder);
    the message says which and what to do."""


def connect(path: Path, migrations: Sequence[tuple[str, Migration]]) -> sqlite3.Connection:
    """Open (creating if need be) the database at ``path`` with its schema up to date."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():  # SQLite would say only "unable to open database file"
        raise DatabaseDamaged(
            f"{path} is a folder, not a database: move it away (`memdir doctor --repair` "
            "moves it aside, keeping what is in it), and memdir makes a new one"
        )
    file_id(path)  # a loop of links there: said so (SQLite: "unable to open database file")
    db = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA foreign_keys = ON")
        migrate(db, migrations)
    except BaseException:
        db.close()  # a damaged file: the caller moves it aside, with nothing left open on it
        raise
    return db


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, or ``ROLLBACK`` if the block raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        # SQLite has already rolled back after some errors (a corrupt page among them);
        # a failed ROLLBACK must not hide the error that caused it.
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def run_script(db: sqlite3.Connection, script: str) -> None:
    """Execute each statement of ``script`` inside the caller's transaction."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"incomplete SQL statement: {statement.strip()[:60]}")


def migrate(db: sqlite3.Connection, migrations: Sequence[tuple[str, Migration]]) -> list[str]:
    """Apply the migrations not yet recorded, in order; return their names."""
    db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    applied = {row[0] for row in db.execute("SELECT name FROM migrations")}
    done = []
    for name, step in migrations:
        if name in applied:
            continue
        with transaction(db):
            if db.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchone():
                continue  # another process applied it while we waited for the lock
            step(db)
            db.execute(
                "INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                (name, datetime.now(UTC).isoformat(timespec="seconds")),
            )
            done.append(name)
    return done


# -- damaged files ---------------------------------------------------------------


def _code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code if isinstance(code, int) else None


def is_damage(exc: BaseException) -> bool:
    """True for the errors only a damaged file gives (malformed, not a database)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = _code(exc)
    if code is not None:
        return code & 0xFF in (SQLITE_CORRUPT, SQLITE_NOTADB)
    text = str(exc)
    return "malformed" in text or "file is not a database" in text


def is_suspect(exc: BaseException) -> bool:
    """True for errors a damaged schema gives (but a bug could too): check with ``problem``."""
    return isinstance(exc, sqlite3.DatabaseError) and any(part in str(exc) for part in _SUSPECT)


def was_moved(exc: BaseException) -> bool:
    """True when the file was renamed or deleted under this connection (another process
    moved a damaged file aside): reconnect to the path."""
    return isinstance(exc, sqlite3.OperationalError) and _code(exc) == SQLITE_READONLY_DBMOVED


MOVED = "moved away by another process"


def damage_reason(
    exc: BaseException,
    db: sqlite3.Connection | None,
    path: Path,
    opened: tuple[int, int] | None,
    migrations: Sequence[tuple[str, Migration]],
) -> str | None:
    """Why ``exc`` means the file at ``path`` (opened as ``opened``, its ``file_id``) is
    damaged, ``MOVED`` if another process has already replaced it, or None when it is
    sound and ``exc`` is some other error (locked, full, a bug: let it through)."""
    if opened is not None and (was_moved(exc) or file_id(path) != opened):
        return MOVED
    if is_damage(exc):
        return str(exc)
    if is_suspect(exc):
        return problem(db, migrations) if db is not None else check_file(path, migrations)
    return None


T = TypeVar("T")


def mended(
    guards: threading.local,
    operation: Callable[[], T],
    recover: Callable[[sqlite3.DatabaseError], bool],
    first: Callable[[], None] | None = None,
) -> T:
    """``operation()``; if it raises ``sqlite3.DatabaseError`` and ``recover(exc)`` says
    a sound file is open now, ``operation()`` once more. Only a thread's outermost call
    (its depth kept in ``guards``) mends, and only it runs ``first`` (a check before the
    operation; damage it finds mends the same way): an inner one lets the error go up
    to it, so mending never happens while an outer call holds a lock it needs."""
    depth = getattr(guards, "depth", 0)
    guards.depth = depth + 1
    try:
        if not depth and first is not None:
            first()
        return operation()
    except sqlite3.DatabaseError as exc:
        if depth or not recover(exc):
            raise
    finally:
        guards.depth = depth
    return operation()


def file_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path``, None if there is none."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # else "[Errno 40] Too many levels of symbolic links"
            raise DatabaseDamaged(_looped(path)) from None
        raise
    return stat.st_dev, stat.st_ino


def looped(path: Path) -> bool:
    """Whether ``path`` is a loop of links (a link that leads back to itself): no file
    can be there until the link is removed (``memdir doctor --repair`` removes it)."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


LOOPED = "a loop of links, not a database"
"""what ``check_file`` says of a loop of links where a database goes"""

FOLDER = "a folder, not a database"
"""what ``check_file`` says of a folder where a database goes"""


def _looped(path: Path) -> str:
    return (
        f"{path} is a loop of links, not a database: remove the link "
        "(`memdir doctor --repair` does), and memdir makes a new one"
    )


Schema = dict[tuple[str, str], frozenset[str]]


def _schema(db: sqlite3.Connection) -> Schema:
    """(type, name) -> column names (empty for indexes and triggers) of every object."""
    found: Schema = {}
    for kind, name in db.execute("SELECT type, name FROM sqlite_master").fetchall():
        columns: frozenset[str] = frozenset()
        if kind == "table":
            columns = frozenset(
                row[1] for row in db.execute(f'PRAGMA table_info("{name}")').fetchall()
            )
        found[(kind, name)] = columns
    return found


@functools.lru_cache(maxsize=8)
def _expected(migrations: tuple[tuple[str, Migration], ...]) -> tuple[tuple[str, Schema], ...]:
    """The schema after each migration (objects, and columns of tables), built in memory
    once. A migration may drop or rebuild what an earlier one made."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    steps: list[tuple[str, Schema]] = []
    try:
        for name, step in migrations:
            migrate(db, [(name, step)])
            steps.append((name, _schema(db)))
    finally:
        db.close()
    return tuple(steps)


def problem(
    db: sqlite3.Connection, migrations: Sequence[tuple[str, Migration]], *, quick: bool = True
) -> str | None:
    """What is wrong with the database ``db`` is connected to, or None if nothing is:
    ``PRAGMA quick_check`` (unless ``quick=False``), then every table, column, index and
    trigger that the migrations recorded as applied leave, the last of them as it left
    the schema (a migration may rebuild a table). An empty file is sound (the
    next ``connect`` builds it); so is one an older memdir made (``connect`` migrates it)."""
    if quick:
        try:
            rows = [str(row[0]) for row in db.execute("PRAGMA quick_check(5)").fetchall()]
        except sqlite3.DatabaseError as exc:  # some damage stops the check itself
            rows = [str(exc)]
        if rows != ["ok"]:
            first = " ".join(rows[0].replace("*** in database main ***", "").split())
            more = f" (and {len(rows) - 1} more)" if len(rows) > 1 else ""
            return f"quick_check: {first[:160]}{more}"
    try:
        have = _schema(db)
        if not have:
            return None
        applied = {row[0] for row in db.execute("SELECT name FROM migrations").fetchall()}
    except sqlite3.DatabaseError as exc:
        return str(exc)
    steps = [made for name, made in _expected(tuple(migrations)) if name in applied]
    if not steps:
        return None
    for (kind, obj), columns in steps[-1].items():  # as the last migration applied left it
        if (kind, obj) not in have:
            return f"the schema has no {kind} {obj}"
        lacking = sorted(columns - have[(kind, obj)])
        if lacking:
            return f"table {obj} has no column {', '.join(lacking)}"
    return None


def check_file(path: Path, migrations: Sequence[tuple[str, Migration]]) -> str | None:
    """``problem`` for the file at ``path``, read through a connection of its own that
    writes nothing (None when the file is sound or absent)."""
    if looped(path):
        return LOOPED
    if path.is_dir():
        return FOLDER
    if not path.is_file():
        return None
    uri = f"{path.resolve().as_uri()}?mode=ro"
    db = sqlite3.connect(uri, uri=True, timeout=30.0)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.OperationalError as exc:
        db.close()
        if (_code(exc) or 0) & 0xFF != SQLITE_CANTOPEN:
            return None  # busy or locked for 30 s: nothing can be said, so say nothing
        # A read-only folder cannot get the -shm file a WAL database needs: read the
        # file as it is (no process can be writing it there).
        db = sqlite3.connect(f"{uri}&immutable=1", uri=True, timeout=30.0)
    except sqlite3.DatabaseError as exc:
        db.close()
        return str(exc)
    with contextlib.closing(db):
        return problem(db, migrations)


def stamp(moment: datetime) -> str:
    """``20261130T100000Z``: the UTC time in a moved-aside file's name."""
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def move_aside(path: Path, moment: datetime) -> Path:
    """Rename ``path`` (and its sidecars) to ``<name>.corrupt-<stamp>``; return the new path.

    Call under the folder lock after checking ``file_id``. A second move in the same
    second gets ``-2``, ``-3``... A missing file moves nothing and returns the name it
    would have had."""
    base = f"{path.name}{CORRUPT_MARK}{stamp(moment)}"
    target = path.with_name(base)
    number = 1
    while any(target.with_name(target.name + s).exists() for s in ("", *SIDECARS)):
        number += 1
        target = path.with_name(f"{base}-{number}")
    for suffix in SIDECARS:  # the sidecars first: a crash between leaves no orphan WAL
        with contextlib.suppress(FileNotFoundError):
            os.rename(path.with_name(path.name + suffix), target.with_name(target.name + suffix))
    with contextlib.suppress(FileNotFoundError):
        os.rename(path, target)
    return target


def set_aside(
    path: Path,
    reason: str,
    opened: tuple[int, int] | None,
    moment: datetime,
    lock: AbstractContextManager[object] | None,
) -> Path | None:
    """Move the damaged file at ``path`` aside under ``lock``, unless another process
    already has (its ``file_id`` is no longer ``opened``); the new path, or None.

    Raises ``DatabaseDamaged`` when it cannot be moved (a read-only folder)."""
    try:
        with lock if lock is not None else contextlib.nullcontext():
            if reason == MOVED or file_id(path) != opened:
                return None
            moved = move_aside(path, moment)
    except (MemdirError, OSError) as exc:
        raise DatabaseDamaged(
            f"{path} is damaged ({reason}) and could not be moved aside ({exc}); "
            "move it away by hand and memdir starts a fresh one"
        ) from exc
    log.warning("%s was damaged (%s); moved aside to %s", path, reason, moved)
    return moved


def moved_aside(path: Path) -> list[Path]:
    """The damaged copies of ``path`` moved aside, oldest first (sidecars left out)."""
    if not path.parent.is_dir():
        return []
    return sorted(
        found
        for found in path.parent.glob(f"{path.name}{CORRUPT_MARK}*")
        if not found.name.endswith(SIDECARS) and found.is_file()
    )


def folders_aside(path: Path) -> list[Path]:
    """The folders that stood where ``path`` goes, moved aside (``move_aside``) by
    ``memdir doctor --repair``, oldest first: memdir never deletes them."""
    if not path.parent.is_dir():
        return []
    return sorted(
        found
        for found in path.parent.glob(f"{path.name}{CORRUPT_MARK}*")
        if found.is_dir() and not found.is_symlink()
    )


def remove_with_sidecars(path: Path) -> None:
    for suffix in ("", *SIDECARS):
        with contextlib.suppress(FileNotFoundError):
            path.with_name(path.name + suffix).unlink()


def relative(path: Path, root: Path) -> str:
    """``path`` as the person sees it from the memory folder."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def disk_refused(exc: sqlite3.OperationalError) -> bool:
    """SQLite's way of saying the disk is full or cannot be written."""
    message = str(exc).lower()
    return "full" in message or "readonly" in message or "read-only" in message
