"""A line diff of two texts as the pages show it: hunks of added, removed and kept lines."""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class DiffLine:
    kind: str
    """add | del | same | hunk"""
    text: str


def diff(before: str, after: str, *, context: int = 2) -> list[DiffLine]:
    lines = []
    for line in difflib.unified_diff(
        before.splitlines(), after.splitlines(), lineterm="", n=context
    ):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            lines.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            lines.append(DiffLine("add", line[1:]))
        elif line.startswith("-"):
            lines.append(DiffLine("del", line[1:]))
        else:
            lines.append(DiffLine("same", line[1:]))
    return lines
