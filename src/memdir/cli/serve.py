"""``memdir serve``: the MCP server over one memory folder (stdio, or streamable HTTP),
or, with ``--http --database-url`` and no folder named, the team server over every
agent of a PostgreSQL database (``memdir.server.team``); ``memdir ui``: the web page
over one folder (``memdir.ui``).

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
from memdir.cli._common import database_url as given_database_url


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
        typer.Option(
            "--port",
            metavar="N",
            help="The port to bind with --http (0: any free one).",
            min=0,
            max=65535,
        ),
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
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            metavar="URL",
            envvar="MEMDIR_DATABASE_URL",
            help="With --http and no --dir or --agent: serve every agent of this PostgreSQL "
            "database at /agents/ID/mcp, each request behind a token (memdir token create).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the memory folder to an agent host over MCP: tools, files and the boot context."""
    from memdir.memory import find_root

    url = database_url or given_database_url()  # this option, memdir's own, or the env
    if url and folder is None and agent is None:
        _serve_team(url, http, host, port, token, legacy_tools)
        return
    if url and agent is not None:  # not a folder on disk made in the home instead
        fail(_database_agent(agent, "serve", f"/agents/{agent}/mcp"))

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

    if agent is not None and given_database_url():
        fail(_database_agent(agent, "ui", f"/agents/{agent}/ui/"))
    root = find_root(folder_for(folder, agent))
    try:
        from memdir.ui.run import serve_ui
    except ImportError as exc:
        fail(f"memdir ui needs its web stack (starlette, jinja2), which failed to load: {exc}")
        return
    serve_ui(root, host=host, port=port, token=token, say=lambda line: print(line, flush=True))


def _database_agent(agent: str, command: str, path: str) -> str:
    return (
        f"a database is named (--database-url or MEMDIR_DATABASE_URL), and memdir {command} "
        f"--agent takes a folder in $MEMDIR_HOME/agents: the database's agents are on the "
        f"team server (memdir serve --http, without --agent), agent {agent!r} at {path}; "
        "a folder on disk is --dir PATH"
    )


def _serve_team(
    url: str, http: bool, host: str, port: int, token: str | None, legacy_tools: bool
) -> None:
    if not http:
        raise typer.BadParameter(
            "the team server speaks HTTP only: add --http (or name one folder with --dir "
            "or --agent to serve it over stdio)",
            param_hint="'--database-url'",
        )
    if token:
        raise typer.BadParameter(
            "the team server takes the tokens of its database (memdir token create), "
            "not --token / MEMDIR_TOKEN",
            param_hint="'--token'",
        )
    try:
        from memdir.server.team import serve_team
    except ImportError as exc:
        fail(f"the team server needs PostgreSQL's driver: pip install 'memdir[postgres]' ({exc})")
        return
    from memdir.storage.agents import database_schema

    serve_team(url, host=host, port=port, legacy_tools=legacy_tools, schema=database_schema())
