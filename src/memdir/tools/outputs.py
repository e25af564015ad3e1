"""The tools' result schemas: MCP's ``outputSchema``, one per shape of result.

Every result is an object with ``ok`` and ``status``; a refusal (``ok: false``)
adds ``reason`` and, mostly, ``store``. So each schema admits both: every field
beyond ``ok`` and ``status`` is optional. Objects stay open (no
``additionalProperties: false``): an MCP client validates each result against
the schema (the SDK does), and must not reject a call that did its work for a
field a later memdir adds. The tests hold the schemas to the results: every
field a tool returns, in success and refusal, is declared (tests/test_tools.py).
"""

from __future__ import annotations

from typing import Any


def _str(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


def _int(description: str) -> dict[str, Any]:
    return {"type": "integer", "description": description}


def _nullable(kind: str, description: str) -> dict[str, Any]:
    return {"type": [kind, "null"], "description": description}


COMMON: dict[str, Any] = {
    "ok": {"type": "boolean", "description": "True if the call did what it was asked."},
    "status": {"type": "string", "enum": ["ok", "error"]},
    "store": _str("The file the call was about (a search: the index it read)."),
    "reason": _str("Why the call was refused, in a sentence to act on (ok: false only)."),
}


def result(properties: dict[str, Any] | None = None, description: str = "") -> dict[str, Any]:
    """An object schema: the common fields, then the tool's own."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {**COMMON, **(properties or {})},
        "required": ["ok", "status"],
    }
    if description:
        schema["description"] = description
    return schema


WRITE_FIELDS: dict[str, Any] = {
    "action": _str("What happened: created, updated, saved, removed, cleared, unchanged..."),
    "key": _str("The section key, entry key or observation id written."),
    "archived": _strings("Keys or ids this write moved to the archive (evicted, trimmed)."),
    "archive": _str("The archive file they went to."),
    "removed": _strings("Keys or ids removed on request."),
    "missing": _strings("Keys or ids asked for that did not exist."),
    "notes": _strings("Side effects worth knowing: evictions, compression, repairs."),
    "warnings": _strings(
        "Saved, but look: the text reads as instructions to a model (kept, flagged, quoted)."
    ),
}

WRITE = result(WRITE_FIELDS, "A write: what it did to which file.")

HIT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": _str("The file, relative to the memory folder: open it with memory_get."),
        "anchor": _nullable("string", "The section or observation id inside the file."),
        "kind": _str("What it is: observation, section, card, journal, lesson, document..."),
        "layer": _str("The manifest layer it belongs to."),
        "title": _nullable("string", "Its title or heading."),
        "lines": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "First and last line of the hit (1-based, inclusive).",
        },
        "snippet": _str("The matching text, matched words in **bold**."),
        "score": {"type": "number", "description": "The rank score (higher is better)."},
        "parts": {"type": "object", "description": "keyword, semantic and relevance scores."},
        "tier": _nullable("string", "Its tier: core, active, warm, cold or archive."),
        "date": _nullable("string", "Its date (ISO 8601)."),
        "tags": _strings("Its tags."),
    },
}

SEARCH = result(
    {
        "count": _int("How many hits."),
        "hits": {"type": "array", "items": HIT, "description": "Best first."},
        "listing": {
            "type": "boolean",
            "description": "An empty query: the most recent observations, not scored.",
        },
        "widened": _strings("The colder tiers searched too: nothing newer matched well."),
        "colder": _int("Hits in colder tiers left out (mode 'deep' shows them)."),
        "note": _str("What the search did, in a sentence."),
    },
    "Search hits, best first.",
)

GET = result(
    {
        "path": _str("The file read."),
        "lines": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "The first and last line given.",
        },
        "total_lines": _int("How many lines the file has."),
        "text": _str("The lines' text."),
        "touched": {"type": "boolean", "description": "True if it was a card, marked recalled."},
    },
    "Lines of a memory file.",
)

ACTIVITY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": _str("The activity's id (act-...): recall_activity get opens it."),
        "agentId": _str("The agent whose history it is."),
        "type": _str("task, chat, heartbeat, a2a, internal or respond_in_session."),
        "label": _str("What it was."),
        "taskId": _nullable("string", "The task it belongs to."),
        "summary": _nullable("string", "How it went, in a sentence or three."),
        "keywords": _strings("Tools it used, errors it hit, files it named."),
        "startedAt": _str("When it started (ISO 8601)."),
        "endedAt": _nullable("string", "When it ended; null while it runs."),
        "totalTokens": _int("Tokens it used, as logged."),
        "totalTools": _int("Tool calls it made."),
        "success": {"type": ["boolean", "null"], "description": "How it ended."},
        "logs": {
            "type": "array",
            "description": "Its step-by-step log (get only).",
            "items": {
                "type": "object",
                "properties": {
                    "seq": {"type": "integer"},
                    "type": _str("status, text, tool_start, tool_end, error or llm_request."),
                    "content": {"type": "string"},
                    "metadata": {"type": "object"},
                },
            },
        },
    },
}

RECALL = result(
    {
        "count": _int("How many activities (list, search)."),
        "activities": {"type": "array", "items": ACTIVITY, "description": "Newest or best first."},
        "activity": ACTIVITY,
    },
    "Past activities (list, search) or one with its log (get).",
)

CARD = result(
    {
        "path": _str("The card's file."),
        "meta": {"type": "object", "description": "Its frontmatter fields."},
        "body": _str("Its text."),
        "touched": {"type": "boolean", "description": "Reading it marked it recalled."},
    },
    "A vault card.",
)

WORKING_STATE = result(
    {
        **WRITE_FIELDS,
        "working_state": {
            "type": "object",
            "description": "The working state after the write.",
            "properties": {
                "right_now": _strings("What is being done now."),
                "done": _strings("What was finished today."),
                "pending": _strings("Sub-agents whose results are awaited."),
            },
        },
    },
    "A write to the working state, and the state after it.",
)

OBSERVATIONS = result(
    {
        "count": _int("How many observations."),
        "observations": {
            "type": "array",
            "description": "Newest first.",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "type": {"type": "string"},
                    "date": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "content": {"type": "string"},
                },
            },
        },
    },
    "Observations from knowledge.md.",
)
