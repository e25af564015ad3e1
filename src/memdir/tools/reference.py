"""The tools' reference in markdown, generated from their definitions (docs/tools.md)."""

from __future__ import annotations

from typing import Any

from memdir.tools.registry import Tool

START = "<!-- tools-reference:start -->"
END = "<!-- tools-reference:end -->"

_STORES = {
    "notebook": "a notebook layer",
    "knowledge": "a knowledge layer",
    "state": "a state layer",
    "history": "a history layer",
    "vault": "a vault layer",
    "journal": "a journal layer",
    "lessons": "a lessons layer",
    "workstate": "a workstate layer",
}


def _type(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return " \\| ".join(f"`{v}`" for v in spec["enum"])
    if spec.get("type") == "array":
        return f"list of {spec.get('items', {}).get('type', 'any')}"
    return str(spec.get("type", "any"))


def _hints(tool: Tool) -> str:
    hints = [
        name
        for name, on in (
            ("read-only", tool.read_only),
            ("destructive", tool.destructive),
            ("idempotent", tool.idempotent),
        )
        if on
    ]
    return ", ".join(hints) or "writes"


def tool_markdown(tool: Tool) -> str:
    lines = [f"### `{tool.name}`", ""]
    if tool.alias_of:
        lines += [f"Legacy alias of `{tool.alias_of}`, kept for older prompts.", ""]
    lines += [tool.description, ""]
    needs = " or ".join(_STORES.get(kind, kind) for kind in tool.requires) or "any memory folder"
    lines += [f"Hints: {_hints(tool)}. Offered with {needs}.", ""]
    props: dict[str, Any] = dict(tool.parameters.get("properties", {}))
    required = set(tool.parameters.get("required", []))
    if props:
        lines += ["| argument | type | required | description |", "|---|---|---|---|"]
        for name, spec in props.items():
            text = str(spec.get("description", "")).replace("|", "\\|")
            mark = "yes" if name in required else ""
            lines.append(f"| `{name}` | {_type(spec)} | {mark} | {text} |")
        lines.append("")
    return "\n".join(lines)


def reference(tools: list[Tool]) -> str:
    """Every tool, primary ones first, between the markers docs/tools.md keeps."""
    primary = [t for t in tools if t.alias_of is None]
    legacy = [t for t in tools if t.alias_of is not None]
    parts = [START, "", "## Tools", ""]
    parts += [tool_markdown(t) for t in primary]
    parts += ["## Legacy aliases", ""]
    parts += [tool_markdown(t) for t in legacy]
    parts.append(END)
    return "\n".join(parts)


def splice(document: str, generated: str) -> str:
    """``document`` with the text between the markers replaced by ``generated``."""
    head, found, rest = document.partition(START)
    if not found or END not in rest:
        raise ValueError(f"the document has no {START} ... {END} block")
    return head + generated + rest.split(END, 1)[1]
