"""Tool arguments that are plainly valid, told apart without jsonschema.

A model's call is checked against the tool's JSON Schema (``Tools._check``); most
calls are valid, and proving that needs no validator library: ``plainly_valid``
walks the few keywords memdir's schemas use (``type``, ``properties``,
``required``, ``additionalProperties``, ``items``, ``enum``, ``minLength``,
``minimum``, ``maximum``) and answers True only when every one holds by the JSON
Schema rules. Anything else, a keyword it does not know included, answers False,
and jsonschema then finds the errors and words them as before (the first tool call
of a process no longer imports it for a valid call: tests/test_tools.py checks the
two agree).
"""

from __future__ import annotations

from typing import Any

_KNOWN = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "minLength",
     "minimum", "maximum", "description", "default", "title"}
)  # fmt: skip


def plainly_valid(schema: Any, value: Any) -> bool:
    """True if ``value`` certainly meets ``schema``; False if it may not (then ask jsonschema)."""
    if not isinstance(schema, dict) or not set(schema) <= _KNOWN:
        return False
    kind = schema.get("type")
    if kind is not None and not _is(kind, value):
        return False
    if "enum" in schema and not any(_same(value, choice) for choice in schema["enum"]):
        return False
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        return False
    if _number(value):
        if "minimum" in schema and not value >= schema["minimum"]:
            return False
        if "maximum" in schema and not value <= schema["maximum"]:
            return False
    if isinstance(value, list) and "items" in schema:
        return all(plainly_valid(schema["items"], item) for item in value)
    if isinstance(value, dict):
        return _object(schema, value)
    return True


def _object(schema: dict[str, Any], value: dict[str, Any]) -> bool:
    properties = schema.get("properties", {})
    if not all(name in value for name in schema.get("required", ())):
        return False
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if not isinstance(name, str):
            return False
        if name in properties:
            if not plainly_valid(properties[name], item):
                return False
        elif extra is False or (extra is not True and not plainly_valid(extra, item)):
            return False
    return True


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is(kind: Any, value: Any) -> bool:
    if isinstance(kind, list):
        return any(_is(one, value) for one in kind)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return _number(value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "null":
        return value is None
    return False


def _same(value: Any, choice: Any) -> bool:
    """JSON equality for the scalars memdir's enums hold: 1 is not true, "1" is not 1."""
    return type(value) is type(choice) and value == choice
