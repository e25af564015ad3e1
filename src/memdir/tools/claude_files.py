"""Claude's memory tool over a folder not on disk (PostgreSQL): the same six commands,
answers and refusals as ``claude_memory``'s, with the folder read and written through
``memory.files`` (the storage seam).

There a folder is the paths that share it: ``/memories/notes`` is a folder while a
file lies under ``notes/`` (an empty folder does not exist), and a listing sums each
folder's files. What is confined, read-only and capped is ``claude_paths``' (one copy
for both); ``delete`` moves each file into ``archive/deleted/<date>/``, ``rename``
moves each file, under the folder lock (and a mounted layer's own), in one transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memdir.stores.base import decode, encode
from memdir.tools.claude_paths import (
    ROOT,
    SKIPPED_NAMES,
    Target,
    archive_path,
    check_caps,
    listing_text,
    locked,
    refuse_read_only,
    refuse_secrets,
    target,
    touch_card,
)
from memdir.tools.registry import ToolCallError, ok

if TYPE_CHECKING:
    from memdir.memory import Memory


def is_file(memory: Memory, place: Target) -> bool:
    return bool(place.relpath) and memory.files.stamp(place.relpath) is not None


def files_in(memory: Memory, place: Target) -> dict[str, int]:
    """Path -> size of every visible file under the folder ``place`` (root: all)."""
    prefix = f"{place.relpath}/" if place.relpath else ""
    return {
        stat.path: stat.size
        for stat in memory.files.list(prefix)
        if not any(part.startswith(".") for part in stat.path.split("/"))
    }


def is_folder(memory: Memory, place: Target) -> bool:
    return place.is_root or place.is_mount_root or bool(files_in(memory, place))


def exists(memory: Memory, place: Target) -> bool:
    return is_file(memory, place) or is_folder(memory, place)


def listing(memory: Memory, place: Target) -> str:
    """``claude_paths.listing``'s view, from the files' paths and sizes."""
    tree: dict[str, Any] = {}
    start = len(place.relpath) + 1 if place.relpath else 0
    for path, size in files_in(memory, place).items():
        parts = path[start:].split("/")
        if any(part in SKIPPED_NAMES for part in parts[:-1]):
            continue
        node = tree
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = size
    entries: list[tuple[int, str]] = []

    def walk(node: dict[str, Any], shown: str, depth: int) -> int:
        total = 0
        for name in sorted(node):
            child, child_shown = node[name], f"{shown}/{name}"
            if isinstance(child, dict):
                position = len(entries)
                if depth <= 2:
                    entries.append((0, child_shown))
                size = walk(child, child_shown, depth + 1)
                if depth <= 2:
                    entries[position] = (size, child_shown)
            else:
                size = int(child)
                if depth <= 2:
                    entries.append((size, child_shown))
            total += size
        return total

    return listing_text(place, walk(tree, place.shown, 1), entries)


def read(memory: Memory, place: Target, missing: str) -> str:
    if is_folder(memory, place) and not is_file(memory, place):
        raise ToolCallError(f"Error: The path {place.shown} is not a file.", place.store)
    text = decode(memory.files.read(place.relpath)) if place.relpath else None
    if text is None:
        raise ToolCallError(missing, place.store)
    return text


def view_text(memory: Memory, place: Target) -> str | None:
    """The file's text for ``view`` (None: a folder, listed instead)."""
    if not exists(memory, place):
        raise ToolCallError(
            f"The path {place.shown} does not exist. Please provide a valid path.", place.store
        )
    if is_folder(memory, place) and not is_file(memory, place):
        return None
    touch_card(memory, place)
    data = memory.files.read(place.relpath) or b""
    return data.decode("utf-8", "replace")


def create(memory: Memory, place: Target, text: str) -> None:
    with locked(memory, place):
        refuse_read_only(memory, place)
        if place.is_root or exists(memory, place):
            raise ToolCallError(f"Error: File {place.shown} already exists", place.store)
        refuse_secrets(place, text)
        check_caps(memory, place, text, None)
        for parent in _parents(place.relpath):
            if memory.files.stamp(parent) is not None:
                raise ToolCallError(
                    f"Error: Cannot write {place.shown}: a file is in the way of its folder",
                    place.store,
                )
        memory.files.write_all([(place.relpath, encode(text))])
        memory.files_changed([(place.relpath, text)])


def _parents(relpath: str) -> list[str]:
    parts = relpath.split("/")
    return ["/".join(parts[:n]) for n in range(1, len(parts))]


def write(memory: Memory, place: Target, text: str, before: str) -> None:
    if text != before:
        memory.files.write_all([(place.relpath, encode(text))])
        memory.files_changed([(place.relpath, text)])


def under(memory: Memory, place: Target) -> list[Target]:
    """Every file at or under ``place`` as a ``Target``."""
    if is_file(memory, place):
        return [place]
    return [
        target(memory, f"{ROOT}/{path}") for path in sorted(files_in(memory, place))
    ]  # fmt: skip


def delete(memory: Memory, place: Target) -> dict[str, Any]:
    with locked(memory, place):
        if not exists(memory, place):
            raise ToolCallError(f"Error: The path {place.shown} does not exist", place.store)
        files = under(memory, place)
        for item in [place, *files]:
            refuse_read_only(memory, item)
        kept = archive_path(memory, place.relpath)
        changes: list[tuple[str, str]] = []
        for item in files:
            data = memory.files.read(item.relpath) or b""
            landing = kept + item.relpath[len(place.relpath) :]
            memory.files.write_all([(landing, data)])
            memory.files.remove(item.relpath)
            changes.append((item.relpath, ""))
            if memory.index.layer_of(landing) is not None:
                changes.append((landing, decode(data) or ""))
        memory.files_changed(changes)
    return ok(place.store, content=f"Successfully deleted {place.shown}", archived_to=kept)


def rename(memory: Memory, source: Target, dest: Target) -> None:
    with locked(memory, source, dest):
        refuse_read_only(memory, source)
        refuse_read_only(memory, dest)
        if not exists(memory, source):
            raise ToolCallError(f"Error: The path {source.shown} does not exist", source.store)
        if exists(memory, dest):
            raise ToolCallError(f"Error: The destination {dest.shown} already exists", dest.store)
        moves: list[tuple[Target, Target, str]] = []
        for item in under(memory, source):
            landing = target(memory, dest.shown + item.shown[len(source.shown) :])
            refuse_read_only(memory, item)
            refuse_read_only(memory, landing)
            text = decode(memory.files.read(item.relpath)) or ""
            check_caps(memory, landing, text, None)
            moves.append((item, landing, text))
        for parent in _parents(dest.relpath):
            if memory.files.stamp(parent) is not None:
                raise ToolCallError(
                    f"Error: Cannot write {dest.shown}: a file is in the way of its folder",
                    dest.store,
                )
        for item, landing, _ in moves:
            memory.files.rename(item.relpath, landing.relpath)
        changes = [(item.relpath, "") for item, _, _ in moves]
        changes += [(landing.relpath, text) for _, landing, text in moves]
        memory.files_changed(changes)
