"""Folder set-up: ``init``, ``status``, ``agents`` and ``demo``."""

from __future__ import annotations

import enum
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from memdir.cli._common import (
    SETUP,
    AgentOption,
    FolderOption,
    JsonOption,
    app,
    console,
    database_url,
    opened,
    optional_argument,
    print_json,
    reports_errors,
)
from memdir.config import MANIFEST_NAME, STATE_DIR, load_manifest
from memdir.errors import MemdirError
from memdir.textutil import plural
from memdir.timeutil import format_ts

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.scaffold import InitReport


class Layout(enum.StrEnum):
    default = "default"
    notebook = "notebook"
    vault = "vault"
    workspace = "workspace"


@app.command(rich_help_panel=SETUP)
@reports_errors
def init(
    path: Annotated[
        Path | None,
        optional_argument(
            "PATH",
            "The memory folder, created if missing (default: the current folder, "
            "or with --agent that agent's folder in $MEMDIR_HOME/agents).",
        ),
    ] = None,
    layout: Annotated[
        Layout | None,
        typer.Option(
            "--layout",
            "-l",
            help="Which layout to write (default: default; with --adopt: detect).",
            show_default=False,
        ),
    ] = None,
    adopt: Annotated[
        bool,
        typer.Option("--adopt", help="Write a manifest for files already here; move nothing."),
    ] = False,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            metavar="ID",
            help="The agent id to record in the manifest; without PATH, the folder is "
            "$MEMDIR_HOME/agents/ID.",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing memdir.toml.")
    ] = False,
    anyway: Annotated[
        bool,
        typer.Option(
            "--anyway",
            help="Go ahead in a folder that looks like something else's (a home folder, a "
            "code project, many files no layout reads), which init otherwise refuses.",
        ),
    ] = False,
    folder: FolderOption = None,
    as_json: JsonOption = False,
) -> None:
    """Make a folder a memory folder: write memdir.toml and the layout's starter files.
    With a database (--database-url), --agent ID without PATH creates the agent there."""
    from memdir.home import agent_folder
    from memdir.scaffold import adopt_folder, init_folder

    if path is not None and folder is not None:
        raise typer.BadParameter("give PATH or --dir, not both", param_hint="'--dir'")
    url = database_url()
    if url and agent is not None and path is None and folder is None:
        _init_agent(url, agent, layout.value if layout is not None else "default", force,
                    adopt, as_json)  # fmt: skip
        return
    target = path or folder
    if target is None:
        target = agent_folder(agent) if agent is not None else Path(".")
    chosen = layout.value if layout is not None else None
    if adopt:
        report = adopt_folder(target, chosen, agent=agent, force=force, anyway=anyway)
    else:
        report = init_folder(target, chosen or "default", agent=agent, force=force,
                             anyway=anyway)  # fmt: skip
    slower = _prepare_search(report.root)
    if as_json:
        print_json(_init_dict(report))
        return
    verb = "Adopted" if report.adopted else "Initialised"
    console.print(
        f"{verb} [cyan]{escape(str(report.root))}[/] with the [bold]{report.layout}[/] layout."
    )
    for relpath in report.created:
        console.print(f"  created {relpath}", markup=False)
    if report.migration is not None:
        console.print(f"  migrated: {report.migration.summary()}", markup=False)
    if report.uncovered:
        console.print(
            "  not in a layer of their own (searched as notes; "
            "add a layer to memdir.toml for more):"
        )
        for relpath in report.uncovered:
            console.print(f"    {relpath}", markup=False)
    if slower:
        console.print(f"  search will be slower than it should be: {slower}", markup=False)


def _prepare_search(root: Path) -> str | None:
    """The folder's embedder made ready for queries (MiniLM's int8 conversion, once per
    install, said on stderr while it runs): set-up pays it, not the first search. Why
    its searches will be slower, if they will."""
    from memdir.folder_index import choose_embedder
    from memdir.index.embedders import prepare_queries
    from memdir.memory import open_memory

    memory = open_memory(root)
    try:
        return prepare_queries(choose_embedder(memory))
    finally:
        memory.close()


def _init_agent(url: str, agent: str, layout: str, force: bool, adopt: bool, as_json: bool) -> None:
    from memdir.storage.agents import database_schema, init_agent
    from memdir.storage.postgres.backend import redact

    if adopt:
        raise typer.BadParameter(
            "--adopt maps a folder on disk; to move one into the database: memdir push DIR "
            "--agent ID",
            param_hint="'--adopt'",
        )
    created = init_agent(url, agent, layout, force=force, schema=database_schema())
    if as_json:
        print_json({"agent": agent, "database": redact(url), "layout": layout,
                    "created": created})  # fmt: skip
        return
    console.print(
        f"Initialised agent [cyan]{escape(agent)}[/] in {escape(redact(url))} with the "
        f"[bold]{layout}[/] layout."
    )
    for relpath in created:
        console.print(f"  created {relpath}", markup=False)


def _init_dict(report: InitReport) -> dict[str, Any]:
    return {
        "root": str(report.root),
        "layout": report.layout,
        "adopted": report.adopted,
        "created": report.created,
        "migration": report.migration.summary() if report.migration is not None else None,
        "uncovered": report.uncovered,
    }


@app.command(rich_help_panel=SETUP)
@reports_errors
def status(
    folder: FolderOption = None, agent: AgentOption = None, as_json: JsonOption = False
) -> None:
    """What a memory folder holds: its layers, index, search, history, notebook, knowledge
    and state."""
    from rich.table import Table

    with opened(folder, agent) as memory:
        data = folder_status(memory)
    if as_json:
        print_json(data)
        return
    console.print(f"Folder   {data['folder']}", markup=False)
    console.print(f"Layout   {data['layout']}; agent {data['agent']}", markup=False)
    table = Table("layer", "store", "memory", "boot", "files", title=None, box=None)
    for layer in data["layers"]:
        row = (layer["name"], layer["store"], layer["memory"] or "", layer["boot"], layer["files"])
        table.add_row(*map(str, row))
    console.print(table)
    index = data["index"]
    items = plural(index["items"], "item")
    console.print(f"Index    {items}" if index["built"] else "Index    not built yet", markup=False)
    search = data["search"]
    if search["semantic"]:
        console.print(f"Search   keyword and semantic ({search['embedder']})", markup=False)
    elif search["problem"]:
        console.print(f"Search   keyword only: {search['problem']}", markup=False)
    else:
        console.print('Search   keyword only ([index] embedder = "none")', markup=False)
    for line in _status_lines(data):
        console.print(line, markup=False)


def _status_lines(data: dict[str, Any]) -> list[str]:
    lines = []
    if data["history"] is not None:
        lines.append(f"History  {plural(data['history']['activities'], 'activity', 'activities')}")
    notebook = data["notebook"]
    if notebook is not None:
        others = notebook["entries"] - notebook["agent_entries"]
        lines.append(
            f"Notebook {notebook['agent_entries']} of {notebook['max_agent_entries']} agent "
            f"entries" + (f" (+{others} system)" if others else "")
        )
    knowledge = data["knowledge"]
    if knowledge is not None:
        sections = plural(len(knowledge["sections"]), "section")
        lines.append(
            f"Knowledge {sections}, {knowledge['total_chars']} of "
            f"{knowledge['total_max']} chars; {knowledge['observations']} of "
            f"{knowledge['observations_max']} observations"
        )
        for key in knowledge["over_sections"]:
            lines.append(
                f"  section {key!r} is over the {knowledge['section_max']}-char cap "
                f"({knowledge['sections'][key]} chars)"
            )
    state = data["state"]
    if state is not None:
        lines.append(f"State    {plural(state['entries'], 'snapshot')}, {state['expired']} expired")
    dream = data.get("dream")
    if dream is not None:
        when = f"last {dream['last']['at']}" if dream["last"] else "never run"
        lines.append(
            f"Dream    {when}; {'due now' if dream['due'] else 'not due'} ({dream['why']})"
        )
    return lines


def folder_status(memory: Memory) -> dict[str, Any]:
    """The numbers ``memdir status`` shows, read without writing anything."""
    from memdir.index.sync import INDEX_FILE
    from memdir.storage.mounts import owned_files

    manifest = memory.manifest
    owned = owned_files(memory.files, manifest.layers)
    data: dict[str, Any] = {
        "folder": str(memory.root) if memory.backend == "local" else memory.storage.where,
        "layout": manifest.layout,
        "agent": manifest.agent,
        "layers": [
            {
                "name": name,
                "store": layer.store,
                "memory": layer.memory,
                "boot": layer.boot,
                "files": len(owned[name]),  # the files it owns, as the index has them
            }
            for name, layer in manifest.layers.items()
        ],
        "index": {"built": False, "items": 0},
        "history": None,
        "notebook": None,
        "knowledge": None,
        "state": None,
        "dream": None,
    }
    history = manifest.layer_for("history")
    if memory.backend != "local":  # kept in the database: counted there
        counted = memory.index.rows.count()
        data["index"] = {"built": counted > 0, "items": counted}
        if history is not None:
            data["history"] = {"activities": len(memory.history.recent(1_000_000))}
    else:
        items = _count(memory.root / STATE_DIR / INDEX_FILE, "items")
        if items is not None:
            data["index"] = {"built": True, "items": items}
        if history is not None:
            activities = _count(memory.root / history[1].paths[0], "agent_activities")
            data["history"] = {"activities": activities or 0}
    limits = manifest.limits
    if memory.has("notebook"):
        entries = memory.notebook.entries()
        data["notebook"] = {
            "entries": len(entries),
            "agent_entries": sum(1 for entry in entries if entry.managed == "agent"),
            "max_agent_entries": limits.notebook_max_agent_entries,
        }
    if memory.has("knowledge"):
        usage = memory.knowledge.usage()
        data["knowledge"] = {
            "sections": usage.section_chars,
            "total_chars": usage.total_chars,
            "section_max": usage.section_max,
            "total_max": usage.total_max,
            "over_sections": usage.over_sections,
            "observations": usage.observations,
            "observations_max": usage.observations_max,
        }
    if memory.has("state"):
        data["state"] = {
            "entries": len(memory.state.entries()),
            "expired": len(memory.state.expired()),
        }
    if memory.has("knowledge"):
        recorded = history is not None and (
            memory.backend != "local" or (memory.root / history[1].paths[0]).is_file()
        )
        data["dream"] = _dream_status(memory, has_history=recorded)
    data["search"] = _search_status(memory)
    return data


def _search_status(memory: Memory) -> dict[str, Any]:
    """The embedder search will use, or why it goes by keyword alone: one that cannot be
    made (a name no plugin has, options it does not take, openai:MODEL without a base
    URL), or a model file that fails its pinned hash (checked, not loaded). Made, not
    run: a server is met by the first search."""
    from memdir.folder_index import embedder_named
    from memdir.index.embedders import EmbedderUnavailable, load_embedder

    name, options = embedder_named(memory.manifest.index)
    if name == "none":
        return {"embedder": name, "semantic": False, "problem": None}
    try:
        embedder = load_embedder(name, options)
        check = getattr(embedder, "check_files", None)
        if callable(check):  # MiniLM: its model file against the pinned hash, no load
            check()
    except EmbedderUnavailable as exc:
        return {"embedder": name, "semantic": False, "problem": str(exc)}
    return {"embedder": name, "semantic": True, "problem": None}


def _dream_status(memory: Memory, *, has_history: bool) -> dict[str, Any]:
    """Whether a dream is due, and the last one (the history is read only if it exists)."""
    from memdir.dream.cycle import dream_due, last_dream

    if not has_history:
        count = len(memory.knowledge.observations())
        minimum = memory.manifest.dream.min_observations
        due = count >= minimum
        why = plural(count, "observation") + (
            " and no dream yet" if due else f", fewer than {minimum}"
        )
        return {"due": due, "why": why, "last": None}
    due, why = dream_due(memory)
    last = last_dream(memory)
    return {
        "due": due,
        "why": why,
        "last": None
        if last is None
        else {"at": format_ts(last.started_at), "summary": last.summary, "id": last.id},
    }


def _count(database: Path, table: str) -> int | None:
    """Rows in ``table`` of a SQLite file opened read-only; None if there is none yet."""
    if not database.is_file():
        return None
    try:
        db = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = db.execute(f"SELECT count(*) FROM {table}").fetchone()
    except sqlite3.Error:
        return None
    finally:
        db.close()
    return int(row[0])


@app.command(rich_help_panel=SETUP)
@reports_errors
def agents(as_json: JsonOption = False) -> None:
    """The agents in the home ($MEMDIR_HOME/agents), each with its folder and layout
    (with --database-url: the agents in that database)."""
    from memdir.home import agent_folder, agents_dir, list_agents

    url = database_url()
    if url:
        from memdir.storage.agents import database_agents, database_schema
        from memdir.storage.postgres.backend import redact

        kept = database_agents(url, schema=database_schema())
        if as_json:
            print_json([{"id": a, "layout": layout} for a, layout in kept])
            return
        if not kept:
            console.print(
                f"No agents in {redact(url)}; create one with: memdir init --agent ID",
                markup=False,
            )
        for name, layout in kept:
            console.print(f"[cyan]{escape(name)}[/] ({layout})")
        return
    found = []
    for name in list_agents():
        path = agent_folder(name)
        try:
            layout = load_manifest(path / MANIFEST_NAME).layout
        except MemdirError:
            layout = "unreadable manifest"
        found.append({"id": name, "folder": str(path), "layout": layout})
    if as_json:
        print_json(found)
        return
    if not found:
        console.print(
            f"No agents in {agents_dir()}; create one with: memdir init --agent ID", markup=False
        )
    for item in found:
        console.print(f"[cyan]{item['id']}[/] {escape(item['folder'])} ({item['layout']})")


@app.command(rich_help_panel=SETUP)
@reports_errors
def demo(
    path: Annotated[
        Path | None,
        optional_argument(
            "PATH",
            "An empty or new folder to run in, kept afterwards (default: a temporary "
            "one, removed at the end).",
        ),
    ] = None,
    keep: Annotated[
        bool,
        typer.Option("--keep", help="Keep the temporary folder to look at (its path is printed)."),
    ] = False,
) -> None:
    """Run memdir's main job in a fresh folder and print the files and the prompt."""
    from memdir.demo import demo as run_demo

    run_demo(path, console, keep=keep)
