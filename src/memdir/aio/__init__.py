"""memdir for asyncio: ``await memdir.aopen(path)`` gives an ``AsyncMemory``.

``AsyncMemory`` has ``Memory``'s public methods and stores, each a coroutine
(``await am.search(q)``, ``await am.knowledge.save(text)``, ``await am.context()``),
generated from the sync classes (``surface``) and run on the memory's own worker
thread (``runner``): the sync core is the one implementation, and the folder lock,
the index and the history behave exactly as they do for ``Memory``.

    async with await memdir.aopen("~/agent") as am:
        await am.knowledge.save("Dana keeps the release checklist.")
        hits = await am.search("release checklist")
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memdir.aio.runner import AsyncContext, Worker
from memdir.aio.surface import (
    AsyncHistory,
    AsyncIntelStore,
    AsyncJournalStore,
    AsyncKnowledgeStore,
    AsyncLessonsStore,
    AsyncMemory,
    AsyncNotebook,
    AsyncSessionStore,
    AsyncStateStore,
    AsyncVaultStore,
    AsyncWorkState,
)

if TYPE_CHECKING:
    from memdir.index.embedders import Embedder
    from memdir.timeutil import Clock

__all__ = [
    "AsyncContext",
    "AsyncHistory",
    "AsyncIntelStore",
    "AsyncJournalStore",
    "AsyncKnowledgeStore",
    "AsyncLessonsStore",
    "AsyncMemory",
    "AsyncNotebook",
    "AsyncSessionStore",
    "AsyncStateStore",
    "AsyncVaultStore",
    "AsyncWorkState",
    "aopen",
]


async def aopen(
    path: str | Path, *, clock: Clock | None = None, embedder: Embedder | str | None = None
) -> AsyncMemory:
    """``memdir.open`` for asyncio: the folder is opened (and tidied, under its lock)
    on the new memory's worker thread, never on the event loop."""
    from memdir.memory import open_memory

    worker = Worker()
    try:
        memory = await worker.run(lambda: open_memory(path, clock=clock, embedder=embedder))
    except BaseException:
        worker.shutdown()
        raise
    return AsyncMemory(memory, worker)
