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
from rich.markup import escape

from memdir import __version__
from memdir.errors import MemdirError
from memdir.memory import open_memory
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


class SearchMode(enum.StrEnum):
    heartbeat = "heartbeat"
    normal = "normal"
    deep = "deep"


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


FolderOption = Annotated[
    Path, typer.Option("--dir", "-d", help="The memory folder (default: the current folder).")
]


@app.command()
@_reports_errors
def search(
    query: Annotated[
        str, typer.Argument(help="What to look for; empty lists recent observations.")
    ],
    folder: FolderOption = Path("."),
    k: Annotated[int, typer.Option("-k", help="How many hits.", min=1)] = 10,
    mode: Annotated[
        SearchMode, typer.Option("--mode", help="Which tiers to search.")
    ] = SearchMode.normal,
    kind: Annotated[
        list[str] | None, typer.Option("--kind", help="Only these kinds (repeat the option).")
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="Only items with one of these tags.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the hits as JSON.")] = False,
) -> None:
    """Search the memory folder (keyword + semantic) and print the hits."""
    memory = open_memory(folder)
    hits = memory.search(query, k=k, mode=mode.value, kinds=kind, tags=tag)
    if as_json:
        console.print_json(data=[hit.to_dict() for hit in hits])
        return
    if not hits:
        console.print("No hits.")
        return
    for number, hit in enumerate(hits, start=1):
        where = f"{hit.path}:{hit.line_start}-{hit.line_end}"
        console.print(
            f"{number}. [cyan]{where}[/] [bold]{escape(hit.title)}[/] "
            f"({hit.kind}, {hit.tier}, score {hit.score:.3f})",
            highlight=False,
        )
        console.print(f"   {escape(hit.snippet)}", highlight=False)


@app.command()
@_reports_errors
def reindex(folder: FolderOption = Path(".")) -> None:
    """Rebuild the search index (.memdir/index.db) from the files."""
    memory = open_memory(folder)
    report = memory.reindex()
    items = memory.index.db.execute("SELECT count(*) FROM items").fetchone()[0]
    console.print(
        f"Reindexed {len(report.added)} files, {items} items in {report.seconds:.2f}s.",
        highlight=False,
    )


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
