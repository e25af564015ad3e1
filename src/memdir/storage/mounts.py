"""A memory folder's files as its paths name them: its own, and each mounted layer's.

A layer mounted from another folder (a vault several agents share) shows its files
under the layer's name: ``vault/crm/alice.md`` is ``crm/alice.md`` of the mount's own
``Files`` (another folder on disk, or another folder in the database), written under
the mount's lock. ``MountedFiles`` routes each path to the ``Files`` that holds it, so
a store names a file one way whichever holds it. ``layer_paths`` lists a layer's files
(the manifest's patterns over ``Files.paths``) on either backend.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from memdir.config import Layer, is_glob, static_prefix
from memdir.paths import glob_regex
from memdir.storage.seam import Files, FileStat, WriteLock


class MountedFiles:
    """``Files`` over a folder and its mounts (``{layer name: the mount's Files}``)."""

    def __init__(self, own: Files, mounts: Mapping[str, Files] | None = None) -> None:
        self.own = own
        self.mounts = dict(mounts or {})

    def route(self, path: str) -> tuple[Files, str, str]:
        """The ``Files`` holding ``path``, the path inside it, and the prefix it drops."""
        first, _, rest = path.partition("/")
        mount = self.mounts.get(first)
        if mount is not None and rest:
            return mount, rest, f"{first}/"
        return self.own, path, ""

    @property
    def lock(self) -> WriteLock:
        return self.own.lock

    def lock_of(self, path: str) -> WriteLock:
        """The lock a write of ``path`` takes (a mount's own, for a mounted layer)."""
        return self.route(path)[0].lock

    def read(self, path: str) -> bytes | None:
        files, inner, _ = self.route(path)
        return files.read(inner)

    def stat(self, path: str) -> FileStat | None:
        files, inner, prefix = self.route(path)
        return _prefixed(files.stat(inner), prefix)

    def stamp(self, path: str) -> tuple[int, ...] | None:
        files, inner, _ = self.route(path)
        return files.stamp(inner)

    def unwritable(self, path: str) -> str | None:
        files, inner, prefix = self.route(path)
        why = files.unwritable(inner)
        return why if why is None or not prefix else why.replace(inner, path, 1)

    def paths(self, folder: str = "") -> list[str]:
        files, inner, prefix = self.route(folder.strip("/") + "/") if folder else (self.own, "", "")
        found = [prefix + p for p in files.paths(inner.strip("/"))]
        if not prefix:
            found = [p for p in found if not self._mounted(p)]
        return found

    def list(self, prefix: str = "") -> list[FileStat]:
        found = [s for s in self.own.list(prefix) if not self._mounted(s.path)]
        for name, files in self.mounts.items():
            for stat in files.list():
                full = _prefixed(stat, f"{name}/")
                if full is not None and full.path.startswith(prefix):
                    found.append(full)
        return sorted(found, key=lambda s: s.path)

    def _mounted(self, path: str) -> bool:
        return path.partition("/")[0] in self.mounts and "/" in path

    def write(self, path: str, data: bytes, *, expected_version: int | None = None) -> FileStat:
        files, inner, prefix = self.route(path)
        stat = _prefixed(files.write(inner, data, expected_version=expected_version), prefix)
        assert stat is not None
        return stat

    def write_all(
        self, writes: Sequence[tuple[str, bytes]], on_written: Callable[[int], None] | None = None
    ) -> None:
        routed = [self.route(path) for path, _ in writes]
        holders = {id(files) for files, _, _ in routed}
        if len(holders) <= 1 and routed:
            files = routed[0][0]
            files.write_all([(r[1], data) for r, (_, data) in zip(routed, writes, strict=True)],
                            on_written)  # fmt: skip
            return
        for n, ((files, inner, _), (_, data)) in enumerate(zip(routed, writes, strict=True)):
            files.write_all([(inner, data)])
            if on_written is not None:
                on_written(n)

    def append(self, path: str, data: bytes) -> FileStat:
        files, inner, prefix = self.route(path)
        stat = _prefixed(files.append(inner, data), prefix)
        assert stat is not None
        return stat

    def remove(self, path: str, *, expected_version: int | None = None) -> bool:
        files, inner, _ = self.route(path)
        return files.remove(inner, expected_version=expected_version)

    def rename(self, old: str, new: str) -> FileStat:
        source, old_inner, _ = self.route(old)
        target, new_inner, prefix = self.route(new)
        if source is target:
            stat = _prefixed(source.rename(old_inner, new_inner), prefix)
        else:
            data = source.read(old_inner)
            if data is None:
                raise FileNotFoundError(old)
            stat = _prefixed(target.write(new_inner, data), prefix)
            source.remove(old_inner)
        assert stat is not None
        return stat


def _prefixed(stat: FileStat | None, prefix: str) -> FileStat | None:
    if stat is None or not prefix:
        return stat
    return FileStat(prefix + stat.path, stat.size, stat.sha256, stat.mtime_ns, stat.version)


def _hidden(path: str) -> bool:
    return any(part.startswith(".") for part in path.split("/"))


def layer_paths(files: Files, patterns: Sequence[str], prefix: str = "") -> list[str]:
    """The files of a layer whose ``patterns`` are relative to ``files`` (each path
    given ``prefix``, a mount's layer name), in pattern order, hidden ones left out."""
    found: dict[str, None] = {}
    for pattern in patterns:
        if not is_glob(pattern):
            if not _hidden(pattern) and files.stamp(pattern) is not None:
                found.setdefault(prefix + pattern, None)
            continue
        regex = glob_regex(pattern)
        for path in files.paths(static_prefix(pattern).strip("/")):
            if regex.fullmatch(path):
                found.setdefault(prefix + path, None)
    return list(found)


def layer_files(files: MountedFiles, name: str, layer: Layer) -> list[str]:
    """A layer's files as memory-folder paths (through its mount, if it has one)."""
    mount = files.mounts.get(name)
    if mount is not None:
        return layer_paths(mount, layer.paths, f"{name}/")
    return [p for p in layer_paths(files.own, layer.paths) if not files._mounted(p)]


def owned_files(files: MountedFiles, layers: Mapping[str, Layer]) -> dict[str, list[str]]:
    """Each layer's files that it owns: a file matched by several layers' paths (the
    catch-all ``notes`` layer's ``**/*.md`` matches every markdown file) belongs to the
    first of them in manifest order, as the index files it."""
    owned: dict[str, list[str]] = {name: [] for name in layers}
    seen: set[str] = set()
    for name, layer in layers.items():
        for relpath in layer_files(files, name, layer):
            if relpath not in seen:
                seen.add(relpath)
                owned[name].append(relpath)
    return owned
