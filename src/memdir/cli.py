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
from rich.progress import Progress
from rich.table import Table

from memdir import __version__
from memdir.errors import MemdirError
from memdir.history import Activity
from memdir.index.search import Hit
from memdir.ingest import FORMATS
from memdir.memory import open_memory
from memdir.results import WriteResult
from memdir.scaffold import InitReport, adopt_folder, init_folder
from memdir.timeutil import format_ts

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
    _print_hits(hits)


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


def _print_hits(hits: list[Hit]) -> None:
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


def _refused(result: WriteResult) -> None:
    if not result.ok:
        errors.print(f"[red]refused:[/] {result.reason}", highlight=False)
        raise typer.Exit(1)


@app.command()
@_reports_errors
def touch(
    card: Annotated[str, typer.Argument(help="The card: its path, file name or title.")],
    folder: FolderOption = Path("."),
) -> None:
    """Mark a card recalled: one tier up, last_accessed today."""
    result = open_memory(folder).touch(card)
    _refused(result)
    console.print(f"Touched {result.store}: {'; '.join(result.notes)}", highlight=False)


@app.command()
@_reports_errors
def decay(
    folder: FolderOption = Path("."),
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would change; write nothing.")
    ] = False,
) -> None:
    """Recompute every card's relevance and tier from its last access."""
    report = open_memory(folder).decay(dry_run=dry_run)
    verb = "would change" if dry_run else "changed"
    counts = ", ".join(f"{tier} {count}" for tier, count in report.to_dict()["tiers"].items())
    console.print(f"{report.cards} cards, {len(report.changed)} {verb}. Tiers: {counts}.")


@app.command()
@_reports_errors
def creative(
    n: Annotated[int, typer.Argument(help="How many items to sample.", min=1)] = 5,
    folder: FolderOption = Path("."),
    seed: Annotated[int | None, typer.Option("--seed", help="Repeat a sample.")] = None,
) -> None:
    """A random sample of cold and archived memories, not ranked by any query."""
    _print_hits(open_memory(folder).creative(n, seed=seed))


@app.command()
@_reports_errors
def moc(folder: FolderOption = Path(".")) -> None:
    """Write a Map of Content per vault folder, and the link graph to .memdir/."""
    memory = open_memory(folder)
    written = memory.write_mocs()
    graph = memory.graph()
    console.print(
        f"{len(written)} maps written; {len(graph.cards)} cards, "
        f"{len(graph.orphans)} orphans, {sum(map(len, graph.broken.values()))} broken links.",
        highlight=False,
    )
    for path in written:
        console.print(f"  wrote {path}", highlight=False)


lessons_app = typer.Typer(help="Lessons learned: log them, and check them before risky work.")
app.add_typer(lessons_app, name="lessons")


@lessons_app.command("check")
@_reports_errors
def lessons_check(
    query: Annotated[str, typer.Argument(help="What you are about to do.")],
    folder: FolderOption = Path("."),
    k: Annotated[int, typer.Option("-k", help="How many lessons.", min=1)] = 5,
) -> None:
    """Search the lessons before a risky operation."""
    _print_hits(open_memory(folder).lessons_check(query, k=k))


@lessons_app.command("add")
@_reports_errors
def lessons_add(
    category: Annotated[str, typer.Argument(help="Such as 'Discord API' or 'File Ops'.")],
    mistake: Annotated[str, typer.Option("--mistake", help="What you did wrong.")],
    happened: Annotated[str, typer.Option("--happened", help="What actually happened.")],
    rule: Annotated[str, typer.Option("--rule", help="The rule to follow next time.")],
    folder: FolderOption = Path("."),
) -> None:
    """Log a lesson: the mistake, what happened, the rule."""
    result = open_memory(folder).lessons.add(category, mistake, happened, rule)
    _refused(result)
    console.print(f"{result.action.capitalize()} {result.store} ({result.key}).", highlight=False)


@app.command()
@_reports_errors
def rotate(
    folder: FolderOption = Path("."),
    project: Annotated[str | None, typer.Option("--project", help="Only this project.")] = None,
) -> None:
    """Compress past weeks of research intel to 1-3 sentences each."""
    report = open_memory(folder).intel.rotate(project)
    for name, label in report.rotated:
        console.print(f"  rotated {name}: {label}", highlight=False)
    console.print(f"{len(report.rotated)} weeks rotated, {report.unchanged} files unchanged.")


history_app = typer.Typer(help="The activity history: what the agent did, searchable.")
app.add_typer(history_app, name="history")


def _print_activities(activities: list[Activity]) -> None:
    if not activities:
        console.print("No activities.")
    for activity in activities:
        outcome = {True: "ok", False: "failed", None: "running"}[activity.success]
        console.print(
            f"[cyan]{activity.id}[/] {format_ts(activity.started_at)} {activity.type} "
            f"[bold]{escape(activity.label)}[/] ({outcome})",
            highlight=False,
        )
        if activity.summary:
            console.print(f"   {escape(activity.summary)}", highlight=False)


@history_app.command("list")
@_reports_errors
def history_list(
    folder: FolderOption = Path("."),
    limit: Annotated[int, typer.Option("-n", help="How many.", min=1)] = 20,
    kind: Annotated[str | None, typer.Option("--type", help="Only this activity type.")] = None,
    task: Annotated[str | None, typer.Option("--task", help="Only this task id.")] = None,
) -> None:
    """Recent activities, newest first."""
    _print_activities(open_memory(folder).history.recent(limit, type=kind, task_id=task))


@history_app.command("search")
@_reports_errors
def history_search(
    query: Annotated[str, typer.Argument(help="Words from the label, summary or keywords.")],
    folder: FolderOption = Path("."),
    limit: Annotated[int, typer.Option("-n", help="How many.", min=1)] = 10,
) -> None:
    """Activities matching QUERY, best first."""
    _print_activities(open_memory(folder).history.search(query, limit))


@history_app.command("get")
@_reports_errors
def history_get(
    activity_id: Annotated[str, typer.Argument(help="The activity's id (act-...).")],
    folder: FolderOption = Path("."),
) -> None:
    """One activity with its ordered event logs, as JSON."""
    detail = open_memory(folder).history.get(activity_id)
    if detail is None:
        raise MemdirError(f"no activity {activity_id!r}")
    console.print_json(data=detail.to_dict())


@history_app.command("export")
@_reports_errors
def history_export(
    folder: FolderOption = Path("."),
    out: Annotated[Path, typer.Option("--out", "-o", help="The JSON Lines file to write.")] = Path(
        "history.jsonl"
    ),
) -> None:
    """Export the whole history to JSON Lines, from a consistent snapshot."""
    count = open_memory(folder).history.export_jsonl(out)
    console.print(f"Wrote {count} records to {out}.", highlight=False)


@app.command()
@_reports_errors
def ingest(
    file: Annotated[Path, typer.Argument(help="The chat history to import.")],
    folder: FolderOption = Path("."),
    format: Annotated[
        str | None,
        typer.Option("--format", help=f"One of {', '.join(FORMATS)} (default: detect)."),
    ] = None,
) -> None:
    """Import a chat history into sessions, the journal and the index."""
    memory = open_memory(folder)
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("importing", total=None)

        def step(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        report = memory.ingest(file, format, progress=step)
    console.print(
        f"Imported {report.imported} of {report.conversations} conversations "
        f"({report.messages} messages, format {report.format}); "
        f"{report.skipped} already imported."
        + (f" {report.redacted} credentials redacted." if report.redacted else ""),
        highlight=False,
    )


sessions_app = typer.Typer(help="Conversation sessions: the current episodes.")
app.add_typer(sessions_app, name="sessions")


@sessions_app.command("list")
@_reports_errors
def sessions_list(
    folder: FolderOption = Path("."),
    kind: Annotated[
        str | None, typer.Option("--kind", help="sess, hb, a2a, comment, sys or task.")
    ] = None,
) -> None:
    """Sessions, most recently active first."""
    for info in open_memory(folder).sessions.list(kind):
        console.print(
            f"[cyan]{info.id}[/] {info.kind} {info.messages} messages, last active "
            f"{info.last_activity_at}",
            highlight=False,
        )


@sessions_app.command("export")
@_reports_errors
def sessions_export(
    session: Annotated[str, typer.Argument(help="The session id.")],
    folder: FolderOption = Path("."),
    archived: Annotated[
        bool, typer.Option("--archived", help="Include messages moved out by compaction.")
    ] = False,
) -> None:
    """A session as the specification's JSON (id, agentId, messages, startedAt, lastActivityAt)."""
    console.print_json(data=open_memory(folder).sessions.export(session, include_archived=archived))


class Profile(enum.StrEnum):
    reflex = "reflex"
    default = "default"
    deep = "deep"
    heartbeat = "heartbeat"


@app.command()
@_reports_errors
def context(
    folder: FolderOption = Path("."),
    profile: Annotated[Profile, typer.Option("--profile", help="What to load.")] = Profile.default,
    query: Annotated[
        str | None, typer.Option("--query", "-q", help="Add search hits for this query.")
    ] = None,
    budget: Annotated[
        int | None, typer.Option("--budget", help="Total tokens (default: the manifest's).", min=0)
    ] = None,
    report: Annotated[
        bool, typer.Option("--report", help="Print what each layer spent instead of the text.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print text and report as JSON.")] = False,
) -> None:
    """Print what an agent loads into its prompt: the stable part, then the live part."""
    ctx = open_memory(folder).context(profile.value, query, budget)
    if as_json:
        console.print_json(data=ctx.to_dict())
        return
    if not report:
        console.print(ctx.text, markup=False, highlight=False, end="")
        return
    table = Table("layer", "part", "bytes", "tokens", "items", "left out", "budget")
    for layer in ctx.layers:
        numbers = (layer.bytes, layer.tokens, layer.included, layer.left_out)
        table.add_row(layer.layer, layer.part, *map(str, numbers), str(layer.budget or ""))
    console.print(table)
    console.print(f"{ctx.tokens} of {ctx.budget} tokens ({ctx.counter}).", highlight=False)
    for item in ctx.left_out:
        console.print(f"  left out {item.source}: {item.reason}", highlight=False)


@app.command("budget")
@_reports_errors
def budget_command(
    folder: FolderOption = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Every always-loaded file, its bytes and tokens against its target."""
    report = open_memory(folder).budget()
    if as_json:
        console.print_json(data=report.to_dict())
        return
    table = Table("file", "kind", "bytes", "tokens", "lines")
    for row in report.rows:
        table.add_row(row.path, row.kind, str(row.bytes), str(row.tokens), str(row.lines))
    console.print(table)
    targets = report.targets
    console.print(
        f"Total {report.total_bytes} bytes, about {(report.total_bytes + 3) // 4} tokens, "
        f"against {targets['total']} bytes. Targets: hot files {targets['hot']} bytes each, "
        f"config {targets['config']} bytes together, knowledge {targets['knowledge']} bytes.",
        highlight=False,
    )
    for line in report.advice or ["Within every target."]:
        console.print(f"  {line}", highlight=False)


@app.command()
@_reports_errors
def backup(
    folder: FolderOption = Path("."),
    push: Annotated[bool, typer.Option("--push", help="Push where a remote is set.")] = False,
) -> None:
    """Commit the memory folder with git ("Daily backup: YYYY-MM-DD")."""
    result = open_memory(folder).backup(push=push)
    if result.committed:
        console.print(f"Committed {result.commit}: {result.message}", highlight=False)
    else:
        console.print("Nothing to commit.")
    for note in result.notes:
        console.print(f"  {note}", highlight=False)


@app.command()
@_reports_errors
def doctor(
    folder: FolderOption = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="Print findings as JSON.")] = False,
) -> None:
    """Audit the folder: hot-context size, DRY, broken links, caps, index freshness."""
    findings = open_memory(folder).doctor()
    if as_json:
        console.print_json(data=[finding.to_dict() for finding in findings])
    elif not findings:
        console.print("No problems found.")
    for finding in [] if as_json else findings:
        console.print(
            f"[yellow]\\[{finding.check}][/] {escape(finding.path)}: {escape(finding.message)}",
            highlight=False,
        )
    if findings:
        raise typer.Exit(1)


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
