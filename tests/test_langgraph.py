"""``MemdirStore``: LangGraph's BaseStore over a memory folder, tested against the real
package, inside a real compiled ``StateGraph`` too (no model: the nodes are functions)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("langgraph")

from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

import memdir  # noqa: E402
from memdir.integrations.langgraph import MemdirStore  # noqa: E402


@pytest.fixture
def store(folder: Path) -> MemdirStore:
    with memdir.open(folder, embedder="hashing") as memory:
        memory.search("warm up")  # the index exists
    opened = MemdirStore(memdir.open(folder, embedder="hashing"))
    yield opened
    opened.memory.close()


def test_put_get_is_a_readable_card(store: MemdirStore, folder: Path) -> None:
    value = {"content": "Dana prefers short answers.", "lang": "en", "score": 3}
    store.put(("users", "dana"), "style", value)
    item = store.get(("users", "dana"), "style")
    assert item is not None
    assert item.value == value and item.key == "style" and item.namespace == ("users", "dana")
    cards = list((folder / "vault" / "langgraph" / "users" / "dana").glob("style-*.md"))
    assert len(cards) == 1
    text = cards[0].read_text()
    assert text.startswith("---\n") and "# style" in text  # a card: frontmatter, a title
    assert "Dana prefers short answers." in text and "- lang: en" in text
    store.put(("users", "dana"), "style", {"content": "Dana prefers bullet points."})
    again = store.get(("users", "dana"), "style")
    assert again is not None and again.value == {"content": "Dana prefers bullet points."}
    assert again.created_at == item.created_at and again.updated_at >= item.updated_at


def test_keys_a_slug_would_merge_stay_apart(store: MemdirStore) -> None:
    store.put(("notes",), "My Key", {"n": 1})
    store.put(("notes",), "my-key", {"n": 2})
    store.put(("other",), "my-key", {"n": 3})
    assert store.get(("notes",), "My Key").value == {"n": 1}  # type: ignore[union-attr]
    assert store.get(("notes",), "my-key").value == {"n": 2}  # type: ignore[union-attr]
    assert store.get(("other",), "my-key").value == {"n": 3}  # type: ignore[union-attr]
    assert store.get(("notes",), "missing") is None


def test_delete_archives_the_card(store: MemdirStore, folder: Path) -> None:
    store.put(("todo",), "a", {"text": "ship it"})
    store.delete(("todo",), "a")
    assert store.get(("todo",), "a") is None
    assert list((folder / "archive").rglob("a-*.md"))  # moved, not lost
    store.delete(("todo",), "a")  # deleting what is gone is fine


def test_search_with_a_query_and_filters(store: MemdirStore) -> None:
    store.put(("docs", "u1"), "deploy", {"content": "The deploy needs a rollback plan.", "v": 2})
    store.put(("docs", "u1"), "lunch", {"content": "Lunch is at noon on Fridays.", "v": 5})
    store.put(("docs", "u2"), "deploy2", {"content": "Rollback plan lives in the wiki.", "v": 9})
    hits = store.search(("docs",), query="rollback plan for the deploy")
    keys = [h.key for h in hits]
    assert "deploy" in keys and "lunch" not in keys[:1]
    assert all(h.score is not None for h in hits)
    assert [h.key for h in store.search(("docs", "u2"), query="rollback")] == ["deploy2"]
    filtered = store.search(("docs",), filter={"v": {"$gte": 5}})
    assert sorted(h.key for h in filtered) == ["deploy2", "lunch"]
    assert [h.key for h in store.search(("docs",), filter={"v": 2})] == ["deploy"]
    assert len(store.search(("docs",), limit=1)) == 1
    assert len(store.search(("docs",), limit=10, offset=2)) == 1


def test_observations_are_knowledge_observations(store: MemdirStore) -> None:
    store.put(("observations",), "pref-1", {"content": "Dana deploys on Tuesdays."})
    item = store.get(("observations",), "pref-1")
    assert item is not None and item.value["content"] == "Dana deploys on Tuesdays."
    observations = store.memory.knowledge.observations()
    assert any(o.content == "Dana deploys on Tuesdays." for o in observations)
    store.put(("observations",), "pref-1", {"content": "Dana deploys on Wednesdays."})
    contents = [o.content for o in store.memory.knowledge.observations()]
    assert "Dana deploys on Wednesdays." in contents and "Dana deploys on Tuesdays." not in contents
    # what memdir saved itself is visible too, under its id
    store.memory.knowledge.save("The build takes nine minutes.")
    found = store.search(("observations",), query="how long the build takes")
    assert any(h.value["content"] == "The build takes nine minutes." for h in found)
    with pytest.raises(ValueError, match="observation"):
        store.put(("observations",), "bad", {"content": "x", "nested": {"a": 1}})
    store.delete(("observations",), "pref-1")
    assert store.get(("observations",), "pref-1") is None


def test_list_namespaces(store: MemdirStore) -> None:
    store.put(("a", "b", "c"), "k", {"x": 1})
    store.put(("a", "d"), "k", {"x": 1})
    store.put(("z",), "k", {"x": 1})
    spaces = store.list_namespaces()
    assert ("a", "b", "c") in spaces and ("a", "d") in spaces and ("z",) in spaces
    assert store.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "d")]
    assert store.list_namespaces(suffix=("d",)) == [("a", "d")]
    assert store.list_namespaces(prefix=("a",), max_depth=1) == [("a",)]


def test_batch_and_the_async_forms(store: MemdirStore) -> None:
    results = store.batch(
        [
            PutOp(("b",), "one", {"content": "first"}),
            GetOp(("b",), "one"),
            SearchOp(("b",)),
            ListNamespacesOp(),
        ]
    )
    assert results[0] is None and results[1].value == {"content": "first"}  # type: ignore[union-attr]
    assert [i.key for i in results[2]] == ["one"]  # type: ignore[union-attr]

    async def main() -> None:
        await store.aput(("b",), "two", {"content": "second"})
        got = await store.aget(("b",), "two")
        assert got is not None and got.value == {"content": "second"}
        found = await store.asearch(("b",), query="second")
        assert found and found[0].key == "two"
        assert ("b",) in await store.alist_namespaces()
        await store.adelete(("b",), "two")
        assert await store.aget(("b",), "two") is None
        done = await store.abatch([GetOp(("b",), "one")])
        assert done[0] is not None

    asyncio.run(main())


def test_a_refused_value_raises_a_clear_error(store: MemdirStore) -> None:
    with pytest.raises(ValueError, match="refused"):
        store.put(("big",), "k", {"content": "x" * 200_000})
    with pytest.raises(ValueError, match="JSON"):
        store.put(("bad",), "k", {"when": object()})


class State(TypedDict):
    user: str
    message: str
    reply: str


def remember(state: State, *, store: BaseStore) -> dict[str, str]:
    store.put(("memories", state["user"]), "last", {"content": state["message"]})
    return {}


def recall(state: State, *, store: BaseStore) -> dict[str, str]:
    hits = store.search(("memories", state["user"]), query=state["message"])
    return {"reply": hits[0].value["content"] if hits else "nothing"}


async def arecall(state: State, *, store: BaseStore) -> dict[str, str]:
    item = await store.aget(("memories", state["user"]), "last")
    return {"reply": item.value["content"] if item else "nothing"}


def test_inside_a_compiled_state_graph(folder: Path) -> None:
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    store = MemdirStore(folder)  # a path: opened (and closed) by the store
    graph = builder.compile(store=store)
    out = graph.invoke({"user": "dana", "message": "Dana's cat is called Miso.", "reply": ""})
    assert out["reply"] == "Dana's cat is called Miso."
    store.close()
    # the memory is a card in the folder, found by memdir's own search
    with memdir.open(folder) as memory:
        hits = memory.search("cat called Miso", mode="deep")
        assert any("langgraph/memories/dana" in h.path for h in hits)

    abuilder = StateGraph(State)
    abuilder.add_node("recall", arecall)
    abuilder.add_edge(START, "recall")
    abuilder.add_edge("recall", END)
    astore = MemdirStore(folder)
    agraph = abuilder.compile(store=astore)
    aout = asyncio.run(agraph.ainvoke({"user": "dana", "message": "", "reply": ""}))
    assert aout["reply"] == "Dana's cat is called Miso."
    astore.close()


def test_behaves_as_langgraphs_own_in_memory_store(store: MemdirStore) -> None:
    """No store conformance suite ships with langgraph (only checkpointers have one), so
    the reference is its InMemoryStore: the same operations, the same answers (search
    without a query, whose order both give newest first)."""
    from langgraph.store.memory import InMemoryStore

    reference = InMemoryStore()
    ops = [
        PutOp(("users", "1", "prefs"), "theme", {"color": "dark", "size": 3}),
        PutOp(("users", "1", "prefs"), "lang", {"code": "fr", "size": 1}),
        PutOp(("users", "2", "prefs"), "theme", {"color": "light", "size": 5}),
        PutOp(("users", "2", "notes"), "n1", {"text": "call back", "tags": ["a", "b"], "size": 0}),
        PutOp(("users", "1", "prefs"), "lang", {"code": "de", "size": 2}),
        PutOp(("users", "2", "prefs"), "theme", None),
        GetOp(("users", "1", "prefs"), "lang"),
        GetOp(("users", "2", "prefs"), "theme"),
        GetOp(("nowhere",), "x"),
        SearchOp(("users",), filter={"size": {"$gt": 1}}),
        SearchOp(("users", "1"), filter={"code": "de"}),
        SearchOp(("users",), filter={"tags": ["a", "b"]}),
        SearchOp(("users",), filter={"size": {"$ne": 3}}, limit=5),
        ListNamespacesOp(),
        ListNamespacesOp(max_depth=2),
        ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("prefs",)),)),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("users", "*", "notes")),)),
    ]

    def shape(result: object) -> object:
        if isinstance(result, list):
            return [shape(r) for r in result]
        if isinstance(result, Item):
            return (result.namespace, result.key, result.value)
        return result

    for op in ops:
        want = shape(reference.batch([op])[0])
        got = shape(store.batch([op])[0])
        if isinstance(op, SearchOp):
            assert sorted(map(repr, got)) == sorted(map(repr, want)), op  # type: ignore[arg-type]
        elif isinstance(op, ListNamespacesOp):
            # InMemoryStore keeps a namespace once a get asked for it or its last item went
            # (a defaultdict's keys): only those holding items are compared
            held = [ns for ns in want if reference.search(ns)]  # type: ignore[union-attr]
            assert got == held, op
        else:
            assert got == want, op


def test_a_person_edits_the_card(store: MemdirStore, folder: Path) -> None:
    store.put(("people",), "dana", {"content": "Dana runs the release.", "team": "ops"})
    card = next((folder / "vault" / "langgraph" / "people").glob("dana-*.md"))
    text = card.read_text()
    # prose above the block is for people: editing it leaves the value as it was
    card.write_text(text.replace("Dana runs the release.", "Dana runs the release (Tuesdays)."))
    assert store.get(("people",), "dana").value["team"] == "ops"  # type: ignore[union-attr]
    # the block is the value: edit it and get follows
    card.write_text(card.read_text().replace('"team": "ops"', '"team": "platform"'))
    assert store.get(("people",), "dana").value["team"] == "platform"  # type: ignore[union-attr]
    # hand-added tags survive the agent's next put
    card.write_text(card.read_text().replace("tags: [langgraph]", "tags: [langgraph, vip]"))
    store.put(("people",), "dana", {"content": "Dana runs the release.", "team": "ops"})
    assert "vip" in card.read_text()
    # a block edited into something else is skipped, never a crash
    card.write_text(card.read_text().replace('"key": "dana"', '"key": '))
    assert store.get(("people",), "dana") is None
    assert ("people",) not in store.list_namespaces()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60)
@given(
    namespace=st.lists(
        st.text(min_size=1, max_size=12).filter(lambda s: not {".", "\x00"} & set(s)),
        min_size=1,
        max_size=3,
    ).filter(lambda labels: labels[0] != "langgraph"),  # LangGraph's own, refused by its put
    key=st.text(min_size=1, max_size=20),
    value=st.dictionaries(st.text(max_size=10), JSON, max_size=4),
)
def test_any_json_value_round_trips_through_its_card(
    tmp_path_factory: pytest.TempPathFactory,
    namespace: list[str],
    key: str,
    value: dict[str, object],
) -> None:
    root = tmp_path_factory.mktemp("lg") / "mem"
    memdir.init(root)
    with memdir.open(root, embedder="hashing") as memory:
        store = MemdirStore(memory)
        try:
            store.put(tuple(namespace), key, value)
        except ValueError as exc:  # refused by memdir (a credential's shape...): said so
            assert "refused" in str(exc)
            return
        item = store.get(tuple(namespace), key)
        assert item is not None and item.value == value and item.key == key
        assert item.namespace == tuple(namespace)
