"""``memdir.maintain.backup``: real git, real SQLite, a global git config of the test's own."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import memdir
from memdir.maintain.backup import HISTORY_COPY, HISTORY_DB, BackupError, backup
from memdir.testing import FakeClock

DERIVED = {".memdir/index.db", ".memdir/index.db-wal", ".memdir/index.db-shm", ".memdir/lock"}
WRITER = """
import pathlib, sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
stop = pathlib.Path(sys.argv[2])
while not stop.exists():
    db.execute("INSERT INTO events (body) VALUES (?)", ("x" * 500,))
    time.sleep(0.0005)
"""


@pytest.fixture(autouse=True)
def git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A global git config of our own; no repository above tmp_path is ever seen."""
    config = tmp_path / "gitconfig"
    config.write_text(
        "[user]\n\tname = Tester\n\temail = tester@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    for name in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)
    return config


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def tracked(cwd: Path) -> set[str]:
    return set(git(cwd, "ls-files").splitlines())


def commits(cwd: Path) -> list[str]:
    return git(cwd, "log", "--format=%s").splitlines()


def make_history(folder: Path, rows: int = 10, journal: str = "wal") -> Path:
    path = folder / HISTORY_DB
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA journal_mode={journal}")
        db.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, body TEXT)")
        db.executemany("INSERT INTO events (body) VALUES (?)", [("seed",)] * rows)
    db.close()
    return path


def committed_history(folder: Path, tmp_path: Path) -> sqlite3.Connection:
    blob = subprocess.run(
        ["git", "show", f"HEAD:{HISTORY_COPY}"], cwd=folder, check=True, capture_output=True
    ).stdout
    copy = tmp_path / "restored.db"
    copy.write_bytes(blob)
    return sqlite3.connect(copy)


def test_first_backup_initialises_and_commits_the_memory_files(
    memory: memdir.Memory, clock: FakeClock
) -> None:
    memory.notebook.update("task", "Write the backup command")
    root = memory.root
    assert {path for path in DERIVED if (root / path).exists()} == DERIVED
    result = backup(root, now=clock(), lock=memory.lock)
    assert result.initialised and result.committed and result.pushed is None
    assert result.message == "Daily backup: 2026-11-30"
    assert result.commit == git(root, "rev-parse", "HEAD")
    assert commits(root) == ["Daily backup: 2026-11-30"]
    files = tracked(root)
    assert {"NOTEBOOK.md", "knowledge.md", "memdir.toml", ".memdir/.gitignore"} <= files
    assert not files & DERIVED
    assert git(root, "log", "-1", "--format=%ae") == "tester@example.com"  # the user's own
    assert git(root, "status", "--porcelain") == ""  # the derived files are ignored
    assert result.to_dict()["commit"] == result.commit


def test_missing_gitignore_is_rewritten_and_derived_files_stay_out(
    memory: memdir.Memory, clock: FakeClock
) -> None:
    ignore = memory.root / ".memdir" / ".gitignore"
    ignore.unlink()
    (memory.root / ".NOTEBOOK.md.1234.memdir-tmp").write_text("half")
    result = backup(memory.root, now=clock(), lock=memory.lock)
    assert result.committed
    assert "index.db*" in ignore.read_text().splitlines()
    assert not tracked(memory.root) & (DERIVED | {".NOTEBOOK.md.1234.memdir-tmp"})


def test_no_changes_no_commit_then_a_change_commits(
    memory: memdir.Memory, clock: FakeClock
) -> None:
    make_history(memory.root)
    first = backup(memory.root, now=clock(), lock=memory.lock)
    again = backup(memory.root, now=clock(), lock=memory.lock)
    assert not again.committed and again.commit is None and not again.initialised
    assert any("nothing changed" in note for note in again.notes)
    assert len(commits(memory.root)) == 1
    memory.notebook.update("task", "Something new")
    late = datetime(2026, 12, 1, 1, 30, tzinfo=timezone(timedelta(hours=3)))  # 22:30 UTC
    third = backup(memory.root, now=late, lock=memory.lock)
    assert third.committed and third.commit != first.commit
    assert commits(memory.root) == ["Daily backup: 2026-11-30"] * 2
    assert "NOTEBOOK.md" in git(memory.root, "show", "--name-only", "--format=", "HEAD")


@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_history_copy_is_consistent_while_another_process_writes(
    memory: memdir.Memory, clock: FakeClock, tmp_path: Path, journal: str
) -> None:
    live = make_history(memory.root, journal=journal)
    stop = tmp_path / "stop"

    def count() -> int:
        with sqlite3.connect(live, timeout=30) as db:
            found: int = db.execute("SELECT count(*) FROM events").fetchone()[0]
        db.close()
        return found

    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(live), str(stop)])
    try:
        deadline = time.monotonic() + 30
        while count() < 200 and time.monotonic() < deadline:
            time.sleep(0.01)
        before = count()
        result = backup(memory.root, now=clock(), lock=memory.lock)
        after = count()
    finally:
        stop.touch()
        writer.wait(timeout=30)
    assert before >= 200 and result.committed
    files = tracked(memory.root)
    assert HISTORY_COPY in files and HISTORY_DB not in files
    assert not any(name.startswith(f"{HISTORY_DB}-") for name in files)
    copy = committed_history(memory.root, tmp_path)
    assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert before <= copy.execute("SELECT count(*) FROM events").fetchone()[0] <= after
    assert copy.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    copy.close()


def test_push_to_a_bare_remote(memory: memdir.Memory, clock: FakeClock, tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "--bare", "-q", str(bare))
    backup(memory.root, now=clock(), lock=memory.lock)
    git(memory.root, "remote", "add", "origin", str(bare))
    memory.notebook.update("task", "Push it")
    result = backup(memory.root, now=clock(), push=True, lock=memory.lock)
    assert result.committed and result.pushed is True
    assert git(bare, "rev-parse", "refs/heads/main") == result.commit


def test_push_without_a_remote_is_a_note(memory: memdir.Memory, clock: FakeClock) -> None:
    result = backup(memory.root, now=clock(), push=True, lock=memory.lock)
    assert result.committed and result.pushed is None
    assert any("no git remote" in note for note in result.notes)


def test_failed_push_is_reported_not_raised(
    memory: memdir.Memory, clock: FakeClock, tmp_path: Path
) -> None:
    backup(memory.root, now=clock(), lock=memory.lock)
    git(memory.root, "remote", "add", "origin", str(tmp_path / "no-such-remote.git"))
    result = backup(memory.root, now=clock(), push=True, lock=memory.lock)
    assert not result.committed and result.pushed is False
    assert any("git push to origin failed" in note for note in result.notes)


def test_memory_folder_inside_a_larger_repository(tmp_path: Path, clock: FakeClock) -> None:
    outer = tmp_path / "outer"
    outer.mkdir()
    git(outer, "init", "-q")
    (outer / "other.txt").write_text("not memory\n")
    git(outer, "add", "other.txt")  # staged by the user; must stay out of the backup
    root = outer / "mem"
    memdir.init(root)
    result = backup(root, now=clock())
    assert result.committed and not result.initialised
    assert not (root / ".git").exists()
    files = git(outer, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert files and all(name.startswith("mem/") for name in files)
    assert "mem/NOTEBOOK.md" in files
    assert git(outer, "diff", "--cached", "--name-only") == "other.txt"


def test_commits_without_a_global_identity(
    memory: memdir.Memory, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "empty-home"
    home.mkdir()
    (home / "gitconfig").write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    result = backup(memory.root, now=clock(), lock=memory.lock)
    assert result.committed
    assert git(memory.root, "log", "-1", "--format=%an <%ae>") == "memdir <memdir@localhost>"
    assert git(memory.root, "config", "--list", "--local").find("user.") == -1


def test_git_errors_raise_backup_error(memory: memdir.Memory, clock: FakeClock) -> None:
    backup(memory.root, now=clock(), lock=memory.lock)
    hook = memory.root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'hook says no' >&2\nexit 1\n")
    hook.chmod(0o755)
    memory.notebook.update("task", "Blocked")
    with pytest.raises(BackupError, match="hook says no"):
        backup(memory.root, now=clock(), lock=memory.lock)


def test_missing_git_raises_backup_error(
    folder: Path, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(BackupError, match="git was not found"):
        backup(folder, now=clock())
