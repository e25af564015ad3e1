"""``memdir backup``: commit the memory folder with git, "Daily backup: YYYY-MM-DD".

- A folder outside any git work tree gets ``git init`` first. A folder inside a
  larger repository commits only its own paths (``git commit -- .`` run from the
  folder), so whatever else the user has staged stays staged and uncommitted.
- Derived and transient files (``.memdir/lock``, ``index.db*``, the live
  ``history.db*``, SQLite ``-wal``/``-shm``/``-journal`` files, ``*.memdir-tmp``)
  are never committed: ``.memdir/.gitignore`` is written or repaired, anything
  derived that ``git add`` stages anyway is reset, and ``git commit`` carries the
  same paths as exclude pathspecs.
- ``.memdir/history.db`` may be written by another process while we run, so it
  is copied with SQLite's online backup API (a consistent snapshot) into
  ``.memdir/backup/history.db``, which is committed; the live file never is.
  The copy stays under ``.memdir/`` with memdir's other state, out of the way of
  layers, scans and the user's own folders.
- The folder lock is held while copying and committing; pushing happens after.
- Nothing to commit, no remote and a failed push are results, not errors; a
  missing git or a failing git command raises ``BackupError`` with git's words.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memdir.config import STATE_DIR
from memdir.errors import MemdirError
from memdir.files.atomic import TMP_SUFFIX, FolderLock, atomic_write
from memdir.paths import resolved

HISTORY_DB = f"{STATE_DIR}/history.db"
HISTORY_COPY = f"{STATE_DIR}/backup/history.db"
_SQLITE_SIDECARS = ("*.db-wal", "*.db-shm", "*.db-journal")
# Patterns for .memdir/.gitignore; "/history.db*" is anchored so the copy in backup/ is kept.
STATE_IGNORES = ("lock", "index.db*", f"*{TMP_SUFFIX}", "/history.db*", *_SQLITE_SIDECARS)
# The same files as pathspecs relative to the memory folder (git's default pathspec
# wildcards match across "/"), for when a .gitignore is missing or overridden.
DERIVED_PATHS = (
    *(f"{STATE_DIR}/{name}" for name in ("lock", "index.db*", *_SQLITE_SIDECARS)),
    f"{HISTORY_DB}*",
    f"*{TMP_SUFFIX}",
)
_SCOPE = (".", *(f":(exclude){path}" for path in DERIVED_PATHS))
_DEFAULT_IDENTITY = (("user.name", "memdir"), ("user.email", "memdir@localhost"))
PUSH_TIMEOUT_SECONDS = 300.0


class BackupError(MemdirError):
    """git is missing, or a git command failed; the message carries git's stderr."""


@dataclass
class BackupResult:
    committed: bool = False
    commit: str | None = None
    """the new commit's sha, None when nothing was committed"""
    message: str = ""
    """the commit message, ``Daily backup: YYYY-MM-DD``"""
    initialised: bool = False
    """True if this backup ran ``git init``"""
    pushed: bool | None = None
    """True pushed, False the push failed, None no push was asked for or possible"""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def backup(
    root: Path, *, now: datetime, push: bool = False, lock: FolderLock | None = None
) -> BackupResult:
    """Commit ``root`` with git as ``Daily backup: <date of now in UTC>``; push if asked."""
    root = resolved(Path(root).expanduser())
    if not root.is_dir():
        raise BackupError(f"{root} is not a folder; nothing to back up")
    moment = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    result = BackupResult(message=f"Daily backup: {moment.astimezone(UTC).date().isoformat()}")
    with lock if lock is not None else contextlib.nullcontext():
        _ensure_repo(root, result)
        _repair_gitignore(root, result.notes)
        _copy_history(root, result.notes)
        _commit(root, result)
    if push:
        _push(root, result)
    return result


def _git(
    root: Path, *args: str, check: bool = True, timeout: float | None = None, lang_c: bool = False
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    if lang_c:
        env["LC_ALL"] = "C"
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout,
        )
    except FileNotFoundError as exc:
        raise BackupError("git was not found on PATH; install git to back up") from exc
    if check and done.returncode != 0:
        command = " ".join(arg for arg in args if not arg.startswith(":(exclude)"))
        said = done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}"
        raise BackupError(f"`git {command}` failed in {root}: {said}")
    return done


def _ensure_repo(root: Path, result: BackupResult) -> None:
    found = _git(root, "rev-parse", "--show-toplevel", check=False, lang_c=True)
    if found.returncode == 0:
        top = Path(found.stdout.strip()).resolve()
        if top != root:
            result.notes.append(
                f"{root} is inside the repository at {top}; committed its files only"
            )
        return
    if "not a git repository" not in found.stderr:
        raise BackupError(f"`git rev-parse` failed in {root}: {found.stderr.strip()}")
    _git(root, "init", "-q")
    result.initialised = True
    result.notes.append(f"initialised a git repository in {root}")


def _repair_gitignore(root: Path, notes: list[str]) -> None:
    path = root / STATE_DIR / ".gitignore"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = "# memdir's derived and transient files\n"
    have = {line.strip() for line in text.splitlines()}
    missing = [pattern for pattern in STATE_IGNORES if pattern not in have]
    if missing:
        text = text if text.endswith("\n") else text + "\n"
        atomic_write(path, text + "".join(f"{pattern}\n" for pattern in missing))
        notes.append(f"{STATE_DIR}/.gitignore now lists {', '.join(missing)}")


def _copy_history(root: Path, notes: list[str]) -> None:
    """Snapshot the live history database with SQLite's online backup API."""
    live = root / HISTORY_DB
    if not live.is_file():
        return
    target = root / HISTORY_COPY
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}{TMP_SUFFIX}")
    tmp.unlink(missing_ok=True)
    try:
        source = sqlite3.connect(f"{live.as_uri()}?mode=rw", uri=True, timeout=30)
        with contextlib.closing(source), contextlib.closing(sqlite3.connect(tmp)) as copy:
            source.backup(copy)  # retries while a writer holds the database
            copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal
        os.replace(tmp, target)
    except sqlite3.Error as exc:  # the markdown still gets backed up
        notes.append(f"could not copy {HISTORY_DB} ({exc}); kept the previous copy")
    finally:
        tmp.unlink(missing_ok=True)


def _commit(root: Path, result: BackupResult) -> None:
    _git(root, "add", "-A", "--", ".")  # exclude pathspecs here would fail on ignored files
    _git(root, "reset", "-q", "--", *DERIVED_PATHS)  # unstage any that slipped in
    if (root / HISTORY_COPY).is_file():  # even if a .gitignore of the user's covers .memdir/
        _git(root, "add", "-f", "--", HISTORY_COPY)
    tracked = _git(root, "ls-files", "--", *DERIVED_PATHS).stdout.split()
    if tracked:
        result.notes.append(
            f"{', '.join(tracked)} tracked since an earlier commit; not updated (`git rm --cached`)"
        )
    staged = _git(root, "diff", "--cached", "--quiet", "--", *_SCOPE, check=False)
    if staged.returncode == 0:
        result.notes.append("nothing changed since the last backup; no commit made")
        return
    if staged.returncode != 1:
        raise BackupError(f"`git diff --cached` failed in {root}: {staged.stderr.strip()}")
    identity: list[str] = []
    for key, default in _DEFAULT_IDENTITY:  # only where the user has none of their own
        if not _git(root, "config", key, check=False).stdout.strip():
            identity += ["-c", f"{key}={default}"]
    _git(root, *identity, "commit", "-q", "-m", result.message, "--", *_SCOPE)
    result.committed = True
    result.commit = _git(root, "rev-parse", "HEAD").stdout.strip()


def _push(root: Path, result: BackupResult) -> None:
    remotes = _git(root, "remote").stdout.split()
    if not remotes:
        result.notes.append(
            "no git remote configured; nothing pushed (`git remote add origin URL`)"
        )
        return
    branch = _git(root, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()
    if not branch:
        result.notes.append("HEAD is detached; nothing pushed")
        return
    remote = _git(root, "config", f"branch.{branch}.remote", check=False).stdout.strip()
    merge = _git(root, "config", f"branch.{branch}.merge", check=False).stdout.strip()
    if remote in remotes:
        merge = merge or f"refs/heads/{branch}"
    elif "origin" in remotes:
        remote, merge = "origin", f"refs/heads/{branch}"
    else:
        result.notes.append(
            f"{branch} has no upstream and no remote is named origin "
            f"(remotes: {', '.join(remotes)}); nothing pushed"
        )
        return
    try:
        done = _git(
            root, "push", remote, f"HEAD:{merge}", check=False, timeout=PUSH_TIMEOUT_SECONDS
        )
    except subprocess.TimeoutExpired:
        result.pushed = False
        result.notes.append(f"git push to {remote} gave no answer in {PUSH_TIMEOUT_SECONDS:g}s")
        return
    result.pushed = done.returncode == 0
    if result.pushed:
        result.notes.append(f"pushed {branch} to {remote} ({merge})")
    else:
        result.notes.append(f"git push to {remote} failed: {done.stderr.strip()}")
