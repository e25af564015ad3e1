"""memdir's tools as LangChain tools, run by an agent graph built of LangGraph's prebuilt
``ToolNode`` and ``tools_condition`` (the ReAct loop, compiled for real) with a chat
model that plays a script: no network."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langgraph.prebuilt")

from langchain_core.language_models.fake_chat_models import (  # noqa: E402
    FakeMessagesListChatModel,
)
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402
from langgraph.prebuilt import ToolNode, tools_condition  # noqa: E402

import memdir  # noqa: E402
from memdir.integrations.langchain import memdir_tools  # noqa: E402


class ScriptedModel(FakeMessagesListChatModel):
    """Answers from its list in turn; takes the tools it is bound to as a model would."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self


def call(name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{n}"}])


def test_tools_have_memdirs_schemas(folder: Path) -> None:
    with memdir.open(folder, embedder="hashing") as memory:
        tools = memdir_tools(memory)
        names = [t.name for t in tools]
        assert "memory_save" in names and "memory_search" in names
        save = next(t for t in tools if t.name == "memory_save")
        assert save.args["content"]["type"] == "string"
        result = json.loads(save.invoke({"content": "Dana keeps the release checklist."}))
        assert result["ok"] and result["store"] == "knowledge.md"
        refused = json.loads(save.invoke({"content": ["a", "b"]}))
        assert refused["ok"] is False and "one at a time" in refused["reason"]
        with pytest.raises(ValueError, match="no memdir tool"):
            memdir_tools(memory, names=["rm_rf"])


def test_a_react_agent_saves_and_recalls(folder: Path) -> None:
    with memdir.open(folder, embedder="hashing") as memory:
        model = ScriptedModel(
            responses=[
                call("memory_save", {"content": "Dana's cat is called Miso."}, 1),
                AIMessage(content="Saved."),
                call("memory_search", {"query": "Dana cat"}, 2),
                AIMessage(content="Miso."),
            ]
        )
        tools = memdir_tools(memory, names=["memory_save", "memory_search"])

        def think(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        builder = StateGraph(MessagesState)
        builder.add_node("agent", think)
        builder.add_node("tools", ToolNode(tools))
        builder.add_edge(START, "agent")
        builder.add_conditional_edges("agent", tools_condition)
        builder.add_edge("tools", "agent")
        agent = builder.compile()
        saved = agent.invoke({"messages": [("user", "Remember Dana's cat is Miso.")]})
        tool_answer = next(m for m in saved["messages"] if isinstance(m, ToolMessage))
        assert json.loads(str(tool_answer.content))["ok"]

        async def recall() -> dict[str, Any]:
            return await agent.ainvoke({"messages": [("user", "What is Dana's cat called?")]})

        recalled = asyncio.run(recall())
        found = next(m for m in recalled["messages"] if isinstance(m, ToolMessage))
        hits = json.loads(str(found.content))["hits"]
        assert "Miso" in hits[0]["snippet"]
        assert recalled["messages"][-1].content == "Miso."
    with memdir.open(folder, embedder="hashing") as memory:
        assert any("Miso" in o.content for o in memory.knowledge.observations())
