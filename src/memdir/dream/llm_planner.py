"""The LLM planner: the model reads the buffer and answers a plan; memdir checks it.

The model gets at most ``max_entries`` observations (id, type, date, tags, a
content preview) and the names of the curated sections, and must answer one
JSON object ``{remove, merge, promote}``. Its answer is parsed and checked
(``plan.parse_plan``); a malformed or invalid answer is sent back once with what
is wrong ("repaired once"), and a second bad answer is rejected: the dream
changes nothing and says why. The model never edits a file: memdir applies the
checked plan under the same conservative rules as the offline planner's, and
leaves out a merge or promotion whose text drops a number or name of the
observations it covers (``Plan.keeping_details``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from memdir.dream.plan import PLAN_SCHEMA, Entry, Plan, PlanError, parse_plan
from memdir.llm import ChatModel, LLMError, Message
from memdir.textutil import plural

SYSTEM = """\
You consolidate an AI agent's long-term memory. You get the observations it saved
(raw notes, oldest first) and the names of its curated knowledge sections. Answer
with ONE JSON object and nothing else:

{"remove": [ids], "merge": [{"ids": [ids], "text": "..."}],
 "promote": [{"section": "name", "text": "...", "ids": [ids]}]}

- merge: observations that state the same fact (duplicates, paraphrases). "text" is
  one observation that keeps every detail of the group (names, numbers, dates).
- promote: a theme that 3 or more observations support, written as short markdown
  bullet lines of validated, lasting knowledge for the named curated section (an
  existing section name when one fits), keeping the names and numbers of the
  observations it covers. Name in "ids" every observation it covers.
- A merge or promotion whose text drops a name or number of its observations is
  discarded, so never merge observations that disagree (50 vs 100, Monday vs Friday).
- remove: ONLY exact duplicates of an observation that stays.
- An id appears at most once in the whole answer. When in doubt, leave an
  observation alone: a wrong removal is worse than a duplicate.
- Never promote one-off details, secrets, or chit-chat. Empty lists are fine.
"""


class LLMPlanner:
    name = "llm"

    def __init__(self, chat: ChatModel, sections: Sequence[str] = ()) -> None:
        self.chat = chat
        self.sections = list(sections)

    def plan(self, entries: list[Entry]) -> Plan:
        """Ask, check, ask once more if need be; PlanError (or LLMError) if no good plan."""
        payload = {
            "curated_sections": self.sections,
            "observations": [entry.to_dict() for entry in entries],
        }
        messages: list[Message] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
        ]
        answer = self.chat.complete(messages, json_mode=True)
        try:
            plan = parse_plan(extract_json(answer), entries)
        except PlanError as first:
            messages += [
                {"role": "assistant", "content": answer},
                {"role": "user", "content": _repair(first.problems)},
            ]
            answer = self.chat.complete(messages, json_mode=True)
            try:
                plan = parse_plan(extract_json(answer), entries)
            except PlanError as second:
                raise PlanError(
                    [f"the model's plan was invalid twice: {'; '.join(second.problems)}"]
                ) from second
            plan.notes.append(f"the model's first plan was invalid and was repaired ({first})")
        plan.notes.append(
            f"llm planner ({self.chat.id}): {plural(len(plan.merge), 'merge')}, "
            f"{plural(len(plan.promote), 'promotion')}, {plural(len(plan.remove), 'removal')} "
            "proposed"
        )
        return plan


def _repair(problems: list[str]) -> str:
    return (
        "That answer cannot be used: "
        + "; ".join(problems)
        + ". Answer again with only the JSON object, following this schema: "
        + json.dumps(PLAN_SCHEMA)
    )


_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def extract_json(answer: str) -> Any:
    """The JSON object in a model's answer (fenced or bare), or PlanError."""
    text = answer.strip()
    fenced = _FENCE_RE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            try:
                return json.loads(text[start : end + 1])
            except json.JSONDecodeError:
                pass
    raise PlanError(["the answer is not a JSON object"])


__all__ = ["LLMError", "LLMPlanner", "extract_json"]
