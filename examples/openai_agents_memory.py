"""An OpenAI Agents SDK agent whose long-term memory is a memdir folder.

    pip install 'memdir[openai-agents]'
    export OPENAI_API_KEY=sk-...          # or OPENAI_BASE_URL: any compatible server
    python examples/openai_agents_memory.py --dir ~/agent "Remember that Dana's cat is Miso."
    python examples/openai_agents_memory.py --dir ~/agent "What is Dana's cat called?"

Each run opens the folder (``memdir.aopen``), puts the boot context in the agent's
instructions, and gives the agent memdir's tools (``memory_save``, ``memory_search``,
``card_write``, ...): what it saves in one run, it finds in the next. The tests run
this file against a model played on loopback (tests/test_examples.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

import memdir
from memdir.integrations.openai_agents import memdir_tools

INSTRUCTIONS = (
    "You are a helpful assistant with a long-term memory. Save each fact worth keeping "
    "with memory_save; search your memory with memory_search before you answer a "
    "question about something you may have been told."
)


async def run(folder: Path, message: str, model: str) -> str:
    if not (folder / "memdir.toml").is_file():
        memdir.init(folder)
    async with await memdir.aopen(folder) as memory:
        context = await memory.context(query=message)
        agent = Agent(
            name="assistant",
            instructions=f"{INSTRUCTIONS}\n\n{context.text}",
            tools=memdir_tools(memory),
            # Chat Completions: what most OpenAI-compatible servers speak
            model=OpenAIChatCompletionsModel(model=model, openai_client=AsyncOpenAI()),
        )
        result = await Runner.run(agent, message)
        return str(result.final_output)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("message")
    parser.add_argument("--dir", type=Path, default=Path("agent-memory"), help="memory folder")
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
    args = parser.parse_args(argv)
    if os.environ.get("OPENAI_BASE_URL"):  # traces would go to api.openai.com
        set_tracing_disabled(True)
    print(asyncio.run(run(args.dir.expanduser(), args.message, args.model)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
