"""Moving a memory folder between a database and a folder on disk, byte for byte.

- ``export_agent(url, agent, dir)`` writes every file of the agent as its exact bytes
  (each with its modification time) and records in ``dir/.memdir/export.json`` which
  version of each it wrote (``EXPORT_FILE``): the base a later push is checked against.
- ``push(url, agent, dir)`` puts the folder back: a file whose bytes differ from the
  database's replaces it, a file the export had and the folder no longer has is
  removed; all of it under the agent's lock in one transaction, each write with the
  version it must replace (``Files.write(expected_version=...)``), the index told in
  the same transaction. A file changed in the database since the export (or, with no
  export, one the database holds with other bytes) is a conflict: every conflict is
  listed and nothing is written, unless ``force``. The export record is then brought
  up to date, so the folder can be edited and pushed again.

What is copied: every file under the folder but ``.memdir/`` (the index and history
are not files in the database; they are rebuilt or kept there) and ``.git/``.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdir.config import MANIFEST_NAME, STATE_DIR, parse_manifest
from memdir.errors import MemdirError
from memdir.files.atomic import atomic_write
from memdir.files.temps import TMP_SUFFIX
from memdir.paths import resolved
from memdir.storage.agents import database
from memdir.storage.postgres.backend import PgStorage, redact
from memdir.storage.postgres.db import Database
from memdir.storage.postgres.files import PgFiles
from memdir.storage.postgres.index import PgIndex
from memdir.storage.seam import VersionConflict
from memdir.textutil import plural

EXPORT_FILE = "export.json"
EXPORT_FORMAT = "memdir-export-1"
_SKIPPED = (STATE_DIR, ".git")
# a push of this many files into an agent that has some refreshes the planner's statistics
ANALYZE_AFTER_FILES = 200


class PushConflict(MemdirError):
    """Files changed in the database since the export; nothing was pushed."""

    def __init__(self, agent: str, conflicts: list[str]) -> None:
        self.conflicts = conflicts
        listed = ", ".join(conflicts[:20]) + (" ..." if len(conflicts) > 20 else "")
        super().__init__(
            f"{plural(len(conflicts), 'file')} of agent {agent!r} changed in the database since "
            f"this folder was exported, and nothing was pushed: {listed}. Export again and redo "
            "the edits, or pass --force to replace them with this folder's"
        )


@dataclass
class TransferReport:
    agent: str
    folder: Path
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    conflicts: list[str] = field(default_factory=list)
    """replaced anyway (``force``)"""

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "folder": str(self.folder), "written": self.written,
                "removed": self.removed, "unchanged": self.unchanged,
                "conflicts": self.conflicts}  # fmt: skip


def local_files(folder: Path) -> dict[str, Path]:
    """Every file to copy under ``folder`` (``.memdir/``, ``.git/`` and temp files aside)."""
    found: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        if here == folder:
            dirnames[:] = [d for d in dirnames if d not in _SKIPPED]
        dirnames.sort()
        for name in sorted(filenames):
            if TMP_SUFFIX in name:
                continue
            path = here / name
            if path.is_file():
                found[path.relative_to(folder).as_posix()] = path
    return dict(sorted(found.items()))


def _record(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / STATE_DIR / EXPORT_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == EXPORT_FORMAT else None


def _write_record(folder: Path, storage: PgStorage, versions: dict[str, tuple[int, str]]) -> None:
    record = {
        "format": EXPORT_FORMAT,
        "database": redact(storage.db.url),
        "schema": storage.db.schema,
        "agent": storage.agent,
        "files": {path: {"version": v, "sha256": h} for path, (v, h) in sorted(versions.items())},
    }
    atomic_write(folder / STATE_DIR / EXPORT_FILE, json.dumps(record, indent=1) + "\n")


def export_agent(
    url: str, agent: str, folder: str | Path, *, schema: str = "memdir"
) -> TransferReport:
    """Write agent ``agent``'s files into ``folder`` (see the module)."""
    root = resolved(Path(folder).expanduser())
    storage = PgStorage(database(url, schema), agent)
    try:
        files = storage.files()
        if files.stamp(MANIFEST_NAME) is None:
            raise MemdirError(f"the database has no agent {agent!r} ({storage.where})")
        previous = _record(root)
        if previous is None and root.exists() and any(p.name != ".git" for p in root.iterdir()):
            raise MemdirError(  # a fresh git repository (`git init DIR`) is taken as empty
                f"{root} is not empty and holds no export of {agent!r}; export into a new folder"
            )
        if previous is not None and previous.get("agent") != agent:
            raise MemdirError(f"{root} holds an export of agent {previous.get('agent')!r}")
        report = TransferReport(agent, root)
        versions: dict[str, tuple[int, str]] = {}
        with files.lock:  # one consistent state of every file
            stats = files.list()
            for stat in stats:
                data = files.read(stat.path)
                assert data is not None
                target = root / stat.path
                if target.is_file() and target.read_bytes() == data:
                    report.unchanged += 1
                else:
                    atomic_write(target, data)
                    report.written.append(stat.path)
                os.utime(target, ns=(stat.mtime_ns, stat.mtime_ns))
                versions[stat.path] = (stat.version, stat.sha256)
        gone = set((previous or {}).get("files", {})) - set(versions)
        for path in sorted(gone):  # removed from the database since the last export
            if (root / path).is_file():
                (root / path).unlink()
                report.removed.append(path)
        _write_record(root, storage, versions)
        return report
    finally:
        storage.close()


def push(
    url: str,
    agent: str,
    folder: str | Path,
    *,
    force: bool = False,
    schema: str = "memdir",
    create: bool = True,
    keep_existing: bool = False,
) -> TransferReport:
    """Put ``folder`` into agent ``agent`` (see the module); ``PushConflict`` lists what
    changed in the database since the export (nothing written) unless ``force``.
    ``create``: an agent not in the database yet is made from the folder (it needs a
    memdir.toml). ``keep_existing``: files only the database has are kept even when the
    export had them (``init_agent --force``)."""
    from memdir.memory import Memory

    root = resolved(Path(folder).expanduser())
    found = local_files(root)
    if MANIFEST_NAME not in found:
        raise MemdirError(f"{root} has no {MANIFEST_NAME}: it is not a memory folder")
    manifest_text = found[MANIFEST_NAME].read_bytes().decode("utf-8", "replace")
    manifest = parse_manifest(manifest_text, found[MANIFEST_NAME])
    record = _record(root)
    exported: dict[str, Any] = {}
    if record is not None and record.get("agent") == agent:
        exported = dict(record.get("files", {}))
    storage = PgStorage(database(url, schema), agent)
    report = TransferReport(agent, root)
    try:
        files = storage._files
        is_new = files.stamp(MANIFEST_NAME) is None
        if not create and is_new:
            raise MemdirError(f"the database has no agent {agent!r} ({storage.where})")
        with files.lock:
            plan, conflicts = _plan(files, found, exported, keep_existing)
            if conflicts and not force:
                raise PushConflict(agent, conflicts)
            report.conflicts = conflicts
            changes: list[tuple[str, str]] = []
            for path, data, expected in plan:
                if data is None:
                    files.remove(path, expected_version=None if force else expected)
                    report.removed.append(path)
                    changes.append((path, ""))
                    continue
                mtime = found[path].stat().st_mtime_ns
                try:
                    files.write(path, data, expected_version=None if force else expected,
                                mtime_ns=mtime)  # fmt: skip
                except VersionConflict as exc:
                    raise PushConflict(agent, [exc.path]) from exc
                report.written.append(path)
                changes.append((path, data.decode("utf-8", "surrogateescape")))
            report.unchanged = len(found) - len([p for p, d, _ in plan if d is not None])
            memory = Memory(storage.scratch, manifest, storage=storage)
            try:
                index = memory.index
                rows = index.rows
                if changes and isinstance(rows, PgIndex):
                    # each new text embedded before its row is inserted: the push
                    # leaves the agent searchable by meaning, every row written once
                    with rows.bulk(index.embedder):
                        memory.files_changed(changes)
                elif changes:
                    memory.files_changed(changes)
                index.ensure_vectors()  # texts an earlier push left without a vector
            finally:
                memory.close()  # closes the storage too
            versions = _pushed(files, found, exported)
        _write_record(root, storage, versions)
        if is_new or len(report.written) + len(report.removed) >= ANALYZE_AFTER_FILES:
            refresh_statistics(storage.db)
        return report
    finally:
        storage.close()


def refresh_statistics(db: Database) -> None:
    """``ANALYZE`` the tables a push fills, after its commit and outside the agent's lock.

    Until PostgreSQL's statistics count a newly pushed agent's rows, the planner takes
    the agent for one row and reads every item of it where an index would do (the
    keyword query: 15-19 ms against 0.5-1.5 ms after, bench/RESULTS.md). ANALYZE reads a
    bounded sample (300 x the statistics target rows), so its cost does not grow with
    the database; autovacuum would get there too, minutes later."""
    conn = db.connect()
    try:
        conn.execute("ANALYZE items, index_files, files")
    finally:
        conn.close()


def _pushed(
    files: PgFiles, found: dict[str, Path], exported: dict[str, Any]
) -> dict[str, tuple[int, str]]:
    """The export record after a push: a local file the database now holds as it is
    gets the database's version; one left stale (not edited here, changed there) keeps
    the version it was exported at, so a later edit of it is still a conflict."""
    stats = {s.path: s for s in files.list()}
    versions: dict[str, tuple[int, str]] = {}
    for path, local in found.items():
        stat = stats.get(path)
        if stat is not None and stat.sha256 == hashlib.sha256(local.read_bytes()).hexdigest():
            versions[path] = (stat.version, stat.sha256)
        elif path in exported:
            versions[path] = (int(exported[path]["version"]), str(exported[path]["sha256"]))
    return versions


def _plan(
    files: PgFiles, found: dict[str, Path], exported: dict[str, Any], keep_existing: bool
) -> tuple[list[tuple[str, bytes | None, int | None]], list[str]]:
    """(path, new bytes or None to remove, the version it must replace) of every change,
    and the paths in conflict."""
    plan: list[tuple[str, bytes | None, int | None]] = []
    conflicts: list[str] = []
    for path, local in found.items():
        data = local.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        base = exported.get(path)
        if base is not None and base.get("sha256") == digest:
            continue  # not edited since the export: the database's version stays
        stat = files.stat(path)
        if stat is not None and stat.sha256 == digest:
            continue
        if base is not None:
            if stat is None or stat.version != int(base["version"]):
                conflicts.append(path)
        elif stat is not None:
            conflicts.append(path)  # the database has other bytes, never exported here
        plan.append((path, data, stat.version if stat is not None else 0))
    if not keep_existing:
        for path, base in exported.items():
            if path in found:
                continue
            stat = files.stat(path)
            if stat is None:
                continue
            if stat.version != int(base["version"]):
                conflicts.append(path)
            plan.append((path, None, stat.version))
    return plan, sorted(conflicts)
