"""The databases under ``.memdir``: what ``memdir doctor`` finds, what ``--repair`` does.

Findings (check "database"):
- the index or the history is damaged now (``PRAGMA quick_check`` and the schema
  against its migrations, through a connection that writes nothing), or a loop of
  links or a folder stands where it goes;
- a damaged index moved aside is still there (nothing in it is needed: the index
  was rebuilt from the files);
- a history was restarted: its damaged copy has not been salvaged yet (and how many
  activities can still be read from it), or it was salvaged and is kept until a
  person deletes it;
- a folder that stood where a database goes was moved aside: it is kept until a
  person looks at it and deletes it.

And (check "state") something other than a file where memdir keeps a derived file
it never reads back (``graph.json``): memdir goes on without it.

``repair`` does, without asking, what needs no judgement: a damaged index is moved
aside and rebuilt, and old moved-aside indexes are deleted; a damaged history is
moved aside and a fresh one started; a folder where either goes is moved aside the
same way (``<name>.corrupt-<UTC stamp>``, kept whole: memdir deletes no folder) and
the database made afresh; every moved-aside history not salvaged yet is
read back row by row (``memdir.maintain.salvage``), then the last backup copy
(``.memdir/backup/history.db``) fills in what the damaged file lost; files the index
has not seen are scanned; stale temp files are removed. It deletes no history: a
salvaged copy stays until a person removes it. Running it twice does nothing more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.config import STATE_DIR
from memdir.files.temps import remove_stale
from memdir.index.db import MIGRATIONS as INDEX_MIGRATIONS
from memdir.index.sync import INDEX_FILE
from memdir.maintain.graph import GRAPH_FILE, graph_dir
from memdir.maintain.salvage import count_readable, record, salvage_history
from memdir.sqlite import (
    CORRUPT_MARK,
    FOLDER,
    LOOPED,
    check_file,
    folders_aside,
    looped,
    move_aside,
    moved_aside,
    relative,
    remove_with_sidecars,
)
from memdir.stores.history import MIGRATIONS as HISTORY_MIGRATIONS
from memdir.stores.history import History, read_restarts

if TYPE_CHECKING:
    from pathlib import Path

    from memdir.memory import Memory

HISTORY_COPY = f"{STATE_DIR}/backup/history.db"

Problem = tuple[str, str, str]  # (check, path, message), as ``Finding`` takes them


def _index_path(memory: Memory) -> Path:
    return memory.root / STATE_DIR / INDEX_FILE


def _history_path(memory: Memory) -> Path | None:
    found = memory.manifest.layer_for("history")
    return memory.root / found[1].paths[0] if found is not None else None


def _when(path: Path) -> str:
    """The moment in a moved-aside file's name, as 2026-11-30 10:00 UTC."""
    stamp = path.name.rpartition(CORRUPT_MARK)[2][:16]
    if len(stamp) < 16:
        return stamp
    return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[9:11]}:{stamp[11:13]} UTC"


def index_problem(memory: Memory) -> str | None:
    """What is wrong with ``.memdir/index.db`` now, or None."""
    return check_file(_index_path(memory), INDEX_MIGRATIONS)


def database_problems(memory: Memory, index_damage: str | None) -> list[Problem]:
    """Every "database" finding (``index_damage``: what ``index_problem`` said)."""
    found: list[Problem] = []
    path = _index_path(memory)
    rel = relative(path, memory.root)
    why = index_damage
    if why == LOOPED:
        found.append(
            (
                "database",
                rel,
                f"{LOOPED}: searches stop until the link is removed; `memdir doctor "
                "--repair` removes it and rebuilds the index from the files",
            )
        )
    elif why == FOLDER:
        found.append(
            (
                "database",
                rel,
                f"{FOLDER}: searches stop until it is moved away; `memdir doctor --repair` "
                f"moves it aside to {path.name}{CORRUPT_MARK}<UTC stamp> (kept as it is) and "
                "rebuilds the index from the files",
            )
        )
    elif why is not None:
        found.append(
            (
                "database",
                rel,
                f"damaged ({why}): the next search moves it aside and rebuilds it from the "
                "files, or run `memdir doctor --repair`",
            )
        )
    for old in moved_aside(path):
        found.append(
            (
                "database",
                relative(old, memory.root),
                f"a damaged index moved aside on {_when(old)}; the index was rebuilt from the "
                "files and nothing in this file is needed: delete it, or run "
                "`memdir doctor --repair`",
            )
        )
    found += _folders_kept(memory, path)
    history = _history_path(memory)
    if history is not None:
        found += _history_problems(memory, history)
        found += _folders_kept(memory, history)
    graph = _graph_file(memory)
    if graph.exists() and not graph.is_file():
        found.append(
            (
                "state",
                relative(graph, memory.root),
                "not a file: memdir saves the vault's link graph here (derived, never read "
                "back) and goes on without it; move this away",
            )
        )
    return found


def _folders_kept(memory: Memory, path: Path) -> list[Problem]:
    """The folders ``--repair`` moved aside from where ``path`` goes: whatever they
    hold is a person's to judge, so each is reported until it is deleted."""
    return [
        (
            "database",
            relative(old, memory.root),
            f"a folder that stood where {path.name} goes, moved aside on {_when(old)} by "
            "`memdir doctor --repair`; memdir deletes no folder: look at what is in it, "
            "then delete it or move it away",
        )
        for old in folders_aside(path)
    ]


def _graph_file(memory: Memory) -> Path:
    """Where ``memory.graph()`` saves the link graph (``graph_dir``)."""
    if memory.manifest.layer_for("vault") is None:
        return memory.root / STATE_DIR / GRAPH_FILE
    return graph_dir(memory.vault, memory.root) / GRAPH_FILE


def _history_problems(memory: Memory, path: Path) -> list[Problem]:
    found: list[Problem] = []
    rel = relative(path, memory.root)
    why = check_file(path, HISTORY_MIGRATIONS)
    if why == LOOPED:
        found.append(
            (
                "database",
                rel,
                f"{LOOPED}: the history stops until the link is removed; `memdir doctor "
                "--repair` removes it and starts a fresh history (a loop holds nothing)",
            )
        )
        return found
    if why == FOLDER:
        found.append(
            (
                "database",
                rel,
                f"{FOLDER}: the history stops until it is moved away; `memdir doctor "
                f"--repair` moves it aside to {path.name}{CORRUPT_MARK}<UTC stamp> (kept as "
                "it is: a history is not derived, and memdir deletes no folder) and starts a "
                "fresh history",
            )
        )
    elif why is not None:
        found.append(
            (
                "database",
                rel,
                f"damaged ({why}): `memdir doctor --repair` moves it aside, starts a fresh "
                "history and recovers what it can from the damaged one",
            )
        )
    restarts = {r.moved_to: r for r in read_restarts(path)}
    for old in moved_aside(path):
        shown = relative(old, memory.root)
        restart = restarts.get(old.name)
        if restart is None or restart.salvaged_at is None:
            readable = count_readable(old)
            reason = f" ({restart.reason})" if restart is not None else ""
            what = (
                f"{readable} activities could be recovered with `memdir doctor --repair`"
                if readable
                else "no activity in it can be read; `sqlite3 FILE .recover` may find more"
            )
            found.append(
                (
                    "database",
                    shown,
                    f"history: moved aside a damaged {path.name} to {shown} on {_when(old)}"
                    f"{reason} and started a fresh one; {what}",
                )
            )
            continue
        tables = (restart.salvage or {}).get("tables", [])
        recovered = next((t["recovered"] for t in tables if t["table"] == "agent_activities"), 0)
        lost = sum(int(t["lost"]) for t in tables)
        found.append(
            (
                "database",
                shown,
                f"a damaged history kept after `memdir doctor --repair` recovered {recovered} "
                f"activities from it ({lost} rows could not be read); delete it once you no "
                f"longer need it (`sqlite3 {shown} .recover` may find more)",
            )
        )
    return found


def repair(memory: Memory) -> list[str]:
    """Do what needs no judgement (see the module docstring); one line per thing done.
    On a folder kept in PostgreSQL there is no SQLite file nor temp file to mend: it
    says so (PostgreSQL's own recovery stands in for these repairs)."""
    done: list[str] = []
    if memory.backend != "local":
        return [
            "nothing to repair here: the index, the history and the files are kept in "
            "PostgreSQL (repairs of SQLite files and temp files are for folders on disk)"
        ]
    with memory.lock:
        done += _repair_index(memory)
        history = _history_path(memory)
        if history is not None:
            done += _repair_history(memory, history)
        done += _remove_temp_files(memory)
    return done


def _unlooped(path: Path, rel: str, what: str) -> list[str]:
    """Remove a loop of links where a database goes: it leads to no file, so nothing is
    lost, and memdir makes the database afresh there."""
    if not looped(path):
        return []
    path.unlink()
    return [f"{rel} was a loop of links, not a database: removed the link; {what}"]


def _folder_aside(memory: Memory, path: Path) -> Path | None:
    """Move a folder where a database goes aside, as a damaged file is moved (the
    caller holds the folder lock); its new path, or None when there is none. Nothing in
    it is deleted: what a person put there is theirs to judge."""
    if looped(path) or not path.is_dir():
        return None
    return move_aside(path, memory.clock())


def _repair_index(memory: Memory) -> list[str]:
    path = _index_path(memory)
    rel = relative(path, memory.root)
    done = _unlooped(path, rel, "the index is rebuilt from the files")
    folder = _folder_aside(memory, path)
    if folder is not None:
        done.append(
            f"index: {rel} was {FOLDER}: moved it aside to {relative(folder, memory.root)} "
            "(kept as it was: memdir deletes no folder) and rebuilt the index from the files"
        )
    before = set(moved_aside(path))
    why = index_problem(memory)
    index = memory.index  # opening may already find the damage and mend it
    if why is not None and not set(moved_aside(path)) - before:
        index.mend(why)
    fresh = set(moved_aside(path)) - before
    for old in sorted(fresh):
        remove_with_sidecars(old)  # derived from the files: nothing in it is needed
        done.append(f"index: {rel} was damaged ({why}); rebuilt it from the files")
    report = memory.scan()
    if report.changed and not fresh and folder is None:
        done.append(
            f"index: caught up with {len(report.added) + len(report.updated)} changed and "
            f"{len(report.removed)} removed files"
        )
    for old in moved_aside(path):
        remove_with_sidecars(old)
        done.append(
            f"index: deleted {relative(old, memory.root)} (a damaged index moved aside on "
            f"{_when(old)}, rebuilt since; nothing in it was needed)"
        )
    return done


def _repair_history(memory: Memory, path: Path) -> list[str]:
    rel = relative(path, memory.root)
    done = _unlooped(path, rel, "a fresh history starts there")
    folder = _folder_aside(memory, path)
    if folder is not None:
        done.append(
            f"history: {rel} was {FOLDER}: moved it aside to {relative(folder, memory.root)} "
            "and started a fresh history; the folder is kept as it was (a history is not "
            "derived from the files, so memdir deletes nothing there): look at it, then "
            "delete it"
        )
    before = set(moved_aside(path))
    why = check_file(path, HISTORY_MIGRATIONS)
    history = memory.history  # opening may already find the damage and set it aside
    if not isinstance(history, History):  # kept in a database: nothing on disk to mend
        return done
    if why is not None and not set(moved_aside(path)) - before:
        history.mend(why)
    for old in sorted(set(moved_aside(path)) - before):
        done.append(
            f"history: {rel} was damaged ({why}); moved it aside to "
            f"{relative(old, memory.root)} and started a fresh one"
        )
    salvaged = {r.moved_to for r in history.restarts() if r.salvaged_at is not None}
    restarts = {r.moved_to: r for r in history.restarts()}
    fresh_salvage = False
    for old in moved_aside(path):
        if old.name in salvaged:
            continue
        report = salvage_history(history, old, label=relative(old, memory.root))
        reason = restarts[old.name].reason if old.name in restarts else why or "damaged"
        record(history, report, old.name, reason)
        fresh_salvage = True
        done.append(f"history: read back from {report.summary()}")
    copy = memory.root / HISTORY_COPY
    if fresh_salvage and copy.is_file() and copy.resolve() != path.resolve():
        report = salvage_history(history, copy, label=HISTORY_COPY)
        if report.recovered:
            done.append(f"history: filled in from the last backup, {report.summary()}")
    return done


def _remove_temp_files(memory: Memory) -> list[str]:
    mounts = set(memory.space.mounts.values())
    removed = remove_stale(memory._write_folders(), skip=mounts)
    return [
        f"temp-file: removed {relative(path, memory.root)} (left by an interrupted write)"
        for path in sorted(removed)
    ]
