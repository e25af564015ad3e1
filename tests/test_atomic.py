"""Atomic writes and the folder lock, with real processes: no lost or torn writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import memdir
from memdir.errors import LockTimeout
from memdir.files.atomic import TMP_SUFFIX, FolderLock, atomic_write


def _python(code: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL, then reap the process and close its pipes."""
    os.kill(process.pid, signal.SIGKILL)
    process.communicate()


def test_atomic_write_replaces_whole_file_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "f.md"
    target.write_text("old")
    target.chmod(0o600)
    atomic_write(target, "new")
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o600
    assert list(tmp_path.iterdir()) == [target]  # no temp file left


def test_four_processes_saving_100_observations_each_lose_nothing(folder: Path) -> None:
    code = """
        import sys, memdir
        memory = memdir.open(sys.argv[1])
        for n in range(100):
            result = memory.knowledge.save(f"process {sys.argv[2]} observation {n}")
            assert result.ok, result
    """
    workers = [_python(code, str(folder), str(p)) for p in range(4)]
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err.decode()
    memory = memdir.open(folder, embedder="none")
    observations = memory.knowledge.observations()
    assert len(observations) == 400
    expected = {f"process {p} observation {n}" for p in range(4) for n in range(100)}
    assert {o.content for o in observations} == expected
    assert len({o.id for o in observations}) == 400
    # Each process updated the shared index as it wrote: it already holds all 400.
    indexed = memory.index.db.execute("SELECT body FROM items WHERE kind = 'observation'")
    assert sorted(body for (body,) in indexed) == sorted(expected)


def test_threads_sharing_one_memory_lose_nothing(memory: memdir.Memory) -> None:
    def work(t: int) -> None:
        for n in range(25):
            assert memory.knowledge.save(f"thread {t} item {n}").ok
            assert memory.notebook.update(f"t{t}", f"thread {t} at {n}").ok

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(memory.knowledge.observations()) == 100
    assert {e.text for e in memory.notebook.entries()} == {f"thread {t} at 24" for t in range(4)}


def test_killed_writer_leaves_the_previous_file_intact(tmp_path: Path) -> None:
    """SIGKILL a process in the middle of big atomic writes: the file is always whole."""
    target = tmp_path / "big.md"
    size = 4 * 1024 * 1024
    atomic_write(target, b"a" * size)
    code = """
        import sys
        from pathlib import Path
        from memdir.files.atomic import atomic_write
        target, size = Path(sys.argv[1]), int(sys.argv[2])
        print("ready", flush=True)
        n = 0
        while True:
            n += 1
            atomic_write(target, (b"bcdefgh"[n % 7:n % 7 + 1]) * size)
    """
    for delay in (0.05, 0.1, 0.15, 0.2, 0.3):
        writer = _python(code, str(target), str(size))
        assert writer.stdout is not None and writer.stdout.readline() == b"ready\n"
        time.sleep(delay)
        _kill(writer)
        data = target.read_bytes()
        assert len(data) == size and data == data[:1] * size


def test_killed_store_writer_leaves_a_parseable_file_and_stale_temps_are_cleaned(
    folder: Path,
) -> None:
    code = """
        import sys, memdir
        memory = memdir.open(sys.argv[1])
        n = 0
        while True:
            memory.knowledge.save(f"observation {n} " + "x" * 2000)
            n += 1
            if n == 1:  # ready once one save is on disk, however slow the machine
                print("ready", flush=True)
    """
    writer = _python(code, str(folder))
    assert writer.stdout is not None and writer.stdout.readline() == b"ready\n"
    time.sleep(0.5)
    _kill(writer)
    (folder / f".knowledge.md.dead{TMP_SUFFIX}").write_text("left by a killed writer")
    memory = memdir.open(folder)
    observations = memory.knowledge.observations()
    assert observations and all(o.content.startswith("observation ") for o in observations)
    assert [int(o.content.split()[1]) for o in observations] == list(range(len(observations)))
    assert not list(folder.glob(f".*{TMP_SUFFIX}"))


def test_lock_held_by_another_process_times_out(folder: Path) -> None:
    code = """
        import sys, time, memdir
        memory = memdir.open(sys.argv[1])
        with memory.lock:
            print("locked", flush=True)
            time.sleep(30)
    """
    holder = _python(code, str(folder))
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
        lock = FolderLock(folder / ".memdir" / "lock", timeout=0.2)
        with pytest.raises(LockTimeout, match="another process"):
            lock.acquire()
    finally:
        _kill(holder)
    with FolderLock(folder / ".memdir" / "lock", timeout=5):
        pass  # free again once the holder is gone
