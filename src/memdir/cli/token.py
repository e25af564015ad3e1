"""``memdir token create|list|revoke``: the team server's bearer tokens.

Tokens live in the PostgreSQL database the team server serves (``--database-url``
or ``MEMDIR_DATABASE_URL``), as hashes only (``storage.postgres.tokens``): ``create``
prints the token once, and nothing can show it again. ``list`` shows each token's id
(the ``mdt_<id>_`` part, safe to share), agents, access, state and times; ``revoke``
takes an id (or the whole token) and the token stops working at its next request.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from memdir.cli._common import (
    SETUP,
    JsonOption,
    command_group,
    console,
    errors,
    fail,
    print_json,
    reports_errors,
)

if TYPE_CHECKING:
    from memdir.storage.postgres.tokens import Token, Tokens

token_app = command_group(
    "token",
    SETUP,
    "Bearer tokens for the team server (memdir serve --http --database-url): create, list, revoke.",
    no_args_is_help=True,
)

DatabaseUrl = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        metavar="URL",
        envvar="MEMDIR_DATABASE_URL",
        help="The PostgreSQL database (postgresql://...) the team server serves.",
        show_default=False,
    ),
]


@contextmanager
def _tokens(given: str | None) -> Iterator[Tokens]:
    from memdir.cli._common import database_url

    url = given or database_url()  # this option, memdir's own --database-url, or the env
    if not url:
        raise typer.BadParameter(
            "name the database: --database-url postgresql://... (or MEMDIR_DATABASE_URL)",
            param_hint="'--database-url'",
        )
    try:
        from memdir.storage.agents import database_schema
        from memdir.storage.postgres.db import Database
        from memdir.storage.postgres.tokens import Tokens
    except ImportError as exc:
        fail(f"tokens live in PostgreSQL: pip install 'memdir[postgres]' ({exc})")
    # a database that cannot be reached is reports_errors' one line (database_error)
    db = Database(url, schema=database_schema())  # the schema the agents are in
    try:
        yield Tokens(db)
    finally:
        db.close()


def _when(value: datetime | None) -> str:
    return "-" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


@token_app.command("create")
@reports_errors
def create(
    agents: Annotated[
        list[str],
        typer.Option(
            "--agent",
            metavar="ID",
            help="An agent the token reaches (repeat for more).",
            show_default=False,
        ),
    ],
    read_only: Annotated[
        bool,
        typer.Option("--read-only", help="Search, read and recall only: every write is refused."),
    ] = False,
    expires: Annotated[
        int | None,
        typer.Option(
            "--expires",
            metavar="DAYS",
            min=1,
            max=3650,
            help="Stop working this many days from now (default: never).",
            show_default=False,
        ),
    ] = None,
    database_url: DatabaseUrl = None,
    as_json: JsonOption = False,
) -> None:
    """Make a token and print it, once: only its hash is kept."""
    from memdir.storage.postgres.tokens import check_agents

    chosen = check_agents(agents)  # before the database is touched
    with _tokens(database_url) as tokens:
        secret, token = tokens.create(chosen, read_only=read_only, expires_days=expires)
    if as_json:
        print_json({"token": secret})
        return
    typer.echo(secret)
    access = "read-only" if token.read_only else "read and write"
    until = f", expires {_when(token.expires_at)} UTC" if token.expires_at else ""
    errors.print(
        f"token {token.id}: {access} for {', '.join(token.agents)}{until}. "
        "It is shown only now; send it as 'Authorization: Bearer <token>'.",
        markup=False,
    )


@token_app.command("list")
@reports_errors
def list_(database_url: DatabaseUrl = None, as_json: JsonOption = False) -> None:
    """List the tokens (ids, agents, access, state, times; never a token itself)."""
    with _tokens(database_url) as tokens:
        found: list[Token] = tokens.list()
    now = datetime.now(UTC)
    if as_json:
        print_json([token.as_dict(now) for token in found])
        return
    if not found:
        errors.print("no tokens yet: memdir token create --agent ID makes one", markup=False)
        return
    for token in found:
        access = "read-only" if token.read_only else "read-write"
        console.print(
            f"{token.id}  {token.state(now):<7}  {access:<10}  created {_when(token.created_at)}"
            f"  expires {_when(token.expires_at)}  used {_when(token.last_used_at)}"
            f"  agents {','.join(token.agents)}",
            markup=False,
        )


@token_app.command("revoke")
@reports_errors
def revoke(
    token_id: Annotated[
        str, typer.Argument(metavar="ID", help="The token's id (from memdir token list).")
    ],
    database_url: DatabaseUrl = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke a token: refused from its next request on."""
    with _tokens(database_url) as tokens:
        try:
            token = tokens.revoke(token_id)
        except LookupError as exc:
            fail(str(exc).strip("'\""), exc)
            return
    if as_json:
        print_json(token.as_dict(datetime.now(UTC)))
        return
    console.print(f"revoked token {token.id} ({', '.join(token.agents)})", markup=False)
