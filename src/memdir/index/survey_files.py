"""Which files the index covers when the folder is not on disk: ``Survey``'s answers
over the seam's ``Files`` (a folder in PostgreSQL, its mounts included).

The same rules as ``index.survey``: a file belongs to the first layer whose paths
match it and is indexed only if that layer is; ``MEMORY.md`` is legacy; hidden files
are left out; a name that is not UTF-8 is listed in ``unnamable``. One ``Files.list``
gives every file's size, modification time and version at once (one query), so a
rescan costs that query and no read of an unchanged file.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import NamedTuple

from memdir.config import Manifest
from memdir.files.encoding import decode, has_surrogates
from memdir.index.survey import Owner, Survey, legacy
from memdir.paths import FileSpace
from memdir.storage.seam import Files


class FileInfo(NamedTuple):
    """The two fields of an ``os.stat_result`` the index reads."""

    st_mtime_ns: int
    st_size: int


FilesFound = dict[str, tuple[Owner, FileInfo]]


def _hidden(path: str) -> bool:
    return any(part.startswith(".") for part in path.split("/"))


class FilesSurvey(Survey):
    """``Survey`` over ``files`` (memory-folder paths) instead of a walk of the disk."""

    def __init__(self, space: FileSpace, manifest: Manifest, files: Files) -> None:
        super().__init__(space, manifest)
        self.source = files

    def files(self) -> FilesFound:  # type: ignore[override]
        found: FilesFound = {}
        for stat in self.source.list():
            path = stat.path
            if _hidden(path) or legacy(path):
                continue
            if has_surrogates(path):
                self.unnamable.add(path)
                continue
            owner = self.layer_of(path)
            if owner is not None:
                found[path] = (owner, FileInfo(stat.mtime_ns, stat.size))
        order = {name: n for n, (name, _) in enumerate(self.layers())}
        return dict(sorted(found.items(), key=lambda item: (order[item[1][0][0]], item[0])))

    def compare(  # type: ignore[override]
        self, known: Mapping[str, tuple[int, int, str]]
    ) -> tuple[list[tuple[str, Owner, FileInfo]], int, Set[str]]:
        stale: list[tuple[str, Owner, FileInfo]] = []
        found = self.files()
        for relpath, (owner, info) in found.items():
            row = known.get(relpath)
            if row is None or (row[0], row[1], row[2]) != (
                info.st_mtime_ns,
                info.st_size,
                owner[0],
            ):
                stale.append((relpath, owner, info))
        return stale, len(found) - len(stale), frozenset(found)

    def stat(self, relpath: str) -> FileInfo | None:
        stat = self.source.stat(relpath)
        return None if stat is None else FileInfo(stat.mtime_ns, stat.size)

    def read(self, relpath: str) -> str:
        data = self.source.read(relpath)
        if data is None:
            raise FileNotFoundError(relpath)
        return decode(data)
