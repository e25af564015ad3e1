"""The agent SDK examples in examples/, run as a user runs them, against a model played on
loopback (tests/model_servers.py): no network, no key. The model is a policy that saves
what it is told to remember and answers questions from what memory_search returns, so
a pass means the SDK sent memdir's tools, called them, and fed their results back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from model_servers import Turn, model_server

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def remembering_model(body: dict[str, Any]) -> Turn:
    """Chat Completions: save on 'Remember that ...', search on a question, then answer."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        result = json.loads(last["content"])
        if "hits" in result:
            hits = result["hits"]
            found = hits[0]["snippet"].replace("**", "") if hits else "nothing"
            return Turn(text=f"From memory: {found}")
        return Turn(text="Saved." if result.get("ok") else f"Refused: {result.get('reason')}")
    said = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
    if said.startswith("Remember that "):
        return Turn(tool_calls=[("memory_save", {"content": said.removeprefix("Remember that ")})])
    return Turn(tool_calls=[("memory_search", {"query": said})])


def run_example(script: str, *args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMDIR_EMBEDDER": "hashing", **env},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def test_openai_agents_sdk_example(tmp_path: Path) -> None:
    pytest.importorskip("agents")
    folder = tmp_path / "agent"
    with model_server(remembering_model) as server:
        env = {"OPENAI_BASE_URL": f"{server.url}/v1", "OPENAI_API_KEY": "test-key"}
        said = run_example(
            "openai_agents_memory.py",
            "--dir",
            str(folder),
            "Remember that Dana's cat is Miso.",
            env=env,
        )
        assert said == "Saved."
        answer = run_example(
            "openai_agents_memory.py",
            "--dir",
            str(folder),
            "What is Dana's cat called?",
            env=env,
        )
        assert answer == "From memory: Dana's cat is Miso."
        first = server.requests[0][1]
        offered = {tool["function"]["name"] for tool in first["tools"]}
        assert {"memory_save", "memory_search", "card_write"} <= offered
        system = first["messages"][0]
        assert system["role"] == "system" and "long-term memory" in system["content"]
    knowledge = (folder / "knowledge.md").read_text()
    assert "Dana's cat is Miso." in knowledge  # the files are the memory


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def remembering_claude(prefix: str) -> Callable[[dict[str, Any]], Turn]:
    """Anthropic Messages: the same policy, with memdir's tools named as the host names
    them (Claude Code: ``mcp__memdir__memory_save``). Claude Code sends its environment
    as a system message after the user's: the policy reads the last message that is not
    one. Without a prefix (the Messages API example) the model also views /memories
    with the memory tool, in the same turn as its save."""

    def policy(body: dict[str, Any]) -> Turn:
        last = next(m for m in reversed(body["messages"]) if m["role"] != "system")
        blocks = last["content"] if isinstance(last["content"], list) else []
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if results:
            if any(b.get("is_error") for b in results):
                return Turn(text=f"Refused: {[_text_of(b['content']) for b in results]}")
            result = json.loads(_text_of(results[0]["content"]))
            if "hits" in result:
                hits = result["hits"]
                found = hits[0]["snippet"].replace("**", "") if hits else "nothing"
                return Turn(text=f"From memory: {found}")
            return Turn(text="Saved." if result.get("ok") else f"Refused: {result}")
        texts = [  # Claude Code adds <system-reminder> blocks around the prompt
            b["text"]
            for b in blocks
            if b.get("type") == "text" and not b["text"].lstrip().startswith("<system-reminder>")
        ] or [_text_of(last["content"])]
        said = texts[-1].strip()
        if said.startswith("Remember that "):
            calls = [(f"{prefix}memory_save", {"content": said.removeprefix("Remember that ")})]
            if not prefix:
                calls.append(("memory", {"command": "view", "path": "/memories"}))
            return Turn(tool_calls=calls)
        return Turn(tool_calls=[(f"{prefix}memory_search", {"query": said})])

    return policy


CLAUDE_ENV = {
    "ANTHROPIC_API_KEY": "test-key",
    "ANTHROPIC_MODEL": "claude-test",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
}


def test_claude_agent_sdk_example(tmp_path: Path) -> None:
    """Claude Code itself (the binary the SDK's wheel bundles) runs the agent, starting
    memdir's MCP server over stdio; the model is played on loopback."""
    pytest.importorskip("claude_agent_sdk")
    folder = tmp_path / "agent"
    home = tmp_path / "home"  # Claude Code's own settings and sessions, not the user's
    home.mkdir()
    with model_server(remembering_claude("mcp__memdir__")) as server:
        env = {**CLAUDE_ENV, "ANTHROPIC_BASE_URL": server.url, "HOME": str(home)}
        said = run_example(
            "claude_agent_memory.py",
            "--dir",
            str(folder),
            "Remember that Dana's cat is Miso.",
            env=env,
        )
        assert said == "Saved."
        answer = run_example(
            "claude_agent_memory.py",
            "--dir",
            str(folder),
            "What is Dana's cat called?",
            env=env,
        )
        assert answer == "From memory: Dana's cat is Miso."
        first = next(body for path, body in server.requests if body.get("tools"))
        offered = {tool["name"] for tool in first["tools"]}
        assert {"mcp__memdir__memory_save", "mcp__memdir__memory_search"} <= offered
        assert not offered & {"Bash", "Write", "Edit"}  # memory only
    assert "Dana's cat is Miso." in (folder / "knowledge.md").read_text()


def test_anthropic_messages_api_example_with_the_memory_tool(tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    folder = tmp_path / "agent"
    with model_server(remembering_claude("")) as server:
        env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test-key"}
        said = run_example(
            "anthropic_memory_tool.py",
            "--dir",
            str(folder),
            "Remember that Dana's cat is Miso.",
            env=env,
        )
        assert said == "Saved."
        answer = run_example(
            "anthropic_memory_tool.py",
            "--dir",
            str(folder),
            "What is Dana's cat called?",
            env=env,
        )
        assert answer == "From memory: Dana's cat is Miso."
        first = server.requests[0][1]
        assert {"type": "memory_20250818", "name": "memory"} in first["tools"]
        assert "memory_save" in {tool.get("name") for tool in first["tools"]}
        # the memory tool's answer went back to the model as Anthropic documents it
        second = server.requests[1][1]["messages"][-1]["content"]
        viewed = _text_of(second[1]["content"])
        assert viewed.startswith("Here're the files and directories up to 2 levels deep")
        assert "knowledge.md" in viewed
    assert "Dana's cat is Miso." in (folder / "knowledge.md").read_text()
