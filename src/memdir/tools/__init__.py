"""Agent tools over a memory folder: definitions, schema exports and the dispatcher."""

from memdir.tools.registry import Tool, ToolCallError, Tools, error, ok

__all__ = ["Tool", "ToolCallError", "Tools", "error", "ok"]
