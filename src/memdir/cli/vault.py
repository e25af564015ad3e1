"""The vault and the workspace: ``touch``, ``decay``, ``creative``, ``moc``, ``lessons``,
``rotate``."""

from __future__ import annotations

from typing import Annotated

import typer

from memdir.cli._common import (
    VAULT,
    AgentOption,
    FolderOption,
    JsonOption,
    app,
    command_group,
    console,
    fail,
    opened,
    print_hits,
    print_json,
    progress,
    reports_errors,
    write_once,
)
from memdir.textutil import plural


@app.command(rich_help_panel=VAULT)
@reports_errors
def touch(
    card: Annotated[
        str, typer.Argument(metavar="CARD", help="The card: its path, file name or title.")
    ],
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Mark a card recalled: one tier up, last_accessed today."""
    write_once(
        folder,
        agent,
        as_json,
        lambda memory: memory.touch(card),
        lambda result: [f"Touched {result.store}: {'; '.join(result.notes)}"],
    )


@app.command(rich_help_panel=VAULT)
@reports_errors
def decay(
    folder: FolderOption = None,
    agent: AgentOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would change; write nothing.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Recompute every card's relevance and tier from its last access."""
    with opened(folder, agent) as memory, progress("decaying cards") as step:
        report = memory.decay(dry_run=dry_run, progress=step)
    data = report.to_dict()
    if as_json:
        print_json(data)
        return
    verb = "would change" if dry_run else "changed"
    counts = ", ".join(f"{tier} {count}" for tier, count in data["tiers"].items())
    console.print(f"{plural(report.cards, 'card')}, {len(report.changed)} {verb}. Tiers: {counts}.")
    for problem in report.unreadable:
        console.print(f"  skipped {problem}", markup=False)


@app.command(rich_help_panel=VAULT)
@reports_errors
def creative(
    n: Annotated[int, typer.Argument(metavar="N", help="How many items to sample.", min=1)] = 5,
    folder: FolderOption = None,
    agent: AgentOption = None,
    seed: Annotated[
        int | None,
        typer.Option("--seed", metavar="N", help="A number that repeats the same sample."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """A random sample of cold and archived memories, not ranked by any query."""
    with opened(folder, agent) as memory:
        hits = memory.creative(n, seed=seed)
    if as_json:
        print_json([hit.to_dict() for hit in hits])
        return
    print_hits(hits)


@app.command(rich_help_panel=VAULT)
@reports_errors
def moc(
    folder: FolderOption = None, agent: AgentOption = None, as_json: JsonOption = False
) -> None:
    """Write a Map of Content per vault folder, and the link graph (graph.json)."""
    with opened(folder, agent) as memory:
        written = memory.write_mocs()
        graph = memory.graph()
    if as_json:
        print_json({"written": written, **graph.to_dict()})
        return
    console.print(
        f"{plural(len(written), 'map')} written; {plural(len(graph.cards), 'card')}, "
        f"{plural(len(graph.orphans), 'orphan')}, "
        f"{plural(sum(map(len, graph.broken.values())), 'broken link')}.",
        markup=False,
    )
    for path in written:
        console.print(f"  wrote {path}", markup=False)


lessons_app = command_group(
    "lessons", VAULT, "Lessons learned: log them, and check them before risky work."
)


@lessons_app.command("check")
@reports_errors
def lessons_check(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="What you are about to do.")],
    folder: FolderOption = None,
    agent: AgentOption = None,
    k: Annotated[int, typer.Option("-k", metavar="N", help="How many lessons.", min=1)] = 5,
    as_json: JsonOption = False,
) -> None:
    """Search the lessons before a risky operation."""
    if not query.strip():  # an empty search lists observations: never a lesson
        fail("the query is empty; say what you are about to do, such as 'deploy on a Friday'")
    with opened(folder, agent) as memory:
        hits = memory.lessons_check(query, k=k)
    if as_json:
        print_json([hit.to_dict() for hit in hits])
        return
    print_hits(hits)


@lessons_app.command("add")
@reports_errors
def lessons_add(
    category: Annotated[
        str, typer.Argument(metavar="CATEGORY", help="Such as 'Discord API' or 'File Ops'.")
    ],
    mistake: Annotated[str, typer.Option("--mistake", metavar="TEXT", help="What you did wrong.")],
    happened: Annotated[
        str, typer.Option("--happened", metavar="TEXT", help="What actually happened.")
    ],
    rule: Annotated[
        str, typer.Option("--rule", metavar="TEXT", help="The rule to follow next time.")
    ],
    folder: FolderOption = None,
    agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Log a lesson: the mistake, what happened, the rule."""
    write_once(
        folder,
        agent,
        as_json,
        lambda memory: memory.lessons.add(category, mistake, happened, rule),
    )


@app.command(rich_help_panel=VAULT)
@reports_errors
def rotate(
    folder: FolderOption = None,
    agent: AgentOption = None,
    project: Annotated[
        str | None,
        typer.Option("--project", metavar="NAME", help="Only this project's intel file."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Compress past weeks of research intel to 1-3 sentences each."""
    with opened(folder, agent) as memory:
        report = memory.intel.rotate(project)
        # an [llm] that is set but unusable (not http(s), a provider that fails)
        # summarised nothing: the weeks got the offline summary, and the report says why
        # (in its notes, so not a second time on stderr)
        offline = [n for n in memory.notices if n.store == "llm"]
        memory.notices[:] = [
            n
            for n in memory.notices
            if n.store != "llm" and not (n.store == "intel" and n.message in report.notes)
        ]
    report.notes.extend(
        f"LLM not used: {n.message}; used the offline summary"
        for n in offline
        if n.message not in report.notes
    )
    if as_json:
        print_json(report.to_dict())
        return
    for name, label in report.rotated:
        console.print(f"  rotated {name}: {label}", markup=False)
    for note in report.notes:
        console.print(f"  note: {note}", markup=False, highlight=False)
    console.print(
        f"{plural(len(report.rotated), 'week')} rotated, "
        f"{plural(report.unchanged, 'file')} unchanged."
    )
