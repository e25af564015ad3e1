"""The help of every command as markdown: the generated reference in docs/cli.md.

``render()`` gives the same text wherever it runs: typer's plain help formatter
(no rich panels, no colour) at a fixed width of ``WIDTH`` columns. docs/cli.md
holds it between ``START`` and ``END``; ``scripts/cli_reference.py`` (``make docs``)
writes it there, and a test fails when the two differ.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

from memdir.cli import app  # every command

WIDTH = 88
START = "<!-- cli-reference:start -->"
END = "<!-- cli-reference:end -->"


def commands(
    command: Any = None, path: tuple[str, ...] = ("memdir",), parent: typer.Context | None = None
) -> Iterator[tuple[str, Any, typer.Context]]:
    """Every command (groups first, then their subcommands) with its name and context."""
    command = command if command is not None else typer.main.get_command(app)
    ctx = typer.Context(
        command, info_name=path[-1], parent=parent, terminal_width=WIDTH, max_content_width=WIDTH
    )
    yield " ".join(path), command, ctx
    subcommands = getattr(command, "commands", {})
    for name in command.list_commands(ctx) if subcommands else ():
        yield from commands(subcommands[name], (*path, name), ctx)


def help_text(command: Any, ctx: typer.Context) -> str:
    """A command's help, as the plain formatter writes it."""
    command.rich_markup_mode = None  # a fresh command tree per render: nothing else sees this
    text: str = command.get_help(ctx)
    return "\n".join(line.rstrip() for line in text.splitlines())


def render() -> str:
    """The markdown that goes between the markers. A group whose subcommands are
    another group's (``history``, the same as ``recall``) gets its own help and a
    pointer, not a second copy of every subcommand."""
    blocks = []
    groups: dict[tuple[tuple[str, Any], ...], str] = {}
    alias_of: dict[str, str] = {}
    for name, command, ctx in commands():
        if getattr(command, "hidden", False) or any(
            name.startswith(alias + " ") for alias in alias_of
        ):
            continue
        block = f"### {name}\n\n```text\n{help_text(command, ctx)}\n```\n"
        subcommands = getattr(command, "commands", {})
        if subcommands:
            key = tuple(sorted((sub, _origin(c.callback)) for sub, c in subcommands.items()))
            if key in groups:
                alias_of[name] = groups[key]
                block += f"\nIts subcommands are those of `{groups[key]}`, above.\n"
            else:
                groups[key] = name
        blocks.append(block)
    return "\n".join(blocks)


def replace_reference(document: str, reference: str) -> str:
    """``document`` with the text between the markers replaced by ``reference``."""
    before, start, rest = document.partition(START)
    _, end, after = rest.partition(END)
    if not start or not end:
        raise ValueError(f"the document has no {START} ... {END} markers")
    return f"{before}{START}\n{reference}{END}{after}"


def committed_reference(document: str) -> str:
    """The reference text between the markers of ``document``."""
    _, start, rest = document.partition(START)
    reference, end, _ = rest.partition(END)
    if not start or not end:
        raise ValueError(f"the document has no {START} ... {END} markers")
    return reference.removeprefix("\n")


def _origin(callback: Any) -> Any:
    """The function a command runs (typer wraps it anew for every group)."""
    return getattr(callback, "__wrapped__", callback)
