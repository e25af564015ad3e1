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


def _dead_pid() -> int:
    """The pid of a process that has finished (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def _plant(folder: Path, relpath: str, *, age: float = 0.0) -> Path:
    path = folder / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("half a file")
    if age:
        moment = time.time() - age
        os.utime(path, (moment, moment))
    return path


def _temp_files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob(f".*{TMP_SUFFIX}")}


def test_atomic_write_names_its_temp_file_for_its_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    real = os.replace

    def spy(source: str | Path, target: str | Path) -> None:
        seen.append(Path(source).name)
        real(source, target)

    monkeypatch.setattr(os, "replace", spy)
    atomic_write(tmp_path / "f.md", "text")
    [name] = seen
    assert name.startswith(f".f.md.{os.getpid()}.") and name.endswith(TMP_SUFFIX)


def test_every_folder_is_swept_after_a_writer_died(tmp_path: Path) -> None:
    """Temp files of a dead writer go at the next open, in every folder memdir writes
    (vault subfolders, journal, archive, sessions, tool-outputs, .memdir); a live
    writer's young one stays, its old one goes; nothing else is touched."""
    root = tmp_path / "mem"
    memdir.init(root, layout="default")
    dead, alive = _dead_pid(), os.getpid()
    stale = {
        f"vault/crm/people/.alice.md.{dead}.0badf00d{TMP_SUFFIX}",
        f"journal/.2026-11-30.md.{dead}.12345678{TMP_SUFFIX}",
        f"archive/notebook/.2026-11.md.{dead}.abcdef01{TMP_SUFFIX}",
        f"sessions/.sess_1_ab.jsonl.{dead}.00000000{TMP_SUFFIX}",
        f"tool-outputs/.sess_1_ab-3.txt.{dead}.11111111{TMP_SUFFIX}",
        f".memdir/.graph.json.{dead}.22222222{TMP_SUFFIX}",
        f".knowledge.md.dead{TMP_SUFFIX}",  # an older memdir's name: no pid
        f"journal/.2026-11-29.md.{alive}.33333333{TMP_SUFFIX}",  # live, but 10 minutes old
    }
    for relpath in stale:
        _plant(root, relpath, age=600 if f".{alive}." in relpath else 0)
    kept = _plant(root, f"journal/.2026-11-28.md.{alive}.44444444{TMP_SUFFIX}")
    _plant(root, f".memdir/writers/{dead}{TMP_SUFFIX}")  # the marker the dead writer left
    (root / "journal" / "2026-11-30.md").write_text("# 2026-11-30\n")
    with memdir.open(root, embedder="none"):
        assert _temp_files(root) == {kept.relative_to(root).as_posix()}
        assert sorted(p.name for p in (root / ".memdir" / "writers").iterdir()) == [
            f"{os.getpid()}{TMP_SUFFIX}"  # the dead writer's marker is gone, ours is there
        ]
    assert (root / "journal" / "2026-11-30.md").read_text() == "# 2026-11-30\n"


def test_an_open_with_no_dead_writer_does_not_walk_the_folder(tmp_path: Path) -> None:
    """No writer died since the last sweep: an open leaves even a stale temp file for
    later (it does not walk every folder); a writer killed for real brings the sweep."""
    root = tmp_path / "mem"
    memdir.init(root)
    memdir.open(root).close()  # the first open by this version sweeps once
    planted = _plant(root, f"vault/.card.md.{_dead_pid()}.0badf00d{TMP_SUFFIX}")
    memdir.open(root).close()
    assert planted.exists()
    code = """
        import sys, time, memdir
        memory = memdir.open(sys.argv[1])
        print("opened", flush=True)
        time.sleep(60)
    """
    writer = _python(code, str(root))
    assert writer.stdout is not None and writer.stdout.readline() == b"opened\n"
    _kill(writer)
    memdir.open(root).close()
    assert not planted.exists()


def test_a_forked_child_leaves_its_own_marker(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    memdir.init(root)
    memdir.open(root).close()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its marker is there; then it dies without cleaning up
        os.close(read)
        found = (root / ".memdir" / "writers" / f"{os.getpid()}{TMP_SUFFIX}").exists()
        os.write(write, b"1" if found else b"0")
        os._exit(0)
    os.close(write)
    assert os.read(read, 1) == b"1"
    os.close(read)
    os.waitpid(pid, 0)
    planted = _plant(root, f"journal/.day.md.{pid}.0badf00d{TMP_SUFFIX}")
    memdir.open(root).close()
    assert not planted.exists()
