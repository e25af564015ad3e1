"""Summaries and keywords for an activity, computed offline from its event logs.

Keywords (notebook seed: "tool names, error types, file paths"): each tool the
activity called, each error type it hit (``ValueError``, ``HTTP 404``,
``ECONNREFUSED``), each file path its logs mention. The summary is one to
three sentences: what the activity was and how it ended, what it used, where
it failed. Deterministic: the same logs give the same words.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_ERROR_TYPE_RE = re.compile(
    r"\b([A-Z][A-Za-z]*(?:Error|Exception|Timeout|Refused|Denied))\b"
    r"|\b(E[A-Z]{3,}[A-Z]*)\b"  # errno names: ECONNREFUSED, ENOENT
    r"|\b(HTTP [45]\d\d)\b"
)
_PATH_RE = re.compile(
    r"(?<![\w/.-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+\.\w{1,6}\b|(?<![\w/])[\w-]+\.(?:py|ts|js|md|json|yaml|yml|toml|sql|sh|rs|go|java|txt|csv|html|css)\b"
)  # noqa: E501
MAX_KEYWORDS = 12


@dataclass(frozen=True)
class LogEvent:
    seq: int
    type: str
    content: str
    metadata: dict[str, Any]


def tool_name(event: LogEvent) -> str | None:
    for key in ("tool", "toolName", "name"):
        value = event.metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    match = re.match(r"\s*([\w.:-]+)", event.content)
    return match.group(1) if match else None


def keywords(events: Sequence[LogEvent]) -> list[str]:
    tools = [name for e in events if e.type == "tool_start" and (name := tool_name(e))]
    errors: list[str] = []
    paths: list[str] = []
    for event in events:
        text = event.content + " " + json.dumps(event.metadata, default=str)
        if event.type == "error":
            found = [next(g for g in m.groups() if g) for m in _ERROR_TYPE_RE.finditer(text)]
            errors += found or ["error"]
        paths += [match.group(0) for match in _PATH_RE.finditer(text)]
    ordered = list(dict.fromkeys([*tools, *errors, *paths]))
    return ordered[:MAX_KEYWORDS]


def summarise(type_: str, label: str, events: Sequence[LogEvent], success: bool | None) -> str:
    outcome = {True: "succeeded", False: "failed", None: "ended"}[success]
    sentences = [f"The {type_} '{label}' {outcome} after {len(events)} logged events."]
    tools = Counter(name for e in events if e.type == "tool_start" and (name := tool_name(e)))
    if tools:
        used = ", ".join(
            f"{name} ({count}x)" if count > 1 else name for name, count in tools.most_common(4)
        )
        sentences.append(f"It used {used}.")
    errors = [e for e in events if e.type == "error"]
    if errors:
        first = " ".join(errors[-1].content.split())
        first = first if len(first) <= 160 else first[:157] + "..."
        sentences.append(f"Last error: {first}")
    elif not tools:
        texts = [
            " ".join(e.content.split()) for e in events if e.type == "text" and e.content.strip()
        ]
        if texts:
            last = texts[-1] if len(texts[-1]) <= 160 else texts[-1][:157] + "..."
            sentences.append(f"Last output: {last}")
    return " ".join(sentences[:3])
