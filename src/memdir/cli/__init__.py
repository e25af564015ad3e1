"""The ``memdir`` command (also ``python -m memdir``): thin over the Python API.

One typer app (``app``, in ``_common``) that each module adds its commands to:

- ``setup``: init, status, agents, demo; ``serve``: the MCP server (and ``ui``); ``plugins``:
  what is installed by entry point; ``token``: the team server's bearer tokens
- ``memories``: search, get, save, update; ``notebook``: notebook, state
- ``vault``: touch, decay, creative, moc, lessons, rotate; ``cards``: card
- ``workspace``: journal, work, intel
- ``episodes``: recall (alias history), sessions, ingest
- ``maintain``: context, budget, reindex, doctor, backup; ``consolidate``: dream, maintain
- ``transfer``: export, push (an agent kept in PostgreSQL, out to a folder and back)
- ``reference``: the help of every command as markdown, for docs/cli.md

A run imports only the module of the command it runs (``COMMANDS``), so ``memdir
save`` never loads the code of ``memdir dream``; ``memdir --help``, shell completion, a
name no module claims and ``memdir.cli.app`` load them all, in ``COMMANDS``' order,
which is the order of ``memdir --help`` (printed from a tree without the commands'
parameters: ``listing``).
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from memdir import __version__
from memdir.cli import _common
from memdir.cli.listing import listing as listing_tree
from memdir.cli.listing import wants_listing

if TYPE_CHECKING:
    from memdir.cli._common import app  # memdir.cli.app: every command loaded (__getattr__)

# module -> the commands and groups it adds to the app, in the order of ``memdir --help``
# (tests/test_cli.py checks this against what each module registers)
COMMANDS: dict[str, tuple[str, ...]] = {
    "setup": ("init", "status", "agents", "demo"),
    "serve": ("serve", "ui"),
    "plugins": ("plugins",),
    "token": ("token",),
    "memories": ("search", "get", "save", "update"),
    "notebook": ("notebook", "state"),
    "vault": ("touch", "decay", "creative", "moc", "lessons", "rotate"),
    "cards": ("card",),
    "workspace": ("journal", "work", "intel"),
    "episodes": ("recall", "history", "sessions", "ingest"),
    "maintain": ("context", "budget", "reindex", "doctor", "backup"),
    "consolidate": ("dream", "maintain"),
    "transfer": ("export", "push"),
}


def _version(value: bool) -> None:
    if value:
        _common.console.print(f"memdir {__version__}", markup=False)
        raise typer.Exit()


@_common.app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            metavar="URL",
            help="Keep agents in this PostgreSQL database (postgresql://...; default: "
            "$MEMDIR_DATABASE_URL): --agent ID then names an agent there.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Long-term memory for LLM agents in a folder of markdown files.

    Every command that works on a memory folder takes --dir PATH (default: the current
    folder) or --agent ID (a folder in $MEMDIR_HOME/agents, or with --database-url or
    $MEMDIR_DATABASE_URL an agent in that database). Exit codes: 0 done; 1 refused, not
    found or an error (one line on stderr); 2 a usage error.
    """
    _common.given_database_url = database_url  # each run its own: never left for the next


def load_commands(args: list[str] | None = None) -> typer.Typer:
    """The app with the commands ``args`` may run: the module of the command named first,
    or every module when none is named (``--help``, completion) or the name is unknown."""
    named = next((arg for arg in args or () if not arg.startswith("-")), None)
    wanted = [module for module, names in COMMANDS.items() if named in names]
    for module in wanted if named is not None and wanted else COMMANDS:
        importlib.import_module(f"{__name__}.{module}")
    return _common.app


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # the whole command line, for CliRunner, the docs and completion
        return load_commands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """The console script's entry point."""
    _show_progress()
    args = sys.argv[1:]
    app = load_commands(args)
    if wants_listing(args):  # the top help or the version: no command's options needed
        app = listing_tree(app)
    app()


def _show_progress() -> None:
    """The library's one-time waits said on stderr as ``memdir: ...`` (the search model's
    conversion, once per model cache): a command that takes seconds longer than usual says
    why. Its warnings reach stderr anyway, through logging's last resort."""
    import logging

    logger = logging.getLogger("memdir.index.quantised_model")  # not imported: a quick start
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("memdir: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        # said here only: onnxruntime's quantisation gives the root logger a handler
        # of its own (logging.basicConfig), which would say it again as "INFO:..."
        logger.propagate = False


__all__ = ["COMMANDS", "app", "load_commands", "main"]
