"""The agent SDK examples in examples/, run as a user runs them, against a model played on
loopback (tests/model_servers.py): no network, no key. The model is a policy that saves
what it is told to remember and answers questions from what memory_search returns, so
a pass means the SDK sent memdir's tools, called them, and fed their results back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
