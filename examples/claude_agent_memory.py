"""A Claude Agent SDK agent whose long-term memory is a memdir folder, over MCP.

    pip install 'memdir[claude-agent]'     # the SDK bundles the Claude Code binary
    export ANTHROPIC_API_KEY=sk-ant-...   # or ANTHROPIC_BASE_URL: a compatible server
    python examples/claude_agent_memory.py --dir ~/agent "Remember that Dana's cat is Miso."
    python examples/claude_agent_memory.py --dir ~/agent "What is Dana's cat called?"

The agent runs with no built-in tools (no shell, no file edits): only memdir's MCP
server (``memdir serve --dir FOLDER`` over stdio, started by Claude Code), whose tools
are allowed without a prompt. The boot context goes into the system prompt. The tests
run this file against a model played on loopback (tests/test_examples.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    TextBlock,
    query,
)

import memdir
from memdir.tools import Tools

INSTRUCTIONS = (
    "You are a helpful assistant with a long-term memory (the memdir tools). Save each "
    "fact worth keeping with memory_save; search your memory with memory_search before "
    "you answer a question about something you may have been told."
)


async def run(folder: Path, message: str, model: str | None) -> str:
    if not (folder / "memdir.toml").is_file():
        memdir.init(folder)
    async with await memdir.aopen(folder) as memory:
        context = await memory.context(query=message)
        offered = Tools(memory.sync).names()
    server = {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "memdir", "serve", "--dir", str(folder.resolve())],
    }
    options = ClaudeAgentOptions(
        system_prompt=f"{INSTRUCTIONS}\n\n{context.text}",
        mcp_servers={"memdir": server},
        strict_mcp_config=True,  # only this server, whatever else is configured
        tools=[],  # no built-in tool: memory only
        allowed_tools=[f"mcp__memdir__{name}" for name in offered],
        setting_sources=[],  # no user or project settings
        model=model,
        max_turns=8,
    )
    said: list[str] = []
    async for event in query(prompt=message, options=options):
        if isinstance(event, AssistantMessage):
            said += [block.text for block in event.content if isinstance(block, TextBlock)]
        elif isinstance(event, ResultMessage) and event.is_error:
            raise SystemExit(f"the agent failed: {event.result}")
    return said[-1] if said else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("message")
    parser.add_argument("--dir", type=Path, default=Path("agent-memory"), help="memory folder")
    parser.add_argument("--model", default=os.environ.get("ANTHROPIC_MODEL"))
    args = parser.parse_args(argv)
    print(asyncio.run(run(args.dir.expanduser(), args.message, args.model)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
