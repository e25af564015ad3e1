"""Claude on the Messages API with memdir behind its memory tool and memdir's own tools.

    pip install anthropic memdir
    export ANTHROPIC_API_KEY=sk-ant-...   # or ANTHROPIC_BASE_URL: a compatible server
    python examples/anthropic_memory_tool.py --dir ~/agent "Remember that Dana's cat is Miso."
    python examples/anthropic_memory_tool.py --dir ~/agent "What is Dana's cat called?"

Claude's memory tool (``memory_20250818``: view, create, str_replace, ... under
``/memories``) runs over the folder, so what Claude writes there is what memdir caps,
searches and loads; memdir's tools (``memory_save``, ``memory_search``, ...) sit beside
it. Each ``tool_use`` block is answered through the registry (``Tools.call``), on the
folder's worker thread (``memdir.aio``). The loop is the whole agent: no framework.
The tests run this file against a model played on loopback (tests/test_examples.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import anthropic

import memdir
from memdir.tools import Tools
from memdir.tools.catalog import TOOLS
from memdir.tools.claude_memory import ANTHROPIC_MEMORY_TOOL, MEMORY_TOOL

INSTRUCTIONS = (
    "You have a long-term memory. Save each fact worth keeping with memory_save; search "
    "it with memory_search before you answer a question about something you may have "
    "been told. Your /memories directory (the memory tool) is the same memory, as files."
)
MEMORY_BETA = "context-management-2025-06-27"  # the memory tool's beta


async def run(folder: Path, message: str, model: str, max_turns: int = 8) -> str:
    if not (folder / "memdir.toml").is_file():
        memdir.init(folder)
    client = anthropic.AsyncAnthropic()
    async with await memdir.aopen(folder) as memory:
        tools = Tools(memory.sync, [*TOOLS, MEMORY_TOOL])
        schemas = [t for t in tools.anthropic() if t["name"] != "memory"]
        context = await memory.context(query=message)
        messages: list[dict[str, Any]] = [{"role": "user", "content": message}]
        for _ in range(max_turns):
            response = await client.beta.messages.create(
                model=model,
                max_tokens=2048,
                system=f"{INSTRUCTIONS}\n\n{context.text}",
                tools=[ANTHROPIC_MEMORY_TOOL, *schemas],
                messages=messages,
                betas=[MEMORY_BETA],
            )
            messages.append({"role": "assistant", "content": response.content})
            if response.stop_reason != "tool_use":
                return "".join(b.text for b in response.content if b.type == "text")
            answers = []
            for block in response.content:
                if block.type != "tool_use":
                    continue
                name, args = block.name, block.input
                result = await memory.run(lambda n=name, a=args: tools.call(n, a))
                if name == "memory":  # the texts Claude is trained on (docs/claude-memory.md)
                    text = str(result["content"] if result["ok"] else result["reason"])
                else:
                    text = json.dumps(result, ensure_ascii=False)
                answers.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": block.id,
                        "content": text,
                        "is_error": not result["ok"],
                    }
                )
            messages.append({"role": "user", "content": answers})
    raise SystemExit(f"no answer after {max_turns} turns")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("message")
    parser.add_argument("--dir", type=Path, default=Path("agent-memory"), help="memory folder")
    parser.add_argument("--model", default=os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"))
    args = parser.parse_args(argv)
    print(asyncio.run(run(args.dir.expanduser(), args.message, args.model)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
