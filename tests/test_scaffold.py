"""``memdir init`` in a folder that looks like something else's (a home folder, a code
project, many files no layout reads) refuses before writing anything; ``--anyway``
goes ahead; an empty folder, a folder of notes and a memory folder are never refused.

Through the real CLI entry point (in process, and once as ``python -m memdir`` in the
folder itself), on real folders."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import memdir
from memdir.cli import app
from memdir.scaffold import FOREIGN_FILES_MAX, SOURCE_FILES_MAX


@pytest.fixture(autouse=True)
def hashing_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def write(root: Path, relpath: str, text: str = "x\n") -> None:
    (root / relpath).parent.mkdir(parents=True, exist_ok=True)
    (root / relpath).write_text(text, encoding="utf-8")


def listing(root: Path) -> list[tuple[str, str]]:
    """Every entry under ``root``, hidden ones too: its path, and a file's bytes' hash
    and modification time (a folder: "dir")."""
    found = []
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            found.append((os.path.relpath(os.path.join(folder, name), root), "dir"))
        for name in files:
            path = Path(folder, name)
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found.append((str(path.relative_to(root)), f"{digest} {path.stat().st_mtime_ns}"))
    return sorted(found)


def code_repository(root: Path) -> str:
    (root / ".git" / "objects").mkdir(parents=True)
    write(root, ".git/HEAD", "ref: refs/heads/main\n")
    write(root, "README.md", "# Tool\n\nIt does things.\n")
    write(root, "src/tool/main.py", "print('hello')\n")
    return "it is a git repository with source code in it (src/tool/main.py)"


def node_project(root: Path) -> str:
    write(root, "package.json", "{}\n")
    write(root, "node_modules/left-pad/index.js", "module.exports = 1\n")
    write(root, "node_modules/left-pad/README.md", "# left-pad\n")
    return "it holds package.json, the mark of a code project"


def python_project(root: Path) -> str:
    write(root, "pyproject.toml", "[project]\nname = 'x'\n")
    write(root, "docs/index.md", "# Docs\n")
    return "it holds pyproject.toml, the mark of a code project"


def many_source_files(root: Path) -> str:
    for number in range(SOURCE_FILES_MAX + 1):
        write(root, f"scripts/s{number:02}.sh", "echo hi\n")
    return (
        f"it holds more than {SOURCE_FILES_MAX} source files "
        "(scripts/s00.sh, scripts/s01.sh, scripts/s02.sh, ...)"
    )


def many_other_files(root: Path) -> str:
    write(root, "notes.md", "# Notes\n")
    for number in range(FOREIGN_FILES_MAX + 1):
        write(root, f"downloads/f{number:03}.zip", "PK\n")
    return (
        f"it holds more than {FOREIGN_FILES_MAX} files no layout reads "
        "(downloads/f000.zip, downloads/f001.zip, downloads/f002.zip, ...)"
    )


FOREIGN: list[Callable[[Path], str]] = [
    code_repository,
    node_project,
    python_project,
    many_source_files,
    many_other_files,
]


def refusal(root: Path, why: str, flags: str = "") -> str:
    return (
        f"error: {root} does not look like a folder meant for memories: {why}. memdir "
        "would search every markdown and text file under it as notes, so nothing was "
        f"written. Make a memory folder of its own instead (`memdir init {root}/memory`, "
        f"or any new folder), or, if this folder is meant to be one, `memdir init {root}"
        f"{flags} --anyway`.\n"
    )


@pytest.mark.parametrize("make", FOREIGN, ids=lambda make: make.__name__)
@pytest.mark.parametrize("flags", ["", " --adopt"])
def test_init_refuses_a_folder_that_looks_like_something_elses_and_writes_nothing(
    tmp_path: Path, make: Callable[[Path], str], flags: str
) -> None:
    root = tmp_path / "busy"
    root.mkdir()
    why = make(root)
    before = listing(root)
    result = invoke("init", root, *flags.split())
    assert (result.exit_code, result.stdout) == (1, ""), result.output
    assert result.stderr == refusal(root.resolve(), why, flags)
    assert listing(root) == before


@pytest.mark.parametrize("make", FOREIGN, ids=lambda make: make.__name__)
def test_init_anyway_makes_such_a_folder_a_memory_folder(
    tmp_path: Path, make: Callable[[Path], str]
) -> None:
    root = tmp_path / "busy"
    root.mkdir()
    make(root)
    result = invoke("init", root, "--anyway")
    assert result.exit_code == 0, result.output
    assert (root / "memdir.toml").is_file()
    again = invoke("init", root, "--force")  # a memory folder now: the rule is not asked
    assert again.exit_code == 0, again.output


def test_init_refuses_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    write(home, ".bashrc", "export A=1\n")
    write(home, "Documents/todo.md", "- buy milk\n")
    monkeypatch.setenv("HOME", str(home))
    before = listing(home)
    result = invoke("init", "~")
    assert result.exit_code == 1, result.output
    assert result.stderr == refusal(home.resolve(), "it is your home folder")
    assert listing(home) == before


def test_init_without_a_path_in_a_code_repository_refuses(tmp_path: Path) -> None:
    """The usual slip: ``memdir init`` typed inside a project (``python -m memdir``)."""
    root = tmp_path / "repo"
    root.mkdir()
    why = code_repository(root)
    before = listing(root)
    env = dict(os.environ, COLUMNS="400", MEMDIR_EMBEDDER="hashing")
    done = subprocess.run(
        [sys.executable, "-m", "memdir", "init"],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert done.stderr == refusal(root.resolve(), why)
    assert listing(root) == before


def test_the_python_api_refuses_too(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    node_project(root)
    before = listing(root)
    with pytest.raises(memdir.ForeignFolder, match="package.json, the mark of a code project"):
        memdir.init(root)
    with pytest.raises(memdir.ForeignFolder, match="--adopt --anyway"):
        memdir.adopt(root)
    assert listing(root) == before
    assert memdir.init(root, anyway=True).created[0] == "memdir.toml"


def test_notes_an_empty_folder_and_a_memory_folder_are_not_refused(tmp_path: Path) -> None:
    assert invoke("init", tmp_path / "new").exit_code == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    assert invoke("init", empty).exit_code == 0

    # A vault of notes under git, with its attachments and Obsidian's settings.
    notes = tmp_path / "notes"
    (notes / ".git" / "objects").mkdir(parents=True)
    write(notes, ".obsidian/app.json", "{}\n")
    for number in range(150):
        write(notes, f"zettel/{number:03}.md", f"# Note {number}\n")
        write(notes, f"attachments/{number:03}.png", "png\n")
    write(notes, "board.canvas", "{}\n")
    adopted = invoke("init", notes, "--adopt")
    assert adopted.exit_code == 0, adopted.output
    assert adopted.stdout.startswith(f"Adopted {notes.resolve()} with the ")

    # Just at the limits: as many source files and other files as they allow.
    full = tmp_path / "full"
    for number in range(SOURCE_FILES_MAX):
        write(full, f"tools/s{number:02}.py", "x = 1\n")
    for number in range(FOREIGN_FILES_MAX - SOURCE_FILES_MAX):
        write(full, f"exports/e{number:03}.docx", "doc\n")
    assert invoke("init", full).exit_code == 0

    # Re-running init on a memory folder says what it always said (--force replaces the
    # manifest); it is not asked whether the folder looks like a memory folder.
    second = invoke("init", notes)
    assert second.exit_code == 1
    assert second.stderr == (
        f"error: {notes.resolve() / 'memdir.toml'} exists; pass --force to replace the manifest\n"
    )
