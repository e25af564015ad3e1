"""Consolidation: ``dream`` (the observation buffer into curated knowledge) and ``maintain``
(every due job, for cron)."""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from memdir.cli._common import (
    UPKEEP,
    AgentOption,
    FolderOption,
    JsonOption,
    app,
    console,
    opened,
    print_json,
    progress,
    reports_errors,
)
from memdir.maintain.jobs import JOBS


class PlannerChoice(enum.StrEnum):
    auto = "auto"
    offline = "offline"
    llm = "llm"


class Job(enum.StrEnum):
    decay = "decay"
    state = "state"
    dream = "dream"
    journals = "journals"
    intel = "intel"


assert tuple(Job) == JOBS


@app.command(rich_help_panel=UPKEEP)
@reports_errors
def dream(
    folder: FolderOption = None,
    agent: AgentOption = None,
    force: Annotated[
        bool, typer.Option("--force", help="Dream now, even if no dream is due.")
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Show what the dream would change; write nothing."),
    ] = False,
    planner: Annotated[
        PlannerChoice | None,
        typer.Option(
            "--planner",
            help="offline (no network), llm (the [llm] endpoint) or auto; default: the "
            "manifest's [dream] planner.",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Consolidate knowledge.md's observations: merge duplicates, promote themes into
    curated sections, tidy the file, prune expired state. Runs when due (50+ observations,
    once a day; up to 4 times at 500+) unless --force; knowledge.md is saved under
    archive/dreams/ first and everything taken out goes to the archive."""
    with opened(folder, agent) as memory, progress("dreaming"):
        report = memory.dream(
            force=force, dry_run=dry_run, planner=planner.value if planner else None
        )
    if as_json:
        print_json(report.to_dict())
        return
    console.print(report.summary(), markup=False, highlight=False)
    if not report.ran:
        return
    for merged in report.merged:
        console.print(f"  merged {len(merged['ids'])} -> {merged['into']}", markup=False)
    for promoted in report.promoted:
        console.print(
            f"  promoted {len(promoted['ids'])} into ## {promoted['section']}", markup=False
        )
    for refused in report.refused:
        console.print(
            f"  kept {len(refused['ids'])} for ## {refused['section']}: {refused['reason']}",
            markup=False,
        )
    for note in report.notes:
        console.print(f"  note: {note}", markup=False)
    if report.snapshot:
        console.print(f"  knowledge.md before the dream: {report.snapshot}", markup=False)


@app.command(rich_help_panel=UPKEEP)
@reports_errors
def maintain(
    folder: FolderOption = None,
    agent: AgentOption = None,
    only: Annotated[
        list[Job] | None,
        typer.Option(
            "--only",
            metavar="JOB",
            help="Run only this job (repeat the option).",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what is due and what it would do.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Run every job that is due, in order: decay, state prune, dream, journal compression,
    intel rotation. Safe to call from cron every few minutes: jobs run only when due, and a
    second maintain while one runs does nothing."""
    with opened(folder, agent) as memory:
        report = memory.maintain(only=[j.value for j in only or []] or None, dry_run=dry_run)
    if as_json:
        print_json(report.to_dict())
        return
    if report.busy:
        console.print("another memdir maintain is running on this folder; nothing done")
        return
    for job in report.jobs:
        mark = "ran " if job.ran else "skip"
        console.print(f"{mark} {job.name:9} {job.summary}", markup=False, highlight=False)
        for note in job.details.get("notes", []):
            console.print(f"     note: {note}", markup=False, highlight=False)
