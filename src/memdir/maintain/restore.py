"""Putting a file back as it was: a dream's snapshot of knowledge.md, or a git version.

The dream keeps knowledge.md as it was before each run under ``archive/dreams/``
(``memdir.dream.cycle``); ``memdir backup`` commits the folder with git. A restore
writes one of those texts back through the same checks as any write (what text may
hold, no credential: ``stores.validate``), under the folder's lock, atomically,
and first keeps what the file holds now under ``archive/restored/`` (not indexed:
``.bak``), so a restore can itself be undone. The index follows in the same call.
A version identical to the file is refused (nothing to do), never a silent no-op.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from memdir.config import MANIFEST_NAME
from memdir.files.encoding import encode
from memdir.files.reader import resolve_inside
from memdir.maintain.backup import BackupError, _git
from memdir.results import WriteResult
from memdir.stores.base import Refusal, decode
from memdir.stores.validate import check_text
from memdir.timeutil import format_ts

if TYPE_CHECKING:
    from memdir.memory import Memory

SNAPSHOT_SUFFIX = ".knowledge.md.bak"
RESTORED_DIR = "restored"
_REV = re.compile(r"^[0-9a-f]{7,40}$")


@dataclass(frozen=True)
class Snapshot:
    path: str
    """relative to the folder, e.g. ``archive/dreams/2026-11-30T10-00-00Z.knowledge.md.bak``"""
    taken: datetime | None


@dataclass(frozen=True)
class Version:
    rev: str
    when: datetime
    message: str


def dream_snapshots(memory: Memory) -> list[Snapshot]:
    """knowledge.md as each dream found it, newest first (on any backend)."""
    folder = f"{memory.manifest.archive_dir()}/dreams"
    found = []
    for path in sorted(memory.files.paths(folder), reverse=True):
        name = path.rpartition("/")[2]
        if path.count("/") == folder.count("/") + 1 and name.endswith(SNAPSHOT_SUFFIX):
            found.append(Snapshot(path, _stamp_time(name.removesuffix(SNAPSHOT_SUFFIX))))
    return found


def _stamp_time(stamp: str) -> datetime | None:
    # format_ts with ':' made '-' for file names: 2026-11-30T10-00-00Z
    date, _, clock = stamp.partition("T")
    try:
        moment = datetime.fromisoformat(f"{date}T{clock.rstrip('Z').replace('-', ':')}")
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def snapshot_text(memory: Memory, snapshot: str) -> str | None:
    """The text of a dream snapshot named by its path, or None if it is not one."""
    for known in dream_snapshots(memory):
        if known.path == snapshot:
            return decode(memory.files.read(known.path))
    return None


def restore_snapshot(memory: Memory, snapshot: str) -> WriteResult:
    """Put knowledge.md back as the dream ``snapshot`` found it."""
    store = memory.knowledge.store
    text = snapshot_text(memory, snapshot)
    if text is None:
        return WriteResult.refused(store, f"no dream snapshot {snapshot!r}; nothing was written")
    return restore_file(memory, store, text, source=snapshot)


def is_git_folder(root: Path) -> bool:
    try:
        done = _git(root, "rev-parse", "--show-toplevel", check=False, lang_c=True)
    except BackupError:
        return False
    return done.returncode == 0 and Path(done.stdout.strip()).resolve() == root.resolve()


def versions(memory: Memory, relpath: str, limit: int = 50) -> list[Version]:
    """The commits that changed ``relpath``, newest first (empty without git)."""
    if not is_git_folder(memory.root):
        return []
    done = _git(
        memory.root,
        "log",
        f"-n{limit}",
        "--format=%H%x09%cI%x09%s",
        "--",
        relpath,
        check=False,
    )
    found = []
    for line in done.stdout.splitlines():
        rev, when, message = (line.split("\t", 2) + ["", ""])[:3]
        try:
            found.append(Version(rev, datetime.fromisoformat(when), message))
        except ValueError:
            continue
    return found


def version_text(memory: Memory, relpath: str, rev: str) -> str | None:
    """``relpath`` as commit ``rev`` holds it, or None (no such commit or file)."""
    if not _REV.match(rev) or not is_git_folder(memory.root):
        return None
    done = _git(memory.root, "show", f"{rev}:{relpath}", check=False)
    return done.stdout if done.returncode == 0 else None


def tracked_files(memory: Memory) -> list[str]:
    """The memory files git knows, for the history view (empty without git)."""
    if not is_git_folder(memory.root):
        return []
    done = _git(memory.root, "ls-files", check=False)
    return sorted(
        line
        for line in done.stdout.splitlines()
        if line.endswith((".md", ".jsonl"))
        and not any(part.startswith(".") for part in PurePosixPath(line).parts)
    )


def restore_version(memory: Memory, relpath: str, rev: str) -> WriteResult:
    """Put ``relpath`` back as commit ``rev`` holds it."""
    text = version_text(memory, relpath, rev)
    if text is None:
        return WriteResult.refused(
            relpath, f"git has no version {rev!r} of {relpath}; nothing was written"
        )
    return restore_file(memory, relpath, text, source=f"git {rev[:10]}")


def restore_file(memory: Memory, relpath: str, text: str, *, source: str) -> WriteResult:
    """Write ``text`` to ``relpath`` (see the module docstring)."""
    if memory.read_only is not None:
        return WriteResult.refused(relpath, f"this folder is read-only here: {memory.read_only}")
    inside = resolve_inside(memory.space, relpath)
    if isinstance(inside, str):
        return WriteResult.refused(relpath, f"{inside}; nothing was written")
    _, relpath = inside
    if relpath == MANIFEST_NAME:
        return WriteResult.refused(
            relpath,
            f"{MANIFEST_NAME} is not restored here (a process reading it would not see the "
            "change): check the version out with git, then restart; nothing was written",
        )
    try:
        check_text(text, "the restored text")
    except Refusal as refusal:
        return WriteResult.refused(relpath, refusal.reason)
    unwritable = memory.files.unwritable(relpath)
    if unwritable is not None:
        return WriteResult.refused(relpath, unwritable)
    with memory.lock:
        current = decode(memory.files.read(relpath))
        if current == text:
            return WriteResult.refused(
                relpath, f"{relpath} already holds the text of {source}; nothing changed"
            )
        notes = [f"restored from {source}"]
        kept = None
        writes = []
        if current:
            stamp = format_ts(memory.clock()).replace(":", "-")
            name = PurePosixPath(relpath).name
            kept = f"{memory.manifest.archive_dir()}/{RESTORED_DIR}/{stamp}.{name}.bak"
            writes.append((kept, encode(current)))
            notes.append(f"what it held before is kept in {kept}")
        writes.append((relpath, encode(text)))
        memory.files.write_all(writes)  # the copy first: never the file without it
        memory.files_changed([(relpath, text)])
    return WriteResult(ok=True, store=relpath, action="updated", archive=kept, notes=tuple(notes))
