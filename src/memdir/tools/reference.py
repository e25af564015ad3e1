"""The tools' reference in markdown, generated from their definitions (docs/tools.md):
what each layout offers (and at what cost in schema tokens), then each tool."""

from __future__ import annotations

import json
from typing import Any

from memdir.context.tokens import ByteCounter
from memdir.tools.registry import Tool, offered, served

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


def _offer(tool: Tool) -> str:
    if tool.alias_of:
        return "offered only when `include` names it"
    if tool.compact is True:
        return "in the compact set"
    if tool.compact is False:
        return 'offered with `offer = "all"` (or `include`)'
    where = " or ".join(_STORES.get(kind, kind) for kind in tool.compact)
    return f'in the compact set with {where}, else with `offer = "all"`'


def tool_markdown(tool: Tool) -> str:
    lines = [f"### `{tool.name}`", ""]
    if tool.alias_of:
        lines += [f"Legacy alias of `{tool.alias_of}`, kept for older prompts.", ""]
    lines += [tool.description, ""]
    needs = " or ".join(_STORES.get(kind, kind) for kind in tool.requires) or "any memory folder"
    lines += [f"Hints: {_hints(tool)}. Served with {needs}; {_offer(tool)}.", ""]
    props: dict[str, Any] = dict(tool.parameters.get("properties", {}))
    required = set(tool.parameters.get("required", []))
    if props:
        lines += ["| argument | type | required | description |", "|---|---|---|---|"]
        for name, spec in props.items():
            text = str(spec.get("description", "")).replace("|", "\\|")
            mark = "yes" if name in required else ""
            lines.append(f"| `{name}` | {_type(spec)} | {mark} | {text} |")
        lines.append("")
    if tool.brief is not None:
        kept = ", ".join(f"`{name}`" for name in tool.brief.get("properties", {}))
        lines += [f"The compact set offers {kept} (the others are still accepted).", ""]
    output = tool.output_schema()
    if output is not None:
        fields = ", ".join(f"`{name}`" for name in output.get("properties", {}))
        lines += [f"Result (`outputSchema`): {fields}.", ""]
    return "\n".join(lines)


def _tokens(tools: list[Tool], compact: bool) -> int:
    shapes = [tool.anthropic(compact=compact) for tool in tools]
    return ByteCounter().count(json.dumps(shapes))


def layouts_table(tools: list[Tool]) -> str:
    """Each preset layout: the tools it offers as written (compact) and with
    ``offer = "all"``, and their schemas' tokens in the Anthropic shape (bytes / 4)."""
    from memdir.layouts import LAYOUTS, manifest

    rows = [
        '| layout | offered (compact) | tokens | also with `offer = "all"` | tokens |',
        "|---|---|---|---|---|",
    ]
    for layout in LAYOUTS:
        found = manifest(layout)
        serving = served(found, tools)
        compact = offered(found, serving.values(), "compact")
        every = offered(found, serving.values(), "all")
        more = [t for t in every if t not in compact]
        rows.append(
            f"| {layout} | {', '.join(t.name for t in compact)} | {_tokens(compact, True)} | "
            f"{', '.join(t.name for t in more) or '-'} | {_tokens(every, False)} |"
        )
    return "\n".join(rows)


def reference(tools: list[Tool]) -> str:
    """Every tool, primary ones first, between the markers docs/tools.md keeps."""
    primary = [t for t in tools if t.alias_of is None]
    legacy = [t for t in tools if t.alias_of is not None]
    parts = [START, "", "## What each layout offers", "", layouts_table(tools), "", "## Tools", ""]
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
