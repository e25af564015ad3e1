"""Which files the index covers, and their stat, as a scan finds them.

- A file belongs to the first layer in the manifest whose paths match it; it is
  indexed only if that layer is (a catch-all layer listed last never takes a file
  an earlier layer keeps out of the index). ``MEMORY.md`` is legacy: never indexed.
  A name that is not UTF-8 cannot be a row: it is left out and listed in
  ``unnamable``.
- One walk per folder (``paths.Listings``): a folder some layer globs from the top
  is walked once and filtered for every layer that globs inside it; each file is
  stat'ed once. A folder whose mtime has not moved since it was listed (and was not
  modified just before) is not listed again: its names are the same.
- Which layer owns which file depends only on the names the walks found (and which
  single-file paths exist), so that answer is kept: while a rescan finds the same
  names in the same folders, it costs a stat per folder and per file, no matching.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass
from pathlib import Path

from memdir.config import LEGACY_MEMORY_MD, Layer, Manifest, is_glob, static_prefix
from memdir.files.encoding import has_surrogates
from memdir.paths import FileSpace, Listings, glob_regex, regular_file

EXTRACTABLE = frozenset(
    {"notebook", "knowledge", "state", "workstate", "journal", "lessons", "intel", "archive",
     "document", "vault"}
)  # fmt: skip

Owner = tuple[str, Layer]
Found = dict[str, tuple[Owner, os.stat_result]]
_OWNERS_KEPT = 200_000
_Walk = tuple[Path, str]  # (base folder, the folder inside it walked; "" for all of it)


def indexed(layer: Layer) -> bool:
    return layer.indexed and layer.store in EXTRACTABLE


def legacy(relpath: str) -> bool:
    """``MEMORY.md`` is migrated once and then ignored: no layer owns it."""
    return relpath.rpartition("/")[2] == LEGACY_MEMORY_MD


class _Listing:
    """What one scan sees before any matching: each folder's files, walked once, and
    the stat of each single-file path that is a regular file inside its folder.

    A file is named by its place in ``entries`` (every walk's files, one walk after
    another), a single-file path by ``-1 - n`` for its place in ``singles``."""

    def __init__(self, space: FileSpace, manifest: Manifest, listings: Listings) -> None:
        self.whole = {
            space.base(name)[0]
            for name, layer in manifest.layers.items()
            if indexed(layer) and any(is_glob(p) and not static_prefix(p) for p in layer.paths)
        }
        self.walks: dict[_Walk, int] = {}  # where each walk's files start in ``entries``
        self.entries: list[tuple[str, str]] = []  # (path relative to its base, on disk)
        self.singles: list[os.stat_result | None] = []
        self.single_at: dict[tuple[str, str], int] = {}
        for name, layer in manifest.layers.items():
            if not indexed(layer):
                continue
            base, _ = space.base(name)
            for pattern in layer.paths:
                if not is_glob(pattern):
                    self.single_at[(name, pattern)] = -1 - len(self.singles)
                    self.singles.append(regular_file(base, pattern))
                    continue
                walk = self.walk_of(base, pattern)
                if walk not in self.walks:
                    self.walks[walk] = len(self.entries)
                    self.entries += listings.walk(*walk)
        self.key = (
            tuple(self.walks.items()),
            [name for name, _ in self.entries],
            tuple(stat is not None for stat in self.singles),
        )

    def walk_of(self, base: Path, pattern: str) -> _Walk:
        return (base, "") if base in self.whole else (base, static_prefix(pattern))

    def files(self, walk: _Walk) -> Iterator[tuple[int, str]]:
        """(place in ``entries``, path relative to the walk's base) of a walk's files."""
        start = self.walks[walk]
        ends = [at for at in self.walks.values() if at > start]
        end = min(ends) if ends else len(self.entries)
        for at in range(start, end):
            yield at, self.entries[at][0]


@dataclass(frozen=True)
class _Plan:
    key: object
    files: list[tuple[str, Owner, int]]
    """(memory-folder path, owning layer, where the listing has it)"""
    paths: frozenset[str]


class Survey:
    """The indexed files of one folder (one per ``Index``)."""

    def __init__(self, space: FileSpace, manifest: Manifest) -> None:
        self.space = space
        self.manifest = manifest
        self.unnamable: set[str] = set()
        """files left out because their names are not UTF-8 (``memdir doctor`` lists them)"""
        self._plan: _Plan | None = None
        self._owners: dict[str, Owner | None] = {}
        self._listings = Listings()

    def layers(self) -> list[Owner]:
        return [(name, layer) for name, layer in self.manifest.layers.items() if indexed(layer)]

    def layer_of(self, relpath: str) -> Owner | None:
        """The layer that owns ``relpath`` (the first whose paths match it), if indexed."""
        if relpath in self._owners:
            return self._owners[relpath]
        owner = None
        if not legacy(relpath):
            for name, layer in self.manifest.layers.items():
                if self.space.matches(name, layer, relpath):
                    owner = (name, layer) if indexed(layer) else None
                    break
        if len(self._owners) >= _OWNERS_KEPT:
            self._owners.clear()
        self._owners[relpath] = owner  # a path's owner is fixed by the manifest
        return owner

    def _planned(self) -> tuple[_Listing, _Plan]:
        listing = _Listing(self.space, self.manifest, self._listings)
        plan = self._plan
        if plan is None or plan.key != listing.key:
            plan = self._plan = self._classify(listing)
        return listing, plan

    def names_moved(self) -> bool:
        """Whether a file was added, removed or renamed since the last scan listed the
        folders: a stat per folder (``paths.Listings``) and none per file, so a file
        edited in place is not seen here (a scan's stat of it is needed for that)."""
        listing = _Listing(self.space, self.manifest, self._listings)
        return self._plan is None or self._plan.key != listing.key

    def compare(
        self, known: Mapping[str, tuple[int, int, str]]
    ) -> tuple[list[tuple[str, Owner, os.stat_result]], int, Set[str]]:
        """The indexed files whose (mtime, size, layer) is not ``known``'s (new ones too),
        in the order ``files`` gives them; how many are; and every indexed file's path."""
        listing, plan = self._planned()
        entries, singles, get = listing.entries, listing.singles, known.get
        stale: list[tuple[str, Owner, os.stat_result]] = []
        gone: list[str] = []
        for relpath, owner, at in plan.files:
            if at < 0:
                stat = singles[-1 - at]
                assert stat is not None  # the plan matched: the same paths are files
            else:
                try:
                    stat = os.stat(entries[at][1])
                except OSError:
                    gone.append(relpath)
                    continue
            row = get(relpath)
            if (
                row is None
                or row[0] != stat.st_mtime_ns
                or row[1] != stat.st_size
                or row[2] != owner[0]
            ):
                stale.append((relpath, owner, stat))
        present = plan.paths.difference(gone) if gone else plan.paths
        return stale, len(plan.files) - len(gone) - len(stale), present

    def files(self) -> Found:
        """Every indexed file (memory-folder path, in layer and pattern order) with its
        owning layer and its stat."""
        listing, plan = self._planned()
        found: Found = {}
        entries, singles = listing.entries, listing.singles
        for relpath, owner, at in plan.files:
            if at < 0:
                stat = singles[-1 - at]
                assert stat is not None  # the plan matched: the same paths are files
            else:
                try:
                    stat = os.stat(entries[at][1])  # follows a link that stays inside
                except OSError:  # gone since the walk
                    continue
            found[relpath] = (owner, stat)
        return found

    def _classify(self, listing: _Listing) -> _Plan:
        owned: dict[str, tuple[Owner, int]] = {}
        passed: list[Owner] = []  # layers not indexed, earlier in the manifest
        for name, layer in self.manifest.layers.items():
            if not indexed(layer):
                passed.append((name, layer))
                continue
            for relpath, where in self._candidates(listing, name, layer, owned).items():
                if relpath in owned or legacy(relpath):
                    continue
                if has_surrogates(relpath):  # a name that is not UTF-8 cannot be a row
                    self.unnamable.add(relpath)
                    continue
                if any(self.space.matches(n, other, relpath) for n, other in passed):
                    continue  # an earlier layer that is not indexed owns it
                owned[relpath] = ((name, layer), where)
        files = [(relpath, owner, where) for relpath, (owner, where) in owned.items()]
        return _Plan(listing.key, files, frozenset(owned))

    def _candidates(
        self, listing: _Listing, name: str, layer: Layer, owned: dict[str, tuple[Owner, int]]
    ) -> dict[str, int]:
        """The layer's files in pattern order, files an earlier layer owns left out."""
        base, prefix = self.space.base(name)
        found: dict[str, int] = {}
        for pattern in layer.paths:
            if not is_glob(pattern):
                at = listing.single_at[(name, pattern)]
                if listing.singles[-1 - at] is not None:
                    found.setdefault(prefix + pattern, at)
                continue
            regex = glob_regex(pattern)
            walk = listing.walk_of(base, pattern)
            start = static_prefix(pattern)
            inside = start.rstrip("/") + "/" if start and not walk[1] else ""
            for at, relative in listing.files(walk):
                if inside and not relative.startswith(inside):
                    continue
                if prefix + relative not in owned and regex.fullmatch(relative):
                    found.setdefault(prefix + relative, at)
        return found
