"""``memdir plugins``: the embedders, LLM clients and token counters installed, by
entry point (``memdir.plugins``): memdir's own and every other package's."""

from __future__ import annotations

import typer
from rich.markup import escape

from memdir.cli._common import SETUP, JsonOption, app, console, print_json, reports_errors


@app.command(rich_help_panel=SETUP)
@reports_errors
def plugins(as_json: JsonOption = False) -> None:
    """The plugins installed: embedders, LLM clients and token counters, by entry point.

    memdir's own are marked built-in; another package adds one by declaring an entry
    point in the memdir.embedders, memdir.llms or memdir.tokenizers group. A name
    memdir already has is shadowed: listed, never loaded.
    """
    from memdir.plugins import installed

    found = installed()
    if as_json:
        print_json([plugin.to_dict() for plugin in found])
        return
    group = None
    for plugin in found:
        if plugin.group != group:
            group = plugin.group
            console.print(f"[bold]{group}[/]")
        origin = "built-in" if plugin.builtin else f"{plugin.distribution} {plugin.version}"
        note = " [red](shadowed by memdir's own: not loaded)[/]" if plugin.shadowed else ""
        console.print(
            f"  [cyan]{escape(plugin.name)}[/] {escape(plugin.value)} ({escape(origin)}){note}"
        )
    if not found:
        raise typer.Exit(1)
