"""What an agent loads, and upkeep: ``context``, ``budget``, ``reindex``, ``doctor``, ``backup``."""

from __future__ import annotations

import enum
import time
from typing import Annotated

import typer
from rich.markup import escape

from memdir.cli._common import (
    UPKEEP,
    AgentOption,
    FolderOption,
    JsonOption,
    app,
    console,
    errors,
    opened,
    print_json,
    progress,
    reports_errors,
    stoppable,
)


class Profile(enum.StrEnum):
    reflex = "reflex"
    default = "default"
    deep = "deep"
    heartbeat = "heartbeat"


@app.command(rich_help_panel=UPKEEP)
@reports_errors
def context(
    folder: FolderOption = None,
    agent: AgentOption = None,
    profile: Annotated[
        Profile,
        typer.Option(
            "--profile",
            help="What to load: reflex (no knowledge, few state lines), default, deep (a week "
            "or more of journals) or heartbeat (adds HEARTBEAT.md).",
        ),
    ] = Profile.default,
    query: Annotated[
        str | None,
        typer.Option(
            "--query",
            "-q",
            metavar="TEXT",
            help="Add search hits for this text.",
            show_default=False,
        ),
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            metavar="N",
            help="Total tokens (default: the manifest's).",
            min=0,
            show_default=False,
        ),
    ] = None,
    report: Annotated[
        bool, typer.Option("--report", help="Print what each layer spent instead of the text.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Print what an agent loads into its prompt: the stable part, then the live part."""
    from rich.table import Table

    with opened(folder, agent) as memory:
        ctx = memory.context(profile.value, query, budget)
    if as_json:
        print_json(ctx.to_dict())
        return
    for warning in ctx.warnings:
        errors.print(f"warning: {warning}", markup=False)
    if not report:
        console.print(ctx.text, markup=False, end="")
        return
    table = Table("layer", "part", "bytes", "tokens", "items", "left out", "budget")
    for layer in ctx.layers:
        numbers = (layer.bytes, layer.tokens, layer.included, layer.left_out)
        table.add_row(layer.layer, layer.part, *map(str, numbers), str(layer.budget or ""))
    console.print(table)
    console.print(f"{ctx.tokens} of {ctx.budget} tokens ({ctx.counter}).", markup=False)
    for item in ctx.left_out:
        console.print(f"  left out {item.source}: {item.reason}", markup=False)


@app.command("budget", rich_help_panel=UPKEEP)
@reports_errors
def budget_command(
    folder: FolderOption = None, agent: AgentOption = None, as_json: JsonOption = False
) -> None:
    """Every always-loaded file, its bytes and tokens against its target."""
    from rich.table import Table

    with opened(folder, agent) as memory:
        report = memory.budget()
    if as_json:
        print_json(report.to_dict())
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
        markup=False,
    )
    for line in report.advice or ["Within every target."]:
        console.print(f"  {line}", markup=False)


@app.command(rich_help_panel=UPKEEP)
@reports_errors
def reindex(
    folder: FolderOption = None, agent: AgentOption = None, as_json: JsonOption = False
) -> None:
    """Rebuild the search index (.memdir/index.db) from the files: read them, then embed
    their texts. Stopped (Ctrl-C, or killed), what was embedded is kept: run it again
    and only the rest is embedded."""
    with opened(folder, agent) as memory:
        began = time.perf_counter()
        with stoppable(memory, "memdir reindex"), progress("rebuilding the index") as step:
            report = memory.reindex(progress=step)
        seconds = time.perf_counter() - began  # reading and embedding: what the user waited
        items = memory.index.rows.count()
    reading = min(report.seconds, seconds)
    embedding = seconds - reading
    if as_json:
        print_json(
            {
                "files": len(report.added),
                "items": items,
                "seconds": round(seconds, 3),
                "read_seconds": round(reading, 3),
                "embed_seconds": round(embedding, 3),
            }
        )
        return
    console.print(
        f"Reindexed {len(report.added)} files, {items} items in {_duration(seconds)} "
        f"(reading {_duration(reading)}, embedding {_duration(embedding)}).",
        markup=False,
    )


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


@app.command(rich_help_panel=UPKEEP)
@reports_errors
def doctor(
    folder: FolderOption = None,
    agent: AgentOption = None,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="First mend what needs no judgement: rebuild a damaged index, set a damaged "
            "history aside and read its rows back, remove stale temp files. Asks nothing.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Audit the folder: hot-context size, DRY, broken links, caps, index freshness,
    damaged databases, temp files.

    Exits with 1 if it finds anything (after --repair: anything left)."""
    from memdir.maintain.databases import repair as run_repair

    with opened(folder, agent) as memory:
        repaired = run_repair(memory) if repair else []
        findings = memory.doctor()
    if as_json:
        listed = [finding.to_dict() for finding in findings]
        print_json({"repaired": repaired, "findings": listed} if repair else listed)
    else:
        if repair:
            console.print("Repaired:" if repaired else "Nothing to repair.")
            for line in repaired:
                console.print(f"  {line}", markup=False)
        if not findings:
            console.print("No problems found.")
    for finding in [] if as_json else findings:
        console.print(
            f"[yellow]\\[{escape(finding.check)}][/] {escape(finding.path)}: "
            f"{escape(finding.message)}"
        )
    if findings:
        raise typer.Exit(1)


@app.command(rich_help_panel=UPKEEP)
@reports_errors
def backup(
    folder: FolderOption = None,
    agent: AgentOption = None,
    push: Annotated[
        bool, typer.Option("--push", help="Push to the upstream or origin, where one is set.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Commit the memory folder with git ("Daily backup: YYYY-MM-DD")."""
    with opened(folder, agent) as memory:
        result = memory.backup(push=push)
    if as_json:
        print_json(result.to_dict())
        return
    if result.committed:
        console.print(f"Committed {result.commit}: {result.message}", markup=False)
    else:
        console.print("Nothing to commit.")
    for note in result.notes:
        console.print(f"  {note}", markup=False)
