"""memdir's agent tools for the OpenAI Agents SDK: ``memdir_tools(memory)``.

    from agents import Agent
    from memdir.integrations.openai_agents import memdir_tools
    agent = Agent(name="assistant", tools=memdir_tools(await memdir.aopen("~/agent")))

One ``FunctionTool`` per tool the folder offers (its manifest's ``[tools]``), with the
same JSON Schema as the OpenAI and Anthropic schemas (``memdir.tools``); each call
goes through ``Tools.call`` on the folder's worker thread (``memdir.aio``), so a bad
call comes back to the model as ``{ok: false, reason}``, never an exception, and the
event loop the SDK runs on never waits on a file. See examples/openai_agents_memory.py.
"""

from __future__ import annotations

from typing import Any

try:
    from agents import FunctionTool, RunContextWrapper
except ImportError as exc:  # the framework is an extra, not a dependency
    raise ImportError(
        "memdir.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'memdir[openai-agents]'"
    ) from exc

from memdir.aio import AsyncMemory
from memdir.integrations.chosen import acall_text, chosen_tools
from memdir.memory import Memory
from memdir.tools import Tool, Tools


def memdir_tools(
    memory: Memory | AsyncMemory, *, names: list[str] | None = None
) -> list[FunctionTool]:
    """The folder's tools as Agents SDK tools (``names``: only these)."""
    amemory, tools, chosen = chosen_tools(memory, names)
    return [_function_tool(amemory, tools, tool) for tool in chosen]


def _function_tool(amemory: AsyncMemory, tools: Tools, tool: Tool) -> FunctionTool:
    async def invoke(context: RunContextWrapper[Any], arguments: str) -> str:
        return await acall_text(amemory, tools, tool.name, arguments or "{}")

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=tool.schema(),
        on_invoke_tool=invoke,
        strict_json_schema=False,  # memdir's schemas have optional arguments
    )
