"""A card's type, tags, links and field keys are names its frontmatter holds on one line,
as the vault specification writes them: anything else is refused, and nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import memdir
from memdir.tools import Tools


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".memdir" not in p.parts
    }


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="400")
    command = [sys.executable, "-m", "memdir", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)


TYPE_REFUSED = (
    "type must be a short name such as person, project, company, idea, place, topic, other "
    "(letters, digits, spaces, - and _, at most 40 characters), not {}; nothing was written"
)
KEY_REFUSED = (
    "field name {} is not a frontmatter key: use a letter or _ then letters, digits, - or _ "
    "(at most 64 characters), such as 'last_met'; nothing was written"
)


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--type", "<script>"], TYPE_REFUSED.format("'<script>'")),
        (["--type", "per\nson"], TYPE_REFUSED.format("'per\\nson'")),
        (["--type", ""], TYPE_REFUSED.format("''")),
        (["--type", "t" * 10_000], TYPE_REFUSED.format("'" + "t" * 58 + "…")),
        (["--field", "type=<b>"], TYPE_REFUSED.format("'<b>'")),
        (["--field", "a\nb=1"], KEY_REFUSED.format("'a\\nb'")),
        (["--field", "---=1"], KEY_REFUSED.format("'---'")),
        (["--field", "key: x=1"], KEY_REFUSED.format("'key: x'")),
        (
            ["--tag", "a\nb"],
            "each of tags must be a name on one line, such as 'crm', not 'a\\nb'"
            "; nothing was written",
        ),  # fmt: skip
        (
            ["--link", ""],
            "each of links must be a name on one line, such as 'crm', not ''; nothing was written",
        ),  # fmt: skip
    ],
)
def test_a_card_name_its_frontmatter_cannot_hold_is_refused_from_the_cli(
    folder: Path, args: list[str], reason: str
) -> None:
    made = _run("card", "write", "Alice", "Buyer", "--type", "person", "--dir", folder)
    assert made.returncode == 0, made
    before = _snapshot(folder)
    for card in ("Alice", "Bob"):  # an update and a new card
        done = _run("card", "write", card, "x", *args, "--dir", folder)
        assert done.returncode == 1, done
        assert done.stderr.strip() == f"refused: {reason}"
        assert _snapshot(folder) == before


def test_the_card_write_tool_refuses_them_too(memory: memdir.Memory) -> None:
    tools = Tools(memory)
    assert tools.call("card_write", {"card": "bob", "body": "Bob", "type": "person"})["ok"]
    before = _snapshot(memory.root)
    for args in ({"type": "a\n# injected"}, {"fields": {"x\ny": 1}}, {"tags": ["a\rb"]}):
        result = tools.call("card_write", {"card": "bob", **args})
        assert result["ok"] is False, result
        assert "nothing was written" in result["reason"]
    assert _snapshot(memory.root) == before


def test_plain_names_still_write(memory: memdir.Memory) -> None:
    done = memory.vault.write(
        "Carol",
        "Carol.",
        type="open source project",
        tags=["crm"],
        fields={"last_met": "2026-11-01", "x-score": 3},
    )
    assert done.ok, done
    meta = memory.vault.read("Carol", touch=False)
    assert meta is not None
    assert meta.meta["type"] == "open source project"
    assert meta.meta["x-score"] == 3


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (
            ["idx", "x", "--folder", "MOC"],
            "folder 'MOC' is in MOC/, where memdir moc writes the Maps of Content: a card "
            "there would not be listed and would be written over; put it in another folder, "
            "such as 'crm'",
        ),
        (
            ["MOC/index", "x"],
            "folder 'MOC' is in MOC/, where memdir moc writes the Maps of Content: a card "
            "there would not be listed and would be written over; put it in another folder, "
            "such as 'crm'",
        ),
        (
            ["bob", "x", "--folder", "cr\nm"],
            "folder 'cr\\nm' holds a line break or control character; name it on one line, "
            "such as 'crm/clients'",
        ),
        (
            ["bob", "x", "--folder", "cr\x1bm"],
            "folder 'cr\\x1bm' holds a line break or control character; name it on one line, "
            "such as 'crm/clients'",
        ),
    ],
)
def test_a_new_cards_folder_must_be_one_line_and_not_the_maps_of_content(
    folder: Path, args: list[str], reason: str
) -> None:
    """A card put in MOC/ was no card (card show: "no card") and memdir moc wrote over it."""
    made = _run("card", "write", "Alice", "Buyer", "--dir", folder)
    assert made.returncode == 0, made
    before = _snapshot(folder)
    done = _run("card", "write", *args, "--dir", folder)
    assert done.returncode == 1, done
    assert done.stderr.strip() == f"refused: {reason}"
    assert _snapshot(folder) == before
    assert _run("card", "write", "idx", "x", "--folder", "crm/MOC", "--dir", folder).returncode == 0


def test_a_control_character_in_a_cards_name_is_refused_as_the_name(folder: Path) -> None:
    """The refusal names the card's name, not "fields" (which the name was checked with)."""
    before = _snapshot(folder)
    done = _run("card", "write", "bad\x07name", "body", "--dir", folder)
    assert done.returncode == 1, done
    assert done.stderr.strip() == (
        "refused: the card's name holds a control character (U+0007 at position 3) that a "
        "markdown file should not hold; remove it, nothing was written"
    )
    assert _snapshot(folder) == before
