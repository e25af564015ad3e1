"""Tools for the vault and workspace specifications: cards, journal, lessons, working state.

Each is served only where the folder's manifest declares its store. The compact
set leaves out what another tool does as well: ``card_read`` (``memory_get``
reads a card and touches it), ``lesson_check`` (``memory_search`` finds
lessons), ``card_history``, and the working-state tools where the notebook
holds the working state (they are offered with a ``workstate`` layer). Reading
a card touches it (one tier up, last_accessed today); so does writing it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memdir.tools import outputs
from memdir.tools.registry import Tool, ToolCallError, ok
from memdir.tools.schema import (
    INDEX_STORE,
    array_of_strings,
    boolean,
    enum,
    integer,
    obj,
    string,
    write_result,
)
from memdir.tools.schema import json_safe as _safe

if TYPE_CHECKING:
    from memdir.memory import Memory

CARD = string("The card's name ('alice-moreau'), folder/name or path in the vault.")


def _vault(memory: Memory) -> str:
    return memory.vault._store()


# -- vault cards -------------------------------------------------------------------


def card_read(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    from memdir.stores.vault import ref_problem

    problem = ref_problem(args["card"])
    if problem is not None:
        raise ToolCallError(f"card_read: {problem}", _vault(memory))
    read = memory.vault.read(args["card"], touch=memory.read_only is None)
    if read is None:
        raise ToolCallError(
            f"card_read: no card {args['card']!r} in the vault; memory_search finds cards "
            "by what they are about",
            _vault(memory),
        )
    return ok(
        read.path, path=read.path, meta=_safe(read.meta), body=read.body, touched=read.touched
    )


def card_write(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    _no_new_history(memory, args["card"], args.get("body"))
    result = memory.vault.write(
        args["card"],
        args.get("body"),
        type=args.get("type"),
        tags=args.get("tags"),
        links=args.get("links"),
        folder=args.get("folder"),
        fields=args.get("fields"),
    )
    return write_result(result)


def _no_new_history(memory: Memory, ref: str, body: object) -> None:
    """ToolCallError if ``body`` holds ``## History`` lines the card does not: history is
    appended by card_history, dated and signed by memdir; a body's own lines would be a
    backdated or signed-as-someone-else entry. A body that carries the card's history
    back as it read it (card_read, edited above it) passes."""
    from memdir.files.sections import SectionDocument
    from memdir.stores.vault import HISTORY, history_lines, ref_problem

    if not isinstance(body, str) or ref_problem(ref) is not None:
        return  # the store refuses those, with its own reason
    existing = memory.vault.read(ref, touch=False)
    kept = set(history_lines(existing.body)) if existing is not None else set()
    given = [  # every History section: a second one would hold lines the first does not
        line
        for section in SectionDocument.parse(body)
        if section.key == HISTORY
        for line in section.body.splitlines()
        if line.strip()
    ]
    new = [line for line in given if line not in kept]
    if new:
        raise ToolCallError(
            f"card_write: the body's ## History holds {len(new)} line(s) the card's history "
            f"does not ({new[0][:120]!r}); history is added with card_history, dated and "
            "signed by memdir. Leave them out of the body; nothing was written",
            _vault(memory),
        )


def card_history(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    return write_result(memory.vault.append_history(args["card"], args["text"]))


CARD_READ = Tool(
    name="card_read",
    title="Read a vault card",
    description=(
        "Open one vault card (a person, project, company or idea): its fields and its text. "
        "Reading a card marks it recalled, so it stays warm in memory."
    ),
    parameters=obj({"card": CARD}, required=["card"]),
    handler=card_read,
    requires=("vault",),
    store=_vault,
    output=outputs.CARD,
    compact=False,
)

_CARD_BODY = string("Its text (markdown).")
_CARD_TYPE = string("person, project, company, idea...")
_CARD_TAGS = array_of_strings("Topic tags.")
_CARD_FOLDER = string("The folder of a new card, e.g. 'crm'.")

CARD_WRITE = Tool(
    name="card_write",
    title="Write a vault card",
    description=(
        "Create or update a vault card, one per person, project, company or idea: what you "
        "give replaces the old (its ## History stays). Link cards with [[card-name]]."
    ),
    parameters=obj(
        {
            "card": CARD,
            "body": _CARD_BODY,
            "type": _CARD_TYPE,
            "tags": _CARD_TAGS,
            "links": array_of_strings("Names of related cards."),
            "folder": _CARD_FOLDER,
            "fields": {
                "type": "object",
                "description": "Other frontmatter fields to set (strings, numbers, lists). Those "
                "memdir keeps are checked: tier one of the tiers, relevance 0.0-1.0, "
                "access_count from 0, created and last_accessed a day (2026-11-30); by and flagged "
                "are memdir's own and refused.",
            },
        },
        required=["card"],
    ),
    brief=obj(
        {"card": CARD, "body": _CARD_BODY, "type": _CARD_TYPE, "folder": _CARD_FOLDER},
        required=["card"],
    ),
    handler=card_write,
    destructive=True,
    requires=("vault",),
    store=_vault,
    output=outputs.WRITE,
)

CARD_HISTORY = Tool(
    name="card_history",
    title="Add to a card's history",
    description=(
        "Add a dated line to a card's ## History: what happened with this person or "
        "project. Append-only, safe when several agents share the vault."
    ),
    parameters=obj(
        {"card": CARD, "text": string("What happened, in a line.", min_length=1)},
        required=["card", "text"],
    ),
    handler=card_history,
    requires=("vault",),
    store=_vault,
    output=outputs.WRITE,
    compact=False,
)

# -- journal and lessons -----------------------------------------------------------


def journal_append(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    return write_result(memory.journal.append(args["kind"], args["text"], why=args.get("why")))


def lesson_add(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    result = memory.lessons.add(
        args["category"], args["mistake"], args["what_happened"], args["rule"]
    )
    return write_result(result)


def lesson_check(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    hits = memory.lessons_check(args["query"], k=args.get("k", 5))
    return ok(INDEX_STORE, count=len(hits), hits=[hit.to_dict() for hit in hits])


JOURNAL_APPEND = Tool(
    name="journal_append",
    title="Write in today's journal",
    description=(
        "Add a line to today's journal: a decision (with why), learning, milestone or "
        "context. Recent days load at boot: how you pick up where you left off."
    ),
    parameters=obj(
        {
            "kind": enum(("decision", "learning", "milestone", "context"), "Its section."),
            "text": string("The line.", min_length=1),
            "why": string("The reason; a decision needs one."),
        },
        required=["kind", "text"],
    ),
    handler=journal_append,
    requires=("journal",),
    store=lambda memory: memory.journal.path(memory.clock().date()),
    output=outputs.WRITE,
)

LESSON_ADD = Tool(
    name="lesson_add",
    title="Log a lesson",
    description=(
        "Log a mistake so it is not made twice: the mistake, what happened, the rule for "
        "next time. Never pruned; memory_search finds lessons before a risky step."
    ),
    parameters=obj(
        {
            "category": string("e.g. 'deploys'."),
            "mistake": string("The mistake, in a line.", min_length=1),
            "what_happened": string("What it caused.", min_length=1),
            "rule": string("The rule from now on.", min_length=1),
        },
        required=["category", "mistake", "what_happened", "rule"],
    ),
    handler=lesson_add,
    requires=("lessons",),
    store=lambda memory: memory.lessons.store,
    output=outputs.WRITE,
)

LESSON_CHECK = Tool(
    name="lesson_check",
    title="Check lessons",
    description="Before something risky, search your lessons for rules that apply to it.",
    parameters=obj(
        {
            "query": string("What you are about to do.", min_length=1),
            "k": integer("How many lessons (default 5).", minimum=1, maximum=20),
        },
        required=["query"],
    ),
    handler=lesson_check,
    read_only=True,
    idempotent=True,
    requires=("lessons",),
    store=lambda memory: memory.lessons.store,
    output=outputs.SEARCH,
    compact=False,
)

# -- working state -----------------------------------------------------------------

_WORK = ("workstate", "notebook")


def _work_store(memory: Memory) -> str:
    return memory.workstate.store.store


def work_start(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    return _view(memory, write_result(memory.workstate.start(args["task"])))


def work_finish(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    return _view(memory, write_result(memory.workstate.finish(args.get("task"))))


def work_spawn(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    return _view(memory, write_result(memory.workstate.spawn(args["label"], args["task"])))


def work_result(memory: Memory, args: dict[str, Any]) -> dict[str, Any]:
    # The files are checked on disk (exists, not empty, newer than the spawn) by their
    # stat alone; any failing one makes the result UNVERIFIED, named in its notes.
    result = memory.workstate.result(
        args["label"], args["summary"], verified=args["verified"], files=args.get("files")
    )
    return _view(memory, write_result(result))


def _view(memory: Memory, result: dict[str, Any]) -> dict[str, Any]:
    if result.get("ok"):
        view = memory.workstate.view()
        result["working_state"] = {
            "right_now": view.right_now,
            "done": view.done,
            "pending": view.pending,
        }
    return result


def _work_tool(
    name: str, title: str, description: str, params: dict[str, Any], handler: Any
) -> Tool:
    return Tool(
        name=name,
        title=title,
        description=description,
        parameters=params,
        handler=handler,
        requires=_WORK,
        store=_work_store,
        output=outputs.WORKING_STATE,
        compact=("workstate",),  # where the notebook holds it, update_notebook serves
    )


WORK_TOOLS = [
    _work_tool(
        "working_state_start",
        "Start a task",
        "Put a task in your working state's Right Now, so a crash or a new session knows "
        "what you were doing. Call it when you begin something that takes more than a turn.",
        obj({"task": string("The task, in a line.", min_length=1)}, required=["task"]),
        work_start,
    ),
    _work_tool(
        "working_state_finish",
        "Finish a task",
        "Move a task from Right Now to Done (the first one when no task is named).",
        obj({"task": string("The task as written in Right Now.")}),
        work_finish,
    ),
    _work_tool(
        "working_state_spawn",
        "Record a sub-agent",
        "Before handing work to a sub-agent, record it under Pending so its result is "
        "expected and checked.",
        obj(
            {
                "label": string("The sub-agent's label.", min_length=1),
                "task": string("What it was asked to do.", min_length=1),
            },
            required=["label", "task"],
        ),
        work_spawn,
    ),
    _work_tool(
        "working_state_result",
        "Record a sub-agent's result",
        "When a sub-agent returns, record its result in Done, saying whether you verified it.",
        obj(
            {
                "label": string("The sub-agent's label.", min_length=1),
                "summary": string("What it produced.", min_length=1),
                "verified": boolean("True only if you checked the result yourself."),
                "files": array_of_strings(
                    "Files it says it produced (memory-folder relative, or absolute): each "
                    "is checked on disk; the result is verified only if all pass."
                ),
            },
            required=["label", "summary", "verified"],
        ),
        work_result,
    ),
]

TOOLS = [CARD_READ, CARD_WRITE, CARD_HISTORY, JOURNAL_APPEND, LESSON_ADD, LESSON_CHECK, *WORK_TOOLS]
