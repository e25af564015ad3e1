"""memdir's agent tools as LangChain tools: ``memdir_tools(memory)``.

    from langgraph.prebuilt import create_react_agent
    from memdir.integrations.langchain import memdir_tools
    agent = create_react_agent(model, memdir_tools(memdir.open("~/agent")))

One ``StructuredTool`` per tool the folder offers (its manifest's ``[tools]``), its
arguments memdir's own JSON Schema; a call (``invoke`` or ``ainvoke``) goes through
``Tools.call``, the async one on the folder's worker thread (``memdir.aio``), and
returns the result as JSON text: a bad call is ``{ok: false, reason}`` for the model,
never an exception.
"""

from __future__ import annotations

from typing import Any

try:
    from langchain_core.tools import StructuredTool
except ImportError as exc:  # the framework is an extra, not a dependency
    raise ImportError(
        "memdir.integrations.langchain needs LangChain (langchain-core): "
        "pip install 'memdir[langchain]'"
    ) from exc

from memdir.aio import AsyncMemory
from memdir.integrations.chosen import acall_text, call_text, chosen_tools
from memdir.memory import Memory
from memdir.tools import Tool, Tools


def memdir_tools(
    memory: Memory | AsyncMemory, *, names: list[str] | None = None
) -> list[StructuredTool]:
    """The folder's tools as LangChain tools (``names``: only these)."""
    amemory, tools, chosen = chosen_tools(memory, names)
    return [_structured_tool(amemory, tools, tool) for tool in chosen]


def _structured_tool(amemory: AsyncMemory, tools: Tools, tool: Tool) -> StructuredTool:
    def run(**arguments: Any) -> str:
        return call_text(tools, tool.name, arguments)

    async def arun(**arguments: Any) -> str:
        return await acall_text(amemory, tools, tool.name, arguments)

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=tool.name,
        description=tool.description,
        args_schema=tool.schema(),
    )
