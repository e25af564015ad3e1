"""``PgStorage``: one agent's memory folder kept in PostgreSQL, as a ``Memory`` is built on.

Its files, index rows and history share one ``Folder`` (the lock's transaction): a
store's write, its index rows and a history row written under the lock commit
together. A layer mounted from elsewhere (a shared vault) is, in the database, the
folder whose agent id is the manifest's ``mount`` as written (``mount = "team-vault"``:
the folder of agent ``team-vault``), under that folder's own lock, as on disk a mount
has its own ``.memdir/lock``.

A ``Memory`` over it still has a ``root``: a folder of this process's own (made here,
removed at ``close``), for what is kept per process and never a memory file.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from memdir.index.embedders import Embedder
from memdir.storage.postgres.db import Database, Folder
from memdir.storage.postgres.files import PgFiles
from memdir.storage.postgres.history import PgHistory
from memdir.storage.postgres.index import PgIndex
from memdir.storage.seam import Files, HistoryStore, IndexRows

if TYPE_CHECKING:
    from memdir.memory import Memory

_PASSWORD_RE = re.compile(r"(://[^:/@]+):[^@/]*@")


def redact(url: str) -> str:
    """``url`` with its password left out, to show a person."""
    return _PASSWORD_RE.sub(r"\1:***@", url)


class PgStorage:
    """The ``Storage`` of one agent's folder in the database ``db``."""

    name = "postgres"

    def __init__(self, db: Database, agent: str, *, owns_db: bool = False) -> None:
        self.db = db
        self.agent = agent
        self.folder = Folder(db, agent)
        self.owns_db = owns_db
        """close the database with the folder (``open_agent`` opened it for this one)"""
        self.where = f"{redact(db.url)} (schema {db.schema}), agent {agent}"
        self.scratch = Path(tempfile.mkdtemp(prefix=f"memdir-pg-{_safe(agent)}-"))
        """this process's own folder: the ``root`` of a ``Memory`` over this storage"""
        self._files = PgFiles(db, agent, folder=self.folder)

    def files(self) -> Files:
        return self._files

    def mount(self, layer_name: str, mount: str, resolved: Path | None) -> Files:
        return PgFiles(self.db, mount)

    def history(self, memory: Memory) -> HistoryStore:
        return PgHistory(
            self.db,
            self.agent,
            clock=memory.clock,
            folder=self.folder,
            on_end=memory._audit,
            read_only=memory.read_only,
        )

    def index_rows(self, embedder: Embedder | None = None) -> IndexRows:
        return PgIndex(self.db, self.agent, folder=self.folder, embedder=embedder)

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)
        if self.owns_db:
            self.db.close()


def _safe(agent: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", agent)[:40]
