"""The ``memdir`` command (also ``python -m memdir``): thin over the Python API."""

from __future__ import annotations

import enum
import functools
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, ParamSpec

import typer
from rich.console import Console

from memdir import __version__
from memdir.errors import MemdirError
from memdir.scaffold import InitReport, adopt_folder, init_folder

app = typer.Typer(
    name="memdir",
    help="Long-term memory for LLM agents in a folder of markdown files.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
errors = Console(stderr=True)
P = ParamSpec("P")


class Layout(enum.StrEnum):
    default = "default"
    notebook = "notebook"
    vault = "vault"
    workspace = "workspace"


def _reports_errors(command: Callable[P, None]) -> Callable[P, None]:
    """Turn memdir's errors into one clear line on stderr and exit code 1."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            command(*args, **kwargs)
        except MemdirError as exc:
            errors.print(f"[red]error:[/] {exc}", highlight=False)
            raise typer.Exit(1) from exc

    return wrapper


def _version(value: bool) -> None:
    if value:
        console.print(f"memdir {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Long-term memory for LLM agents in a folder of markdown files."""


@app.command()
@_reports_errors
def init(
    path: Annotated[Path, typer.Argument(help="The memory folder (created if missing).")] = Path(
        "."
    ),
    layout: Annotated[
        Layout | None,
        typer.Option(
            "--layout", "-l", help="Which layout to write (default: default; with --adopt: detect)."
        ),
    ] = None,
    adopt: Annotated[
        bool,
        typer.Option("--adopt", help="Write a manifest for files already here; move nothing."),
    ] = False,
    agent: Annotated[
        str | None, typer.Option("--agent", help="The agent id to record in the manifest.")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing memdir.toml.")
    ] = False,
) -> None:
    """Make PATH a memory folder: write memdir.toml and the layout's starter files."""
    chosen = layout.value if layout is not None else None
    if adopt:
        report = adopt_folder(path, chosen, agent=agent, force=force)
    else:
        report = init_folder(path, chosen or "default", agent=agent, force=force)
    _print_init(report)


def _print_init(report: InitReport) -> None:
    verb = "Adopted" if report.adopted else "Initialised"
    console.print(f"{verb} [cyan]{report.root}[/] with the [bold]{report.layout}[/] layout.")
    for relpath in report.created:
        console.print(f"  created {relpath}", highlight=False)
    if report.migration is not None:
        console.print(f"  migrated: {report.migration.summary()}", highlight=False)
    if report.uncovered:
        console.print("  not covered by any layer (add a layer to memdir.toml to include them):")
        for relpath in report.uncovered:
            console.print(f"    {relpath}", highlight=False)


@app.command()
@_reports_errors
def demo(
    path: Annotated[
        Path | None,
        typer.Argument(help="An empty or new folder to run in (default: a new temporary one)."),
    ] = None,
) -> None:
    """Run memdir's main job in a fresh folder and print the files and the prompt."""
    from memdir.demo import run_demo

    if path is None:
        root = Path(tempfile.mkdtemp(prefix="memdir-demo-"))
    else:
        root = path.expanduser().resolve()
        if root.exists() and any(root.iterdir()):
            raise MemdirError(f"{root} is not empty; the demo needs a new or empty folder")
    run_demo(root, console)


def main() -> None:
    """The console script's entry point."""
    app()
