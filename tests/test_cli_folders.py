"""Which folder a command works on (``--dir``, ``--agent``), ``agents``, ``status``, ``serve``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import memdir
from memdir.cli import app
from memdir.config import MANIFEST_NAME


@pytest.fixture(autouse=True)
def hashing_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def ok_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_init_agent_creates_its_folder_in_the_home(memdir_home: Path) -> None:
    result = invoke("init", "--agent", "scout", "--layout", "notebook")
    assert result.exit_code == 0, result.output
    folder = memdir_home / "agents" / "scout"
    assert result.stdout.splitlines()[0] == (
        f"Initialised {folder.resolve()} with the notebook layout."
    )
    manifest = memdir.load_manifest(folder / MANIFEST_NAME)
    assert (manifest.agent, manifest.layout) == ("scout", "notebook")


def test_init_json(tmp_path: Path) -> None:
    data = ok_json(invoke("init", tmp_path / "mem", "--json"))
    assert data["root"] == str((tmp_path / "mem").resolve())
    assert (data["layout"], data["adopted"], data["migration"]) == ("default", False, None)
    assert data["created"][0] == "memdir.toml" and "knowledge.md" in data["created"]


def test_init_path_and_dir_together_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke("init", tmp_path / "a", "--dir", tmp_path / "b")
    assert result.exit_code == 2
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_agent_selects_its_folder(memdir_home: Path, tmp_path: Path) -> None:
    assert invoke("init", "--agent", "scout").exit_code == 0
    assert invoke("init", tmp_path / "elsewhere").exit_code == 0
    saved = ok_json(invoke("save", "Scout note", "--agent", "scout", "--json"))
    assert saved["store"] == "knowledge.md"
    assert "Scout note" in (memdir_home / "agents" / "scout" / "knowledge.md").read_text()
    assert "Scout note" not in (tmp_path / "elsewhere" / "knowledge.md").read_text()
    status = ok_json(invoke("status", "--agent", "scout", "--json"))
    assert status["folder"] == str((memdir_home / "agents" / "scout").resolve())
    assert status["agent"] == "scout"


def test_an_unknown_agent_exits_1_listing_the_agents(memdir_home: Path) -> None:
    for name in ("scout", "writer"):
        assert invoke("init", "--agent", name).exit_code == 0
    result = invoke("status", "--agent", "ghost")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"error: no agent 'ghost' in {memdir_home / 'agents'} (agents: scout, writer); "
        "create it with: memdir init --agent ghost\n"
    )
    assert not (memdir_home / "agents" / "ghost").exists()
    bad = invoke("notebook", "--agent", "../scout")
    assert bad.exit_code == 1
    assert bad.stderr.startswith("error: agent id '../scout' is not valid")


def test_dir_and_agent_together_is_a_usage_error(folder: Path) -> None:
    result = invoke("status", "--dir", folder, "--agent", "scout")
    assert (result.exit_code, result.stdout) == (2, "")
    assert "give --dir or --agent, not both" in result.stderr


def test_a_folder_without_a_manifest_exits_1(tmp_path: Path) -> None:
    result = invoke("status", "--dir", tmp_path)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith(f"error: {tmp_path.resolve()} has no memdir.toml; run ")


def test_a_dir_that_is_a_file_or_missing_says_so(folder: Path, tmp_path: Path) -> None:
    manifest = folder / "memdir.toml"
    result = invoke("status", "--dir", manifest)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.strip() == (
        f"error: {manifest.resolve()} is a file, not a memory folder "
        f"(the memory folder is {folder.resolve()})"
    )
    missing = tmp_path / "nowhere"
    result = invoke("search", "tea", "--dir", missing)
    assert result.exit_code == 1 and "does not exist;" in result.stderr
    assert not missing.exists()  # (nothing made)


def test_agents(memdir_home: Path) -> None:
    empty = invoke("agents")
    assert (empty.exit_code, empty.stdout) == (
        0,
        f"No agents in {memdir_home / 'agents'}; create one with: memdir init --agent ID\n",
    )
    assert ok_json(invoke("agents", "--json")) == []
    assert invoke("init", "--agent", "writer", "--layout", "workspace").exit_code == 0
    assert invoke("init", "--agent", "scout").exit_code == 0
    (memdir_home / "agents" / "not-an-agent").mkdir()  # no manifest: not listed
    listed = invoke("agents")
    folder = memdir_home / "agents"
    assert listed.stdout.splitlines() == [
        f"scout {folder / 'scout'} (default)",
        f"writer {folder / 'writer'} (workspace)",
    ]
    assert ok_json(invoke("agents", "--json")) == [
        {"id": "scout", "folder": str(folder / "scout"), "layout": "default"},
        {"id": "writer", "folder": str(folder / "writer"), "layout": "workspace"},
    ]


def test_status_counts_a_file_once_in_the_layer_that_owns_it(folder: Path) -> None:
    (folder / "todo.md").write_text("# Todo\n\n- ship it\n")
    data = ok_json(invoke("status", "--dir", folder, "--json"))
    layers = {layer["name"]: layer["files"] for layer in data["layers"]}
    assert layers["notes"] == 1 and layers["identity"] == 6
    every = sum(layers.values())
    on_disk = [p for p in folder.rglob("*") if p.is_file() and ".memdir" not in p.parts]
    assert every == len([p for p in on_disk if p.suffix in (".md", ".txt")])


def test_status(folder: Path) -> None:
    fresh = ok_json(invoke("status", "--dir", folder, "--json"))
    starters = fresh["index"]["items"]  # init indexes its starter files (identity/)
    assert starters > 0 and fresh["history"] == {"activities": 0}
    assert invoke("save", "one", "--dir", folder).exit_code == 0
    assert invoke("notebook", "set", "plan", "ship it", "--dir", folder).exit_code == 0
    assert invoke("update", "conventions", "cents", "--dir", folder).exit_code == 0
    data = ok_json(invoke("status", "--dir", folder, "--json"))
    assert (data["folder"], data["layout"], data["agent"]) == (
        str(folder.resolve()), "default", "default"
    )  # fmt: skip
    layers = {layer["name"]: layer for layer in data["layers"]}
    assert layers["identity"] == {
        "name": "identity", "store": "document", "memory": "procedural", "boot": "always",
        "files": 6,
    }  # fmt: skip
    assert layers["knowledge"]["files"] == 1
    assert layers["notes"]["files"] == 0  # its **/*.md matches them all; it owns none
    assert data["index"]["built"] and data["index"]["items"] == starters + 3
    assert data["history"] == {"activities": 0}
    assert data["notebook"] == {"entries": 1, "agent_entries": 1, "max_agent_entries": 4}
    assert data["knowledge"] == {
        "sections": {"conventions": 5},
        "total_chars": 5,
        "section_max": 3000,
        "total_max": 15000,
        "over_sections": [],
        "observations": 1,
        "observations_max": 500,
    }
    assert data["state"] == {"entries": 0, "expired": 0}
    assert data["dream"] == {"due": False, "why": "1 observation, fewer than 50", "last": None}
    assert data["search"] == {"embedder": "hashing", "semantic": True, "problem": None}

    text = invoke("status", "--dir", folder)
    assert text.exit_code == 0, text.output
    lines = [line.rstrip() for line in text.stdout.splitlines()]
    assert lines[:2] == [f"Folder   {folder.resolve()}", "Layout   default; agent default"]
    assert lines[-7:] == [
        f"Index    {data['index']['items']} items",
        "Search   keyword and semantic (hashing)",
        "History  0 activities",
        "Notebook 1 of 4 agent entries",
        "Knowledge 1 section, 5 of 15000 chars; 1 of 500 observations",
        "State    0 snapshots, 0 expired",
        "Dream    never run; not due (1 observation, fewer than 50)",
    ]


@pytest.mark.parametrize(
    ("embedder", "line"),
    [
        ("nosuch", "Search   keyword only: no embedder named 'nosuch'; known: "),
        ("openai:nomic-embed-text", "Search   keyword only: the openai embedder needs a server"),
        ("none", 'Search   keyword only ([index] embedder = "none")'),
    ],
)
def test_status_says_when_search_goes_by_keyword_alone_and_why(
    folder: Path, monkeypatch: pytest.MonkeyPatch, embedder: str, line: str
) -> None:
    """A typo in [index] embedder left search keyword-only, and status said nothing."""
    monkeypatch.setenv("MEMDIR_EMBEDDER", embedder)
    text = invoke("status", "--dir", folder)
    assert text.exit_code == 0, text.output
    assert [row for row in text.stdout.splitlines() if row.startswith("Search ")][0].startswith(
        line
    )
    search = ok_json(invoke("status", "--dir", folder, "--json"))["search"]
    assert (search["embedder"], search["semantic"]) == (embedder, False)
    assert (search["problem"] is None) == (embedder == "none")


def test_status_sees_a_model_file_that_fails_its_pinned_hash(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """status made the embedder but loaded no model, so a bad model file (which sends
    every search to keywords) showed as semantic search."""
    from memdir.index import model_files

    monkeypatch.setenv("MEMDIR_EMBEDDER", "minilm")
    assert ok_json(invoke("status", "--dir", folder, "--json"))["search"]["semantic"]
    monkeypatch.setattr(model_files, "MINILM_SHA256", "0" * 64)  # as if the file had changed
    search = ok_json(invoke("status", "--dir", folder, "--json"))["search"]
    assert search["semantic"] is False and "is not the model file" in search["problem"]
    text = invoke("status", "--dir", folder).stdout
    assert "pip install --force-reinstall" in text


def test_status_and_init_count_one_thing_in_the_singular(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    folder.mkdir()
    (folder / "MEMORY.md").write_text("# Memory\n\n## Prefs\n- likes tea\n")
    init = invoke("init", folder)
    assert init.exit_code == 0, init.output
    assert (
        "  migrated: MEMORY.md split into 1 knowledge section, 0 observations and 0 state entries\n"
    ) in init.stdout
    fresh = tmp_path / "fresh"
    assert invoke("init", fresh).exit_code == 0
    shutil.rmtree(fresh / "identity")  # its starter files are items too
    assert invoke("reindex", "--dir", fresh).exit_code == 0
    assert invoke("update", "conventions", "cents", "--dir", fresh).exit_code == 0
    assert ok_json(invoke("status", "--dir", fresh, "--json"))["index"]["items"] == 1
    status = invoke("status", "--dir", fresh)
    assert "Index    1 item\n" in status.stdout


def test_serve_refuses_a_folder_that_is_not_a_memory_folder(tmp_path: Path) -> None:
    result = invoke("serve", "--dir", tmp_path)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith(f"error: {tmp_path.resolve()} has no memdir.toml")


def test_serve_beyond_loopback_without_a_token_exits_1(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMDIR_TOKEN", raising=False)
    result = invoke("serve", "--dir", folder, "--http", "--host", "0.0.0.0", "--port", "9")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith("error: serving on 0.0.0.0 exposes this memory")
    assert "give --token" in result.stderr
