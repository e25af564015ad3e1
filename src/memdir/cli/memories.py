"""Reading and writing memory: ``search``, ``get``, ``save`` and ``update`` (knowledge.md).

Each write goes straight to its store, the same call the agent tools make, and
prints the ``WriteResult``: a refusal prints its reason and exits 1.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from memdir.cli._common import (
    READ_WRITE,
    TEXT_HELP,
    AgentOption,
    FolderOption,
    JsonOption,
    TextArgument,
    app,
    console,
    errors,
    opened,
    optional_argument,
    print_hits,
    print_hits_json,
    print_json,
    read_text,
    reports_errors,
    write_once,
)

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.results import WriteResult


class SearchMode(enum.StrEnum):
    heartbeat = "heartbeat"
    normal = "normal"
    deep = "deep"


class ObservationType(enum.StrEnum):
    fact = "fact"
    note = "note"
    insight = "insight"
    task_result = "task_result"
    conversation = "conversation"


class UpdateMode(enum.StrEnum):
    REPLACE = "replace"  # upper case: `replace` would shadow str.replace
    PATCH = "patch"
    APPEND = "append"


@app.command(rich_help_panel=READ_WRITE)
@reports_errors
def search(
    query: Annotated[
        str,
        typer.Argument(metavar="QUERY", help="What to look for; empty lists recent observations."),
    ],
    folder: FolderOption = None,
    agent: AgentOption = None,
    k: Annotated[int, typer.Option("-k", metavar="N", help="How many hits.", min=1)] = 10,
    mode: Annotated[
        SearchMode,
        typer.Option(
            "--mode",
            help=(
                "Which tiers: heartbeat (core, active), normal (and warm; cold and archive "
                "when nothing there is strong), deep (all)."
            ),
        ),
    ] = SearchMode.normal,
    kind: Annotated[
        list[str] | None,
        typer.Option(
            "--kind",
            metavar="KIND",
            help="Only items of this kind, such as observation or card (repeatable).",
        ),
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag", metavar="TAG", help="Only items with one of these tags (repeatable)."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Search the memory folder (keyword + semantic) and print the hits."""
    with opened(folder, agent) as memory:
        hits = memory.search(query, k=k, mode=mode.value, kinds=kind, tags=tag)
    if as_json:
        print_hits_json(hits)
        return
    print_hits(hits)


@app.command(rich_help_panel=READ_WRITE)
@reports_errors
def get(
    path: Annotated[
        str,
        typer.Argument(metavar="PATH", help="A file in the memory folder, such as knowledge.md."),
    ],
    from_line: Annotated[
        int | None,
        typer.Option("--from", metavar="N", help="The first line (1-based; default 1).", min=1),
    ] = None,
    to_line: Annotated[
        int | None,
        typer.Option(
            "--to", metavar="N", help="The last line (default: the end of the file).", min=1
        ),
    ] = None,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print exact lines of a memory file (memory_get): open what a search hit points at."""
    with opened(folder, agent) as memory:
        result = memory.get(path, from_line, to_line)
    if as_json:
        print_json(result.to_dict())
    elif result.ok:
        console.print(result.text, markup=False)
    if not result.ok:
        errors.print(f"[red]error:[/] {escape(result.reason or 'not found')}")
        raise typer.Exit(1)


@app.command(rich_help_panel=READ_WRITE)
@reports_errors
def save(
    text: TextArgument,
    kind: Annotated[
        ObservationType, typer.Option("--type", "-t", help="What kind of observation it is.")
    ] = ObservationType.note,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", metavar="TAG", help="A tag for it (repeatable).")
    ] = None,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Save one observation to knowledge.md (memory_save): searched later, never injected."""
    write_once(
        folder,
        agent,
        as_json,
        lambda memory: memory.knowledge.save(read_text(text), kind.value, tag or []),
    )


@app.command(rich_help_panel=READ_WRITE)
@reports_errors
def update(
    section: Annotated[
        str | None,
        optional_argument("SECTION", "The curated section (a ## heading of knowledge.md)."),
    ] = None,
    text: Annotated[str | None, optional_argument("TEXT", TEXT_HELP)] = None,
    mode: Annotated[
        UpdateMode,
        typer.Option(
            "--mode",
            "-m",
            help="replace the section's text, or patch it (add lines; append is the same).",
        ),
    ] = UpdateMode.REPLACE,
    delete: Annotated[
        list[str] | None,
        typer.Option(
            "--delete",
            metavar="ID",
            help="Instead, delete the observation with this id (repeatable, or comma-separated).",
            show_default=False,
        ),
    ] = None,
    remove: Annotated[
        bool,
        typer.Option("--remove", help="Instead, remove the section SECTION (kept in the archive)."),
    ] = False,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write a curated section of knowledge.md (memory_update), or delete observations."""
    if delete:
        if section is not None or remove:
            raise typer.BadParameter(
                "with --delete give no SECTION, TEXT or --remove; give each id with its own "
                "--delete, or separate them with commas",
                param_hint="'--delete'",
            )
    elif section is None:
        verb = "remove" if remove else "write"
        raise typer.BadParameter(f"name the SECTION to {verb}", param_hint="'SECTION'")
    elif remove and text is not None:
        raise typer.BadParameter("--remove takes SECTION only, no TEXT", param_hint="'--remove'")
    elif not remove and text is None:
        raise typer.BadParameter(f"give the TEXT for {section!r}", param_hint="'TEXT'")

    def write(memory: Memory) -> WriteResult:
        if delete:
            return memory.knowledge.delete_observations(",".join(delete))
        if remove:
            assert section is not None
            return memory.knowledge.remove_section(section)
        assert text is not None
        return memory.knowledge.update(section, read_text(text), mode.value)

    write_once(folder, agent, as_json, write)
