"""The agent tools through the one dispatcher: every tool succeeds and refuses as it should,
and the one definition exports to OpenAI, Anthropic and MCP shapes."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

import memdir
from memdir.context.tokens import ByteCounter
from memdir.errors import ManifestError
from memdir.layouts import LAYOUTS
from memdir.testing import FakeClock
from memdir.tools import Tool, Tools
from memdir.tools.catalog import TOOLS
from memdir.tools.registry import COMPACT_BUDGET_TOKENS


@pytest.fixture
def tools(memory: memdir.Memory) -> Tools:
    return Tools(memory)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".memdir" not in p.parts
    }


def _prepare(tools: Tools) -> None:
    """What the cases below build on: an observation, a card, a pending sub-agent."""
    assert tools.call("memory_save", {"content": "Alice Moreau prefers email", "tags": ["crm"]})[
        "ok"
    ]
    assert tools.call("card_write", {"card": "alice-moreau", "body": "Buyer at Acme."})["ok"]
    assert tools.call("update_notebook", {"key": "task", "text": "Renew the Acme contract"})["ok"]
    assert tools.call("state_update", {"key": "deploy", "text": "staging green"})["ok"]
    assert tools.call("working_state_spawn", {"label": "scout", "task": "price survey"})["ok"]
    assert tools.call(
        "lesson_add",
        {
            "category": "deploys",
            "mistake": "Deployed on a Friday",
            "what_happened": "Nobody saw the outage",
            "rule": "Deploy Monday to Thursday",
        },
    )["ok"]


# name -> (arguments that succeed, what the result must hold)
SUCCESS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "update_notebook": ({"key": "next", "text": "Call Alice"}, {"store": "NOTEBOOK.md"}),
    "clear_notebook": ({"key": "task"}, {"store": "NOTEBOOK.md", "action": "cleared"}),
    "memory_save": ({"content": "Acme renews in March", "type": "fact"}, {"action": "saved"}),
    "memory_search": ({"query": "Alice email"}, {"store": ".memdir/index.db"}),
    "memory_update": (
        {"section": "conventions", "content": "Email before calling."},
        {"store": "knowledge.md", "action": "created"},
    ),
    "memory_get": ({"path": "knowledge.md", "from_line": 1, "to_line": 2}, {"lines": [1, 2]}),
    "state_update": ({"key": "deploy", "text": "prod green"}, {"store": "state.md"}),
    "recall_activity": ({"action": "list"}, {"store": ".memdir/history.db"}),
    "card_read": ({"card": "alice-moreau"}, {"store": "vault/alice-moreau.md", "touched": True}),
    "card_write": ({"card": "acme", "type": "company", "body": "Client."}, {"action": "created"}),
    "card_history": ({"card": "alice-moreau", "text": "Signed the renewal"}, {"action": "updated"}),
    "journal_append": (
        {"kind": "decision", "text": "Renew for two years", "why": "price lock"},
        {"store": "journal/2026-11-30.md", "key": "Decisions"},
    ),
    "lesson_add": (
        {"category": "email", "mistake": "a", "what_happened": "b", "rule": "c"},
        {"store": "lessons.md"},
    ),
    "lesson_check": ({"query": "deploy on Friday"}, {"store": ".memdir/index.db"}),
    "working_state_start": ({"task": "Draft the renewal"}, {"store": "NOTEBOOK.md"}),
    "working_state_finish": ({}, {"store": "NOTEBOOK.md"}),
    "working_state_spawn": ({"label": "writer", "task": "draft email"}, {"store": "NOTEBOOK.md"}),
    "working_state_result": (
        {"label": "scout", "summary": "3 quotes", "verified": True},
        {"store": "NOTEBOOK.md"},
    ),
    "memory_list": ({"limit": 5}, {"store": "knowledge.md", "count": 1}),
    "memory_delete": ({"id": "obs_missing", "ids": []}, {}),  # checked as a refusal below
    "memory_update_longterm": (
        {"section": "preferences", "content": "Short emails.", "mode": "patch"},
        {"store": "knowledge.md"},
    ),
    "update_working_memory": ({"key": "focus", "value": "Acme"}, {"store": "NOTEBOOK.md"}),
    "clear_working_memory": ({"key": "task"}, {"store": "NOTEBOOK.md"}),
}

# name -> (arguments that must be refused, words the reason must contain)
REFUSAL: dict[str, tuple[Any, str]] = {
    "update_notebook": ({"key": "x", "text": "y" * 7000}, "6,000-character limit"),
    "clear_notebook": ({"key": "no-such-entry"}, "no notebook entry"),
    "memory_save": ({"content": ["one", "two"]}, "once per item"),
    "memory_search": ({"query": "x", "mode": "sideways"}, "must be one of"),
    "memory_update": ({"section": "big", "content": "word " * 1000}, "3000"),
    "memory_get": ({"path": "../../etc/passwd"}, "leaves the memory folder"),
    "state_update": ({"key": "deploy"}, "text is required"),
    "recall_activity": ({"action": "get", "activity_id": "act-nope"}, "no activity"),
    "card_read": ({"card": "nobody"}, "no card 'nobody'"),
    "card_write": ({"card": "   "}, "name the card"),
    "card_history": ({"card": "nobody", "text": "x"}, "no card"),
    "journal_append": ({"kind": "rumour", "text": "x"}, "must be one of"),
    "lesson_add": ({"category": "x", "mistake": "a", "what_happened": "b"}, "rule is required"),
    "lesson_check": ({}, "query is required"),
    "working_state_start": ({"task": ""}, "task is empty"),
    "working_state_finish": ({"task": 3}, "must be a string"),
    "working_state_spawn": ({"label": "x"}, "task is required"),
    "working_state_result": ({"label": "ghost", "summary": "x", "verified": False}, "no pending"),
    "memory_list": ({"limit": 0}, "at least 1"),
    "memory_delete": ({"ids": ["obs_nope"]}, "none of these observation ids exist"),
    "memory_update_longterm": ({"section": "_observations", "content": "x"}, "buffer"),
    "update_working_memory": ({"text": "x"}, "key is required"),
    "clear_working_memory": ({"key": "ghost"}, "no notebook entry"),
}


def test_every_tool_has_a_success_and_a_refusal_case() -> None:
    names = {tool.name for tool in TOOLS}
    assert names == set(SUCCESS) == set(REFUSAL)


def _check_output(tool: Tool, result: dict[str, Any]) -> None:
    """The result fits the tool's outputSchema (what an MCP client checks), and every
    field it has is declared there (the schema itself stays open to later fields)."""
    schema = tool.output_schema()
    assert schema is not None, f"{tool.name} declares no output schema"
    Draft202012Validator(schema).validate(result)
    undeclared = set(result) - set(schema["properties"])
    assert not undeclared, (
        f"{tool.name} returns {sorted(undeclared)}, which its outputSchema does not declare "
        "(src/memdir/tools/outputs.py)"
    )


@pytest.mark.parametrize("name", sorted(set(SUCCESS) - {"memory_delete"}))
def test_each_tool_succeeds_and_names_its_store(tools: Tools, name: str) -> None:
    """Every tool the folder serves runs, offered or not (state_update and the working
    state tools are not in the default layout's compact set)."""
    _prepare(tools)
    arguments, expected = SUCCESS[name]
    result = tools.call(name, arguments)
    assert result["ok"] is True and result["status"] == "ok", result
    assert isinstance(result["store"], str) and result["store"]
    for key, value in expected.items():
        assert result[key] == value, (key, result)
    _check_output(tools.get(name), result)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(REFUSAL))
def test_each_tool_refuses_with_a_reason_and_changes_nothing(
    tools: Tools, folder: Path, name: str
) -> None:
    _prepare(tools)
    before = _snapshot(folder)
    arguments, words = REFUSAL[name]
    result = tools.call(name, arguments)
    assert result["ok"] is False and result["status"] == "error", result
    assert words in result["reason"], result["reason"]
    assert _snapshot(folder) == before
    _check_output(tools.get(name), result)  # type: ignore[arg-type]


def test_memory_delete_removes_observations_by_id(tools: Tools) -> None:
    saved = tools.call("memory_save", {"content": "Temporary note"})
    result = tools.call("memory_delete", {"id": saved["key"]})
    assert result["ok"] and result["removed"] == [saved["key"]]
    _check_output(tools.get("memory_delete"), result)  # type: ignore[arg-type]
    assert result["archive"].startswith("archive/")
    assert tools.call("memory_list", {})["count"] == 0


def test_memory_save_through_the_tool_rejects_an_array(tools: Tools, folder: Path) -> None:
    """A-memory-save-rejects-array, through the dispatcher: one observation per call."""
    before = (folder / "knowledge.md").read_bytes()
    result = tools.call("memory_save", {"content": ["first", "second"]})
    assert result == {
        "ok": False,
        "status": "error",
        "store": "knowledge.md",
        "reason": "memory_save: content must be a string, not an array of 2; "
        "memory_save takes one at a time, so call it once per item",
    }
    assert (folder / "knowledge.md").read_bytes() == before


def test_results_report_the_knowledge_store_path(tools: Tools) -> None:
    """A-tool-result-store-path: tools name knowledge.md, so agents never invent a path."""
    for name, args in [
        ("memory_save", {"content": "x y z"}),
        ("memory_update", {"section": "s", "content": "t"}),
        ("memory_update_longterm", {"section": "s", "content": "u", "mode": "append"}),
    ]:
        assert tools.call(name, args)["store"] == "knowledge.md"


def test_bad_calls_get_sentences_not_exceptions(tools: Tools) -> None:
    unknown = tools.call("memory_forget", {})
    assert unknown["ok"] is False and "no tool named 'memory_forget'" in unknown["reason"]
    assert "memory_save" in unknown["reason"]  # it lists what there is
    extra = tools.call("memory_save", {"content": "x", "importance": 5})
    assert "unknown argument importance; memory_save takes content, type, tags" in extra["reason"]
    missing = tools.call("memory_save", {})
    assert missing["reason"].startswith("memory_save: content is required")
    assert tools.call("memory_save", "{not json")["reason"].startswith(
        "memory_save: the arguments are not valid JSON"
    )
    assert "must be a JSON object" in tools.call("memory_save", ["x"])["reason"]  # type: ignore[arg-type]
    assert "a whole number" in tools.call("memory_search", {"query": "x", "k": "ten"})["reason"]
    # a misspelt layer found nothing, and looked like a memory with nothing in it
    misspelt = tools.call("memory_search", {"query": "x", "layers": ["knowlege", "vault"]})
    assert misspelt["ok"] is False
    assert misspelt["reason"].startswith(
        "memory_search: no layer 'knowlege' in memdir.toml; its layers are: identity, knowledge,"
    )


def test_arguments_as_a_json_string_work(tools: Tools) -> None:
    """OpenAI hands tool arguments over as a JSON string."""
    result = tools.call("memory_save", json.dumps({"content": "Bob plays jazz"}))
    assert result["ok"] and result["action"] == "saved"
    hits = tools.call("memory_search", '{"query": "jazz"}')["hits"]
    assert hits and hits[0]["path"] == "knowledge.md" and "**jazz**" in hits[0]["snippet"]


def test_an_internal_error_becomes_a_structured_error(memory: memdir.Memory) -> None:
    def broken(memory: memdir.Memory, args: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("disk on fire")

    tool = Tool("broken", "Breaks.", {"type": "object"}, broken, store=lambda m: "NOTEBOOK.md")
    result = Tools(memory, [tool]).call("broken", {})
    assert result["ok"] is False and result["store"] == "NOTEBOOK.md"
    assert "broken failed inside memdir (RuntimeError: disk on fire)" in result["reason"]


def test_reading_a_card_touches_it(tools: Tools, memory: memdir.Memory, clock: FakeClock) -> None:
    tools.call("card_write", {"card": "acme", "body": "Client since 2024."})
    clock.advance(days=30)
    memory.decay()
    assert memory.vault.read("acme", touch=False).meta["tier"] == "cold"  # type: ignore[union-attr]
    read = tools.call("memory_get", {"path": "vault/acme.md"})
    assert read["ok"] and read["touched"] is True
    assert memory.vault.read("acme", touch=False).meta["tier"] == "warm"  # type: ignore[union-attr]
    assert tools.call("card_read", {"card": "acme"})["meta"]["tier"] == "active"
    # a search that finds it does not touch it
    tools.call("memory_search", {"query": "client since", "mode": "deep"})
    assert memory.vault.read("acme", touch=False).meta["access_count"] == 2  # type: ignore[union-attr]


def test_recall_activity_lists_searches_and_gets(tools: Tools, memory: memdir.Memory) -> None:
    with memory.history.activity("task", "Renew the Acme contract", task_id="t-1") as run:
        run.log("tool_start", "search_crm")
    listed = tools.call("recall_activity", {"action": "list", "task_id": "t-1"})
    assert listed["count"] == 1
    activity_id = listed["activities"][0]["id"]
    found = tools.call("recall_activity", {"action": "search", "query": "acme renewal"})
    assert found["activities"][0]["id"] == activity_id
    got = tools.call("recall_activity", {"action": "get", "activity_id": activity_id})
    assert got["activity"]["logs"][0]["content"] == "search_crm"
    for result in (listed, found, got):
        _check_output(tools.get("recall_activity"), result)  # type: ignore[arg-type]
    bad = tools.call("recall_activity", {"action": "list", "since": "last tuesday"})
    assert "since must be a date" in bad["reason"]


LATER = "since (2026-12-01) is later than until (2026-11-01); nothing is dated between them"


def test_a_window_that_ends_before_it_starts_is_refused(
    tools: Tools, memory: memdir.Memory
) -> None:
    """since later than until answered an empty list, as if nothing were remembered: the
    library raises ValueError, the tools answer {ok: false} with why (over MCP:
    test_mcp_server.py)."""
    memory.knowledge.save("The storm report is due")
    with memory.history.activity("task", "Write the storm report"):
        pass
    backwards = {"since": "2026-12-01", "until": "2026-11-01"}
    with pytest.raises(ValueError, match=re.escape(LATER)):
        memory.search("storm", **backwards)
    with pytest.raises(ValueError, match=re.escape(LATER)):
        memory.history.recent(since=datetime(2026, 12, 1), until=datetime(2026, 11, 1))
    searched = tools.call("memory_search", {"query": "storm", **backwards})
    assert (searched["ok"], searched["reason"]) == (False, f"memory_search: {LATER}: give the "
                                                   "earlier moment as since")  # fmt: skip
    listed = tools.call("recall_activity", {"action": "list", **backwards})
    assert listed["ok"] is False and listed["reason"].startswith(f"recall_activity: {LATER}")
    # a day is a whole day, as the tools say ("on or before this day"): its midnight
    # left out the day's items, and a window of one day answered none
    one_day = {"since": "2026-11-30", "until": "2026-11-30"}
    assert tools.call("memory_search", {"query": "storm", **one_day})["count"] == 1
    assert tools.call("recall_activity", {"action": "list", **one_day})["count"] == 1
    assert len(memory.search("storm", until="2026-11-30")) == 1
    assert memory.search("storm", until="2026-11-29") == []
    # a search of the history takes no until: it answered as if the window held
    found = tools.call("recall_activity", {"action": "search", "query": "storm", **backwards})
    assert found["ok"] is False
    assert found["reason"].startswith("recall_activity: until goes with action 'list'")


def test_tools_follow_the_manifest(tmp_path: Path) -> None:
    """A folder without a vault offers no card tools; legacy aliases are hidden by default;
    an audit journal (the notebook layout's daily-logs, for people only) gets no tool."""
    memdir.init(tmp_path / "nb", layout="notebook")
    with memdir.open(tmp_path / "nb", embedder="none") as memory:
        tools = Tools(memory)
        names = tools.names()
        assert "memory_save" in names and "update_notebook" in names
        assert not {"card_read", "card_write", "lesson_add", "journal_append"} & set(names)
        assert "memory_list" not in names and "memory_list" in tools.names(legacy=True)
        for name in ("card_read", "journal_append"):
            refused = tools.call(name, {"card": "x"})
            assert f"no tool named {name!r}" in refused["reason"]
        assert not list((tmp_path / "nb").glob("daily-logs/*.md"))


# -- what a folder offers ------------------------------------------------------------


def _tokens(shapes: list[dict[str, Any]]) -> int:
    return ByteCounter().count(json.dumps(shapes))


def test_the_default_layouts_compact_set_fits_its_token_budget(tools: Tools) -> None:
    """Schemas go with every turn: the default layout offers the tools a model needs, with
    their common arguments, in at most COMPACT_BUDGET_TOKENS (bytes / 4, Anthropic shape)."""
    assert tools.offer == "compact"
    spent = _tokens(tools.anthropic())
    assert spent <= COMPACT_BUDGET_TOKENS, f"{spent} tokens of tool schemas"
    everything = Tools(tools.memory, offer="all")
    assert _tokens(everything.anthropic()) > spent
    names = tools.names()
    assert {"update_notebook", "memory_save", "memory_search", "memory_get"} <= set(names)
    assert "memory_update" in names and "card_write" in names and "recall_activity" in names
    # the notebook holds the working state here; card_read is memory_get on a card
    assert not [n for n in names if n.startswith("working_state_")]
    assert "card_read" not in names and "memory_list" not in names
    search = {t["name"]: t for t in tools.anthropic()}["memory_search"]["input_schema"]
    assert set(search["properties"]) == {"query", "mode"}  # since, layers... still accepted
    assert tools.call("memory_search", {"query": "x", "since": "2026-01-01"})["ok"]
    full = {t["name"]: t for t in everything.anthropic()}["memory_search"]["input_schema"]
    assert {"since", "layers", "kinds"} <= set(full["properties"])


def test_each_layout_offers_what_its_layers_serve(tmp_path: Path) -> None:
    for layout in LAYOUTS:
        memdir.init(tmp_path / layout, layout=layout)
        with memdir.open(tmp_path / layout, embedder="none") as memory:
            tools = Tools(memory)
            served = set(tools.names(legacy=True))
            assert set(tools.names()) <= set(Tools(memory, offer="all").names()) <= served
            for name in served:  # offered or not, each one the layers serve runs
                assert memory.manifest.serves("vault") or not name.startswith("card_")
            work = {n for n in tools.names() if n.startswith("working_state_")}
            # a workstate layer (the workspace layout) is what these tools are for
            assert bool(work) == memory.has("workstate"), layout
            assert _tokens(tools.anthropic()) <= COMPACT_BUDGET_TOKENS, layout


def _with_tools(folder: Path, table: str) -> None:
    manifest = folder / "memdir.toml"
    text = manifest.read_text(encoding="utf-8")
    start = text.index("\n[tools]") + 1
    end = text.index("\n[layers.") + 1
    manifest.write_text(text[:start] + table + "\n" + text[end:], encoding="utf-8")


def test_the_manifest_offers_more_or_less(folder: Path) -> None:
    _with_tools(
        folder, '[tools]\noffer = "all"\ninclude = ["memory_list"]\nexclude = ["clear_notebook"]\n'
    )
    with memdir.open(folder, embedder="none") as memory:
        tools = Tools(memory)
        names = tools.names()
        assert "working_state_start" in names and "card_read" in names and "state_update" in names
        assert "memory_list" in names and "clear_notebook" not in names
        assert "update_working_memory" not in names  # a legacy alias only when named
        assert tools.call("clear_notebook", {})["ok"]  # left out, still runs by name
        schema = {t["name"]: t for t in tools.anthropic()}["memory_search"]["input_schema"]
        assert "since" in schema["properties"]  # "all": every argument


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ('offer = "most"', "tools.offer: Input should be 'compact' or 'all'"),
        ('include = ["memory_savе"]', "tools.include: no tool is named 'memory_savе'"),
        ('exclude = ["nope"]', "tools.exclude: no tool is named 'nope'"),
        ('include = ["memory_list"]\nexclude = ["memory_list"]', "both included and excluded"),
        ('offers = "all"', "tools.offers: unknown key"),
    ],
)
def test_a_bad_tools_table_is_an_error_naming_its_key(folder: Path, table: str, words: str) -> None:
    _with_tools(folder, "[tools]\n" + table + "\n")
    with pytest.raises(ManifestError, match=re.escape(words)):
        memdir.open(folder, embedder="none")


def test_including_a_tool_the_layers_cannot_serve_is_an_error(tmp_path: Path) -> None:
    memdir.init(tmp_path / "nb", layout="notebook")
    _with_tools(tmp_path / "nb", '[tools]\ninclude = ["card_write"]\n')
    with pytest.raises(ManifestError) as raised:
        memdir.open(tmp_path / "nb", embedder="none")
    assert "tools.include: card_write needs a layer with store = 'vault'" in str(raised.value)
    lines = (tmp_path / "nb" / "memdir.toml").read_text(encoding="utf-8").splitlines()
    assert raised.value.line == lines.index('include = ["card_write"]') + 1


def test_compact_schemas_are_part_of_the_full_ones() -> None:
    """What the compact set offers is a narrower form of what a call is checked against:
    a call made from it is a valid call."""
    for tool in TOOLS:
        brief, full = tool.schema(compact=True), tool.schema()
        assert set(brief["properties"]) <= set(full["properties"]), tool.name
        for name, spec in brief["properties"].items():
            wide = full["properties"][name]
            assert spec["type"] == wide["type"], (tool.name, name)
            assert set(spec.get("enum", [])) <= set(wide.get("enum", spec.get("enum", [])))
        assert set(full.get("required", [])) <= set(brief.get("required", [])), tool.name


# -- the three schema shapes ---------------------------------------------------------

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_every_schema_is_valid_json_schema_and_strict_about_arguments() -> None:
    for tool in TOOLS:
        Draft202012Validator.check_schema(dict(tool.parameters))
        Draft202012Validator.check_schema(tool.output_schema() or {})
        assert tool.output_schema() is not None, tool.name
        assert tool.parameters["type"] == "object"
        assert tool.parameters["additionalProperties"] is False
        assert NAME_RE.match(tool.name)
        assert 20 <= len(tool.description) <= 1024, tool.name
        for prop, spec in tool.parameters["properties"].items():
            assert spec.get("description"), (tool.name, prop)


def test_exports_share_one_definition(tools: Tools) -> None:
    openai = tools.openai()
    anthropic = tools.anthropic()
    mcp = tools.mcp()
    assert [t["function"]["name"] for t in openai] == tools.names()
    assert [t["name"] for t in anthropic] == tools.names() == [t["name"] for t in mcp]
    save = tools.get("memory_save")
    assert save is not None
    by_name = {t["function"]["name"]: t for t in openai}
    assert by_name["memory_save"] == {
        "type": "function",
        "function": {
            "name": "memory_save",
            "description": save.description,
            "parameters": save.schema(compact=True),
        },
    }
    assert {t["name"]: t for t in anthropic}["memory_save"] == {
        "name": "memory_save",
        "description": save.description,
        "input_schema": save.schema(compact=True),
    }
    search = {t["name"]: t for t in mcp}["memory_search"]
    definition = tools.get("memory_search")
    assert definition is not None
    assert search["inputSchema"] == definition.schema(compact=True)
    assert search["outputSchema"] == definition.output_schema()
    assert search["outputSchema"]["properties"]["hits"]["type"] == "array"
    assert search["annotations"]["readOnlyHint"] is True
    assert {t["name"]: t for t in mcp}["clear_notebook"]["annotations"]["destructiveHint"] is True
    json.dumps([openai, anthropic, mcp])  # all plain JSON


@pytest.mark.parametrize("shape", ["openai", "anthropic"])
def test_a_call_shaped_by_each_provider_dispatches(tools: Tools, shape: str) -> None:
    """What each provider sends back for a tool call goes straight into call()."""
    if shape == "openai":  # tool_calls[i].function: name + arguments as a JSON string
        call = {"name": "memory_save", "arguments": '{"content": "Carol runs ops"}'}
        result = tools.call(call["name"], call["arguments"])
    else:  # content block {type: tool_use, name, input: {...}}
        block = {"type": "tool_use", "name": "memory_save", "input": {"content": "Carol runs ops"}}
        result = tools.call(block["name"], block["input"])  # type: ignore[arg-type]
    assert result["ok"] and result["store"] == "knowledge.md"


def test_the_reference_in_docs_is_current() -> None:
    """docs/tools.md carries the reference generated from the definitions (make docs)."""
    from memdir.tools.reference import reference, splice

    doc = Path(__file__).parent.parent / "docs" / "tools.md"
    text = doc.read_text(encoding="utf-8")
    assert splice(text, reference(TOOLS)) == text, "docs/tools.md is stale: run make docs"
    for tool in TOOLS:
        assert f"### `{tool.name}`" in text


def test_an_agent_never_reaches_another_agents_folder(memdir_home: Path, tmp_path: Path) -> None:
    """Two agents in one home: paths, '..' and symlinks out of the folder are refused;
    a vault is shared only where the manifest mounts it."""
    from memdir.home import resolve_folder

    one = resolve_folder(None, "one", create=True)
    two = resolve_folder(None, "two", create=True)
    (two / "knowledge.md").write_text("# Knowledge\n\n## secrets\nTwo's private notes.\n")
    (one / "peek.md").symlink_to(two / "knowledge.md")
    (one / "vault" / "peek.md").symlink_to(two / "knowledge.md")  # a card path, a file outside
    (one / "vault" / "theirs").symlink_to(two / "vault", target_is_directory=True)
    with memdir.open(one, embedder="none") as memory:
        tools = Tools(memory)
        for path in ["../two/knowledge.md", str(two / "knowledge.md"), "peek.md", "vault/peek.md"]:
            result = tools.call("memory_get", {"path": path})
            assert result["ok"] is False, path
            assert "memory folder" in result["reason"]
        assert tools.call("card_write", {"card": "x", "folder": "../../two"})["ok"] is False
        found = tools.call("memory_search", {"query": "Two's private notes", "mode": "deep"})
        assert found["ok"] and not [h for h in found["hits"] if "private" in h["snippet"]]
    before = (two / "knowledge.md").read_bytes()
    assert (two / "knowledge.md").read_bytes() == before

    shared = tmp_path / "team-vault"
    manifest = (one / "memdir.toml").read_text()
    (one / "memdir.toml").write_text(
        manifest.replace(
            'paths = ["vault/**/*.md"]', f'paths = ["**/*.md"]\nmount = "{shared.as_posix()}"'
        )
    )
    with memdir.open(one, embedder="none") as memory:
        written = Tools(memory).call("card_write", {"card": "project-x", "body": "Shared."})
        assert written["ok"] and written["store"] == "vault/project-x.md"
        assert (shared / "project-x.md").is_file()
        read = Tools(memory).call("card_read", {"card": "project-x"})
        assert read["ok"] and "Shared." in read["body"]


def test_memory_search_says_which_tier_each_hit_came_from(
    memory: memdir.Memory, folder: Path
) -> None:
    tools = Tools(memory)
    search = {tool.name: tool for tool in TOOLS}["memory_search"]
    (folder / "journal" / "2020-05-04.md").write_text(
        "# 2020-05-04\n\n## user\nQuilla bought a sailboat named Wren.\n"
    )
    widened = tools.call("memory_search", {"query": "Quilla's sailboat"})
    _check_output(search, widened)
    assert [hit["tier"] for hit in widened["hits"]] == ["archive"]
    assert widened["widened"] == ["cold", "archive"] and "colder" not in widened
    assert widened["note"].startswith("Nothing strong in the core, active and warm tiers")

    tools.call("memory_save", {"content": "Quilla sold the sailboat Wren in May"})
    near = tools.call("memory_search", {"query": "Quilla sailboat Wren"})
    _check_output(search, near)
    assert [hit["tier"] for hit in near["hits"]] == ["active"] and "widened" not in near
    assert near["colder"] == 1
    assert near["note"] == "1 more in colder tiers (cold and archive): mode 'deep' shows them."
    deep = tools.call("memory_search", {"query": "Quilla sailboat Wren", "mode": "deep"})
    assert {hit["tier"] for hit in deep["hits"]} == {"active", "archive"} and "note" not in deep


def test_memory_search_with_an_empty_query_is_a_listing(tools: Tools) -> None:
    tools.call("memory_save", {"content": "Bob plays jazz"})
    listed = tools.call("memory_search", {"query": ""})
    _check_output({tool.name: tool for tool in TOOLS}["memory_search"], listed)
    assert listed["listing"] is True and listed["count"] == 1
    assert listed["note"] == "An empty query: listing the most recent observations, newest first."
    assert "score" not in listed["hits"][0] and "parts" not in listed["hits"][0]
