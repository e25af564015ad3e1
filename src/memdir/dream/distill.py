"""Post-task distillation: what an ended activity taught, kept as observations.

The notebook specification (section 8) keeps this apart from the dream: "post-task
encode is Distillation, not Dream". With ``[dream] distill = true`` every activity
that ends with success and a summary leaves observations in ``knowledge.md``:
- offline: one ``task_result`` observation, the activity's summary, tagged with
  its keywords (at most ``MAX_TAGS``);
- with ``memory.llm``: up to ``MAX_FACTS`` self-contained ``fact`` observations
  the model picks from the activity's record (a JSON list of strings), each
  checked; an answer that does not pass, or an ``LLMError``, falls back to the
  offline observation, and a notice says why. An empty list is a valid answer:
  nothing worth keeping.

Never for ``internal`` activities (the dream and maintenance record themselves
so) or failed ones. It runs in ``History.end_activity``'s hook, after the audit
line, and never raises into the caller: problems are ``memory.notices``
(store ``"distill"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memdir.llm.chat import ChatModel, LLMError, Message
from memdir.llm.checks import content_words, grounded, line_problem, parse_json, strip_reasoning
from memdir.results import Notice
from memdir.safety.provenance import writing_as
from memdir.stores.history import Activity

if TYPE_CHECKING:
    from memdir.memory import Memory

MAX_FACTS = 3
MAX_TAGS = 5
FACT_MAX_CHARS = 500
RECORD_MAX_CHARS = 6000
"""how much of the activity's log the model is shown (the last events first to go)"""
SKIPPED_TYPES = frozenset({"internal"})
_SYSTEM = (
    "You keep an AI agent's long-term memory. From the record of a task the agent has "
    "just finished, pick the facts worth remembering for future tasks: durable facts "
    "about the user, the project, its systems and what worked, not the steps taken. "
    "Each fact is one self-contained sentence: it names what it is about, so it makes "
    "sense with no other context. Use only what the record says. Answer with JSON "
    f'only: {{"facts": ["...", ...]}}, at most {MAX_FACTS} facts, or an empty list if '
    "nothing is worth keeping."
)


@dataclass(frozen=True)
class Distilled:
    """What distilling one activity did."""

    activity_id: str
    mode: str
    """``llm`` (facts), ``offline`` (the summary as a task_result) or ``skipped``"""
    saved: tuple[str, ...] = ()
    """ids of the observations saved"""
    notes: tuple[str, ...] = ()


def distill_activity(memory: Memory, activity: Activity) -> Distilled:
    """Turn an ended activity into observations (see the module doc); never raises."""
    try:
        with writing_as("distill"):
            return _distill(memory, activity)
    except Exception as exc:  # the caller only ended an activity: it must not fail for this
        note = f"could not distill {activity.id}: {type(exc).__name__}: {exc}"
        memory.notices.append(Notice("distill", note))
        return Distilled(activity.id, "skipped", notes=(note,))


def skip_reason(activity: Activity) -> str | None:
    """Why an activity is not distilled, or None."""
    if activity.type in SKIPPED_TYPES:
        return f"{activity.type} activities are not distilled"
    if activity.success is not True:
        return "the activity did not succeed"
    if not (activity.summary or "").strip():
        return "the activity has no summary"
    return None


def _distill(memory: Memory, activity: Activity) -> Distilled:
    if skip_reason(activity) is not None:
        return Distilled(activity.id, "skipped")
    if not memory.has("knowledge"):
        note = "[dream] distill is on but the manifest has no knowledge layer; nothing distilled"
        if all(n.message != note for n in memory.notices):
            memory.notices.append(Notice("distill", note))
        return Distilled(activity.id, "skipped", notes=(note,))
    tags = list(activity.keywords[:MAX_TAGS])
    llm = memory.llm
    notes: list[str] = []
    if llm is not None:
        facts, problem = _ask(llm, _record(memory, activity))
        if problem is None:
            return _save(memory, activity, "llm", [(fact, "fact") for fact in facts], tags)
        notes.append(f"{activity.id}: {problem}; saved the task summary instead")
        memory.notices.append(Notice("distill", notes[-1]))
    summary = " ".join((activity.summary or "").split())
    done = _save(memory, activity, "offline", [(summary, "task_result")], tags)
    return Distilled(done.activity_id, done.mode, done.saved, tuple(notes) + done.notes)


def _ask(llm: ChatModel, record: str) -> tuple[list[str], str | None]:
    messages: list[Message] = [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": record},
    ]
    try:
        answer = llm.complete(messages, json_mode=True, max_tokens=1024)
    except LLMError as exc:
        return [], f"LLM distillation failed: {exc}"
    facts, problem = check_facts(answer, content_words(record))
    if problem is not None:
        return [], f"LLM facts rejected: {problem}"
    return facts, None


def check_facts(answer: str, source_words: set[str] | None = None) -> tuple[list[str], str | None]:
    """The facts in a model's answer (a JSON list of strings, or ``{"facts": [...]}``),
    or the problem: not JSON, more than ``MAX_FACTS``, a fact that is not a string,
    empty, over ``FACT_MAX_CHARS``, not plain text, or (given the record's
    ``source_words``) about nothing in the record."""
    text, problem = strip_reasoning(answer)
    if problem is not None:
        return [], problem
    data, problem = parse_json(text)
    if problem is not None:
        return [], problem
    items: Any = data.get("facts") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return [], 'it is not a JSON list of strings (nor {"facts": [...]})'
    if len(items) > MAX_FACTS:
        return [], f"it has {len(items)} facts; at most {MAX_FACTS}"
    facts: list[str] = []
    for n, item in enumerate(items, 1):
        if not isinstance(item, str):
            return [], f"fact {n} is not a string"
        fact = " ".join(item.split())
        if not fact:
            return [], f"fact {n} is empty"
        if len(fact) > FACT_MAX_CHARS:
            return [], f"fact {n} is {len(fact)} characters; at most {FACT_MAX_CHARS}"
        problem = line_problem(fact)
        if problem is not None:
            return [], f"fact {n}: {problem}"
        if source_words is not None and not grounded(fact, source_words):
            return [], f"fact {n} is about nothing in the task's record ({fact[:80]!r})"
        if fact not in facts:
            facts.append(fact)
    return facts, None


def _record(memory: Memory, activity: Activity) -> str:
    """The activity as the model sees it: label, summary, keywords, then its log events,
    the latest kept when they do not all fit in ``RECORD_MAX_CHARS``."""
    head = [
        f"Task ({activity.type}): {activity.label}",
        f"Summary: {' '.join((activity.summary or '').split())}",
    ]
    if activity.keywords:
        head.append(f"Keywords: {', '.join(activity.keywords)}")
    detail = memory.history.get(activity.id)
    events = [e for e in (detail.logs if detail else ()) if e.type != "llm_request"]
    lines: list[str] = []
    room = RECORD_MAX_CHARS - sum(len(line) + 1 for line in head)
    for event in reversed(events):
        content = " ".join(event.content.split())
        line = f"[{event.type}] {content if len(content) <= 400 else content[:397] + '...'}"
        if len(line) + 1 > room:
            lines.append(f"(and {len(events) - len(lines)} earlier events)")
            break
        lines.append(line)
        room -= len(line) + 1
    log = ["", "Log:", *reversed(lines)] if lines else []
    return "\n".join(head + log)


def _save(
    memory: Memory, activity: Activity, mode: str, items: list[tuple[str, str]], tags: list[str]
) -> Distilled:
    saved: list[str] = []
    notes: list[str] = []
    for content, type_ in items:
        result = memory.knowledge.save(content, type_, tags)
        if result.ok and result.key:
            saved.append(result.key)
        else:
            notes.append(f"{activity.id}: a {type_} was not saved: {result.reason}")
            memory.notices.append(Notice("distill", notes[-1]))
    return Distilled(activity.id, mode, tuple(saved), tuple(notes))
