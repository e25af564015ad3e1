"""What the async surface stands on: one worker thread per opened folder.

``AsyncMemory`` (``memdir.aio.surface``, generated from ``Memory``) never holds a
second implementation: each coroutine runs its sync twin on the memory's worker, a
single thread, so the event loop never blocks on a file, the folder lock or SQLite,
and the calls of one ``AsyncMemory`` run one at a time, in the order they were made
(``Memory`` is not made for two threads at once; its lock and the index's connection
stay on one thread). Each call carries the caller's context variables (provenance,
``writing_as``). A coroutine cancelled while its call runs stops waiting; the call
itself finishes (sync code cannot be interrupted half-way through a write).

Stores are resolved on the worker at their first call, so ``am.vault`` never blocks;
a layer the manifest does not declare raises ``LayerNotConfigured`` at that call.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from memdir.config import Manifest
    from memdir.maintain.migrate import MigrationReport
    from memdir.memory import Memory
    from memdir.paths import FileSpace
    from memdir.results import Notice
    from memdir.storage.mounts import MountedFiles
    from memdir.storage.seam import Storage, WriteLock
    from memdir.timeutil import Clock

R = TypeVar("R")
S = TypeVar("S")
T = TypeVar("T")


class Worker:
    """One thread that runs a memory's calls in turn; started on first use, and again
    after ``shutdown`` if the memory is used after it was closed."""

    def __init__(self, name: str = "memdir-async") -> None:
        self.name = name
        self._pool: ThreadPoolExecutor | None = None
        self._guard = threading.Lock()

    def _executor(self) -> ThreadPoolExecutor:
        with self._guard:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self.name)
            return self._pool

    async def run(self, fn: Callable[[], R]) -> R:
        """``fn()`` on the worker thread, with the caller's context variables."""
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        return await loop.run_in_executor(self._executor(), context.run, fn)

    def shutdown(self) -> None:
        with self._guard:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)

    def finish(self, fn: Callable[[], R]) -> R:
        """``fn()`` once every call handed to the worker before it is done (blocking: call
        it off the event loop), then stop the thread. A call its caller stopped waiting
        for still runs to its end; what closes the memory must come after it."""
        with self._guard:
            pool, self._pool = self._pool, None
        if pool is None:
            return fn()
        try:
            return pool.submit(contextvars.copy_context().run, fn).result()
        finally:
            pool.shutdown(wait=False)


class AsyncContext(Generic[T]):
    """A sync context manager (``knowledge.transaction()``, ``history.activity()``)
    entered and left on the worker: ``async with`` gives what its ``with`` gives. The
    block itself runs on the event loop; what it yields is the sync object."""

    def __init__(self, worker: Worker, make: Callable[[], AbstractContextManager[T]]) -> None:
        self._worker = worker
        self._make = make
        self._manager: AbstractContextManager[T] | None = None

    async def __aenter__(self) -> T:
        def enter() -> T:
            manager = self._make()
            value = manager.__enter__()
            self._manager = manager
            return value

        return await self._worker.run(enter)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        manager = self._manager
        if manager is None:
            return None
        self._manager = None
        return await self._worker.run(lambda: manager.__exit__(exc_type, exc, tb))


class AsyncStore(Generic[S]):
    """The async twin of one sync object (a store, or the ``Memory`` itself)."""

    def __init__(self, resolve: Callable[[], S], worker: Worker) -> None:
        self._resolve = resolve
        self._worker = worker

    @property
    def sync(self) -> S:
        """The sync object itself (built here on first use: it may touch the disk)."""
        return self._resolve()

    async def _call(self, fn: Callable[[S], R]) -> R:
        return await self._worker.run(lambda: fn(self._resolve()))

    def _context(self, fn: Callable[[S], AbstractContextManager[T]]) -> AsyncContext[T]:
        return AsyncContext(self._worker, lambda: fn(self._resolve()))

    def __repr__(self) -> str:  # never builds the store (that may block, or raise)
        return f"<{type(self).__name__}>"


class AsyncMemoryBase(AsyncStore["Memory"]):
    """What ``AsyncMemory`` does by hand: its worker, closing, ``async with``, and the
    folder's plain attributes (read as they are: nothing to wait for)."""

    def __init__(self, memory: Memory, worker: Worker | None = None) -> None:
        super().__init__(lambda: memory, worker or Worker())
        self._memory = memory

    @property
    def sync(self) -> Memory:
        """The sync ``Memory`` this wraps."""
        return self._memory

    async def run(self, fn: Callable[[], R]) -> R:
        """Run any sync work on this memory's worker, in turn with its other calls
        (what the MCP server does with each tool call)."""
        return await self._worker.run(fn)

    async def close(self) -> None:
        """Close the memory (its databases) and stop the worker thread; a later call
        starts it again, as the sync ``Memory`` reopens what it needs."""
        try:
            await self._call(lambda memory: memory.close())
        finally:
            self._worker.shutdown()

    def finish(self, fn: Callable[[], R]) -> R:
        """``fn()`` after every call already on the worker, then stop it (``Worker.finish``):
        how a server closes its memory once its event loop has ended."""
        return self._worker.finish(fn)

    def stop_worker(self) -> None:
        """Stop the worker thread without waiting on the loop: for a caller that closes
        the sync memory itself, off the event loop (the team server evicting an agent);
        a later call starts a new one."""
        self._worker.shutdown()

    async def __aenter__(self: T) -> T:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"Async{self._memory!r}"

    # -- the folder's attributes (as on Memory) -------------------------------------

    @property
    def root(self) -> Path:
        return self._memory.root

    @property
    def manifest(self) -> Manifest:
        return self._memory.manifest

    @property
    def clock(self) -> Clock:
        return self._memory.clock

    @property
    def lock(self) -> WriteLock:
        return self._memory.lock

    @property
    def migration(self) -> MigrationReport | None:
        return self._memory.migration

    @property
    def notices(self) -> list[Notice]:
        return self._memory.notices

    @property
    def read_only(self) -> str | None:
        return self._memory.read_only

    @property
    def space(self) -> FileSpace:
        return self._memory.space

    @property
    def files(self) -> MountedFiles:
        return self._memory.files

    @property
    def storage(self) -> Storage:
        return self._memory.storage
