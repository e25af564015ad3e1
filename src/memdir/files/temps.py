"""Temp files of atomic writes, and the live writers that may still own them.

``atomic_write`` puts its bytes in ``.<name>.<pid>.<hex>.memdir-tmp`` beside the
target (a rename is atomic only within one filesystem, and any folder may be a
mount of another one) and renames that over the target; a writer killed in
between leaves it behind. A leftover is *stale*, safe to remove, when no live
process can still rename it: the pid in its name is not running (or is a
zombie), or it is older than ``TEMP_STALE_SECONDS`` (the pid was reused), or its
name carries no pid (an older memdir wrote it; its writers held the folder lock,
and sweeps run under that lock).

Finding leftovers means walking every folder memdir writes, a 10,000-card vault
included, so it is not done at every open. A process that opens a folder to
write leaves a marker ``.memdir/writers/<pid>.memdir-tmp`` (its boot id and
start time inside, so a reused pid is told apart) and removes it at exit; a
forked child leaves its own. An open that finds the marker of a process no
longer running knows a writer died, perhaps mid-write, and sweeps, under the
folder lock; a folder without ``writers/`` (never opened by a memdir that keeps
markers) is swept once. So the walk follows a crash, not every open. ``memdir
doctor`` walks the same folders to report leftovers (finding "temp-file").

Markers end in ``.memdir-tmp`` so backups and git leave them out like every
other transient file; their names are not hidden, so no sweep takes one for a
temp file.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import secrets
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path

TMP_SUFFIX = ".memdir-tmp"
TEMP_STALE_SECONDS = 300.0
"""a temp file this old is stale whoever wrote it: no atomic write takes minutes"""
WRITERS_DIR = "writers"
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", WRITERS_DIR})
_NAME_KEPT = 150  # of the target's name, so the temp name stays under NAME_MAX (255)
_PID_RE = re.compile(rf"\.([0-9]+)\.[0-9a-f]{{8}}{re.escape(TMP_SUFFIX)}$")

Folders = Mapping[Path, bool] | Iterable[Path]
"""folders to look in: a mapping says, per folder, whether to look in its subfolders too"""


def temp_path(path: Path) -> Path:
    """Where ``atomic_write`` stages the new bytes of ``path``: beside it, named for
    this process, so a sweep can tell whether its writer still runs."""
    name = f".{path.name[:_NAME_KEPT]}.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}"
    return path.with_name(name)


def is_temp_file(name: str) -> bool:
    return name.startswith(".") and name.endswith(TMP_SUFFIX)


def writer_pid(name: str) -> int | None:
    """The pid of the process that made a temp file, from its name (None: unknown)."""
    match = _PID_RE.search(name)
    return int(match.group(1)) if match else None


def is_stale(path: Path, now: float | None = None) -> bool:
    """True if no live writer can still rename ``path`` (see the module docstring)."""
    pid = writer_pid(path.name)
    if pid is None or not alive(pid):
        return True
    try:
        age = (time.time() if now is None else now) - path.stat().st_mtime
    except FileNotFoundError:
        return False  # renamed or removed meanwhile: nothing to do
    return age > TEMP_STALE_SECONDS


def temp_files(folders: Folders, skip: Collection[Path] = ()) -> Iterator[Path]:
    """Every temp file in ``folders`` (subfolders too where the mapping says so),
    not following links and leaving out ``SKIP_DIRS`` and the folders in ``skip``
    (mounts, which another lock guards)."""
    pairs = folders.items() if isinstance(folders, Mapping) else ((f, False) for f in folders)
    flat: set[Path] = set()
    deep: set[Path] = set()
    for folder, recursive in pairs:
        (deep if recursive else flat).add(folder)
    seen: set[Path] = set()
    for top in sorted(deep, key=lambda p: len(p.parts)):
        if any(top.is_relative_to(done) for done in seen):
            continue
        seen.add(top)
        yield from _walk(top, skip)
    for folder in sorted(flat):
        if not any(folder.is_relative_to(done) for done in seen):
            yield from _listed(folder)


def _listed(folder: Path) -> Iterator[Path]:
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if is_temp_file(entry.name) and entry.is_file(follow_symlinks=False):
                    yield Path(entry.path)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return


def _walk(top: Path, skip: Collection[Path]) -> Iterator[Path]:
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        path = Path(entry.path)
                        if entry.name not in SKIP_DIRS and path not in skip:
                            stack.append(path)
                    elif is_temp_file(entry.name) and entry.is_file(follow_symlinks=False):
                        yield Path(entry.path)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue


def stale_temp_files(folders: Folders, skip: Collection[Path] = ()) -> list[Path]:
    now = time.time()
    return [path for path in temp_files(folders, skip) if is_stale(path, now)]


def remove_stale(folders: Folders, skip: Collection[Path] = ()) -> list[Path]:
    """Delete the stale temp files in ``folders``; call under the folder's lock."""
    removed: list[Path] = []
    for tmp in stale_temp_files(folders, skip):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed.append(tmp)
    return removed


def sweep_after_crash(state_dir: Path, folders: Folders, skip: Collection[Path] = ()) -> list[Path]:
    """At open, under the folder's lock: leave this process's marker in
    ``state_dir`` and, if a writer died since the last sweep (or none was ever
    made), remove the stale temp files in ``folders``. Returns what it removed."""
    dead = dead_writers(state_dir)
    register_writer(state_dir)
    if dead == []:
        return []
    removed = remove_stale(folders, skip)
    forget_writers(dead or ())
    return removed


# -- the live writers of a folder ------------------------------------------------

_registered: dict[Path, Path] = {}  # state dir -> this process's marker in it
_guard = threading.Lock()


def register_writer(state_dir: Path) -> None:
    """Leave this process's marker in ``state_dir/writers`` (once per process);
    an unwritable folder is left alone (it cannot get temp files either)."""
    with _guard:
        if state_dir in _registered:
            return
        marker = _mark(state_dir)
        if marker is not None:
            _registered[state_dir] = marker


def _mark(state_dir: Path) -> Path | None:
    marker = state_dir / WRITERS_DIR / f"{os.getpid()}{TMP_SUFFIX}"
    started = _proc_stat(os.getpid())
    identity = f"{_boot_id() or '-'} {started[1] if started else '-'}\n"
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(identity, encoding="ascii")
    except OSError:
        return None
    return marker


def dead_writers(state_dir: Path) -> list[Path] | None:
    """Markers in ``state_dir`` of processes no longer running, or None when the
    folder keeps no markers yet (never opened by this version: sweep once)."""
    folder = state_dir / WRITERS_DIR
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return None
    except OSError:
        return []
    dead = []
    for entry in entries:
        pid_text = entry.name.removesuffix(TMP_SUFFIX)
        if not pid_text.isdigit():
            continue
        try:
            boot, _, started = Path(entry.path).read_text(encoding="ascii").strip().partition(" ")
        except (OSError, UnicodeDecodeError):
            boot = started = "-"
        if not alive(int(pid_text), started=started, boot=boot):
            dead.append(Path(entry.path))
    return dead


def forget_writers(markers: Iterable[Path]) -> None:
    """Remove the markers of dead writers, once their leftovers are swept."""
    for marker in markers:
        with contextlib.suppress(OSError):
            marker.unlink()


def alive(pid: int, *, started: str = "-", boot: str = "-") -> bool:
    """Whether ``pid`` is a running process (the one that started at ``started``
    ticks after boot ``boot``, where known); a zombie has finished writing."""
    if pid <= 0:
        return False
    if boot not in ("-", "") and boot != (_boot_id() or boot):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it runs
    stat = _proc_stat(pid)
    if stat is None:
        return True
    state, start = stat
    return state not in ("Z", "X") and started in ("-", "", start)


def _proc_stat(pid: int) -> tuple[str, str] | None:
    """(state, start time) from ``/proc/<pid>/stat``; None where there is no /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # the name in (...) may hold spaces
    return (fields[0], fields[19]) if len(fields) > 19 else None


_BOOT: list[str | None] = []


def _boot_id() -> str | None:
    if not _BOOT:
        try:
            _BOOT.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None)
        except OSError:
            _BOOT.append(None)
    return _BOOT[0]


@atexit.register
def _unregister() -> None:
    for marker in _registered.values():
        if marker.name == f"{os.getpid()}{TMP_SUFFIX}":
            with contextlib.suppress(OSError):
                marker.unlink()


def _after_fork_in_child() -> None:
    """A forked child writes with its own pid: it leaves markers of its own."""
    global _guard
    _guard = threading.Lock()
    folders = list(_registered)
    _registered.clear()
    for state_dir in folders:
        register_writer(state_dir)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
