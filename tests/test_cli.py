"""The command line, through its real entry points: ``python -m memdir``, the installed
``memdir`` script, and typer's CliRunner on ``memdir.cli.app``.

The other ``test_cli_*.py`` files cover the commands by area; this one covers the
entry points, ``init``, ``demo``, help and exit codes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memdir
from memdir.cli import app
from memdir.cli.reference import commands
from memdir.config import MANIFEST_NAME

# Every command and subcommand, as typed: "init", "notebook set", ...
COMMANDS = [name.removeprefix("memdir ") for name, _, _ in commands() if name != "memdir"]
TOP_LEVEL = sorted(name for name in COMMANDS if " " not in name)


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

    # The vault layout has no knowledge.md: an error naming the manifest and what serves
    # instead, exit 1.
    refused = run("save", "Deploys happen on Tuesdays", "-d", tmp_path / "mem", script=script)
    assert (refused.returncode, refused.stdout) == (1, "")
    manifest = tmp_path / "mem" / MANIFEST_NAME
    assert refused.stderr == (
        f"error: {manifest} declares no layer with store = 'knowledge'; this vault layout "
        "keeps facts in cards: memdir card write TITLE TEXT\n"
    )

    assert run("init", tmp_path / "default", script=script).returncode == 0
    saved = run("save", "Deploys happen on Tuesdays", "--json", "-d", tmp_path / "default",
                script=script)  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    result = json.loads(saved.stdout)
    assert (result["ok"], result["store"], result["action"]) == (True, "knowledge.md", "saved")
    got = run("get", "knowledge.md", "--from", "4", "--to", "6", "-d", tmp_path / "default",
              script=script)  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0] == f"### {result['key']}"
    assert got.stdout.splitlines()[2] == "Deploys happen on Tuesdays"


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
        "not in a layer of their own (searched as notes; add a layer to memdir.toml for more):",
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


def _demo_in(
    temp: Path, *args: str, embedder: str = "minilm", **extra: str
) -> subprocess.CompletedProcess[str]:
    """``memdir demo`` with its temporary directory at ``temp`` (``extra``: more of its
    environment)."""
    env = dict(os.environ, TMPDIR=str(temp), MEMDIR_EMBEDDER=embedder, COLUMNS="400", **extra)
    return subprocess.run(
        [sys.executable, "-m", "memdir", "demo", *args],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


def test_demo_removes_its_temporary_folder(tmp_path: Path) -> None:
    result = _demo_in(tmp_path, embedder="hashing")  # the folder is the point, not the ranking
    assert result.returncode == 0, result.stderr
    assert list(tmp_path.glob("memdir-demo-*")) == []  # nothing left behind
    last = result.stdout.splitlines()[-1]
    assert last.startswith(f"Removed the demo's folder ({tmp_path}/memdir-demo-")
    assert last.endswith("`memdir demo --keep` keeps it to look at, `memdir demo PATH` runs in a "
                         "folder of your choice.")  # fmt: skip


def test_demo_names_the_agents_home_it_would_use(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = _demo_in(tmp_path, embedder="hashing", MEMDIR_HOME=str(home))
    assert result.returncode == 0, result.stderr
    assert f"created in {home / 'agents'}/ on first use" in result.stdout
    assert "~/.memdir/agents" not in result.stdout
    assert not home.exists()  # named, not made


def test_demo(tmp_path: Path) -> None:
    result = _demo_in(tmp_path, "--keep")
    assert result.returncode == 0, result.stderr
    [root] = tmp_path.glob("memdir-demo-*")  # (the ONNX runtime leaves a file of its own)
    last = result.stdout.splitlines()[-1]
    assert last == f"Kept the demo's folder: {root} (delete it when done)"

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
    knowledge = (root / "knowledge.md").read_text(encoding="utf-8")
    assert "## incidents" not in knowledge
    # the dream merged the paraphrase and promoted the deploy theme, after a snapshot
    assert "## deploys" in knowledge
    assert knowledge.count("requests per second") == 1
    assert len(list((root / "archive" / "dreams").glob("*.knowledge.md.bak"))) == 1


def test_demo_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "keep.md").write_text("mine\n", encoding="utf-8")
    result = run("demo", tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("error:")
    assert "not empty" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.md"]


def test_commands_are_registered() -> None:
    expected = {
        "init", "status", "agents", "serve", "ui", "plugins", "demo", "search", "get", "save",
        "update",
        "notebook", "state", "touch", "decay", "creative", "moc", "rotate", "lessons",
        "ingest", "recall", "history", "sessions", "context", "budget", "reindex", "doctor",
        "backup", "dream", "maintain", "card", "journal", "work", "intel", "export", "push",
        "token",
    }  # fmt: skip
    assert set(TOP_LEVEL) == expected
    subcommands = {"notebook set", "notebook clear", "state set", "state remove"}
    subcommands |= {f"card {sub}" for sub in ("write", "show", "list", "links", "history")}
    subcommands |= {"journal append", "journal show", "intel add", "intel show"}
    subcommands |= {"token create", "token list", "token revoke"}
    subcommands |= {f"work {sub}" for sub in ("start", "finish", "spawn", "result", "show")}
    subcommands |= {f"{group} {sub}" for group in ("recall", "history") for sub in
                    ("list", "search", "get", "export")}  # fmt: skip
    assert subcommands <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    result = CliRunner().invoke(app, [*command.split(), "--help"])
    assert result.exit_code == 0, result.output
    usage = next(line for line in lines(result.stdout) if line.startswith("Usage:"))
    assert f"memdir {command} [OPTIONS]" in usage
    # No type placeholders beside flags and named arguments, no {ARG} in the usage line.
    assert not re.search(r"<(bool|str|path|int range)>", result.stdout), result.stdout
    assert "{" not in usage


def test_help_paragraphs_are_reflowed_not_broken_at_the_source_width() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "120"})
    text = (
        "Every command that works on a memory folder takes --dir PATH (default: the current folder)"
    )
    assert text in result.stdout  # the docstring breaks after "current"
    dream = CliRunner().invoke(app, ["dream", "--help"], env={"COLUMNS": "200"}).stdout
    assert "promote themes into curated sections" in dream


def test_a_long_choice_list_is_named_in_the_help() -> None:
    result = CliRunner().invoke(app, ["init", "--help"], env={"COLUMNS": "200"})
    assert "--layout  -l      LAYOUT" in result.stdout
    assert "One of: default, notebook, vault, workspace." in result.stdout
    short = CliRunner().invoke(app, ["search", "--help"], env={"COLUMNS": "200"}).stdout
    assert "heartbeat|normal|deep" in short and "<heartbeat" not in short


def test_shell_completion_script_and_completions() -> None:
    """``memdir --show-completion [SHELL]`` prints the script ``--install-completion``
    installs; the script calls memdir back, which completes commands and choices."""
    script = console_script()
    env = dict(os.environ, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")  # name the shell
    shown = subprocess.run([script, "--show-completion", "bash"], capture_output=True,
                           text=True, env=env, timeout=60)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "complete -o default -F _memdir_completion memdir" in shown.stdout
    assert "_MEMDIR_COMPLETE=complete_bash" in shown.stdout
    zsh = subprocess.run([script, "--show-completion", "zsh"], capture_output=True, text=True,
                         env=env, timeout=60)  # fmt: skip
    assert zsh.returncode == 0 and "#compdef memdir" in zsh.stdout

    def complete(words: str) -> list[str]:
        env = dict(os.environ, COMP_WORDS=words, COMP_CWORD=str(len(words.split()) - 1),
                   _MEMDIR_COMPLETE="complete_bash")  # fmt: skip
        if words.endswith(" "):
            env["COMP_CWORD"] = str(len(words.split()))
        done = subprocess.run([script], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("memdir se") == ["serve", "search", "sessions"]
    assert complete("memdir init --layout ") == ["default", "notebook", "vault", "workspace"]
    root = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).stdout
    assert "--install-completion" in root and "--show-completion" in root


def test_help_through_the_module_entry_point() -> None:
    result = run("update", "--help")
    assert result.returncode == 0, result.stderr
    usage = next(line for line in lines(result.stdout) if line.startswith("Usage:"))
    assert "memdir update [OPTIONS] [SECTION] [TEXT]" in usage  # `python -m memdir update`


def test_root_help_lists_every_command() -> None:
    result = run("--help")
    assert result.returncode == 0, result.stderr
    listed = {line.strip("│ ").split(" ")[0] for line in result.stdout.splitlines()}
    assert set(TOP_LEVEL) <= listed


@pytest.mark.parametrize(
    "args",
    [
        ["update", "conventions", "text", "--mode", "bogus"],
        ["save", "x", "--type", "bogus"],
        ["search", "x", "-k", "0"],
        ["get", "knowledge.md", "--from", "0"],
        ["serve", "--port", "70000"],
        ["recall", "list", "--type", "bogus"],
        ["recall", "list", "--since", "someday"],
        ["ingest", "chat.json", "--format", "bogus"],
        ["notebook", "set", "key"],
        ["update", "conventions"],
        ["update", "--delete", "obs_1", "conventions"],
        ["status", "--dir", ".", "--agent", "bot"],
        ["context", "--profile", "bogus"],
        ["nonsense"],
    ],
)
def test_usage_errors_exit_2_and_change_nothing(folder: Path, args: list[str]) -> None:
    before = memory_files(folder)
    folder_args = [] if "--dir" in args else ["--dir", str(folder)]
    result = CliRunner().invoke(app, [*args, *folder_args])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert "Usage: memdir" in result.stderr
    assert memory_files(folder) == before


def memory_files(folder: Path) -> dict[str, bytes]:
    """Every file a person keeps (``.memdir/`` is derived and transient)."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and ".memdir" not in p.relative_to(folder).parts
    }


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
