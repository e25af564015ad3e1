"""``memdir doctor``'s look at the folder's files themselves: what memdir leaves alone.

- file: a folder where a layer's file should be (``knowledge.md/``): reads see no
  file, writes are refused.
- link: a layer file that is a link leading outside the memory folder (or its
  mount): memdir never reads nor writes through it (``paths.outside_target``).
- name: a file whose name is not UTF-8: kept, but left out of the index.
- folder, disk: the folder cannot be written here (it opened read-only); the disk
  holding it has under ``LOW_DISK_BYTES`` free.
- encoding: a file holding bytes that are not UTF-8: kept byte for byte, shown to
  search, the context and tools as U+FFFD.
- size: one memory over its manifest limit (an observation, a card): every write
  of its file rewrites it; split it.
- flagged: a memory that reads as instructions to the model (``memdir.safety.poisoning``),
  whoever wrote it (a hand edit too): it stays, shown to the model as a quoted note;
  a person decides whether to remove it.

Read-only, like the rest of the doctor: one ``lstat`` walk of each layer's folders,
and one pass over the index's items as the index holds them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from memdir.config import is_glob, static_prefix
from memdir.files.encoding import clean, has_surrogates
from memdir.paths import glob_regex, outside_target

if TYPE_CHECKING:
    from memdir.memory import Memory

LOW_DISK_BYTES = 64 * 1024 * 1024
_FILE_SUFFIXES = (".md", ".markdown", ".txt", ".json", ".jsonl")
Problem = tuple[str, str, str]
"""(check, path, message)"""


def file_problems(memory: Memory) -> list[Problem]:
    found: dict[str, Problem] = {}
    for name, layer in memory.manifest.layers.items():
        base, prefix = memory.space.base(name)
        for pattern in layer.paths:
            for relative, path in _candidates(base, pattern):
                problem = _problem(base, prefix + relative, path)
                if problem is not None:
                    found.setdefault(problem[1], problem)
    return [found[key] for key in sorted(found)]


def folder_problems(memory: Memory, *, listed: bool = True) -> list[Problem]:
    """The read-only folder, files that are not UTF-8, memories over their size limit
    (``listed`` False: not the files, whose listing is the index's, which cannot open)."""
    found: list[Problem] = []
    if memory.read_only is not None:
        found.append(("folder", ".", f"opened read-only: {memory.read_only}"))
    free = shutil.disk_usage(memory.root).free if memory.backend == "local" else LOW_DISK_BYTES
    if free < LOW_DISK_BYTES:
        found.append(
            (
                "disk",
                ".",
                f"only {free // 1024:,} KB free on the disk holding the folder; writes will be "
                "refused (nothing half-written) once it is full",
            )
        )
    for relpath in sorted(memory.index.files_on_disk()) if listed else []:
        try:
            found_data = memory.files.read(relpath)
        except OSError:
            continue
        if found_data is None:
            continue
        try:
            found_data.decode("utf-8")
        except UnicodeDecodeError as exc:
            found.append(
                (
                    "encoding",
                    relpath,
                    f"holds bytes that are not UTF-8 (first at byte {exc.start}); memdir keeps "
                    "them as they are and shows U+FFFD in their place; save the file as UTF-8 "
                    "to fix it",
                )
            )
    limits = memory.manifest.limits
    if memory.has("knowledge"):
        for obs in memory.knowledge.observations():
            if len(obs.content) > limits.observation_max_chars:
                found.append(
                    (
                        "size",
                        f"{memory.knowledge.relpath}#{obs.id}",
                        f"this observation is {len(obs.content):,} characters, over the "
                        f"{limits.observation_max_chars:,} one may hold; split it into short ones",
                    )
                )
    if memory.has("vault"):
        for card in memory.vault.cards():
            stat = memory.files.stat(card.path)
            body = stat.size if stat is not None else 0
            if body > limits.card_max_chars * 4:  # bytes: a cheap bound before reading
                found.append(
                    (
                        "size",
                        card.path,
                        f"this card is {body:,} bytes, far over the {limits.card_max_chars:,}"
                        "-character limit of a card; move the long part to a file of its own",
                    )
                )
    return found


def flagged_items(memory: Memory) -> list[Problem]:
    """Every indexed memory whose text reads as instructions to the model."""
    from memdir.safety.poisoning import find_instructions  # its rules load on first use

    index = memory.index
    with index.lock:
        rows = index.rows.select()
    found: list[Problem] = []
    for row in rows:
        path, anchor, kind, title, body = (
            row[c] for c in ("path", "anchor", "kind", "title", "body")
        )
        findings = find_instructions(f"{title}\n{body}")
        if not findings:
            continue
        seen = "; ".join(f"{f.kind}: {f.excerpt!r}" for f in findings[:3]) + (
            "; ..." if len(findings) > 3 else ""
        )
        where = f"{path}#{anchor}" if anchor else path
        found.append(
            (
                "flagged",
                where,
                f"this {kind} reads as instructions to the model ({seen}). It is kept and shown "
                "to the model as a quoted note, not an instruction; remove it if nobody you "
                "trust wrote it",
            )
        )
    return found


def _candidates(base: Path, pattern: str) -> Iterator[tuple[str, Path]]:
    """Entries that ``pattern`` names, files or not: the path itself for a plain path,
    else every entry under the pattern's static folder that its glob matches."""
    if not is_glob(pattern):
        path = base / pattern
        if os.path.lexists(path):
            yield pattern, path
        return
    regex = glob_regex(pattern)
    start = static_prefix(pattern).rstrip("/")
    for folder, dirs, files in os.walk(base / start if start else base):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        here = Path(folder)
        for entry in [*dirs, *sorted(files)]:
            if entry.startswith("."):
                continue
            relative = (here / entry).relative_to(base).as_posix()
            if regex.fullmatch(relative):
                yield relative, here / entry


def _problem(base: Path, relpath: str, path: Path) -> Problem | None:
    shown = clean(relpath)
    if has_surrogates(relpath):
        return (
            "name",
            shown,
            "the file's name is not UTF-8, so it is left out of search; rename it "
            "(its text is kept as it is)",
        )
    if path.is_symlink():
        target = outside_target(base, path)
        if target is not None:
            return (
                "link",
                shown,
                f"links to {target}, outside the memory folder: memdir neither reads nor writes "
                "through it; replace the link with the file, or remove it",
            )
        return None
    if path.is_dir() and path.suffix in _FILE_SUFFIXES:
        return (
            "file",
            shown,
            "is a folder where a memory file should be: it reads as empty and every write "
            "to it is refused; move the folder away",
        )
    return None
