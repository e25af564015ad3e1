"""Text helpers shared by stores: compressing and shortening without losing sense."""

from __future__ import annotations

import re

from memdir.files.sections import FenceTracker, line_content, split_lines

_SENTENCE_END_RE = re.compile(r"[.!?。](?=\s)")


def compress(text: str) -> str:
    """Collapse runs of blank lines, drop repeated lines and trailing spaces.

    Lines inside code fences are kept as they are; a repeated line is dropped
    only if it holds a letter or digit (so table rules and list markers stay).
    """
    fence = FenceTracker()
    seen: set[str] = set()
    out: list[str] = []
    blank = False
    for line in split_lines(text):
        content = line_content(line)
        if fence.in_fence(content):
            out.append(content)
            blank = False
            continue
        stripped = content.rstrip()
        if not stripped:
            if not blank and out:
                out.append("")
            blank = True
            continue
        blank = False
        key = stripped.strip()
        if key in seen and any(char.isalnum() for char in key):
            continue
        seen.add(key)
        out.append(stripped)
    return "\n".join(out).strip("\n")


def drop_comments(text: str) -> str:
    """``text`` without its HTML comments, each with the spaces or tabs just before it.

    The same as ``re.sub(r"[ \t]*<!--.*?-->", "", text, flags=re.DOTALL)``, in one
    pass: that regex tries every position of a run of spaces, and rescans to the
    end of the text for each ``<!--`` that is never closed (quadratic in a big file).
    """
    if "<!--" not in text:
        return text
    out: list[str] = []
    done = 0  # text before this is copied (or dropped)
    while True:
        start = text.find("<!--", done)
        if start < 0:
            break
        end = text.find("-->", start + 4)
        if end < 0:
            break  # no later comment can close either
        lead = start
        while lead > done and text[lead - 1] in " \t":
            lead -= 1
        out.append(text[done:lead])
        done = end + 3
    out.append(text[done:])
    return "".join(out)


def cut_point(text: str, limit: int) -> int:
    """Where to cut ``text`` to at most ``limit`` chars: a paragraph, line, sentence
    or word boundary if there is one in the second half, else exactly ``limit``."""
    if len(text) <= limit:
        return len(text)
    window = text[:limit]
    floor = limit // 2
    for boundary in ("\n\n", "\n"):
        at = window.rfind(boundary)
        if at >= floor:
            return at
    ends = [match.end() for match in _SENTENCE_END_RE.finditer(window + " ")]
    ends = [end for end in ends if floor <= end <= limit]
    if ends:
        return ends[-1]
    at = window.rfind(" ")
    return at if at >= floor else limit


def shorten(text: str, limit: int, ellipsis: str = "…") -> str:
    """One line of at most ``limit`` chars, cut at a word where possible."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    at = cut_point(flat, limit - len(ellipsis))
    return flat[:at].rstrip() + ellipsis


def plural(count: int, one: str, many: str | None = None) -> str:
    """``1 snapshot``, ``2 snapshots``."""
    return f"{count} {one if count == 1 else many or one + 's'}"
