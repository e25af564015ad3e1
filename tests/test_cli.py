"""The command line, through its real entry points: ``python -m memdir`` and ``memdir``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import memdir
from memdir.cli import app
from memdir.config import MANIFEST_NAME

COMMANDS = sorted(
    cmd.name or cmd.callback.__name__.replace("_", "-")
    for cmd in app.registered_commands
    if cmd.callback is not None
)


def run(*args: str | Path, script: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run memdir in a child process (``python -m memdir`` unless ``script`` is given)."""
    env = dict(os.environ)  # carries the test's MEMDIR_HOME
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CLICOLOR_FORCE"):
        env.pop(name, None)
    env["COLUMNS"] = "400"  # keep rich from wrapping long paths in the lines we check
    command = [str(script)] if script else [sys.executable, "-m", "memdir"]
    return subprocess.run(
        [*command, *map(str, args)], capture_output=True, text=True, env=env, timeout=60
    )


def lines(output: str) -> list[str]:
    return [line.strip() for line in output.splitlines()]


def console_script() -> Path:
    beside = Path(sys.executable).parent / "memdir"
    found = beside if beside.is_file() else shutil.which("memdir")
    assert found, "the memdir console script is not installed"
    return Path(found)


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"memdir {memdir.__version__}\n"


def test_installed_console_script(tmp_path: Path) -> None:
    script = console_script()
    result = run("--version", script=script)
    assert (result.returncode, result.stdout) == (0, f"memdir {memdir.__version__}\n")
    result = run("init", tmp_path / "mem", "--layout", "vault", script=script)
    assert result.returncode == 0, result.stderr
    assert "created STATE.md" in lines(result.stdout)
    assert (tmp_path / "mem" / "vault").is_dir()


def test_init_workspace(tmp_path: Path) -> None:
    target = tmp_path / "mem"
    result = run("init", target, "--layout", "workspace", "--agent", "bot-1")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    out = lines(result.stdout)
    assert out[0] == f"Initialised {target.resolve()} with the workspace layout."
    assert "created memdir.toml" in out
    assert "created memory/working-state.md" in out
    assert "created AGENTS.md" in out
    assert (target / "memory" / "working-state.md").is_file()
    assert memdir.load_manifest(target / MANIFEST_NAME).agent == "bot-1"


def test_init_twice_fails_and_points_at_force(tmp_path: Path) -> None:
    assert run("init", tmp_path).returncode == 0
    manifest = (tmp_path / MANIFEST_NAME).read_text(encoding="utf-8")

    second = run("init", tmp_path, "--layout", "notebook")
    assert second.returncode == 1
    assert second.stdout == ""
    error = second.stderr.strip()
    assert error.startswith("error:")
    assert "--force" in error
    assert "Traceback" not in second.stderr
    assert (tmp_path / MANIFEST_NAME).read_text(encoding="utf-8") == manifest

    forced = run("init", tmp_path, "--layout", "notebook", "--force")
    assert forced.returncode == 0, forced.stderr
    assert memdir.load_manifest(tmp_path / MANIFEST_NAME).layout == "notebook"


def test_init_adopt(tmp_path: Path) -> None:
    for relpath in ("SOUL.md", "memory/working-state.md", "memory/2026-11-29.md", "todo.md"):
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relpath).write_text("# x\n", encoding="utf-8")

    result = run("init", tmp_path, "--adopt")

    assert result.returncode == 0, result.stderr
    out = lines(result.stdout)
    assert out[0] == f"Adopted {tmp_path.resolve()} with the workspace layout."
    assert [line for line in out if line.startswith("created ")] == ["created memdir.toml"]
    assert out[-2:] == [
        "not covered by any layer (add a layer to memdir.toml to include them):",
        "todo.md",
    ]
    assert not (tmp_path / "AGENTS.md").exists()


@pytest.mark.parametrize("args", [["--layout", "nope"], ["--bogus"]])
def test_usage_errors_exit_2(tmp_path: Path, args: list[str]) -> None:
    result = run("init", tmp_path / "mem", *args)
    assert result.returncode == 2
    assert args[0] in result.stderr
    assert not (tmp_path / "mem").exists()


def test_init_with_a_backslash_agent_prints_one_error_line(tmp_path: Path) -> None:
    result = run("init", tmp_path, "--agent", "bad\\id")
    assert result.returncode == 1
    assert result.stderr.startswith("error:")
    assert "Traceback" not in result.stderr


def test_demo(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    result = run("demo", root)

    assert result.returncode == 0, result.stderr
    out = lines(result.stdout)
    assert any(line.startswith("refused memory_update incidents") for line in out)
    assert any(line.startswith("ok update_notebook 'blocker'") for line in out)
    assert "[Live context]" in result.stdout and "memory.context()" in result.stdout

    notebook = (root / "NOTEBOOK.md").read_text(encoding="utf-8")
    entries = [line[3:] for line in notebook.splitlines() if line.startswith("## ")]
    assert entries == ["user-mood", "open-question", "next-step", "blocker"]
    archived = list((root / "archive" / "notebook").glob("*.md"))
    assert len(archived) == 1
    archive_text = archived[0].read_text(encoding="utf-8")
    assert "## current-task" in archive_text
    assert "Migrate the billing service" in archive_text
    assert "## incidents" not in (root / "knowledge.md").read_text(encoding="utf-8")


def test_demo_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "keep.md").write_text("mine\n", encoding="utf-8")
    result = run("demo", tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("error:")
    assert "not empty" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.md"]


def test_commands_are_registered() -> None:
    assert {"init", "demo"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    result = run(command, "--help")
    assert result.returncode == 0, result.stderr
    usage = next(line for line in lines(result.stdout) if line.startswith("Usage:"))
    assert f"memdir {command} [OPTIONS]" in usage  # `python -m memdir init [OPTIONS] ...`


def test_root_help_lists_every_command() -> None:
    result = run("--help")
    assert result.returncode == 0, result.stderr
    listed = {line.strip("│ ").split(" ")[0] for line in result.stdout.splitlines()}
    assert set(COMMANDS) <= listed


def test_backup_commits_the_folder_with_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))  # no identity: memdir supplies one
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    folder = tmp_path / "mem"
    assert run("init", folder).returncode == 0
    first = run("backup", "--dir", folder)
    assert first.returncode == 0, first.stderr
    assert "Committed" in first.stdout and "Daily backup: " in first.stdout
    again = run("backup", "--dir", folder)
    assert again.returncode == 0 and "Nothing to commit." in again.stdout
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=folder, capture_output=True, text=True, check=True
    ).stdout.split()
    assert "NOTEBOOK.md" in tracked and not any("index.db" in name for name in tracked)
