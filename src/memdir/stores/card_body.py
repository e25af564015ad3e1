"""A card's body: its title line and its append-only ``## History`` section."""

from __future__ import annotations

import re

from memdir.files.sections import SectionDocument, strip_think

HISTORY = "History"


def clean(text: str) -> str:
    return strip_think(text).strip()


def title_of(body: str) -> str:
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""


def with_title(title: str, body: str) -> str:
    if body.lstrip().startswith("# "):
        return body + "\n"
    heading = " ".join(word[:1].upper() + word[1:] for word in re.split(r"[-_\s]+", title) if word)
    return f"# {heading}\n" + (f"\n{body}\n" if body else "")


def history_lines(body: str) -> list[str]:
    doc = SectionDocument.parse(body)
    section = doc.get(HISTORY)
    return [] if section is None else [ln for ln in section.body.splitlines() if ln.strip()]


def add_history(body: str, line: str) -> str:
    """``body`` with ``line`` appended to its ``## History`` section (made at the end)."""
    doc = SectionDocument.parse(body)
    section = doc.get(HISTORY)
    if section is None:
        doc.append(doc.new_section(HISTORY, line))
    else:
        section.body = section.body + "\n" + line if section.body else line
    rendered = doc.render()
    return rendered if rendered.endswith("\n") else rendered + "\n"


def keep_history(old_body: str, new_body: str) -> str:
    """The new body, with every ``## History`` line of the old one still there."""
    kept = history_lines(old_body)
    present = set(history_lines(new_body))
    result = new_body if new_body.endswith("\n") else new_body + "\n"
    for line in kept:
        if line not in present:
            result = add_history(result, line)
    return result
