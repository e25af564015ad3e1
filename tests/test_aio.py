"""``AsyncMemory``: Memory's surface, each method a coroutine over the sync core.

The parity tests enumerate ``Memory``'s public members and each store's, and fail
when the async side misses one or a signature differs; the generated module is
checked to be what scripts/async_surface.py writes from today's sync classes.
"""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
import threading
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

import memdir
from memdir.aio import AsyncMemory
from memdir.aio.runner import AsyncContext, AsyncStore
from memdir.errors import LayerNotConfigured
from memdir.memory import Memory
from memdir.testing import FakeClock

ROOT = Path(__file__).resolve().parent.parent

STORES = {
    "notebook": "Notebook",
    "knowledge": "KnowledgeStore",
    "state": "StateStore",
    "vault": "VaultStore",
    "journal": "JournalStore",
    "lessons": "LessonsStore",
    "workstate": "WorkState",
    "intel": "IntelStore",
    "sessions": "SessionStore",
    "history": "History",
}


def public(cls: type) -> list[str]:
    return [name for name in dir(cls) if not name.startswith("_")]


def is_context_manager(fn: Any) -> bool:
    return hasattr(fn, "__wrapped__") and inspect.isgeneratorfunction(inspect.unwrap(fn))


def check_surface(sync_cls: type, async_cls: type) -> list[str]:
    """What ``async_cls`` misses or gets wrong of ``sync_cls``'s public surface."""
    wrong: list[str] = []
    for name in public(sync_cls):
        where = f"{async_cls.__name__}.{name}"
        if not hasattr(async_cls, name):
            wrong.append(f"{where} is missing")
            continue
        sync = inspect.getattr_static(sync_cls, name)
        ours = inspect.getattr_static(async_cls, name)
        if inspect.isfunction(sync):
            want = inspect.signature(sync)
            got = inspect.signature(ours)
            if is_context_manager(sync):
                if not str(got.return_annotation).startswith("AsyncContext["):
                    wrong.append(f"{where} should give an async context manager")
                got = got.replace(return_annotation=want.return_annotation)
            elif not inspect.iscoroutinefunction(ours):
                wrong.append(f"{where} is not a coroutine function")
            if got != want:
                wrong.append(f"{where}{got} differs from {sync_cls.__name__}.{name}{want}")
        elif isinstance(sync, property | cached_property):
            if not isinstance(ours, property):
                wrong.append(f"{where} should be a property")
        elif getattr(async_cls, name) != sync:
            wrong.append(f"{where} = {getattr(async_cls, name)!r}, not {sync!r}")
    return wrong


def test_async_memory_has_every_public_member_of_memory(folder: Path) -> None:
    assert check_surface(Memory, AsyncMemory) == []
    # and the instance's own attributes (root, manifest, notices, ...)
    with memdir.open(folder) as memory:
        attributes = {name for name in vars(memory) if not name.startswith("_")}
    missing = sorted(name for name in attributes - set(STORES) if not hasattr(AsyncMemory, name))
    assert missing == []


@pytest.mark.parametrize("name", sorted(STORES))
def test_each_async_store_has_its_stores_surface(name: str) -> None:
    import memdir.aio as aio

    prop = inspect.getattr_static(Memory, name)
    assert isinstance(prop, cached_property)
    assert inspect.signature(prop.func).return_annotation == STORES[name]
    ours = inspect.getattr_static(AsyncMemory, name)
    assert inspect.signature(ours.fget).return_annotation == f"Async{STORES[name]}"
    async_cls = getattr(aio, f"Async{STORES[name]}")
    sync_cls = next(  # class AsyncNotebook(AsyncStore[Notebook])
        base.__args__[0]
        for base in async_cls.__orig_bases__
        if getattr(base, "__origin__", None) is AsyncStore
    )
    assert sync_cls.__name__ == STORES[name]
    assert check_surface(sync_cls, async_cls) == []


def test_a_member_missing_or_changed_is_caught() -> None:
    class Sync:
        def save(self, text: str, k: int = 3) -> str:
            return text

        def search(self, query: str) -> list[str]:
            return [query]

    class Async:
        async def save(self, text: str, k: int = 4) -> str:
            return text

    wrong = check_surface(Sync, Async)
    assert len(wrong) == 2
    assert "Async.search is missing" in wrong
    assert "differs" in wrong[0] or "differs" in wrong[1]


def test_the_generated_surface_is_current() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "async_surface.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_aopen_save_search_context(folder: Path, clock: FakeClock) -> None:
    async def main() -> None:
        async with await memdir.aopen(folder, clock=clock, embedder="hashing") as am:
            assert isinstance(am, AsyncMemory)
            saved = await am.knowledge.save("Dana keeps the release checklist.", tags=["ops"])
            assert saved.ok
            hits = await am.search("release checklist")
            assert hits and "release checklist" in hits[0].body
            context = await am.context(query="release checklist")
            assert "Dana keeps the release checklist." in context.text
            assert (await am.notebook.update("focus", "shipping 1.0")).ok
            assert (await am.notebook.get("focus")) is not None
            assert am.root == folder.resolve()
            assert am.knowledge.store == "knowledge.md"

    asyncio.run(main())
    with memdir.open(folder, embedder="hashing") as memory:  # the files are the truth
        assert any("release checklist" in o.content for o in memory.knowledge.observations())


def test_calls_run_off_the_event_loop_in_order(folder: Path) -> None:
    async def main() -> None:
        am = await memdir.aopen(folder, embedder="hashing")
        loop_thread = threading.get_ident()
        worker_thread = await am.run(threading.get_ident)
        assert worker_thread != loop_thread
        texts = [f"Fact number {i} about the deploy." for i in range(12)]
        results = await asyncio.gather(*(am.knowledge.save(t) for t in texts))
        assert all(r.ok for r in results)
        kept = [o.content for o in await am.knowledge.observations()]
        assert [t for t in texts if t in kept] == texts  # none lost, in the order made
        await am.close()

    asyncio.run(main())


def test_the_folder_lock_is_respected_and_the_loop_stays_free(folder: Path) -> None:
    """Another thread holds the folder lock: the save waits for it, the loop does not."""
    held, release = threading.Event(), threading.Event()
    memory = memdir.open(folder, embedder="hashing")

    def holder() -> None:
        with memory.lock:
            held.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(30)

    async def main() -> None:
        am = AsyncMemory(memory)
        save = asyncio.create_task(am.knowledge.save("Saved once the lock is free."))
        ticks = 0
        for _ in range(5):  # the loop runs other work while the save waits for the lock
            await asyncio.sleep(0.01)
            ticks += 1
        assert ticks == 5 and not save.done()
        release.set()
        assert (await save).ok
        await am.close()

    try:
        asyncio.run(main())
    finally:
        release.set()
        thread.join()
    assert "Saved once the lock is free." in [o.content for o in memory.knowledge.observations()]
    memory.close()


def test_context_managers_are_async(folder: Path) -> None:
    async def main() -> None:
        async with await memdir.aopen(folder, embedder="hashing") as am:
            await am.knowledge.save("An observation to edit.")
            async with am.history.activity("task", "Refactor billing") as run:
                run.log("text", "started")
                run.summary = "refactored"
            recent = await am.history.recent(5)
            assert recent[0].label == "Refactor billing" and recent[0].success
            with pytest.raises(RuntimeError):
                async with am.history.activity("task", "Breaks") as run:
                    raise RuntimeError("boom")
            assert not (await am.history.recent(1))[0].success
            cm = am.knowledge.transaction()
            assert isinstance(cm, AsyncContext)
            async with cm as edit:
                assert edit.observations

    asyncio.run(main())


def test_a_layer_not_declared_raises_at_its_first_call(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    memdir.init(root, layout="workspace")

    async def main() -> None:
        async with await memdir.aopen(root, embedder="hashing") as am:
            store = am.knowledge  # never blocks, never raises here
            with pytest.raises(LayerNotConfigured):
                await store.save("no knowledge layer in a workspace")
            assert (await am.lessons.add("ops", "skipped tests", "it broke", "run them")).ok

    asyncio.run(main())


def test_llm_can_be_set_through_the_async_memory(folder: Path) -> None:
    from memdir.testing import FakeChat

    async def main() -> None:
        async with await memdir.aopen(folder, embedder="hashing") as am:
            chat = FakeChat([])
            am.llm = chat
            assert am.sync.llm is chat
            am.llm = None
            assert am.llm is None

    asyncio.run(main())


def test_aopen_an_unknown_folder_raises_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(memdir.NotAMemoryFolder):
        asyncio.run(memdir.aopen(tmp_path / "nowhere"))


def test_stores_are_async_store_instances(folder: Path) -> None:
    async def main() -> None:
        async with await memdir.aopen(folder, embedder="hashing") as am:
            for name in STORES:
                assert isinstance(getattr(am, name), AsyncStore)

    asyncio.run(main())


def test_the_mcp_server_runs_tool_calls_off_the_event_loop(folder: Path) -> None:
    """A tool call waiting for the folder lock leaves the server's loop free."""
    from memdir.server.mcp import build_server

    server = build_server(folder)
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with server.memory.lock:
            held.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(30)

    async def main() -> None:
        call = asyncio.create_task(
            server.call_tool("memory_save", {"content": "Saved through MCP once free."})
        )
        for _ in range(5):
            await asyncio.sleep(0.01)
        assert not call.done()
        release.set()
        result = await call
        assert not result.is_error, result

    try:
        asyncio.run(main())
    finally:
        release.set()
        thread.join()
        server.sessions.close()
        server.memory.close()
    with memdir.open(folder) as memory:
        assert "Saved through MCP once free." in [
            o.content for o in memory.knowledge.observations()
        ]


def test_stop_worker_ends_the_thread_and_a_later_call_starts_another(folder: Path) -> None:
    async def main() -> None:
        am = await memdir.aopen(folder, embedder="hashing")
        first = await am.run(threading.current_thread)
        assert first.is_alive()
        am.sync.close()
        am.stop_worker()  # what the team server does when it evicts an agent
        first.join(timeout=5)
        assert not first.is_alive()
        second = await am.run(threading.current_thread)
        assert second is not first and second.is_alive()
        assert (await am.knowledge.save("Saved after the worker was stopped.")).ok
        await am.close()

    asyncio.run(main())
