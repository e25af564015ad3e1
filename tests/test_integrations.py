"""Each integration module says which extra to install when its framework is missing."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("langgraph", "langgraph", "langgraph"),
        ("openai_agents", "agents", "openai-agents"),
        ("langchain", "langchain_core", "langchain"),
    ],
)
def test_a_missing_framework_names_the_extra(module: str, framework: str, extra: str) -> None:
    code = f"import sys\nsys.modules[{framework!r}] = None\nimport memdir.integrations.{module}\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    assert f"pip install 'memdir[{extra}]'" in done.stderr
    assert "Traceback" in done.stderr  # an ImportError, as Python gives for a missing package
