"""``memdir --help`` prints from a tree without the commands' parameters (memdir.cli.listing):
the same text, byte for byte, as from the whole tree; anything else gets the whole tree."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.cli.listing import listing, wants_listing


@pytest.mark.parametrize("args", [["--help"], [], ["--version"]])
def test_the_listing_prints_what_the_whole_tree_prints(args: list[str]) -> None:
    whole = CliRunner().invoke(app, args, prog_name="memdir", terminal_width=100)
    listed = CliRunner().invoke(listing(app), args, prog_name="memdir", terminal_width=100)
    assert listed.output == whole.output
    assert listed.exit_code == whole.exit_code
    assert "search" in whole.output or args == ["--version"]


def test_the_listing_leaves_the_app_as_it_was() -> None:
    commands = list(app.registered_commands)
    listing(app)
    assert app.registered_commands == commands
    assert all(info.callback.__code__.co_argcount > 0 for info in commands if info.name == "search")


def test_only_the_top_help_and_the_version_are_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert wants_listing([]) and wants_listing(["--help"]) and wants_listing(["--version"])
    assert not wants_listing(["search", "--help"])
    assert not wants_listing(["serve"])
    monkeypatch.setenv("_MEMDIR_COMPLETE", "complete_bash")  # completion needs every option
    assert not wants_listing([])
