"""Hostile input to the agent tools, through the dispatcher the MCP server uses: each bad
argument is refused with ``{ok: false, reason}`` and leaves every file as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import memdir
from memdir.tools import Tools


@pytest.fixture
def tools(memory: memdir.Memory) -> Tools:
    return Tools(memory)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".memdir" not in p.parts
    }


def _refused(tools: Tools, folder: Path, name: str, args: dict[str, Any]) -> str:
    before = _snapshot(folder)
    result = tools.call(name, args)
    assert result["ok"] is False, result
    assert "failed inside memdir" not in result["reason"]
    assert _snapshot(folder) == before
    return str(result["reason"])


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"action": "list", "query": "acme"}, "query"),
        ({"action": "list", "activity_id": "act-1"}, "activity_id"),
        ({"action": "search", "query": "acme", "activity_id": "act-1"}, "activity_id"),
        ({"action": "get", "activity_id": "act-1", "query": "acme"}, "query"),
        ({"action": "get", "activity_id": "act-1", "limit": 3}, "limit"),
    ],
)
def test_recall_activity_refuses_an_argument_its_action_would_ignore(
    tools: Tools, folder: Path, args: dict[str, Any], named: str
) -> None:
    """A list given a query answers with every recent activity, as if they matched: the
    argument another action takes is refused, naming it, never silently dropped."""
    reason = _refused(tools, folder, "recall_activity", args)
    assert named in reason and f"'{args['action']}'" in reason
