"""Episodes: ``recall`` (also ``history``) over the activity history, ``sessions``, ``ingest``."""

from __future__ import annotations

import enum
import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from memdir.cli._common import (
    EPISODES,
    AgentOption,
    FolderOption,
    JsonOption,
    app,
    command_group,
    console,
    fail,
    opened,
    print_json,
    progress,
    reports_errors,
    stoppable,
)
from memdir.config import MANIFEST_NAME, STATE_DIR
from memdir.ingest.model import FORMATS
from memdir.textutil import plural
from memdir.timeutil import format_ts, parse_ts

if TYPE_CHECKING:
    from memdir.ingest import LeftOut
    from memdir.memory import Memory
    from memdir.stores.history import Activity, ActivityDetail


class ActivityType(enum.StrEnum):
    """The history's ACTIVITY_TYPES."""

    task = "task"
    chat = "chat"
    heartbeat = "heartbeat"
    a2a = "a2a"
    internal = "internal"
    respond_in_session = "respond_in_session"


recall_app = command_group(
    "recall",
    EPISODES,
    "The activity history (recall_activity): what the agent did; list, search, get, export.",
)
app.add_typer(
    recall_app,
    name="history",
    help="The same as recall: the activity history, listed, searched, opened, exported.",
    rich_help_panel=EPISODES,
)

TypeOption = Annotated[
    ActivityType | None,
    typer.Option("--type", help="Only activities of this type.", show_default=False),
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="DATE",
        help="Only activities started at or after this date or time (2026-11-30).",
        show_default=False,
    ),
]


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    moment = parse_ts(value)
    if moment is None:
        raise typer.BadParameter(
            f"{value!r} is not a date such as 2026-11-30", param_hint="'--since'"
        )
    return moment


def _print_activities(activities: list[Activity]) -> None:
    if not activities:
        console.print("No activities.")
    for activity in activities:
        outcome = {True: "ok", False: "failed", None: "running"}[activity.success]
        console.print(
            f"[cyan]{activity.id}[/] {format_ts(activity.started_at)} {activity.type} "
            f"[bold]{escape(activity.label)}[/] ({outcome})"
        )
        if activity.summary:
            console.print(f"   {activity.summary}", markup=False)


@recall_app.command("list")
@reports_errors
def recall_list(
    folder: FolderOption = None,
    agent: AgentOption = None,
    limit: Annotated[int, typer.Option("-n", metavar="N", help="How many activities.", min=1)] = 20,
    kind: TypeOption = None,
    task: Annotated[
        str | None,
        typer.Option("--task", metavar="ID", help="Only this task id.", show_default=False),
    ] = None,
    since: SinceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Recent activities, newest first."""
    moment = _since(since)
    with opened(folder, agent) as memory:
        found = memory.history.recent(
            limit, type=kind.value if kind else None, task_id=task, since=moment
        )
    if as_json:
        print_json([activity.to_dict() for activity in found])
        return
    _print_activities(found)


@recall_app.command("search")
@reports_errors
def recall_search(
    query: Annotated[
        str, typer.Argument(metavar="QUERY", help="Words from the label, summary or keywords.")
    ],
    folder: FolderOption = None,
    agent: AgentOption = None,
    limit: Annotated[int, typer.Option("-n", metavar="N", help="How many activities.", min=1)] = 10,
    kind: TypeOption = None,
    since: SinceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Activities matching QUERY, best first."""
    moment = _since(since)
    with opened(folder, agent) as memory:
        found = memory.history.search(query, limit, type=kind.value if kind else None, since=moment)
    if as_json:
        print_json([activity.to_dict() for activity in found])
        return
    _print_activities(found)


@recall_app.command("get")
@reports_errors
def recall_get(
    activity_id: Annotated[
        str, typer.Argument(metavar="ACTIVITY_ID", help="The activity's id (act-...).")
    ],
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """One activity with its ordered event logs."""
    with opened(folder, agent) as memory:
        detail = memory.history.get(activity_id)
    if detail is None:
        fail(f"no activity {activity_id!r}; `memdir recall list` shows recent ones")
        return
    if as_json:
        print_json(detail.to_dict())
        return
    _print_detail(detail)


def _print_detail(detail: ActivityDetail) -> None:
    activity = detail.activity
    _print_activities([activity])
    ended = format_ts(activity.ended_at) if activity.ended_at else "not yet"
    console.print(
        f"   ended {ended}; {plural(activity.total_tokens, 'token')}, "
        f"{plural(activity.total_tools, 'tool call')}"
        + (f"; task {activity.task_id}" if activity.task_id else "")
        + (f"; keywords: {', '.join(activity.keywords)}" if activity.keywords else ""),
        markup=False,
    )
    for event in detail.logs:
        console.print(f"   {event.seq:>3} {event.type}: {event.content}", markup=False)


@recall_app.command("export")
@reports_errors
def recall_export(
    folder: FolderOption = None,
    agent: AgentOption = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", metavar="FILE", help="The JSON Lines file to write.")
    ] = Path("history.jsonl"),
    as_json: JsonOption = False,
) -> None:
    """Export the whole history to JSON Lines, from a consistent snapshot."""
    with opened(folder, agent) as memory:
        replaced = memory_file_at(memory, out)
        if replaced is not None:
            fail(f"{out} would be {replaced} in the memory folder; name another --out file")
        if out.is_dir():  # checked before the export opens it: nothing is written
            fail(f"--out {out} is a folder; name a file in it, such as {out / 'history.jsonl'}")
        if not out.parent.is_dir():
            fail(f"--out {out}: there is no folder {out.parent} to write it in")
        count = memory.history.export_jsonl(out)  # both backends have it
    if as_json:
        print_json({"out": str(out), "records": count})
        return
    console.print(f"Wrote {plural(count, 'record')} to {out}.", markup=False)


def memory_file_at(memory: Memory, out: Path) -> str | None:
    """What of the memory folder a file written at ``out`` would replace (its manifest, a
    file of its own or one a layer owns), or None: ``-o knowledge.md`` replaced it."""
    from memdir.paths import resolved

    target, root = resolved(out), Path(os.path.realpath(memory.root))  # a loop: an error
    if not target.is_relative_to(root):
        return None
    relpath = target.relative_to(root).as_posix()
    if relpath == MANIFEST_NAME or relpath.split("/")[0] == STATE_DIR:
        return relpath
    layers = memory.manifest.layers.items()
    if any(memory.space.matches(name, layer, relpath) for name, layer in layers):
        return relpath
    return None


# -- sessions and imports ---------------------------------------------------------------

sessions_app = command_group("sessions", EPISODES, "Conversation sessions: the current episodes.")


class SessionKind(enum.StrEnum):
    sess = "sess"
    hb = "hb"
    a2a = "a2a"
    comment = "comment"
    sys = "sys"
    task = "task"


@sessions_app.command("list")
@reports_errors
def sessions_list(
    folder: FolderOption = None,
    agent: AgentOption = None,
    kind: Annotated[
        SessionKind | None,
        typer.Option("--kind", help="Only sessions of this kind.", show_default=False),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Sessions, most recently active first."""
    with opened(folder, agent) as memory:
        found = memory.sessions.list(kind.value if kind else None)
    if as_json:
        print_json([info.to_dict() for info in found])
        return
    if not found:
        console.print("No sessions.")
    for info in found:
        console.print(
            f"[cyan]{info.id}[/] {info.kind} {info.messages} messages, last active "
            f"{info.last_activity_at}"
        )


@sessions_app.command("export")
@reports_errors
def sessions_export(
    session: Annotated[str, typer.Argument(metavar="SESSION_ID", help="The session id.")],
    folder: FolderOption = None,
    agent: AgentOption = None,
    archived: Annotated[
        bool, typer.Option("--archived", help="Include messages moved out by compaction.")
    ] = False,
) -> None:
    """A session as the specification's JSON (id, agentId, messages, startedAt, lastActivityAt)."""
    with opened(folder, agent) as memory:
        data = memory.sessions.export(session, include_archived=archived)
    print_json(data)


@app.command(rich_help_panel=EPISODES)
@reports_errors
def ingest(
    file: Annotated[
        Path,
        typer.Argument(metavar="FILE", help="The chat history, or the export .zip, to import."),
    ],
    folder: FolderOption = None,
    agent: AgentOption = None,
    format: Annotated[
        str | None,
        typer.Option(
            "--format",
            metavar="FORMAT",
            help=f"One of {', '.join(FORMATS)} (default: detect).",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Import a chat history into sessions, the journal and the index. Stopped (Ctrl-C,
    or killed), what was imported and embedded is kept: run it again to go on."""
    if format is not None and format not in FORMATS:
        raise typer.BadParameter(
            f"{format!r} is not one of {', '.join(FORMATS)}", param_hint="'--format'"
        )
    with (
        opened(folder, agent) as memory,
        stoppable(memory, f"memdir ingest {file}"),
        progress("importing") as step,
    ):
        report = memory.ingest(file, format, progress=step)
    if as_json:
        print_json(report.to_dict())
        return
    console.print(
        f"Imported {report.imported} of {report.conversations} conversations "
        f"({report.messages} messages, format {report.format}); "
        f"{report.skipped} already imported."
        + (f" {report.redacted} credentials redacted." if report.redacted else ""),
        markup=False,
    )
    _print_left_out(report.left_out)


LEFT_OUT_SHOWN = 20
"""Conversations left out that the text report lists one a line (--json has them all)."""


def _print_left_out(left_out: list[LeftOut]) -> None:
    if not left_out:
        return
    lines = [f"Left out {plural(len(left_out), 'conversation')}:"]
    lines += [f"  {item.describe()}" for item in left_out[:LEFT_OUT_SHOWN]]
    if len(left_out) > LEFT_OUT_SHOWN:
        lines.append(f"  ... and {len(left_out) - LEFT_OUT_SHOWN} more (--json lists them all)")
    console.print("\n".join(lines), markup=False)
