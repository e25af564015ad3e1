"""The notebook specification's tools: notebook, knowledge, state, search, get, recall.

Five primary tools (``update_notebook``, ``clear_notebook``, ``memory_save``,
``memory_update``, ``memory_search``) plus ``memory_get``, ``state_update`` and
``recall_activity``, and the legacy aliases the specification keeps for older
prompts (``memory_list``, ``memory_delete``, ``memory_update_longterm``,
``update_working_memory``, ``clear_working_memory``). Each handler is a thin
call into the Python API; a store's refusal comes back as its ``WriteResult``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memdir.stores.knowledge import OBSERVATION_TYPES
from memdir.timeutil import format_ts, moment_argument
from memdir.tools import outputs
from memdir.tools.registry import Tool, ToolCallError, ok
from memdir.tools.schema import (
    INDEX_STORE,
    array_of_strings,
    enum,
    integer,
    obj,
    string,
    write_result,
)

if TYPE_CHECKING:
    from memdir.memory import Memory

SEARCH_MODES = ("heartbeat", "normal", "deep")
RECALL_ACTIONS = ("list", "search", "get")
ACTIVITY_TYPES = ("task", "chat", "heartbeat", "a2a", "internal", "respond_in_session")


def _notebook(memory: Memory) -> str:
    return memory.notebook.store


def _knowledge(memory: Memory) -> str:
    return memory.knowledge.store


def _state(memory: Memory) -> str:
    return memory.state.store


def _history(memory: Memory) -> str:
    return memory.manifest.layers[memory.manifest.layer_for("history")[0]].paths[0]  # type: ignore[index]


# -- notebook ------------------------------------------------------------------


def update_notebook(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    text = args.get("text", args.get("value"))
    if "value" in args and "text" in args and args["value"] != args["text"]:
        raise ToolCallError(  # update_working_memory's value, text's older name: one unseen
            "update_working_memory: text and value (text's older name) differ; give only text",
            memory.notebook.store,
        )
    if "text" not in args and "value" not in args:  # the legacy name requires only key
        raise ToolCallError(
            "update_working_memory: text is required (the entry's text; value is its older name)",
            memory.notebook.store,
        )
    return write_result(memory.notebook.update(args["key"], text))  # type: ignore[arg-type]


def clear_notebook(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    return write_result(memory.notebook.clear(args.get("key")))


NOTEBOOK_KEY = string("The entry's name, e.g. 'current-task'.")

UPDATE_NOTEBOOK = Tool(
    name="update_notebook",
    title="Update notebook",
    description=(
        "Write one entry of your notebook (NOTEBOOK.md, always in your prompt): the task at "
        "hand, next steps, open questions. The same key replaces it; past 4 entries a new key "
        "moves the oldest to the archive. Lasting facts go to memory_save."
    ),
    parameters=obj(
        {"key": NOTEBOOK_KEY, "text": string("The entry (at most 6000 characters).")},
        required=["key", "text"],
    ),
    handler=update_notebook,
    destructive=True,
    idempotent=True,
    requires=("notebook",),
    store=_notebook,
    output=outputs.WRITE,
)

CLEAR_NOTEBOOK = Tool(
    name="clear_notebook",
    title="Clear notebook",
    description=(
        "Remove a notebook entry by key (without one: all yours) when done or stale; "
        "it goes to the archive."
    ),
    parameters=obj({"key": string("The entry; leave out to clear all yours.")}),
    handler=clear_notebook,
    destructive=True,
    idempotent=True,
    requires=("notebook",),
    store=_notebook,
    output=outputs.WRITE,
)

# -- knowledge -----------------------------------------------------------------


def memory_save(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    result = memory.knowledge.save(
        args["content"], type=args.get("type", "note"), tags=args.get("tags", ())
    )
    return write_result(result)


def memory_update(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    result = memory.knowledge.update(
        section=args.get("section"),
        content=args.get("content"),
        mode=args.get("mode", "replace"),
        ids=args.get("ids"),
    )
    return write_result(result)


MEMORY_SAVE = Tool(
    name="memory_save",
    title="Save an observation",
    description=(
        "Save ONE lasting observation (fact, preference, insight, task result) to "
        "knowledge.md: not in your prompt, found by memory_search. One per call, never a "
        "list. A refusal (ok: false) gives the reason: fix that and retry."
    ),
    parameters=obj(
        {
            "content": string("One self-contained statement.", min_length=1),
            "type": enum(OBSERVATION_TYPES, "Its kind.", default="note"),
            "tags": array_of_strings("Topic tags, e.g. 'billing'."),
        },
        required=["content"],
    ),
    handler=memory_save,
    requires=("knowledge",),
    store=_knowledge,
    output=outputs.WRITE,
)

_SECTION = string("The section, e.g. 'conventions'.")
_SECTION_TEXT = string("The text.")

MEMORY_UPDATE = Tool(
    name="memory_update",
    title="Update curated knowledge",
    description=(
        "Write a curated section of knowledge.md (in your prompt): validated conventions, "
        "procedures, preferences. 'replace' rewrites it, 'patch' adds to it. Over a cap "
        "(3000 characters a section, 15000 in all) it is refused: shorten, then retry."
    ),
    parameters=obj(
        {
            "section": _SECTION,
            "content": _SECTION_TEXT,
            "mode": enum(
                ("replace", "patch", "append", "delete"),
                "How to write; 'delete' removes observations by ids.",
                default="replace",
            ),
            "ids": array_of_strings("Observation ids to remove (mode 'delete' only)."),
        }
    ),
    brief=obj(
        {
            "section": _SECTION,
            "content": _SECTION_TEXT,
            "mode": enum(("replace", "patch"), "How to write.", default="replace"),
        },
        required=["section", "content"],
    ),
    handler=memory_update,
    destructive=True,
    requires=("knowledge",),
    store=_knowledge,
    output=outputs.WRITE,
)

# -- search and get ------------------------------------------------------------


def memory_search(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    hits = memory.search(
        args.get("query", ""),
        k=args.get("k", 8),
        mode=args.get("mode", "normal"),
        layers=args.get("layers"),
        kinds=args.get("kinds"),
        tags=args.get("tags"),
        since=args.get("since"),
        until=args.get("until"),
    )
    return ok(INDEX_STORE, count=len(hits), hits=hits.to_dicts(), **hits.report())


def memory_get(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    path = args["path"]
    touched = False
    if memory.has("vault") and memory.read_only is None:  # a read-only memory: no touch
        card = memory.vault.resolve(path) if path.endswith(".md") else None
        if card is not None and card == path.strip().lstrip("./"):
            touched = memory.vault.touch(card).ok  # reading a card is recalling it
    got = memory.get(path, args.get("from_line"), args.get("to_line"))
    if not got.ok:
        raise ToolCallError(f"memory_get: {got.reason}", got.path)
    result = got.to_dict()
    result["store"] = got.path
    if touched:
        result["touched"] = True
    return result


_QUERY = string("What to look for, in words.")
_SEARCH_MODE = enum(
    SEARCH_MODES,
    "'normal' reaches cold and archived items when nothing newer matches; 'deep' always.",
    default="normal",
)

MEMORY_SEARCH = Tool(
    name="memory_search",
    title="Search memory",
    description=(
        "Search all you remember (knowledge, observations, cards, journals, lessons) by words "
        "and meaning. Each hit gives a path and lines to open with memory_get. An empty query "
        "lists recent observations."
    ),
    parameters=obj(
        {
            "query": _QUERY,
            "k": integer("How many hits (default 8).", minimum=1, maximum=50),
            "mode": _SEARCH_MODE,
            "layers": array_of_strings("Only these layers of memdir.toml (e.g. 'vault')."),
            "kinds": array_of_strings("Only these kinds (e.g. 'observation', 'card')."),
            "tags": array_of_strings("Only items with one of these tags."),
            "since": string("Only items dated on or after this day (YYYY-MM-DD)."),
            "until": string("Only items dated on or before this day (YYYY-MM-DD)."),
        }
    ),
    brief=obj({"query": _QUERY, "mode": _SEARCH_MODE}),
    handler=memory_search,
    read_only=True,
    idempotent=True,
    store=lambda memory: INDEX_STORE,
    output=outputs.SEARCH,
)

MEMORY_GET = Tool(
    name="memory_get",
    title="Read a memory file",
    description=(
        "Read a memory file, or the lines a search hit gave. Reading a vault card marks it "
        "recalled."
    ),
    parameters=obj(
        {
            "path": string("Its path, e.g. 'knowledge.md'."),
            "from_line": integer("First line (1-based).", minimum=1),
            "to_line": integer("Last line.", minimum=1),
        },
        required=["path"],
    ),
    handler=memory_get,
    read_only=False,  # reading a card touches it (last_accessed, tier)
    idempotent=True,
    output=outputs.GET,
)

# -- state ---------------------------------------------------------------------


def state_update(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    if args.get("remove"):
        return write_result(memory.state.remove(args["key"]))
    if "text" not in args:
        raise ToolCallError("state_update: text is required (or remove: true to drop the key)")
    return write_result(memory.state.set(args["key"], args["text"]))


STATE_UPDATE = Tool(
    name="state_update",
    title="Update a state snapshot",
    description=(
        "Record a dated status snapshot in state.md ('deploy: staging green'); it expires "
        "after 7 days. remove: true drops one."
    ),
    parameters=obj(
        {
            "key": string("What it is about, e.g. 'deploy'."),
            "text": string("The snapshot, a line or two."),
            "remove": {"type": "boolean", "description": "Drop this snapshot."},
        },
        required=["key"],
    ),
    handler=state_update,
    destructive=True,
    idempotent=True,
    requires=("state",),
    store=_state,
    output=outputs.WRITE,
    compact=False,  # state lines reach the prompt in the reflex profile only
)

# -- the activity history ------------------------------------------------------


_TAKEN_BY: dict[str, tuple[str, ...]] = {
    "query": ("search",),
    "activity_id": ("get",),
    "type": ("list", "search"),
    "task_id": ("list",),
    "since": ("list", "search"),
    "until": ("list",),
    "limit": ("list", "search"),
}
"""the actions of recall_activity that read each argument (any other refuses it)"""
_TAKES = {
    "list": "type, task_id, since, until and limit",
    "search": "query, type, since and limit",
    "get": "activity_id",
}


def _stray_sentence(action: str, stray: list[str]) -> str:
    parts = []
    for name in stray:
        actions = " or ".join(repr(a) for a in _TAKEN_BY[name])
        parts.append(f"{name} goes with action {actions}")
    return (
        f"recall_activity: {'; '.join(parts)}; {action!r} takes {_TAKES[action]}, so it "
        "would answer as if the rest held"
    )


def recall_activity(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    action = args["action"]
    history = memory.history
    store = _history(memory)
    limit = args.get("limit", 10)
    since = moment_argument(args.get("since"), "since")
    stray = [
        name
        for name, actions in _TAKEN_BY.items()
        if args.get(name) is not None and action not in actions
    ]
    if stray:  # an action would answer without them, as if they held
        raise ToolCallError(_stray_sentence(action, stray), store)
    if action == "get":
        activity_id = args.get("activity_id")
        if not activity_id:
            raise ToolCallError("recall_activity: get needs activity_id (list or search first)")
        detail = history.get(activity_id)
        if detail is None:
            raise ToolCallError(f"recall_activity: no activity {activity_id!r}", store)
        return ok(store, activity=detail.to_dict())
    if action == "search":
        query = args.get("query", "")
        found = history.search(query, limit, type=args.get("type"), since=since)
    else:
        until = moment_argument(args.get("until"), "until", whole_day=True)
        found = history.recent(
            limit, type=args.get("type"), task_id=args.get("task_id"), since=since, until=until
        )
    return ok(store, count=len(found), activities=[a.to_dict() for a in found])


_RECALL_ACTION = enum(RECALL_ACTIONS, "What to do.")
_RECALL_QUERY = string("Words to search for (search).")
_ACTIVITY_ID = string("The activity to open (get).")

RECALL_ACTIVITY = Tool(
    name="recall_activity",
    title="Recall past activity",
    description=(
        "Look through what you did before: 'list' recent activities, 'search' them by words, "
        "'get' one's step-by-step log. For 'what did I do last time with X?'."
    ),
    parameters=obj(
        {
            "action": _RECALL_ACTION,
            "query": _RECALL_QUERY,
            "activity_id": _ACTIVITY_ID,
            "type": enum(ACTIVITY_TYPES, "Only activities of this type."),
            "task_id": string("Only activities of this task (list)."),
            "since": string("Only activities started on or after this day (YYYY-MM-DD)."),
            "until": string("Only activities started on or before this day (list)."),
            "limit": integer("How many (default 10).", minimum=1, maximum=100),
        },
        required=["action"],
    ),
    brief=obj(
        {"action": _RECALL_ACTION, "query": _RECALL_QUERY, "activity_id": _ACTIVITY_ID},
        required=["action"],
    ),
    handler=recall_activity,
    read_only=True,
    idempotent=True,
    requires=("history",),
    store=_history,
    output=outputs.RECALL,
)

# -- legacy aliases --------------------------------------------------------------


def memory_list(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    wanted = args.get("type")
    found = [o for o in memory.knowledge.observations() if wanted is None or o.type == wanted]
    found.sort(key=lambda o: o.date, reverse=True)
    limit = args.get("limit", 20)
    return ok(
        memory.knowledge.store,
        count=len(found[:limit]),
        observations=[
            {
                "id": o.id,
                "type": o.type,
                "date": format_ts(o.date),
                "tags": list(o.tags),
                "content": o.content,
            }
            for o in found[:limit]
        ],
    )


def memory_delete(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    ids = list(args.get("ids") or [])
    if args.get("id"):
        ids.append(args["id"])
    return write_result(memory.knowledge.delete_observations(ids))


def _legacy(name: str, of: Tool, description: str, **changes: Any) -> Tool:
    fields: dict[str, Any] = {
        "name": name,
        "title": "",
        "description": f"{description} (Legacy name; prefer {of.name}.)",
        "parameters": of.parameters,
        "handler": of.handler,
        "read_only": of.read_only,
        "destructive": of.destructive,
        "idempotent": of.idempotent,
        "requires": of.requires,
        "store": of.store,
        "alias_of": of.name,
        "output": of.output,
    }
    fields.update(changes)
    return Tool(**fields)


LEGACY = [
    _legacy(
        "memory_list",
        MEMORY_SEARCH,
        "List your most recent observations, newest first.",
        parameters=obj(
            {
                "type": enum(OBSERVATION_TYPES, "Only observations of this type."),
                "limit": integer("How many (default 20).", minimum=1, maximum=500),
            }
        ),
        handler=memory_list,
        requires=("knowledge",),
        store=_knowledge,
        output=outputs.OBSERVATIONS,
    ),
    _legacy(
        "memory_delete",
        MEMORY_UPDATE,
        "Delete observations by id; they go to the archive.",
        parameters=obj(
            {
                "id": string("One observation id (obs_...)."),
                "ids": array_of_strings("Several observation ids."),
            }
        ),
        handler=memory_delete,
    ),
    _legacy(
        "memory_update_longterm",
        MEMORY_UPDATE,
        "Write a curated section of knowledge.md (replace or patch).",
    ),
    _legacy(
        "update_working_memory",
        UPDATE_NOTEBOOK,
        "Write one notebook entry.",
        parameters=obj(
            {
                "key": NOTEBOOK_KEY,
                "text": string("The entry's text."),
                "value": string("The entry's text (older name of text)."),
            },
            required=["key"],
        ),
    ),
    _legacy("clear_working_memory", CLEAR_NOTEBOOK, "Remove one notebook entry, or all of yours."),
]

TOOLS = [
    UPDATE_NOTEBOOK,
    CLEAR_NOTEBOOK,
    MEMORY_SAVE,
    MEMORY_SEARCH,
    MEMORY_UPDATE,
    MEMORY_GET,
    STATE_UPDATE,
    RECALL_ACTIVITY,
]
