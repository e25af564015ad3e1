"""The workspace from the command line: ``memdir journal``, ``memdir work``, ``memdir intel``.

- ``journal append SECTION TEXT`` / ``journal show [DAY]``: the daily log
  (``memory.journal``; ``journal/``, ``memory/``, ``daily/`` or ``daily-logs/``
  by layout);
- ``work start|finish|spawn|result|show``: the working state's Right Now, Done
  and Pending (``memory.workstate``; working-state.md, or NOTEBOOK.md entries);
  ``work result --file PATH`` has memdir check on disk what a sub-agent claims
  to have produced (``stores.workstate``: never trust its narrative);
- ``intel add PROJECT TEXT`` / ``intel show PROJECT``: research intel
  (``memory.intel``).

Each write is one call on the store and prints its ``WriteResult``. A folder
without the layer says which command serves instead (``_common.opened``).
"""

from __future__ import annotations

import enum
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from memdir.cli._common import (
    VAULT,
    AgentOption,
    FolderOption,
    JsonOption,
    TextArgument,
    command_group,
    console,
    fail,
    opened,
    optional_argument,
    print_json,
    read_text,
    reports_errors,
    write_once,
)

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.results import WriteResult


class JournalSection(enum.StrEnum):
    decision = "decision"
    learning = "learning"
    milestone = "milestone"
    context = "context"


# -- journal -------------------------------------------------------------------------

journal_app = command_group(
    "journal",
    VAULT,
    "The daily log: decisions and why, learnings, milestones, context.",
    no_args_is_help=True,
)


@journal_app.command("append")
@reports_errors
def journal_append(
    section: Annotated[
        JournalSection,
        typer.Argument(metavar="SECTION", help="decision, learning, milestone or context."),
    ],
    text: TextArgument,
    why: Annotated[
        str | None,
        typer.Option(
            "--why", metavar="TEXT", help="The reason; a decision needs one.", show_default=False
        ),
    ] = None,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Add a line to today's journal (journal_append); a milestone is stamped with the time,
    a decision without its reason is marked "(why: not recorded)"."""
    line = read_text(text)

    def append(memory: Memory) -> WriteResult:
        from memdir.stores.journal import UNREASONED

        done = memory.journal.append(section.value, line, why=why)
        # the store's note names the tools' argument; here it is an option
        tools, cli = UNREASONED.format(why="why=..."), UNREASONED.format(why="--why TEXT")
        return replace(done, notes=tuple(cli if n == tools else n for n in done.notes))

    write_once(folder, agent, as_json, append)


def _day(value: str | None, today: date) -> date:
    if value is None or value == "today":
        return today
    if value == "yesterday":
        return today - timedelta(days=1)
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not a day: give YYYY-MM-DD, today or yesterday", param_hint="'DAY'"
        ) from None


@journal_app.command("show")
@reports_errors
def journal_show(
    day: Annotated[
        str | None, optional_argument("DAY", "YYYY-MM-DD, today or yesterday (default: today).")
    ] = None,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a day's journal (default: today's)."""
    with opened(folder, agent) as memory:
        wanted = _day(day, memory.clock().date())
        journal = memory.journal
        text, path, days = journal.text(wanted), journal.path(wanted), journal.days()
    earlier = [d for d in days if d < wanted]
    latest = earlier[-1].isoformat() if earlier else None
    if as_json:  # the latest day before it, as the text says for an empty day
        print_json({"day": wanted.isoformat(), "path": path, "text": text, "latest_before": latest})
        return
    if text is not None:
        typer.echo(text, nl=not text.endswith("\n"))
        return
    hint = f"; the latest before it is {latest}" if latest else ""
    console.print(f"No journal for {wanted.isoformat()} ({path}){hint}.", markup=False)


# -- working state ---------------------------------------------------------------------

work_app = command_group(
    "work",
    VAULT,
    "The working state, for crash recovery: Right Now, Done, Pending and sub-agents.",
    no_args_is_help=True,
)

TaskArgument = Annotated[
    str, typer.Argument(metavar="TASK", help="The task, in a line; - reads it from stdin.")
]
LabelArgument = Annotated[str, typer.Argument(metavar="LABEL", help="The sub-agent's label.")]


@work_app.command("start")
@reports_errors
def work_start(
    task: TaskArgument,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Put a task at the top of Right Now (working_state_start): update BEFORE the work."""
    line = read_text(task)
    write_once(folder, agent, as_json, lambda memory: memory.workstate.start(line))


@work_app.command("finish")
@reports_errors
def work_finish(
    task: Annotated[
        str | None,
        optional_argument("TASK", "The task as written in Right Now (default: the first one)."),
    ] = None,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Move a task from Right Now to the Done list, stamped (working_state_finish)."""
    line = read_text(task) if task is not None else None
    write_once(folder, agent, as_json, lambda memory: memory.workstate.finish(line))


@work_app.command("spawn")
@reports_errors
def work_spawn(
    label: LabelArgument,
    task: TaskArgument,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Record a sub-agent under Pending, with the moment it was spawned (working_state_spawn);
    the journal gains a milestone."""
    line = read_text(task)
    write_once(folder, agent, as_json, lambda memory: memory.workstate.spawn(label, line))


def _output_path(path: str, root: Path) -> str:
    """A --file as the store checks it: relative to the memory folder when inside it
    (shorter in the Done line), else absolute. The shell's relative paths are the
    current folder's. An empty one, or one of several lines, is given as it came, for
    the store to refuse (as a path, "" was the current folder: a folder, not a file)."""
    from memdir.errors import MemdirError
    from memdir.paths import resolved

    if not path.strip() or "\n" in path or "\r" in path:
        return path
    absolute = Path.cwd() / Path(path).expanduser()
    try:
        return resolved(absolute).relative_to(root).as_posix()
    except (ValueError, MemdirError):  # outside the folder, or a loop of links
        return str(absolute)


@work_app.command("result")
@reports_errors
def work_result(
    label: LabelArgument,
    summary: Annotated[
        str,
        typer.Argument(metavar="SUMMARY", help="What it says it produced; - reads it from stdin."),
    ],
    verified: Annotated[
        bool,
        typer.Option("--verified", help="You checked the result yourself (without --file)."),
    ] = False,
    file: Annotated[
        list[str] | None,
        typer.Option(
            "--file",
            metavar="PATH",
            help="A file it says it produced (repeatable): checked on disk (exists, not "
            "empty, modified after the spawn); verified only if all pass.",
        ),
    ] = None,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Record a sub-agent's result in Done (working_state_result): verified only when every
    --file passes its checks, else marked UNVERIFIED with what failed."""
    text = read_text(summary)

    def record(memory: Memory) -> WriteResult:
        files = [_output_path(path, memory.root) for path in file or []]
        return memory.workstate.result(label, text, verified=verified, files=files or None)

    write_once(folder, agent, as_json, record)


def _view(memory: Memory) -> dict[str, Any]:
    view = memory.workstate.view()
    return {
        "store": memory.workstate.store.store,
        "right_now": view.right_now,
        "done": view.done,
        "pending": view.pending,
        "day": view.day.isoformat() if view.day else None,
    }


@work_app.command("show")
@reports_errors
def work_show(
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the working state: Right Now, the Done list and Pending."""
    with opened(folder, agent) as memory:
        data = _view(memory)
    if as_json:
        print_json(data)
        return
    day = f" (done list of {data['day']})" if data["day"] else ""
    console.print(f"{data['store']}{day}", markup=False)
    for key, title, bullet in (
        ("right_now", "Right Now", "-"),
        ("done", "Done", "- [x]"),
        ("pending", "Pending", "-"),
    ):
        console.print(f"[bold]{title}[/]" + ("" if data[key] else ": nothing"))
        for item in data[key]:
            console.print(f"  {bullet} {item}", markup=False)


# -- research intel --------------------------------------------------------------------

intel_app = command_group(
    "intel",
    VAULT,
    "Research intel, one file per project: this week in detail, past weeks compressed.",
    no_args_is_help=True,
)

ProjectArgument = Annotated[
    str, typer.Argument(metavar="PROJECT", help="The project, such as project-alpha.")
]


@intel_app.command("add")
@reports_errors
def intel_add(
    project: ProjectArgument,
    text: TextArgument,
    topic: Annotated[
        str,
        typer.Option("--topic", metavar="TOPIC", help="The ### topic it goes under this week."),
    ] = "Key Findings",
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Add a finding to this week's intel on a project (memdir rotate compresses past weeks)."""
    line = read_text(text)
    write_once(folder, agent, as_json, lambda memory: memory.intel.add(project, line, topic))


@intel_app.command("show")
@reports_errors
def intel_show(
    project: ProjectArgument,
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a project's intel: this week's notes, then past weeks' summaries."""
    with opened(folder, agent) as memory:
        intel = memory.intel
        path = intel.path(project)
        if not (memory.root / path).is_file():
            known = ", ".join(intel.projects()) or "none yet"
            fail(f"no intel on {project!r} ({path}); projects: {known}")
        current = intel.current_week(project)
        previous = intel.previous_weeks(project)
    if as_json:
        print_json(
            {
                "project": project,
                "path": path,
                "current_week": current,
                "previous_weeks": [{"week": p.label, "summary": p.summary} for p in previous],
            }
        )
        return
    console.print(f"[bold]{escape(path)}[/]: this week")
    console.print(current or "  nothing yet", markup=False)
    if previous:
        console.print("[bold]Previous weeks[/]")
    for week in previous:
        console.print(f"  {week.label}: {week.summary}", markup=False)
