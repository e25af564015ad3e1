"""Agents' home: ``$MEMDIR_HOME/agents/<id>/`` holds one memory folder per agent.

``--agent ID`` on the command line (and the MCP server) picks an agent's
folder from the home; ``--dir PATH`` picks any folder. An agent id is a plain
name (letters, digits, ``.``, ``_``, ``-``), so it can never name a path
outside the home. The agent's folder is written with a layout on first use.
"""

from __future__ import annotations

from pathlib import Path

from memdir.config import AGENT_ID_RE, MANIFEST_NAME, memdir_home
from memdir.errors import MemdirError


class UnknownAgent(MemdirError, LookupError):
    """No agent by that id in the home, or the id is not a plain name."""


def agents_dir() -> Path:
    return memdir_home() / "agents"


def agent_folder(agent: str) -> Path:
    """The folder of ``agent`` in the home (which may not exist yet)."""
    if not isinstance(agent, str) or not AGENT_ID_RE.fullmatch(agent):
        raise UnknownAgent(
            f"agent id {agent!r} is not valid: use letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return agents_dir() / agent


def list_agents() -> list[str]:
    """Ids of the agents in the home that have a memory folder."""
    base = agents_dir()
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / MANIFEST_NAME).is_file())


def resolve_folder(
    folder: str | Path | None, agent: str | None, *, create: bool = False, layout: str = "default"
) -> Path:
    """The memory folder a command works on: ``agent``'s in the home, else ``folder``.

    With ``create``, an agent's folder that does not exist yet is written with
    ``layout`` (the MCP server does this, so a host configured once just works).
    """
    if agent is None:
        return Path(folder if folder is not None else ".")
    path = agent_folder(agent)
    if not (path / MANIFEST_NAME).is_file():
        if not create:
            known = ", ".join(list_agents()) or "none yet"
            raise UnknownAgent(
                f"no agent {agent!r} in {agents_dir()} (agents: {known}); "
                f"create it with: memdir init --agent {agent}"
            )
        from memdir.scaffold import init_folder

        init_folder(path, layout, agent=agent)
    return path
