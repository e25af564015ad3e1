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
from memdir.timeutil import format_ts
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
    return write_result(memory.notebook.update(args["key"], text))  # type: ignore[arg-type]


def clear_notebook(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    return write_result(memory.notebook.clear(args.get("key")))


NOTEBOOK_KEY = string("A short name for the entry, such as 'current-task' or 'blockers'.")

UPDATE_NOTEBOOK = Tool(
    name="update_notebook",
    title="Update notebook",
    description=(
        "Write one entry of your notebook (NOTEBOOK.md): your working memory, always in your "
        "prompt. Use it for what you are doing right now: the current task, next steps, "
        "open questions. Writing an existing key replaces it. You have 4 agent entries; a "
        "new key evicts the oldest (it goes to the archive). Keep entries short; save "
        "lasting facts with memory_save instead."
    ),
    parameters=obj(
        {"key": NOTEBOOK_KEY, "text": string("The entry's text (at most 6000 characters).")},
        required=["key", "text"],
    ),
    handler=update_notebook,
    destructive=True,
    idempotent=True,
    requires=("notebook",),
    store=_notebook,
)

CLEAR_NOTEBOOK = Tool(
    name="clear_notebook",
    title="Clear notebook",
    description=(
        "Remove one notebook entry by key, or without a key every entry you wrote. Clear "
        "entries when a task is done or they have gone stale. Removed text goes to the archive."
    ),
    parameters=obj({"key": string("The entry to remove; leave out to clear all your entries.")}),
    handler=clear_notebook,
    destructive=True,
    idempotent=True,
    requires=("notebook",),
    store=_notebook,
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
        "Save ONE observation worth remembering beyond this conversation: a fact, a "
        "preference, an insight, a task result. It goes to the observation buffer of "
        "knowledge.md (not loaded into your prompt; found again with memory_search, and "
        "later consolidated). Call once per observation; never pass a list."
    ),
    parameters=obj(
        {
            "content": string("The observation, one self-contained statement.", min_length=1),
            "type": enum(OBSERVATION_TYPES, "What kind of observation it is.", default="note"),
            "tags": array_of_strings("Short topic tags, such as 'billing' or 'domain:crm'."),
        },
        required=["content"],
    ),
    handler=memory_save,
    requires=("knowledge",),
    store=_knowledge,
)

MEMORY_UPDATE = Tool(
    name="memory_update",
    title="Update curated knowledge",
    description=(
        "Write a curated section of knowledge.md (loaded into your prompt): validated, "
        "lasting knowledge such as conventions, procedures, preferences. mode 'replace' "
        "rewrites the section, 'patch' (or 'append') adds text to it. mode 'delete' removes "
        "observations by id (give ids). Sections are capped at 3000 characters and the file "
        "at 15000; a write over the cap is refused with the reason."
    ),
    parameters=obj(
        {
            "section": string("The section's name, such as 'conventions'."),
            "content": string("The section's text (replace) or the text to add (patch)."),
            "mode": enum(
                ("replace", "patch", "append", "delete"), "How to write.", default="replace"
            ),
            "ids": array_of_strings("Observation ids to remove (mode 'delete' only)."),
        }
    ),
    handler=memory_update,
    destructive=True,
    requires=("knowledge",),
    store=_knowledge,
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
    return ok(INDEX_STORE, count=len(hits), hits=[hit.to_dict() for hit in hits])


def memory_get(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    path = args["path"]
    touched = False
    if memory.has("vault"):
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


MEMORY_SEARCH = Tool(
    name="memory_search",
    title="Search memory",
    description=(
        "Search everything you remember (knowledge, observations, vault cards, journals, "
        "lessons...) by keywords and meaning. Each hit gives its path and lines: open more "
        "with memory_get. An empty query lists your most recent observations. mode "
        "'normal' skips cold and archived items; 'deep' searches all of them."
    ),
    parameters=obj(
        {
            "query": string("What to look for, in words."),
            "k": integer("How many hits (default 8).", minimum=1, maximum=50),
            "mode": enum(SEARCH_MODES, "Which tiers to search.", default="normal"),
            "layers": array_of_strings("Only these layers of memdir.toml (e.g. 'vault')."),
            "kinds": array_of_strings("Only these kinds (e.g. 'observation', 'card')."),
            "tags": array_of_strings("Only items with one of these tags."),
            "since": string("Only items dated on or after this day (YYYY-MM-DD)."),
            "until": string("Only items dated on or before this day (YYYY-MM-DD)."),
        }
    ),
    handler=memory_search,
    read_only=True,
    idempotent=True,
    store=lambda memory: INDEX_STORE,
)

MEMORY_GET = Tool(
    name="memory_get",
    title="Read a memory file",
    description=(
        "Read exact lines of a memory file, such as a path and lines a search hit gave. "
        "Without lines, the whole file. Reading a vault card marks it recalled."
    ),
    parameters=obj(
        {
            "path": string("The file's path in the memory folder, e.g. 'knowledge.md'."),
            "from_line": integer("First line (1-based).", minimum=1),
            "to_line": integer("Last line (inclusive).", minimum=1),
        },
        required=["path"],
    ),
    handler=memory_get,
    read_only=False,  # reading a card touches it (last_accessed, tier)
    idempotent=True,
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
        "Record a short dated snapshot in state.md: where something stands right now "
        "('deploy: staging green, prod pending'). Snapshots expire after 7 days, so use "
        "them for status that goes stale; remove: true drops one."
    ),
    parameters=obj(
        {
            "key": string("What the snapshot is about, such as 'deploy'."),
            "text": string("The snapshot: a short line or two."),
            "remove": {"type": "boolean", "description": "Drop this snapshot instead."},
        },
        required=["key"],
    ),
    handler=state_update,
    destructive=True,
    idempotent=True,
    requires=("state",),
    store=_state,
)

# -- the activity history ------------------------------------------------------


def recall_activity(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    action = args["action"]
    history = memory.history
    store = _history(memory)
    limit = args.get("limit", 10)
    since = _moment(args.get("since"), "since")
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
        until = _moment(args.get("until"), "until")
        found = history.recent(
            limit, type=args.get("type"), task_id=args.get("task_id"), since=since, until=until
        )
    return ok(store, count=len(found), activities=[a.to_dict() for a in found])


def _moment(value: str | None, name: str) -> Any:
    from memdir.timeutil import parse_ts

    if value is None:
        return None
    moment = parse_ts(value)
    if moment is None:
        raise ToolCallError(f"recall_activity: {name} must be a date such as 2026-11-30")
    return moment


RECALL_ACTIVITY = Tool(
    name="recall_activity",
    title="Recall past activity",
    description=(
        "Look through what you have done before (your activity history): 'list' recent "
        "activities (filter by type, task_id, dates), 'search' them by words in their "
        "label, summary and keywords, 'get' one activity's step-by-step log. Use it to "
        "answer 'what did I do last time with X?'."
    ),
    parameters=obj(
        {
            "action": enum(RECALL_ACTIONS, "What to do."),
            "query": string("Words to search for (search)."),
            "activity_id": string("The activity to open (get)."),
            "type": enum(ACTIVITY_TYPES, "Only activities of this type."),
            "task_id": string("Only activities of this task (list)."),
            "since": string("Only activities started on or after this day (YYYY-MM-DD)."),
            "until": string("Only activities started before this day (list)."),
            "limit": integer("How many (default 10).", minimum=1, maximum=100),
        },
        required=["action"],
    ),
    handler=recall_activity,
    read_only=True,
    idempotent=True,
    requires=("history",),
    store=_history,
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
