"""Which of a folder's tools an adapter offers: the part every tools adapter
(``langchain``, ``openai_agents``) shares."""

from __future__ import annotations

from memdir.aio import AsyncMemory
from memdir.memory import Memory
from memdir.tools import Tools


def chosen_tools(
    memory: Memory | AsyncMemory, names: list[str] | None
) -> tuple[AsyncMemory, Tools, list[str]]:
    """The folder as an ``AsyncMemory``, its tools, and the names to offer (``names``:
    only these, in the folder's order); an unknown name is a ``ValueError``."""
    amemory = memory if isinstance(memory, AsyncMemory) else AsyncMemory(memory)
    tools = Tools(amemory.sync)
    offered = tools.names()
    unknown = sorted(set(names or ()) - set(offered))
    if unknown:
        raise ValueError(f"no memdir tool {', '.join(unknown)}; offered: {', '.join(offered)}")
    return amemory, tools, [name for name in offered if names is None or name in names]
