"""Agent tools over a memory folder: definitions, schema exports and the dispatcher.

``Tools(memory)`` offers the tools the folder's manifest can serve (see
``catalog.TOOLS``); Claude's built-in memory tool (``MEMORY_TOOL``, declared to
the API as ``ANTHROPIC_MEMORY_TOOL``) is kept apart, for applications that hand
its calls to memdir: ``run_memory_command(memory, tool_use.input)``.
"""

from memdir.tools.claude_memory import ANTHROPIC_MEMORY_TOOL, MEMORY_TOOL, run_memory_command
from memdir.tools.registry import Tool, ToolCallError, Tools, error, ok

__all__ = [
    "ANTHROPIC_MEMORY_TOOL",
    "MEMORY_TOOL",
    "Tool",
    "ToolCallError",
    "Tools",
    "error",
    "ok",
    "run_memory_command",
]
