"""Reading exact lines of a memory file (``memory_get``), confined to the folder."""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from memdir.config import STATE_DIR
from memdir.errors import MemdirError
from memdir.files.encoding import clean, decode
from memdir.paths import FileSpace, resolved
from memdir.storage.seam import Files


@dataclass(frozen=True)
class GetResult:
    ok: bool
    path: str
    from_line: int = 0
    to_line: int = 0
    total_lines: int = 0
    text: str = ""
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        if not self.ok:
            return {"ok": False, "status": "error", "path": self.path, "reason": self.reason}
        return {
            "ok": True,
            "status": "ok",
            "path": self.path,
            "lines": [self.from_line, self.to_line],
            "total_lines": self.total_lines,
            "text": self.text,
        }


def resolve_inside(space: FileSpace, path: str) -> tuple[Path, str] | str:
    """The file ``path`` names inside the memory folder (or a mounted layer) and its
    relative form, or why it is refused."""
    raw = path.strip().replace("\\", "/")
    if not raw:
        return "path is empty"
    posix = PurePosixPath(raw)
    if posix.is_absolute() or (len(raw) > 1 and raw[1] == ":"):
        return "give a path relative to the memory folder, such as 'knowledge.md'"
    if ".." in posix.parts:
        return "the path leaves the memory folder"
    if any(part.startswith(".") for part in posix.parts):
        return f"{raw} is internal to memdir or hidden"
    if "\x00" in raw:
        return "the path holds a NUL character (U+0000); no file is named so"
    try:
        target = resolved(space.real(raw), raw)
    except MemdirError as loop:
        return str(loop)
    if not target.is_relative_to(space.confining(raw)):
        return "the path leaves the memory folder (through a link)"
    return target, posix.as_posix()


def read_lines(
    space: FileSpace,
    path: str,
    from_line: int | None = None,
    to_line: int | None = None,
    *,
    files: Files | None = None,
) -> GetResult:
    """Lines ``from_line``..``to_line`` (1-based, inclusive) of a file in the folder,
    read through ``files`` (the folder's ``Files``, on any backend) when given."""
    resolved = resolve_inside(space, path)
    if isinstance(resolved, str):
        return GetResult(False, path, reason=resolved)
    target, relpath = resolved
    missing = GetResult(
        False, relpath[:200], reason=f"no file {relpath[:200]} in the memory folder"
    )
    if relpath.split("/")[0] == STATE_DIR:
        return missing
    try:
        if target.is_dir():  # it was "no file vault in the memory folder", beside the folder
            reason = f"{relpath} is a folder, not a file: give the path of a file in it"
            return GetResult(False, relpath, reason=reason)
        if files is not None:
            found = files.read(relpath)
            if found is None:
                return missing
            data = found
        elif not target.is_file():
            return missing
        else:
            data = target.read_bytes()
    except OSError as exc:  # no permission, a loop of links
        if exc.errno == errno.ENAMETOOLONG:  # no file system holds a file of that name
            return missing
        return GetResult(False, relpath[:200], reason=f"{relpath[:200]}: {exc.strerror}")
    lines = clean(decode(data)).splitlines()  # text for a model: no surrogates
    total = len(lines)
    first = 1 if from_line is None else from_line
    last = total if to_line is None else min(to_line, total)
    if to_line is not None and to_line < first:
        return GetResult(
            False,
            relpath,
            reason=f"lines {first}-{to_line} run backwards: give the first line, then the "
            f"last (lines {to_line}-{first})",
        )
    if first < 1:
        return GetResult(False, relpath, reason=f"line {first}: lines are numbered from 1")
    if first > max(total, 1):
        return GetResult(
            False, relpath, reason=f"{relpath} has {total} lines: line {first} is past its end"
        )
    text = "\n".join(lines[first - 1 : last])
    return GetResult(True, relpath, first, last, total, text)
