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

import numpy as np

from memdir.dream.plan import PLAN_SCHEMA, Entry, Plan, PlanError, parse_plan
from memdir.files.encoding import encode
from memdir.index.embedders import Embedder
from memdir.llm.chat import ChatModel, LLMError, Message
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


PROMPT_SHARE = 0.5
"""of the model's context window, what one request's observations may take (the rest
is the instructions and the answer, which restates ids and texts)"""


class LLMPlanner:
    name = "llm"

    def __init__(
        self,
        chat: ChatModel,
        sections: Sequence[str] = (),
        *,
        context_tokens: int = 8192,
        embedder: Embedder | None = None,
    ) -> None:
        self.chat = chat
        self.sections = list(sections)
        self.context_tokens = context_tokens
        self.embedder = embedder

    def plan(self, entries: list[Entry]) -> Plan:
        """The observations in batches that fit the model's context, similar ones
        together so duplicates meet; each batch asked, checked, asked once more if need
        be. A batch with no good plan changes nothing of its observations (a note says
        why); PlanError if none had one, LLMError if the model cannot be reached."""
        batches = self.batches(entries)
        plan = Plan()
        failed: list[str] = []
        for n, batch in enumerate(batches, 1):
            try:
                part = self._plan_batch(batch)
            except PlanError as exc:
                failed.append(f"batch {n} of {len(batches)}: {exc}")
                continue
            plan.remove += part.remove
            plan.merge += part.merge
            plan.promote += part.promote
            plan.notes += part.notes
        if failed and len(failed) == len(batches):
            raise PlanError(failed)
        plan.notes += [
            f"no plan for {problem}; its observations were left alone" for problem in failed
        ]
        plan.notes.append(
            f"llm planner ({self.chat.id}): {plural(len(plan.merge), 'merge')}, "
            f"{plural(len(plan.promote), 'promotion')}, {plural(len(plan.remove), 'removal')} "
            f"proposed" + (f" over {len(batches)} requests" if len(batches) > 1 else "")
        )
        return plan

    def batches(self, entries: list[Entry]) -> list[list[Entry]]:
        """``entries`` cut into requests of at most ``PROMPT_SHARE`` of the context,
        each next to its nearest neighbour when there is an embedder."""
        budget = max(int(self.context_tokens * PROMPT_SHARE), 1)
        batches: list[list[Entry]] = [[]]
        used = 0
        for entry in self._ordered(entries):
            size = (len(encode(json.dumps(entry.to_dict(), ensure_ascii=False))) + 3) // 4
            if batches[-1] and used + size > budget:
                batches.append([])
                used = 0
            batches[-1].append(entry)
            used += size
        return [batch for batch in batches if batch]

    def _ordered(self, entries: list[Entry]) -> list[Entry]:
        """A chain from each entry to its most similar unvisited one (greedy), so a
        cut between batches rarely falls between two duplicates."""
        if self.embedder is None or len(entries) < 3:
            return entries
        vectors = np.asarray(self.embedder.embed([e.content for e in entries]), dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        sims = vectors @ vectors.T
        left = np.ones(len(entries), dtype=bool)
        order = [0]
        left[0] = False
        for _ in range(len(entries) - 1):
            row = np.where(left, sims[order[-1]], -np.inf)
            order.append(int(np.argmax(row)))
            left[order[-1]] = False
        return [entries[i] for i in order]

    def _plan_batch(self, entries: list[Entry]) -> Plan:
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
