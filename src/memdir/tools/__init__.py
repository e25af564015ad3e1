"""Agent tools over a memory folder: definitions, schema exports and the dispatcher.

``Tools(memory)`` offers the tools the folder's manifest can serve (see
``catalog.TOOLS``); Claude's built-in memory tool (``MEMORY_TOOL``, declared to
the API as ``ANTHROPIC_MEMORY_TOOL``) is kept apart, for applications that hand
its calls to memdir: ``run_memory_command(memory, tool_use.input)``.
"""

from typing import TYPE_CHECKING

from memdir.lazy import lazy_exports

if TYPE_CHECKING:
    from memdir.tools.claude_memory import ANTHROPIC_MEMORY_TOOL, MEMORY_TOOL, run_memory_command
    from memdir.tools.registry import Tool, ToolCallError, Tools, error, ok

# imported on first use: the MCP server needs Tools, not Claude's memory tool
__getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "ANTHROPIC_MEMORY_TOOL": "memdir.tools.claude_memory",
        "MEMORY_TOOL": "memdir.tools.claude_memory",
        "Tool": "memdir.tools.registry",
        "ToolCallError": "memdir.tools.registry",
        "Tools": "memdir.tools.registry",
        "error": "memdir.tools.registry",
        "ok": "memdir.tools.registry",
        "run_memory_command": "memdir.tools.claude_memory",
    },
)

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
