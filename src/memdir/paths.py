"""Where a memory folder's paths live on disk.

Every file memdir knows has one path relative to the memory folder, as results,
hits and ``Memory.get`` spell it. A layer mounted from another folder (a vault
shared by several agents) shows its files under the layer's name: with
``[layers.vault] mount = "/srv/team-vault"``, ``vault/crm/alice.md`` is
``/srv/team-vault/crm/alice.md``. Nothing resolves outside the folder or a mount.
"""

from __future__ import annotations

import errno
import functools
import operator
import os
import re
import time
from collections.abc import Container, Iterator
from pathlib import Path
from stat import S_ISREG

from memdir.config import STATE_DIR, Layer, Manifest, is_glob, static_prefix
from memdir.errors import MemdirError

_REAL_KEPT = 100_000


class FileSpace:
    def __init__(self, root: Path, manifest: Manifest) -> None:
        self.root = root.resolve()  # open_memory's root, resolved already (``resolved``)
        self.mounts = {
            name: resolved(folder, f"[layers.{name}] mount {folder}")
            for name, folder in manifest.mounts(self.root).items()
        }
        self._real: dict[str, Path] = {}

    def base(self, layer_name: str) -> tuple[Path, str]:
        """The folder a layer's paths start from, and the prefix its files carry."""
        mount = self.mounts.get(layer_name)
        return (mount, f"{layer_name}/") if mount is not None else (self.root, "")

    def real(self, relpath: str) -> Path:
        """The file on disk for a memory-folder path (mounted layers included)."""
        found = self._real.get(relpath)
        if found is None:
            first, _, rest = relpath.partition("/")
            mounted = first in self.mounts and rest
            found = self.mounts[first] / rest if mounted else self.root / relpath
            if len(self._real) >= _REAL_KEPT:
                self._real.clear()
            self._real[relpath] = found  # joining paths costs more than looking them up
        return found

    def confining(self, relpath: str) -> Path:
        """The folder ``relpath`` must stay inside: a mount, or the memory folder."""
        first, _, rest = relpath.partition("/")
        return self.mounts[first] if first in self.mounts and rest else self.root

    def write_folders(self, manifest: Manifest) -> dict[Path, bool]:
        """Every folder memdir writes here, mounts aside, each with whether it writes
        in its subfolders too: the layers' folders, the archive, sessions,
        tool-outputs and .memdir."""
        root = self.root
        folders = {
            root: False,
            root / STATE_DIR: True,
            root / "tool-outputs": False,
            root / manifest.archive_dir(): True,
        }
        for name, layer in manifest.layers.items():
            if name in self.mounts:
                continue
            for pattern in layer.paths:
                if not is_glob(pattern):
                    folder, deep = (root / pattern).parent, False
                else:
                    start = static_prefix(pattern)
                    rest = pattern[len(start) :].strip("/")
                    folder, deep = root / start, "/" in rest or "**" in rest
                folders[folder] = folders.get(folder, False) or deep
        return folders

    def files(self, layer_name: str, layer: Layer) -> list[str]:
        """The layer's existing files, as memory-folder paths, hidden ones left out."""
        return list(self.stats(layer_name, layer))

    def stats(
        self, layer_name: str, layer: Layer, skip: Container[str] = ()
    ) -> dict[str, os.stat_result]:
        """The layer's files (memory-folder paths, in pattern order) with their stat,
        found by one ``scandir`` walk per pattern: each file is stat'ed once. Paths in
        ``skip`` (files an earlier layer already owns) are left out unstat'ed."""
        base, prefix = self.base(layer_name)
        found: dict[str, os.stat_result] = {}
        for pattern in layer.paths:
            if not is_glob(pattern):
                stat = regular_file(base, pattern)
                if stat is not None:
                    found.setdefault(prefix + pattern, stat)
                continue
            regex = glob_regex(pattern)
            for relative, entry in walk_files(base, static_prefix(pattern)):
                if prefix + relative not in skip and regex.fullmatch(relative):
                    try:
                        found.setdefault(prefix + relative, entry.stat())
                    except OSError:
                        continue
        return found

    def matches(self, layer_name: str, layer: Layer, relpath: str) -> bool:
        """Whether ``relpath`` (a memory-folder path) is one of the layer's files."""
        _, prefix = self.base(layer_name)
        if prefix:
            if not relpath.startswith(prefix):
                return False
            relpath = relpath[len(prefix) :]
        elif relpath.partition("/")[0] in self.mounts:
            return False
        return any(
            glob_regex(pattern).fullmatch(relpath) if is_glob(pattern) else relpath == pattern
            for pattern in layer.paths
        )


def outside_target(base: Path, path: Path) -> str | None:
    """Where ``path`` leads if a link takes it outside ``base`` (None if it stays inside
    or is no link). The one rule for links in a memory folder: memdir follows a link
    that stays inside (or inside a mount), and never reads nor writes through one that
    leaves: reads see no file there, writes are refused with a reason."""
    if _inside(base, path):
        return None
    return os.path.realpath(path)


def _inside(base: Path, path: str | Path) -> bool:
    """Whether ``path``, links resolved, stays inside ``base``: a symlink in a memory
    folder never brings another folder's files into its index."""
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(base))


def resolved(path: Path, name: str | None = None) -> Path:
    """``path.resolve()`` (absolute, links followed) for a path a person gave: the
    folder, a file, a mount. A loop of links in its way (a link that leads back to
    itself, there or in a folder above) is a MemdirError naming ``name`` (``path`` if
    None), on every Python: before 3.13 ``resolve`` raises RuntimeError (a traceback),
    from 3.13 it returns the path as if there were something there."""
    try:
        real = path.resolve()
        os.stat(path)
    except RuntimeError:
        raise MemdirError(_loop(name or str(path))) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise MemdirError(_loop(name or str(path))) from None
    return real


def _loop(name: str) -> str:
    return f"{name} is a loop of links that leads to no file or folder; replace the link"


def _linked_file_inside(base: Path, entry: os.DirEntry[str]) -> bool:
    """Whether the link ``entry`` leads to a file inside ``base``; a loop of links leads
    nowhere (its OSError would stop every listing of the folder)."""
    try:
        return entry.is_file() and _inside(base, entry.path)
    except OSError:
        return False


def _hidden(relative: str) -> bool:
    return any(part.startswith(".") for part in relative.split("/"))


def regular_file(base: Path, relative: str) -> os.stat_result | None:
    """The stat of ``base / relative`` if it is a regular file, not hidden, that stays
    inside ``base`` (a link is followed only then); else None."""
    path = base / relative
    try:
        stat = os.stat(path)  # follows a link: checked below
    except OSError:
        return None
    if not S_ISREG(stat.st_mode) or _hidden(relative):
        return None
    return stat if _no_links(base, relative) or _inside(base, path) else None


def _no_links(base: Path, relative: str) -> bool:
    """Whether no part of ``relative`` below ``base`` is a link (nor ``..``): then the
    path stays inside ``base`` without resolving every folder up from the root."""
    current = str(base)
    for part in relative.split("/"):
        if part in ("", ".", ".."):
            return False
        current = os.path.join(current, part)
        if os.path.islink(current):
            return False
    return True


_name = operator.attrgetter("name")


def walk_files(base: Path, start: str) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(path relative to ``base``, entry) of every file under ``base/start``,
    sorted, hidden files and folders left out."""
    folders = [start]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(base / folder if folder else base) as entries:
                listed = sorted(entries, key=_name)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        below = []
        for entry in listed:
            if entry.name.startswith("."):
                continue
            relative = f"{folder}/{entry.name}" if folder else entry.name
            if entry.is_dir(follow_symlinks=False):
                below.append(relative)
            elif entry.is_symlink():
                if _linked_file_inside(base, entry):
                    yield relative, entry  # a link is followed only if it stays inside
            elif entry.is_file():
                yield relative, entry
        folders.extend(reversed(below))


class Listings:
    """The files under folders as ``walk_files`` finds them, each folder listed again
    only when its mtime moved (adding, removing or renaming a name in it moves it), so
    a rescan of unchanged folders costs a stat per folder and no listing. A folder
    modified less than ``RACY_NS`` before it was listed is listed again next time (a
    change in the same tick of a coarse clock leaves its mtime as it was), and so is
    one holding a link (where a link leads can change without it)."""

    RACY_NS = 2_000_000_000

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], tuple[int, list[tuple[str, str]], list[str]]] = {}
        """(base, folder) -> (the folder's mtime, its files as ``walk`` gives them, its
        subfolders relative to the base)"""

    def walk(self, base: Path, start: str) -> list[tuple[str, str]]:
        """(path relative to ``base``, path on disk) of every file under ``base/start``,
        in ``walk_files``' order."""
        found: list[tuple[str, str]] = []
        root = str(base)
        now = time.time_ns()
        folders = [start]
        while folders:
            folder = folders.pop()
            path = os.path.join(root, folder) if folder else root
            try:
                mtime = os.stat(path).st_mtime_ns
            except OSError:
                self._seen.pop((root, folder), None)
                continue
            seen = self._seen.get((root, folder))
            if seen is not None and seen[0] == mtime:
                files, below = seen[1], seen[2]
            else:
                listed = _listed(base, path)
                if listed is None:
                    self._seen.pop((root, folder), None)
                    continue
                names, subfolders, linked = listed
                prefix = f"{folder}/" if folder else ""
                files = [(prefix + name, os.path.join(path, name)) for name in names]
                below = [prefix + name for name in reversed(subfolders)]
                if not linked and mtime < now - self.RACY_NS:
                    self._seen[(root, folder)] = (mtime, files, below)
                else:
                    self._seen.pop((root, folder), None)
            found += files
            folders += below
        return found


def _listed(base: Path, path: str) -> tuple[list[str], list[str], bool] | None:
    """A folder's files and subfolders (sorted, hidden ones left out, a link to a file
    only if it stays inside ``base``) and whether it holds a link; None if unreadable."""
    try:
        with os.scandir(path) as entries:
            listed = sorted(entries, key=_name)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None
    files: list[str] = []
    below: list[str] = []
    linked = False
    for entry in listed:
        if entry.name.startswith("."):
            continue
        if entry.is_dir(follow_symlinks=False):
            below.append(entry.name)
        elif entry.is_symlink():
            linked = True
            if _linked_file_inside(base, entry):
                files.append(entry.name)
        elif entry.is_file():
            files.append(entry.name)
    return files, below, linked


@functools.lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a glob as ``Path.glob`` reads it: ``*`` and ``?`` stay within a folder,
    ``**/`` spans any number of folders (none included), ``[...]`` is a class."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:[^/]+/)*"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            out += "[" + ("^" + body[1:] if body.startswith("!") else body) + "]"
            i = end + 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out)


NAME_MAX_BYTES = 255
"""the longest file or folder name (in UTF-8 bytes) that ext4, XFS, APFS and NTFS hold: a
folder kept in PostgreSQL is held to it too, so that it can be written out to disk"""


def too_long(path: str) -> str | None:
    """Why no file system holds ``path`` (a name in it past ``NAME_MAX_BYTES``), if so."""
    for name in path.split("/"):
        size = len(name.encode("utf-8", "surrogatepass"))
        if size > NAME_MAX_BYTES:
            shown = name if len(name) <= 40 else f"{name[:20]}...{name[-12:]}"
            return (
                f"the name {shown!r} is {size} bytes long; a file or folder name holds at "
                f"most {NAME_MAX_BYTES} bytes: choose a shorter one, and nothing was written"
            )
    return None
