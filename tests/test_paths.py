"""Paths a person names, when a loop of links stands in the way (``paths.resolved``).

Each loop here is real (``a -> b``, ``b -> a``, or a link to itself) and each command
runs through the real typer app. Before, ``Path.resolve`` raised RuntimeError ("Symlink
loop") and the command ended in a traceback; now it is one error line naming the path,
exit 1, and nothing is written. Listings that meet a loop leave it out (test_faults).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import memdir
from memdir.cli import app
from memdir.errors import MemdirError
from memdir.paths import resolved

LOOP = "is a loop of links that leads to no file or folder; replace the link"


@pytest.fixture(autouse=True)
def hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")


def _loop(where: Path) -> Path:
    """``where`` and a sibling ``where-too`` leading to each other."""
    os.symlink(f"{where.name}-too", where)
    os.symlink(where.name, where.parent / f"{where.name}-too")
    return where


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def refused(result: Result, named: str) -> None:
    """One error line naming the loop, exit 1, no traceback."""
    assert (result.exit_code, result.stdout) == (1, ""), result.output
    assert result.stderr == f"error: {named} {LOOP}\n"


def _tree(root: Path) -> dict[str, str]:
    """Every name under ``root``: a link's target, a file's text (links not followed)."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path.relative_to(root))] = "-> " + os.readlink(path)
        elif path.is_file() and ".memdir" not in path.parts:
            found[str(path.relative_to(root))] = path.read_text()
    return found


def test_resolved_names_the_loop_and_resolves_the_rest(tmp_path: Path) -> None:
    loop = _loop(tmp_path / "a")
    for path in (loop, loop / "below"):
        with pytest.raises(MemdirError, match=f"^{path} {LOOP}$"):
            resolved(path)
    with pytest.raises(MemdirError, match=f"^the folder {LOOP}$"):
        resolved(loop, "the folder")
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    assert resolved(tmp_path / "link") == (tmp_path / "real").resolve()
    assert resolved(tmp_path / "missing") == (tmp_path / "missing").resolve()  # no loop


@pytest.mark.parametrize(
    "command",
    [["status", "--dir"], ["search", "narwhal", "--dir"], ["init"], ["init", "--adopt"],
     ["demo"]],
)  # fmt: skip
def test_a_folder_that_is_a_loop_of_links_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _loop(tmp_path / "mem")
    before = _tree(tmp_path)
    refused(run(*command, "mem"), "mem")
    refused(run(*command, "mem/inside"), "mem/inside")
    assert _tree(tmp_path) == before


def test_a_memdir_folder_that_is_a_loop_is_one_error_line(folder: Path) -> None:
    state = folder / ".memdir"
    shutil.rmtree(state)
    _loop(state)
    before = _tree(folder)
    for command in (["status"], ["save", "The narwhal migrates in spring"]):
        refused(run(*command, "--dir", folder), str(state / "lock"))
    assert _tree(folder) == before


def test_a_mount_that_is_a_loop_names_its_layer(folder: Path, tmp_path: Path) -> None:
    loop = _loop(tmp_path / "team-vault")
    manifest = folder / "memdir.toml"
    text = manifest.read_text()
    manifest.write_text(
        text.replace('paths = ["vault/**/*.md"]', f'mount = "{loop}"\npaths = ["**/*.md"]')
    )
    refused(run("status", "--dir", folder), f"[layers.vault] mount {loop}")


def test_a_tokenizer_file_that_is_a_loop_names_the_setting(folder: Path) -> None:
    manifest = folder / "memdir.toml"
    manifest.write_text(
        manifest.read_text().replace("[context]\n", '[context]\ntokenizer = "tok.json"\n', 1)
    )
    _loop(folder / "tok.json")
    refused(run("context", "--dir", folder), "[context] tokenizer tok.json")


def test_a_work_result_file_that_is_a_loop_is_recorded_unverified(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    memdir.init(root, layout="workspace")
    loop = _loop(tmp_path / "report.md")
    assert run("work", "spawn", "scout", "Map the caves", "--dir", root).exit_code == 0
    done = run("work", "result", "scout", "Mapped", "--file", loop, "--dir", root)
    assert done.exit_code == 0 and "Traceback" not in done.output
    assert f"{loop} cannot be checked (Too many levels of symbolic links)" in done.stdout


def test_memory_get_of_a_loop_says_so(folder: Path) -> None:
    _loop(folder / "notes.md")
    refused(run("get", "notes.md", "--dir", folder), "notes.md")


def test_a_recall_export_to_a_loop_is_one_error_line(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was "[Errno 40] Too many levels of symbolic links" from the export's open."""
    monkeypatch.chdir(tmp_path)
    _loop(tmp_path / "out.jsonl")
    refused(run("recall", "export", "--out", "out.jsonl", "--dir", folder), "out.jsonl")
    assert os.readlink(tmp_path / "out.jsonl") == "out.jsonl-too"
