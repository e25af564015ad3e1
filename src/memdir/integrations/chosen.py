"""What every tools adapter (``langchain``, ``openai_agents``) shares: which of a
folder's tools it offers, and a call's result as the JSON text handed to the model."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memdir.aio import AsyncMemory
from memdir.memory import Memory
from memdir.tools import Tool, Tools


def chosen_tools(
    memory: Memory | AsyncMemory, names: list[str] | None
) -> tuple[AsyncMemory, Tools, list[Tool]]:
    """The folder as an ``AsyncMemory``, its tools, and the tools to offer (``names``:
    only these, in the folder's order); an unknown name is a ``ValueError``."""
    amemory = memory if isinstance(memory, AsyncMemory) else AsyncMemory(memory)
    tools = Tools(amemory.sync)
    offered = tools.available()
    known = [tool.name for tool in offered]
    unknown = sorted(set(names or ()) - set(known))
    if unknown:
        raise ValueError(f"no memdir tool {', '.join(unknown)}; offered: {', '.join(known)}")
    return amemory, tools, [tool for tool in offered if names is None or tool.name in names]


def call_text(tools: Tools, name: str, arguments: Mapping[str, Any] | str) -> str:
    """One tool call (``Tools.call``: a bad one is ``{ok: false, reason}``), as JSON text."""
    return json.dumps(tools.call(name, arguments), ensure_ascii=False)


async def acall_text(
    amemory: AsyncMemory, tools: Tools, name: str, arguments: Mapping[str, Any] | str
) -> str:
    """``call_text`` with the call on the folder's worker thread (``memdir.aio``): the
    event loop never waits on a file."""
    result = await amemory.run(lambda: tools.call(name, arguments))
    return json.dumps(result, ensure_ascii=False)
