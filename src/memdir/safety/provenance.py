"""Who wrote a memory: every item memdir writes records it (``by`` in its metadata).

| by       | written through                                              |
|----------|--------------------------------------------------------------|
| agent    | an agent tool (``memdir.tools``: the dispatcher, MCP, Claude's memory tool) |
| api      | the Python API called directly (the default)                 |
| cli      | the ``memdir`` command line                                  |
| import   | ``memdir ingest`` (a chat export)                            |
| dream    | consolidation (merges and promotions)                        |
| distill  | post-task distillation                                       |
| person   | nobody memdir knows of: an item with no ``by`` was written   |
|          | by hand in the file (or by a memdir older than provenance)   |

The writer is a context variable set by the entry point around its call
(``writing_as("agent")``), so the stores need no extra argument and threads and
asyncio tasks each keep their own. An edit by hand inside an item memdir wrote
keeps its ``by``: the folder's git history (``memdir backup``) says who changed it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

WRITERS = ("agent", "api", "cli", "import", "dream", "distill", "person")
BY_KEY = "by"
FLAG_KEY = "flagged"
"""metadata naming the kinds of instruction-like text an item holds (``memdir.safety.poisoning``)"""

_writer: ContextVar[str] = ContextVar("memdir_writer", default="api")


def current_writer() -> str:
    return _writer.get()


@contextmanager
def writing_as(who: str) -> Iterator[None]:
    """Writes inside the block record ``who`` as their writer."""
    if who not in WRITERS:
        raise ValueError(f"writer must be one of {', '.join(WRITERS)}, not {who!r}")
    token = _writer.set(who)
    try:
        yield
    finally:
        _writer.reset(token)


def written_by(meta: dict[str, str]) -> str:
    """Who wrote an item, from its metadata (``person`` when it does not say)."""
    value = meta.get(BY_KEY, "").strip()
    return value if value in WRITERS else "person"
