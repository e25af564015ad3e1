"""What every command shares: the app, the folder options, output and error handling.

Conventions every command keeps:
- ``--dir/-d PATH`` or ``--agent ID`` picks the memory folder (``home.resolve_folder``);
  both at once is a usage error. With a database (``memdir --database-url URL`` or
  ``$MEMDIR_DATABASE_URL``), ``--agent ID`` is that agent in the database
  (``memory.open_agent``); ``--dir`` is still a folder on disk.
- ``--json`` prints one JSON document on stdout and nothing else; progress bars and
  messages go to stderr.
- Exit codes: 0 done, 1 refused / not found / a memdir error (one line on stderr),
  2 a usage error (typer's own, or ``typer.BadParameter`` raised here), 130 a long
  job (``reindex``, ``ingest``) stopped by Ctrl-C, what it had done kept (``stoppable``).
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec

import typer
from rich.console import Console
from rich.markup import escape

from memdir.cli.helpfmt import HelpGroup
from memdir.errors import LayerNotConfigured, MemdirError
from memdir.safety.provenance import writing_as

# What a command needs of memdir is imported when it runs, not here: every command's
# module imports this one, and `memdir --help` imports every command's module.
if TYPE_CHECKING:
    from memdir.index.search import Hit
    from memdir.memory import Memory
    from memdir.results import WriteResult

app = typer.Typer(
    name="memdir",
    cls=HelpGroup,
    no_args_is_help=True,
    add_completion=True,  # --install-completion, --show-completion (typer's, for each shell)
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
# Data lines are never wrapped, so they stay one line each in a pipe; tables still fit.
console = Console(soft_wrap=True, highlight=False)
errors = Console(stderr=True, soft_wrap=True, highlight=False)
P = ParamSpec("P")

# Help panels of `memdir --help`, in the order the modules register their commands.
SETUP = "Set up and serve"
READ_WRITE = "Read and write memory"
VAULT = "Vault and workspace"
EPISODES = "Episodes"
UPKEEP = "Context and upkeep"

FolderOption = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        "-d",
        metavar="PATH",
        help="The memory folder (default: the current folder).",
        show_default=False,
    ),
]
DATABASE_URL_ENV = "MEMDIR_DATABASE_URL"
AgentOption = Annotated[
    str | None,
    typer.Option(
        "--agent",
        metavar="ID",
        help="Use this agent's folder in $MEMDIR_HOME/agents (in the database, with "
        "--database-url) instead of --dir.",
        show_default=False,
    ),
]
TEXT_HELP = "The text; - reads it from stdin (put -- before a text that starts with -)."
TextArgument = Annotated[str, typer.Argument(metavar="TEXT", help=TEXT_HELP)]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout instead of text.")
]


def optional_argument(metavar: str, help: str) -> Any:
    """An argument that may be left out (its parameter defaults to None): its help says
    what leaving it out means, so no ``[default: None]`` is shown."""
    return typer.Argument(metavar=metavar, help=help, show_default=False)


def command_group(name: str, panel: str, help: str, **options: Any) -> typer.Typer:
    """A group of subcommands (``memdir NAME ...``), registered on the app under the
    help panel ``panel``; ``options`` go to its ``typer.Typer``."""
    group = typer.Typer(help=help, **options)
    app.add_typer(group, name=name, rich_help_panel=panel)
    return group


def reports_errors(command: Callable[P, None]) -> Callable[P, None]:
    """Turn memdir's errors (and bad input the API rejects) into one line on stderr, exit 1.
    What the command writes records ``by: cli``."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            with writing_as("cli"):
                command(*args, **kwargs)
        except (MemdirError, ValueError, OSError) as exc:
            fail(str(exc) or type(exc).__name__, exc)
        except Exception as exc:
            said = database_error(exc)
            if said is None:
                raise
            fail(said, exc)

    return wrapper


def database_error(exc: BaseException) -> str | None:
    """What a PostgreSQL error (``--database-url``) says, on one line; None for any other
    exception. psycopg is only looked at when something imported it."""
    psycopg = sys.modules.get("psycopg")
    if psycopg is None or not isinstance(exc, psycopg.Error):
        return None
    text = " ".join(str(exc).split())
    if isinstance(exc, psycopg.OperationalError):
        return f"cannot reach the database: {text}"
    return f"the database refused: {text}"


def fail(message: str, cause: BaseException | None = None) -> None:
    """Print ``error: message`` on stderr and exit with code 1."""
    errors.print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(1) from cause


def folder_for(folder: Path | None, agent: str | None, *, create: bool = False) -> Path:
    """The folder a command works on: ``--agent``'s in the home, else ``--dir``, else ``.``."""
    from memdir.home import resolve_folder

    if folder is not None and agent is not None:
        raise typer.BadParameter("give --dir or --agent, not both", param_hint="'--agent'")
    return resolve_folder(folder, agent, create=create)


given_database_url: str | None = None
"""``memdir --database-url URL``, set by the root command at every run"""


def database_url() -> str | None:
    """The database agents are kept in (``--database-url`` / ``$MEMDIR_DATABASE_URL``)."""
    import os

    return given_database_url or os.environ.get(DATABASE_URL_ENV) or None


@contextmanager
def opened(folder: Path | None, agent: str | None) -> Iterator[Memory]:
    """The memory folder, opened for one command and closed after it. A store the
    folder has no layer for is an error that names the command serving it here."""
    from memdir.memory import open_agent, open_memory

    url = database_url()
    if url and agent is not None and folder is None:
        from memdir.storage.agents import database_schema

        memory = open_agent(url, agent, schema=database_schema())
    else:
        memory = open_memory(folder_for(folder, agent))
    with memory:
        try:
            yield memory
        except LayerNotConfigured as exc:
            from memdir.cli.hints import with_hint

            raise LayerNotConfigured(with_hint(str(exc), memory.manifest)) from exc
        say_notices(memory)


def say_notices(memory: Memory) -> None:
    """What the command's memory noticed, one ``memdir: ...`` line each on stderr: a
    search that went by keyword only (an embedder that cannot load), a legacy MEMORY.md
    migrated, an index that could not follow a write. The library keeps them in
    ``memory.notices``; a command that only printed its result would hide them."""
    migrated = [] if memory.migration is None else [f"migration: {memory.migration.summary()}"]
    said = [str(notice) for notice in memory.notices if not notice.logged]
    for line in dict.fromkeys([*migrated, *said]):  # each once, in order
        errors.print(f"memdir: {line}", markup=False)


_DEFAULTS = "memdir.defaults"


def remember_group_options(
    ctx: typer.Context, folder: Path | None, agent: str | None, as_json: bool
) -> bool:
    """Keep a group's options for its subcommand; True if a subcommand follows."""
    ctx.meta[_DEFAULTS] = (folder, agent, as_json)
    return ctx.invoked_subcommand is not None


def group_options(
    ctx: typer.Context, folder: Path | None, agent: str | None, as_json: bool
) -> tuple[Path | None, str | None, bool]:
    """A subcommand's options, falling back to those given before it (``notebook -d X set``)."""
    group_folder, group_agent, group_json = ctx.meta.get(_DEFAULTS, (None, None, False))
    if folder is None and agent is None:
        folder, agent = group_folder, group_agent
    return folder, agent, as_json or group_json


PROGRESS_EVERY = 5.0
"""seconds between two progress lines when stderr is not a terminal (a pipe, a log)"""


@contextmanager
def progress(description: str) -> Iterator[Callable[[int, int], None]]:
    """Progress on stderr; yields ``step(done, total)``.

    On a terminal, a bar (indeterminate, with a spinner and the elapsed time, until the
    first step). Elsewhere (a pipe, CI, a log file), a line every ``PROGRESS_EVERY``
    seconds, such as ``rebuilding the index: 1,200 of 5,000 (24%) after 10 s``; a job
    shorter than that prints nothing."""
    if not errors.is_terminal:  # rich would still end a bar with a blank line in a pipe
        began = time.monotonic()
        last = began

        def line(done: int, total: int) -> None:
            nonlocal last
            now = time.monotonic()
            if now - last < PROGRESS_EVERY:
                return
            last = now
            share = f" ({100 * done // total}%)" if total else ""
            errors.print(
                f"{description}: {done:,} of {total:,}{share} after {now - began:.0f} s",
                markup=False,
            )

        yield line
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=errors, transient=True) as bar:
        task = bar.add_task(description, total=None)

        def step(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield step


@contextmanager
def stoppable(memory: Memory, command: str) -> Iterator[None]:
    """Ctrl-C in a long job: what it committed stays (the index's vectors are written a
    batch at a time, an import is all or nothing per conversation), so say how far the
    embedding got and that ``command`` again goes on, and exit 130, not a traceback."""
    try:
        yield
    except KeyboardInterrupt:
        embedded, texts = memory.index.vector_counts()
        kept = f"{embedded:,} of {texts:,} texts embedded and kept; " if texts else ""
        errors.print(f"stopped: {kept}run {command} again to go on", markup=False)
        raise typer.Exit(130) from None


# -- output ---------------------------------------------------------------------


def print_json(data: Any) -> None:
    """One JSON document on stdout."""
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def read_text(value: str) -> str:
    """A TEXT argument; ``-`` reads it from stdin (one line of error when stdin is closed)."""
    if value != "-":
        return value
    if sys.stdin is None or sys.stdin.closed:  # started with fd 0 closed (``<&-``)
        fail(
            "the text is - (read from stdin), but stdin is closed; "
            "give the text as an argument or pipe it in"
        )
    return sys.stdin.read()


def describe(result: WriteResult) -> list[str]:
    """A successful write in a few lines: what happened to which file, then its side effects."""
    what = result.key or ", ".join(result.removed)
    lines = [f"{result.action.capitalize()} {result.store}" + (f" ({what})." if what else ".")]
    if result.archived:
        where = f" to {result.archive}" if result.archive else ""
        lines.append(f"  archived {', '.join(result.archived)}{where}")
    if result.missing:
        lines.append(f"  not found: {', '.join(result.missing)}")
    lines.extend(f"  {note}" for note in result.notes)
    return lines


def report_write(result: WriteResult, as_json: bool, lines: list[str] | None = None) -> None:
    """Print a write's result; a refusal prints its reason on stderr and exits 1.

    With ``as_json`` the result dict goes to stdout either way (refused too)."""
    if as_json:
        print_json(result.to_dict())
    elif result.ok:
        for line in lines if lines is not None else describe(result):
            console.print(line, markup=False)
    if not result.ok:
        errors.print(f"[red]refused:[/] {escape(result.reason or 'refused')}")
        raise typer.Exit(1)


def with_warnings(result: WriteResult, lines: list[str] | None = None) -> list[str]:
    """A write's lines (``describe``'s unless given), then its warnings (text that reads
    as instructions)."""
    shown = describe(result) if lines is None else lines
    return shown + [f"  warning: {warning}" for warning in result.warnings]


def write_once(
    folder: Path | None,
    agent: str | None,
    as_json: bool,
    write: Callable[[Memory], WriteResult],
    lines: Callable[[WriteResult], list[str]] | None = None,
) -> None:
    """A command that is one store write: open the folder, ``write(memory)``, close it,
    then print the result (``lines(result)``, else ``describe``'s) and its warnings
    (text that reads as instructions: a person sees the flag ``--json`` carries); a
    refusal prints its reason and exits 1 (``report_write``)."""
    with opened(folder, agent) as memory:
        result = write(memory)
    shown = lines(result) if lines else None
    report_write(result, as_json, with_warnings(result, shown))


def print_hits(hits: list[Hit]) -> None:
    """Numbered hits, each with its kind, tier and score (a listing: its date), and
    what the search did: widened to the colder tiers, or how many hits wait there."""
    from memdir.index.search import Hits

    found = hits if isinstance(hits, Hits) else Hits(hits, mode="deep")
    sentence = found.sentence("--mode deep")
    if not found and found.listing:
        console.print("Nothing to list: no observations yet (an empty query matches nothing).")
        return
    if not found:
        console.print("No hits in any tier." if found.widened else "No hits.")
        return
    if found.listing:
        console.print("Listing the most recent observations (an empty query matches nothing):")
    elif found.widened and sentence:
        console.print(sentence)
    for number, hit in enumerate(found, start=1):
        where = f"{hit.path}:{hit.line_start}-{hit.line_end}"
        how = hit.date.strftime("%Y-%m-%d") if hit.date else "undated"
        how = how if found.listing else f"score {hit.score:.3f}"
        console.print(
            f"{number}. [cyan]{escape(where)}[/] [bold]{escape(hit.title)}[/] "
            f"({hit.kind}, {hit.tier} tier, {how})"
        )
        console.print(f"   {escape(hit.snippet)}")
    if found.colder and sentence:
        console.print(sentence)


def print_hits_json(hits: list[Hit]) -> None:
    """The hits as a JSON list on stdout (a listing's without scores); what the search
    did (widened, more in colder tiers, a listing), as the text output says it, on stderr."""
    from memdir.index.search import Hits

    found = hits if isinstance(hits, Hits) else Hits(hits, mode="deep")
    print_json(found.to_dicts())
    sentence = found.sentence("--mode deep")
    if sentence and found:  # an empty list says it all
        errors.print(sentence, markup=False)
