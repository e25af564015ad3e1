"""The ``memdir`` command (also ``python -m memdir``): thin over the Python API.

One typer app (``app``, in ``_common``) that each module adds its commands to:

- ``setup``: init, status, agents, demo; ``serve``: the MCP server
- ``memories``: search, get, save, update; ``notebook``: notebook, state
- ``vault``: touch, decay, creative, moc, lessons, rotate; ``cards``: card
- ``workspace``: journal, work, intel
- ``episodes``: recall (alias history), sessions, ingest
- ``maintain``: context, budget, reindex, doctor, backup; ``consolidate``: dream, maintain
- ``reference``: the help of every command as markdown, for docs/cli.md

The import order below is the order of ``memdir --help``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memdir import __version__
from memdir.cli._common import app, console


def _version(value: bool) -> None:
    if value:
        console.print(f"memdir {__version__}", markup=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Long-term memory for LLM agents in a folder of markdown files.

    Every command that works on a memory folder takes --dir PATH (default: the current
    folder) or --agent ID (a folder in $MEMDIR_HOME/agents). Exit codes: 0 done; 1 refused,
    not found or an error (one line on stderr); 2 a usage error.
    """


from memdir.cli import setup, serve, memories, notebook, vault, cards, workspace  # noqa: E402, F401, I001
from memdir.cli import episodes, maintain, consolidate  # noqa: E402, F401, I001


def main() -> None:
    """The console script's entry point."""
    app()


__all__ = ["app", "main"]
