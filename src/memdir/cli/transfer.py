"""``memdir export`` and ``memdir push``: an agent kept in PostgreSQL, out to a folder
on disk as its exact files, and back (``storage.transfer``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memdir.cli._common import (
    SETUP,
    JsonOption,
    app,
    console,
    database_url,
    print_json,
    reports_errors,
)

if TYPE_CHECKING:
    from memdir.storage.transfer import TransferReport

AgentRequired = Annotated[
    str,
    typer.Option("--agent", metavar="ID", help="The agent in the database.", show_default=False),
]


def _url() -> str:
    url = database_url()
    if not url:
        raise typer.BadParameter(
            "name the database: memdir --database-url postgresql://... (or set "
            "$MEMDIR_DATABASE_URL)",
            param_hint="'--database-url'",
        )
    return url


def _print(report: TransferReport, verb: str, as_json: bool) -> None:
    if as_json:
        print_json(report.to_dict())
        return
    console.print(
        f"{verb} agent {report.agent}: {len(report.written)} written, {len(report.removed)} "
        f"removed, {report.unchanged} unchanged ({report.folder}).",
        markup=False,
    )
    for path in report.written:
        console.print(f"  wrote {path}", markup=False)
    for path in report.removed:
        console.print(f"  removed {path}", markup=False)
    for path in report.conflicts:
        console.print(f"  replaced despite a change in the database (--force): {path}",
                      markup=False)  # fmt: skip


@app.command(rich_help_panel=SETUP)
@reports_errors
def export(
    directory: Annotated[
        Path,
        typer.Argument(metavar="DIR", help="The folder to write (new, or an earlier export)."),
    ],
    agent: AgentRequired,
    as_json: JsonOption = False,
) -> None:
    """Write an agent's folder from the database into DIR as its exact files, and record
    which version of each was exported (DIR/.memdir/export.json) for `memdir push`."""
    from memdir.storage.agents import database_schema
    from memdir.storage.transfer import export_agent

    report = export_agent(_url(), agent, directory, schema=database_schema())
    _print(report, "Exported", as_json)


@app.command(rich_help_panel=SETUP)
@reports_errors
def push(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="The memory folder to put into the database.")
    ],
    agent: AgentRequired,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Replace files changed in the database since the export, too."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Put a folder into the database as agent ID: changed files replace theirs under the
    agent's lock and are reindexed, each new text embedded in the same transaction. A
    file changed in the database since the export is a conflict: every one is listed and
    nothing is pushed, unless --force."""
    from memdir.storage.agents import database_schema
    from memdir.storage.transfer import push as run_push

    report = run_push(_url(), agent, directory, force=force, schema=database_schema())
    _print(report, "Pushed", as_json)
