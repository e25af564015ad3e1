"""Where Claude's memory tool paths land in a memory folder, and what it may change there.

``/memories`` is the memory folder's root: ``/memories/knowledge.md`` is the
folder's ``knowledge.md``, ``/memories/vault/crm/alice.md`` a card (in a mounted
vault's own folder if the manifest mounts it). A path must start with
``/memories``; ``..``, any other absolute path, hidden parts (``.memdir/``,
``.git/``) and links that lead out of the folder are refused before anything
is read.

Read-only through the tool: the manifest (``memdir.toml``), the legacy
``MEMORY.md``, and what memdir itself writes: the archive, sessions,
``tool-outputs/``, the history and any audit journal. Capped files keep their
caps: a write is checked by the store that owns the file (``check_text``).
A change holds the folder lock and the lock of any mounted layer it touches;
what ``delete`` removes goes to ``<archive>/deleted/<date>/<path>``.
"""

from __future__ import annotations

import contextlib
import math
import os
import posixpath
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memdir.config import (
    LEGACY_MEMORY_MD,
    MANIFEST_NAME,
    Layer,
    is_glob,
    static_prefix,
)
from memdir.errors import MemdirError
from memdir.files.reader import resolve_inside
from memdir.paths import resolved
from memdir.stores.base import read_text
from memdir.stores.validate import Refusal, check_text
from memdir.tools.registry import ToolCallError

if TYPE_CHECKING:
    from memdir.memory import Memory

ROOT = "/memories"
SKIPPED_NAMES = frozenset({"node_modules"})
LISTING_MAX_ENTRIES = 1000
"""a listing stops here (a vault of 10,000 cards would flood the context); view a folder"""
TOOL_OUTPUTS = "tool-outputs"
DELETED = "deleted"
"""``delete`` moves what it removes to ``<archive>/deleted/<date>/<path>``"""


@dataclass(frozen=True)
class Target:
    """One ``/memories`` path, checked: how Claude spells it and where it is on disk."""

    shown: str
    """``/memories/notes/todo.md``, normalised (no ``//``, ``.`` or trailing ``/``)"""
    relpath: str
    """the memory-folder path (``notes/todo.md``); empty for ``/memories`` itself"""
    real: Path
    mount: str | None
    """the layer the path lies in when that layer is mounted from another folder"""

    @property
    def store(self) -> str:
        return self.relpath or "."

    @property
    def is_root(self) -> bool:
        return not self.relpath

    @property
    def is_mount_root(self) -> bool:
        return self.mount is not None and self.relpath == self.mount

    def child(self, name: str, real: Path | None = None) -> Target:
        relpath = f"{self.relpath}/{name}" if self.relpath else name
        return Target(f"{self.shown}/{name}", relpath, real or self.real / name, self.mount)


def _unnamed(char: str) -> bool:
    """A character no file name should hold: a format one (zero-width, bidi, BOM: Cf), a
    lone surrogate (Cs, no UTF-8 form) or DEL."""
    return char == "\x7f" or unicodedata.category(char) in ("Cf", "Cs")


def target(memory: Memory, raw: object) -> Target:
    """The ``/memories`` path ``raw`` in ``memory``'s folder, or ToolCallError saying why not."""
    if not isinstance(raw, str) or not raw.strip():
        raise ToolCallError("Error: The path is empty; give one such as /memories/notes.md")
    path = raw.strip()
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise ToolCallError(
            f"Error: The path {path} is outside /memories; every memory path starts with "
            "/memories, such as /memories/notes.md"
        )
    if any(ord(char) < 32 for char in path) or "\\" in path:
        raise ToolCallError(f"Error: The path {path!r} holds a backslash or a control character")
    odd = next((char for char in path if _unnamed(char)), None)
    if odd is not None:
        raise ToolCallError(
            f"Error: The path {path!r} holds the character U+{ord(odd):04X}, invisible or not "
            "text (a zero-width or bidi mark, a lone surrogate, DEL): it would hide or reorder "
            "the file's name; name it with visible characters"
        )
    parts = [part for part in path[len(ROOT) :].split("/") if part not in ("", ".")]
    shown = "/".join([ROOT, *parts])
    if ".." in parts:
        raise ToolCallError(f"Error: The path {path} would leave /memories ('..' is not allowed)")
    if any(part.startswith(".") for part in parts):
        raise ToolCallError(
            f"Error: The path {shown} is hidden: the memory tool never reads or writes hidden "
            "files and folders (memdir keeps its index, history and lock in /memories/.memdir)"
        )
    relpath = "/".join(parts)
    mounts = memory.space.mounts
    mount = parts[0] if parts and parts[0] in mounts else None
    if not relpath:
        return Target(shown, "", memory.space.root, None)
    if mount is not None and len(parts) == 1:
        return Target(shown, relpath, mounts[mount], mount)
    try:
        resolved(memory.space.real(relpath), shown)
    except MemdirError as loop:  # said as such: it leads nowhere, not outside
        raise ToolCallError(f"Error: The path {loop}") from None
    if isinstance(resolve_inside(memory.space, relpath), str):
        raise ToolCallError(f"Error: The path {shown} leads outside /memories through a link")
    return Target(shown, relpath, memory.space.real(relpath), mount)


# -- what the tool may change -----------------------------------------------------


def owner(memory: Memory, relpath: str) -> tuple[str, Layer] | None:
    """The layer that owns ``relpath``: the first in the manifest whose paths match it."""
    for name, layer in memory.manifest.layers.items():
        if memory.space.matches(name, layer, relpath):
            return name, layer
    return None


def _folders(memory: Memory) -> list[tuple[str, str]]:
    """(folder, why) of the folders memdir writes itself."""
    found = [
        (memory.manifest.archive_dir(), "it keeps what memdir took out of other files"),
        (TOOL_OUTPUTS, "it holds tool results memdir saved"),
    ]
    for layer in memory.manifest.layers.values():
        why = _layer_reason(layer)
        if why is None:
            continue
        for pattern in layer.paths:
            folder = static_prefix(pattern) if is_glob(pattern) else ""
            if folder:
                found.append((folder, why))
    return found


def _layer_reason(layer: Layer) -> str | None:
    if layer.audit:
        return "it is an audit trail memdir writes for people"
    return {
        "sessions": "it holds conversation transcripts memdir appends to",
        "history": "it is memdir's activity history",
        "archive": "it keeps what memdir took out of other files",
    }.get(layer.store)


def read_only(memory: Memory, relpath: str) -> str | None:
    """Why the tool may not change ``relpath`` (or anything in it), or None."""
    if relpath == MANIFEST_NAME:
        return "it is the folder's manifest; edit it by hand"
    if relpath == LEGACY_MEMORY_MD:
        return "it is the legacy file memdir migrated into knowledge.md and state.md"
    for folder, why in _folders(memory):
        if relpath == folder or relpath.startswith(folder + "/"):
            return why
        if folder.startswith(relpath + "/"):
            return f"it holds {folder}/, and {why}"
    found = owner(memory, relpath)
    return None if found is None else _layer_reason(found[1])


def refuse_read_only(memory: Memory, place: Target) -> None:
    why = read_only(memory, place.relpath)
    if why is not None:
        raise ToolCallError(
            f"Error: {place.shown} is read-only through the memory tool: {why}.", place.store
        )


def check_caps(memory: Memory, place: Target, text: str, before: str | None) -> None:
    """Refuse ``text`` as the new content of ``place`` if its store's caps refuse it."""
    found = owner(memory, place.relpath)
    store = found[1].store if found is not None else None
    reason: str | None = None
    if store == "notebook":
        reason = memory.notebook.check_text(text)
    elif store == "knowledge":
        reason = memory.knowledge.check_text(text)
    elif store == "state":
        reason = memory.state.check_text(text)
    elif store == "vault":
        from memdir.stores.vault import check_card_text  # cards (YAML): a vault's only

        reason = check_card_text(text, before)
    if reason is not None:
        raise ToolCallError(
            f"Error: {place.shown} was left as it was: {reason.rstrip('.')}.", place.store
        )


# -- listing ----------------------------------------------------------------------


def listing(memory: Memory, place: Target) -> str:
    """The directory view: ``place`` and what is up to 2 levels below it, with sizes."""
    entries: list[tuple[int, str]] = []
    total = _walk(memory, place, 1, entries)
    return listing_text(place, total, entries)


def listing_text(place: Target, total: int, entries: list[tuple[int, str]]) -> str:
    """The directory view's text: ``place``'s ``total`` size, then ``entries`` (size,
    shown path) up to ``LISTING_MAX_ENTRIES``, as Claude's memory tool shows a folder."""
    lines = [f"{human_size(total)}\t{place.shown}"]
    lines += [f"{human_size(size)}\t{shown}" for size, shown in entries[:LISTING_MAX_ENTRIES]]
    if len(entries) > LISTING_MAX_ENTRIES:
        lines.append(
            f"... and {len(entries) - LISTING_MAX_ENTRIES} more; view a folder inside "
            f"{place.shown} to see them"
        )
    header = (
        f"Here're the files and directories up to 2 levels deep in {place.shown}, "
        "excluding hidden items and node_modules:"
    )
    return header + "\n" + "\n".join(lines)


def children(memory: Memory, place: Target, *, listed: bool = True) -> list[Target]:
    """The visible entries of a directory, sorted (a mounted layer shows under its name);
    ``node_modules`` only when not ``listed``."""
    mounts = memory.space.mounts if place.is_root else {}
    try:
        with os.scandir(place.real) as scan:
            names = {entry.name for entry in scan}
    except OSError:
        names = set()
    found = []
    for name in sorted(names | set(mounts)):
        if name.startswith(".") or (listed and name in SKIPPED_NAMES):
            continue
        if name in mounts:
            found.append(Target(f"{place.shown}/{name}", name, mounts[name], name))
            continue
        child = place.child(name)
        if child.real.is_symlink() and not _inside(memory, child):
            continue  # a link out of the folder is neither listed nor followed
        found.append(child)
    return found


def _walk(memory: Memory, place: Target, depth: int, entries: list[tuple[int, str]]) -> int:
    total = 0
    for child in children(memory, place):
        is_dir = child.real.is_dir() and (child.is_mount_root or not child.real.is_symlink())
        if is_dir:
            position = len(entries)
            if depth <= 2:
                entries.append((0, child.shown))
            size = _walk(memory, child, depth + 1, entries)
            if depth <= 2:
                entries[position] = (size, child.shown)
        else:
            try:
                size = child.real.stat().st_size
            except OSError:
                continue
            if depth <= 2:
                entries.append((size, child.shown))
        total += size
    return total


def _inside(memory: Memory, place: Target) -> bool:
    base = memory.space.mounts.get(place.mount or "", memory.space.root)
    return Path(os.path.realpath(place.real)).is_relative_to(os.path.realpath(base))


def human_size(size: int) -> str:
    """Sizes as ``du -h`` prints them: ``512B``, ``1.5K``, ``17K``, ``2.1M``."""
    if size < 1024:
        return f"{size}B"
    value = float(size)
    for unit in "KMGT":
        value /= 1024
        if value < 1024 or unit == "T":
            break
    if value < 10:
        return f"{math.ceil(value * 10) / 10:.1f}{unit}"
    return f"{math.ceil(value)}{unit}"


def files_under(memory: Memory, place: Target) -> list[Target]:
    """Every visible file at or under ``place`` (links not followed), for delete and rename."""
    if not place.real.is_dir() or (place.real.is_symlink() and not place.is_mount_root):
        return [place]
    found: list[Target] = []
    for child in children(memory, place, listed=False):
        found += files_under(memory, child)
    return found


# -- changing files -------------------------------------------------------------


@contextlib.contextmanager
def locked(memory: Memory, *places: Target) -> Iterator[None]:
    """The folder lock, and the lock of each mounted layer the change touches."""

    with contextlib.ExitStack() as stack:
        stack.enter_context(memory.lock)
        for mount in sorted({place.mount for place in places if place.mount is not None}):
            stack.enter_context(memory.files.lock_of(f"{mount}/x"))  # the mount's own
        yield


def existing_file(place: Target, missing: str) -> str:
    if not place.real.exists():
        raise ToolCallError(missing, place.store)
    if not place.real.is_file():
        raise ToolCallError(f"Error: The path {place.shown} is not a file.", place.store)
    return read_text(place.real) or ""


def refuse_file_in_the_way(place: Target) -> None:
    """A file where the new path needs a folder: say so rather than fail inside mkdir."""
    for parent in place.real.parents:
        if parent.is_dir():
            return
        if parent.exists():
            raise ToolCallError(
                f"Error: Cannot write {place.shown}: a file is in the way of its folder",
                place.store,
            )


def refuse_secrets(place: Target, text: str) -> None:
    """The write-validation every store runs (``check_text``), as the tool's error."""
    try:
        check_text(text, "the text")
    except Refusal as refusal:
        raise ToolCallError(
            f"Error: {place.shown} was left as it was: {refusal.reason}", place.store
        ) from None


def touch_card(memory: Memory, place: Target) -> None:
    """Reading a card through memdir touches it (the vault's touch protocol)."""
    found = owner(memory, place.relpath)
    if found is None or found[1].store != "vault" or not memory.has("vault"):
        return
    vault = memory.vault
    if found[0] == vault.name and place.relpath in vault.paths():
        vault.touch(place.relpath)


def _taken(memory: Memory, candidate: str) -> bool:
    """A file or folder is at ``candidate`` already (on disk; in ``memory.files``)."""
    if memory.backend == "local":
        return os.path.lexists(memory.root / candidate)
    return memory.files.stamp(candidate) is not None or bool(memory.files.paths(candidate))


def archive_path(memory: Memory, relpath: str) -> str:
    """A free place in the archive for what ``delete`` removes."""
    moment = memory.clock()
    folder = f"{memory.manifest.archive_dir()}/{DELETED}/{moment:%Y-%m-%d}"
    candidate = f"{folder}/{relpath}"
    stem, suffix = posixpath.splitext(relpath)
    count = 1
    while _taken(memory, candidate):
        count += 1
        candidate = f"{folder}/{stem}-{moment:%H%M%S}-{count}{suffix}"
    return candidate
