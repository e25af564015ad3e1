"""``memdir serve``: the MCP server over one memory folder (stdio, or streamable HTTP);
``memdir ui``: the web page over it (``memdir.ui``).

Over stdio, stdout is the protocol channel: this command prints nothing there.
Over HTTP it says on stderr, once it listens, the URL, the folder it serves and
whether a token is required (never the token).
The server module is imported only here, so every other command runs without it.
"""

from __future__ import annotations

from typing import Annotated

import typer

from memdir.cli._common import (
    SETUP,
    FolderOption,
    app,
    fail,
    folder_for,
    reports_errors,
)


@app.command(rich_help_panel=SETUP)
@reports_errors
def serve(
    folder: FolderOption = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            metavar="ID",
            help="Serve this agent's folder in $MEMDIR_HOME/agents, created on first use.",
            show_default=False,
        ),
    ] = None,
    http: Annotated[
        bool,
        typer.Option("--http", help="Serve streamable HTTP at /mcp instead of stdio."),
    ] = False,
    host: Annotated[
        str, typer.Option("--host", metavar="ADDRESS", help="The address to bind with --http.")
    ] = ("127.0.0.1"),
    port: Annotated[
        int,
        typer.Option("--port", metavar="N", help="The port to bind with --http.", min=1, max=65535),
    ] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="TOKEN",
            envvar="MEMDIR_TOKEN",
            help="The bearer token HTTP clients must send; required beyond loopback.",
            show_default=False,
        ),
    ] = None,
    legacy_tools: Annotated[
        bool,
        typer.Option("--legacy-tools", help="Also offer the legacy tool names (memory_list, ...)."),
    ] = False,
    maintain_every: Annotated[
        float,
        typer.Option(
            "--maintain-every",
            metavar="SECONDS",
            min=0,
            help="Run `memdir maintain` (decay, dream, ...) for the folder this often while "
            "serving, in a child process; 0 turns it off (use cron instead).",
        ),
    ] = 900,
) -> None:
    """Serve the memory folder to an agent host over MCP: tools, files and the boot context."""
    from memdir.memory import find_root

    root = find_root(folder_for(folder, agent, create=True))
    try:
        from memdir.server.mcp import serve as run_server
    except ImportError as exc:
        fail(f"memdir serve needs the MCP server (memdir.server.mcp), which failed to load: {exc}")
        return
    run_server(
        root,
        http=http,
        host=host,
        port=port,
        token=token,
        legacy_tools=legacy_tools,
        maintain_every=maintain_every,
        agent=agent,
    )


@app.command(rich_help_panel=SETUP)
@reports_errors
def ui(
    folder: FolderOption = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            metavar="ID",
            help="Show this agent's folder in $MEMDIR_HOME/agents.",
            show_default=False,
        ),
    ] = None,
    host: Annotated[
        str, typer.Option("--host", metavar="ADDRESS", help="The address to bind.")
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port", metavar="N", help="The port to bind (0: any free one).", min=0, max=65535
        ),
    ] = 8766,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="TOKEN",
            envvar="MEMDIR_TOKEN",
            help="The token a browser must give once (/ui/?token=...); required beyond loopback.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Open the memory folder in a browser: browse, search and correct it (prints the URL)."""
    from memdir.memory import find_root

    root = find_root(folder_for(folder, agent))
    try:
        from memdir.ui.run import serve_ui
    except ImportError as exc:
        fail(f"memdir ui needs its web stack (starlette, jinja2), which failed to load: {exc}")
        return
    serve_ui(root, host=host, port=port, token=token, say=lambda line: print(line, flush=True))
