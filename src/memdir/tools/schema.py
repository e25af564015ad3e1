"""Small builders for the tools' JSON Schemas, and result helpers shared by the tools.

Schemas stay plain JSON Schema (draft 2020-12, the subset every provider
accepts): objects with ``additionalProperties: false``, strings, integers,
enums and arrays of strings. Plain dicts, so the one definition exports to
OpenAI, Anthropic and MCP without translation.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from memdir.results import WriteResult
from memdir.timeutil import format_ts

INDEX_STORE = ".memdir/index.db"
"""What a search names as its store: the derived index it read (never a memory file)."""


def obj(properties: dict[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


def string(description: str, *, min_length: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "description": description}
    if min_length is not None:
        schema["minLength"] = min_length
    return schema


def integer(
    description: str, *, minimum: int | None = None, maximum: int | None = None
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer", "description": description}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def boolean(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description}


def enum(values: Sequence[str], description: str, *, default: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "enum": list(values), "description": description}
    if default is not None:
        schema["default"] = default
    return schema


def array_of_strings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


def write_result(result: WriteResult) -> dict[str, Any]:
    """A store's WriteResult as a tool result: ``{ok, status, store, action, ...}``;
    a refusal keeps its shape, ``{ok: false, status: "error", store, reason}``."""
    return result.to_dict()


def json_safe(value: Any) -> Any:
    """Frontmatter values (dates, tuples) as JSON values."""
    if isinstance(value, datetime):
        return format_ts(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [json_safe(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
