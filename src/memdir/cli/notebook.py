"""Working memory and snapshots: ``notebook`` (NOTEBOOK.md) and ``state`` (state.md).

``memdir notebook`` and ``memdir state`` alone show the file; their ``set``,
``clear`` and ``remove`` subcommands write it. Options given before the
subcommand (``memdir notebook --agent bot set ...``) apply to it too.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any

import typer
from rich.markup import escape

from memdir.cli._common import (
    READ_WRITE,
    AgentOption,
    FolderOption,
    JsonOption,
    TextArgument,
    command_group,
    console,
    group_options,
    opened,
    optional_argument,
    print_json,
    read_text,
    remember_group_options,
    reports_errors,
    write_once,
)
from memdir.textutil import plural
from memdir.timeutil import format_ts


class Managed(enum.StrEnum):
    agent = "agent"
    system = "system"
    cpp = "cpp"


# -- notebook -----------------------------------------------------------------------

notebook_app = command_group(
    "notebook",
    READ_WRITE,
    "Working memory (NOTEBOOK.md), always in the prompt: show it, set or clear entries.",
    invoke_without_command=True,
    no_args_is_help=False,
)


@notebook_app.callback()
@reports_errors
def notebook(
    ctx: typer.Context,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Working memory (NOTEBOOK.md): without a command, show its entries."""
    if remember_group_options(ctx, folder, agent, as_json):
        return
    with opened(folder, agent) as memory:
        entries = memory.notebook.entries()
        store = memory.notebook.store
        cap = memory.manifest.limits.notebook_max_agent_entries
    if as_json:
        print_json(
            {
                "store": store,
                "max_agent_entries": cap,
                "entries": [
                    {
                        "key": entry.key,
                        "managed": entry.managed,
                        "updated": format_ts(entry.updated_at),
                        "text": entry.text,
                    }
                    for entry in entries
                ],
            }
        )
        return
    agents = sum(1 for entry in entries if entry.managed == "agent")
    console.print(f"{store}: {agents} of {cap} agent entries.", markup=False)
    for entry in entries:
        console.print(
            f"\n[bold cyan]{escape(entry.key)}[/] ({entry.managed}, {format_ts(entry.updated_at)})"
        )
        console.print(entry.text, markup=False)


@notebook_app.command("set")
@reports_errors
def notebook_set(
    ctx: typer.Context,
    key: Annotated[
        str, typer.Argument(metavar="KEY", help="The entry's key, such as current-task.")
    ],
    text: TextArgument,
    managed: Annotated[
        Managed,
        typer.Option("--managed", help="Who manages it; only agent entries count toward the cap."),
    ] = Managed.agent,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Insert or replace a notebook entry (update_notebook); past the cap the oldest is archived."""
    write_once(
        *group_options(ctx, folder, agent, as_json),
        lambda memory: memory.notebook.update(key, read_text(text), managed.value),
    )


@notebook_app.command("clear")
@reports_errors
def notebook_clear(
    ctx: typer.Context,
    key: Annotated[
        str | None, optional_argument("KEY", "The entry to remove (default: every agent entry).")
    ] = None,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove one entry, or every agent entry (clear_notebook); the text goes to the archive."""
    write_once(
        *group_options(ctx, folder, agent, as_json),
        lambda memory: memory.notebook.clear(key),
    )


# -- state ----------------------------------------------------------------------------

state_app = command_group(
    "state",
    READ_WRITE,
    "Dated snapshots (state.md) that expire after a week: show, set or remove them.",
    invoke_without_command=True,
    no_args_is_help=False,
)


@state_app.callback()
@reports_errors
def state(
    ctx: typer.Context,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Dated snapshots (state.md): without a command, show them, newest first."""
    if remember_group_options(ctx, folder, agent, as_json):
        return
    with opened(folder, agent) as memory:
        expired = {entry.key for entry in memory.state.expired()}
        entries = sorted(memory.state.entries(), key=lambda e: e.updated_at, reverse=True)
        store = memory.state.store
    rows: list[dict[str, Any]] = [
        {
            "key": entry.key,
            "updated": format_ts(entry.updated_at),
            "expired": entry.key in expired,
            "text": entry.text,
        }
        for entry in entries
    ]
    if as_json:
        print_json({"store": store, "entries": rows})
        return
    console.print(
        f"{store}: {plural(len(rows), 'snapshot')}, {len(expired)} expired.", markup=False
    )
    for row in rows:
        mark = ", expired" if row["expired"] else ""
        console.print(f"[bold cyan]{escape(row['key'])}[/] ({row['updated']}{mark})")
        console.print(f"  {row['text']}", markup=False)


@state_app.command("set")
@reports_errors
def state_set(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="KEY", help="The snapshot's key, such as deploy.")],
    text: TextArgument,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Insert or replace a snapshot, stamped now (state_update)."""
    write_once(
        *group_options(ctx, folder, agent, as_json),
        lambda memory: memory.state.set(key, read_text(text)),
    )


@state_app.command("remove")
@reports_errors
def state_remove(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="KEY", help="The snapshot to remove.")],
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove a snapshot; its text goes to the archive."""
    write_once(
        *group_options(ctx, folder, agent, as_json),
        lambda memory: memory.state.remove(key),
    )
