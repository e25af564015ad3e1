"""More promises at the edges, each found by a sweep of hostile input through the real
command line and the tools: a clear one-line error, no traceback, every file as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import memdir
from memdir.tools import Tools
from read_only import needs_mount, read_only_view


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the folder but memdir's own databases, by path."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".memdir" not in p.parts
    }


def _run(*args: str | Path, close_stdin: bool = False) -> subprocess.CompletedProcess[str]:
    """``python -m memdir ARGS`` in a child process; with ``close_stdin`` its fd 0 is closed."""
    env = dict(os.environ, COLUMNS="400")
    command = [sys.executable, "-m", "memdir", *map(str, args)]
    if close_stdin:  # the shell closes fd 0 before exec: sys.stdin is None in the child
        command = ["sh", "-c", 'exec "$@" <&-', "sh", *command]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize(
    "args",
    [
        ["save", "-"],
        ["update", "Plans", "-"],
        ["notebook", "set", "task", "-"],
        ["state", "set", "deploy", "-"],
        ["card", "write", "Alice", "-"],
        ["card", "history", "Alice", "-"],
        ["journal", "append", "learning", "-"],
        ["work", "start", "-"],
    ],
)
def test_a_text_read_from_a_closed_stdin_is_one_line_of_error(
    folder: Path, args: list[str]
) -> None:
    assert _run("card", "write", "Alice", "Buyer", "--dir", folder).returncode == 0
    before = _snapshot(folder)
    done = _run(*args, "--dir", folder, close_stdin=True)
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        "error: the text is - (read from stdin), but stdin is closed; "
        "give the text as an argument or pipe it in"
    )
    assert _snapshot(folder) == before


@pytest.mark.parametrize(
    "args",
    [["touch", "bob"], ["card", "write", "bob", "new text"], ["card", "show", "bob"]],
)
def test_a_card_whose_frontmatter_is_not_yaml_is_refused_in_one_line(
    folder: Path, args: list[str]
) -> None:
    card = folder / "vault" / "bob.md"
    card.write_text("---\ntype: person\ntags: [unclosed\n---\n# Bob\n\nBob's text\n")
    before = _snapshot(folder)
    done = _run(*args, "--dir", folder)
    assert done.returncode == 1, done
    assert done.stderr.strip() == (
        "error: frontmatter is not valid YAML: expected ',' or ']', but got '<stream end>' "
        "at line 3, column 1 of the frontmatter"
    )
    assert _snapshot(folder) == before


def test_a_card_whose_frontmatter_is_not_yaml_gets_a_reason_in_one_line(
    memory: memdir.Memory,
) -> None:
    card = memory.root / "vault" / "bob.md"
    card.write_text("---\ntype: person\ntags: [unclosed\n---\n# Bob\n")
    before = card.read_bytes()
    for name, args in [
        ("card_read", {"card": "bob"}),
        ("card_write", {"card": "bob", "body": "x"}),
    ]:
        result = Tools(memory).call(name, args)
        assert result["ok"] is False, result
        assert "frontmatter is not valid YAML" in result["reason"], result
        assert "\n" not in result["reason"], result
    assert card.read_bytes() == before


@needs_mount
def test_maintain_on_a_read_only_folder_says_so_as_every_write_does(folder: Path) -> None:
    with read_only_view(folder) as view:
        saved = _run("save", "hi", "--dir", view)
        done = _run("maintain", "--dir", view)
    assert saved.returncode == done.returncode == 1
    assert "Errno" not in done.stderr
    assert (
        done.stderr.strip()
        == saved.stderr.strip()
        == (
            f"error: {view} is on a read-only file system; it can be read and searched, "
            "but nothing can be written to it"
        )
    )


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"tags": 5}, "tags must be a list of strings such as ['crm'], not 5"),
        ({"tags": "crm"}, "tags must be a list of strings such as ['crm'], not 'crm'"),
        ({"tags": [1]}, "tags must be a list of strings such as ['crm'], not [1]"),
        ({"links": 5}, "links must be a list of strings such as ['crm'], not 5"),
        ({"type": ["a"]}, "type must be a string such as 'person', not ['a']"),
    ],
)
def test_a_managed_field_of_the_wrong_shape_is_refused_and_writes_nothing(
    memory: memdir.Memory, fields: dict[str, object], reason: str
) -> None:
    tools = Tools(memory)
    assert tools.call("card_write", {"card": "bob", "body": "Bob", "tags": ["crm"]})["ok"]
    before = _snapshot(memory.root)
    result = tools.call("card_write", {"card": "bob", "fields": fields})
    assert result["ok"] is False, result
    assert result["reason"] == reason
    assert _snapshot(memory.root) == before


def test_init_over_a_file_says_it_is_a_file_and_leaves_it(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("mine\n")
    done = _run("init", target)
    assert done.returncode == 1, done
    assert done.stderr.strip() == (
        f"error: {target} is a file, not a folder; give a folder (made if missing)"
    )
    assert target.read_text() == "mine\n"


def test_init_under_a_file_says_why_the_folder_cannot_be_made(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    target = tmp_path / "notes.txt" / "mem"
    done = _run("init", target)
    assert done.returncode == 1, done
    assert "Errno" not in done.stderr
    assert done.stderr.strip() == (
        f"error: cannot make the folder {target}: Not a directory; nothing was written"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_recall_export_to_a_folder_or_a_missing_folder_says_which(
    folder: Path, tmp_path: Path
) -> None:
    away = tmp_path / "away"
    away.mkdir()
    done = _run("recall", "export", "--out", away, "--dir", folder)
    assert done.returncode == 1, done
    assert done.stderr.strip() == (
        f"error: --out {away} is a folder; name a file in it, such as {away / 'history.jsonl'}"
    )
    missing = tmp_path / "nowhere" / "history.jsonl"
    done = _run("recall", "export", "--out", missing, "--dir", folder)
    assert done.returncode == 1, done
    assert done.stderr.strip() == (
        f"error: --out {missing}: there is no folder {missing.parent} to write it in"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["away", "mem"]
    assert list(away.iterdir()) == []


def test_a_notebook_entry_given_two_different_texts_is_refused(memory: memdir.Memory) -> None:
    tools, name = Tools(memory), "update_working_memory"  # value: text's older name
    before = _snapshot(memory.root)
    result = tools.call(name, {"key": "task", "text": "Call Alice", "value": "Call Bob"})
    assert result["ok"] is False, result
    assert result["reason"] == (
        "update_working_memory: text and value (text's older name) differ; give only text"
    )
    assert _snapshot(memory.root) == before
    same = tools.call(name, {"key": "task", "text": "Call Alice", "value": "Call Alice"})
    assert same["ok"] is True, same


@pytest.mark.parametrize(
    "args", [["card", "write", "bob", "new text"], ["card", "write", "bob", "--field", "x=1"]]
)
def test_a_card_whose_frontmatter_never_closes_is_not_written_over(
    folder: Path, args: list[str]
) -> None:
    """Read as all body, such a card's body replaced would lose its fields' lines."""
    card = folder / "vault" / "bob.md"
    card.write_text("---\ntype: person\ntags: [buyer]\n# Bob\n\nBob's text\n")
    before = _snapshot(folder)
    done = _run(*args, "--dir", folder)
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    assert "frontmatter opens with --- on line 1 and never closes" in done.stderr
    assert _snapshot(folder) == before
    # the tool says the same, and a card with its fence closed is written as before
    with memdir.open(folder) as memory:
        result = Tools(memory).call("card_write", {"card": "bob", "body": "x"})
        read = Tools(memory).call("card_read", {"card": "bob"})  # read, still, not touched
    assert result["ok"] is False and "never closes" in result["reason"], result
    assert read["ok"] is True and "Bob's text" in str(read), read
    assert _snapshot(folder) == before
    card.write_text("---\ntype: person\ntags: [buyer]\n---\n# Bob\n\nBob's text\n")
    assert _run(*args, "--dir", folder).returncode == 0
    assert "type: person" in card.read_text()


@pytest.mark.parametrize("args", [{}, {"ids": []}, {"content": "x", "mode": "patch"}])
def test_memory_update_without_a_section_says_what_each_mode_needs(
    memory: memdir.Memory, args: dict[str, object]
) -> None:
    before = _snapshot(memory.root)
    result = Tools(memory).call("memory_update", args)
    assert result["ok"] is False, result
    assert "writes a section: give the section's name and its content" in result["reason"]
    assert "NoneType" not in result["reason"]
    assert _snapshot(memory.root) == before


@needs_mount
def test_maintain_dry_run_on_a_read_only_folder_reports_what_it_would_do(folder: Path) -> None:
    assert _run("card", "write", "Alice", "Buyer", "--dir", folder).returncode == 0
    before = _snapshot(folder)
    with read_only_view(folder) as view:
        done = _run("maintain", "--dry-run", "--json", "--dir", view)
        refused = _run("maintain", "--dir", view)  # (the real run still says why it cannot)
    assert done.returncode == 0, done
    assert "Traceback" not in done.stderr
    jobs = {job["job"]: job for job in json.loads(done.stdout)["jobs"]}
    assert {"decay", "state"} <= set(jobs), jobs
    assert "dry run" in jobs["decay"]["summary"] and "1 card" in jobs["decay"]["summary"], jobs
    assert refused.returncode == 1 and "read-only file system" in refused.stderr
    assert _snapshot(folder) == before
