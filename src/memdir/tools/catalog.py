"""Every tool memdir defines, in the order a model sees them."""

from __future__ import annotations

from memdir.tools import memory_tools, workspace_tools
from memdir.tools.registry import Tool

TOOLS: list[Tool] = [*memory_tools.TOOLS, *workspace_tools.TOOLS, *memory_tools.LEGACY]
