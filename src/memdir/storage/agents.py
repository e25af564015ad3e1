"""Agents kept in PostgreSQL: open one as a ``Memory``, create one from a layout.

``open_agent(url, agent_id)`` is what the command line (``--database-url`` or
``MEMDIR_DATABASE_URL`` with ``--agent``) and the team server call: the agent's
``memdir.toml`` is read from the database and a ``Memory`` built over ``PgStorage``;
every store, the context, the dream and the tools then run unchanged. One
``Database`` (its connections per thread, its migrations applied once) is kept per
(URL, schema) in this process and shared by every agent opened from it.
``init_agent`` writes a starter layout's files into the database, byte for byte what
``memdir init`` writes on disk.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from memdir.config import MANIFEST_NAME
from memdir.errors import FolderExistsError
from memdir.memory import open_agent as open_agent  # re-exported: the public name

if TYPE_CHECKING:
    from memdir.storage.postgres.db import Database

DATABASE_URL_ENV = "MEMDIR_DATABASE_URL"
DATABASE_SCHEMA_ENV = "MEMDIR_DATABASE_SCHEMA"


def database_url(given: str | None = None) -> str | None:
    """The database to use: ``given``, else ``$MEMDIR_DATABASE_URL``, else None (on disk)."""
    return given or os.environ.get(DATABASE_URL_ENV) or None


def database_schema() -> str:
    """The schema memdir's tables are in: ``$MEMDIR_DATABASE_SCHEMA``, else ``memdir``."""
    return os.environ.get(DATABASE_SCHEMA_ENV) or "memdir"


def database(url: str, schema: str = "memdir") -> Database:
    """This process's ``Database`` for ``url`` (migrated on first use, then shared)."""
    from memdir.storage.postgres.db import shared_database

    return shared_database(url, schema)


def close_databases() -> None:
    """Close every shared ``Database`` (their connections); the next call opens again."""
    from memdir.storage.postgres.db import close_shared

    close_shared()


def database_agents(url: str, *, schema: str = "memdir") -> list[tuple[str, str]]:
    """(agent id, layout) of every agent in the database (each folder with a manifest;
    a shared vault mounted by agents has none), sorted by id."""
    from memdir.config import parse_manifest
    from memdir.errors import MemdirError

    db = database(url, schema)
    rows = db.reader().execute(
        "SELECT agent, data FROM files WHERE path = %s ORDER BY agent", (MANIFEST_NAME,)
    )
    found = []
    for agent, data in rows.fetchall():
        try:
            layout = parse_manifest(bytes(data).decode("utf-8", "replace")).layout
        except MemdirError:
            layout = "unreadable manifest"
        found.append((str(agent), layout))
    return found


def agent_exists(url: str, agent_id: str, *, schema: str = "memdir") -> bool:
    from memdir.storage.postgres.files import PgFiles

    return PgFiles(database(url, schema), agent_id).stamp(MANIFEST_NAME) is not None


def init_agent(
    url: str,
    agent_id: str,
    layout: str = "default",
    *,
    force: bool = False,
    schema: str = "memdir",
) -> list[str]:
    """Create agent ``agent_id`` in the database from a starter ``layout``: the same
    files ``memdir init`` writes on disk, byte for byte, each indexed. Returns their
    paths. Refuses (``FolderExistsError``) an agent that already has a manifest
    unless ``force`` (then its manifest is rewritten and missing starter files added)."""
    from memdir.scaffold import init_folder
    from memdir.storage.transfer import push

    if agent_exists(url, agent_id, schema=schema) and not force:
        raise FolderExistsError(
            f"the database already has agent {agent_id!r}; pass --force to rewrite its manifest"
        )
    with tempfile.TemporaryDirectory(prefix="memdir-init-") as tmp:
        folder = Path(tmp) / agent_id
        init_folder(folder, layout, agent=agent_id)
        report = push(url, agent_id, folder, schema=schema, force=True, create=True,
                      keep_existing=force)  # fmt: skip
    return report.written
