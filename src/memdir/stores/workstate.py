"""Working state: what the agent is doing right now, for crash recovery.

Three lists (workspace seed, "Working State"): Right Now, Today's Done List,
Pending. In the workspace layout they are ``memory/working-state.md``; in the
default layout they are the NOTEBOOK.md entries ``right-now``, ``done`` and
``pending`` (managed by ``system``, so they do not use the agent's 4 slots).

The specification's triggers are operations, each one write:
- ``start(task)``: the task goes to the top of Right Now (update BEFORE work).
- ``finish(task)``: it moves from Right Now to the Done list, stamped.
- ``spawn(label, task)``: Pending gains "Sub-agent LABEL spawned at HH:MM for
  TASK", Right Now "Waiting on sub-agent LABEL", and the journal a milestone.
- ``result(label, summary, verified)``: Pending and Right Now lose the label;
  Done gains the result, marked verified, or UNVERIFIED (the sub-agent's
  narrative, not checked on the filesystem: never trust it unmarked).
The Done list carries its day; the first operation on a later day rolls the
list into that day's journal (Milestones) and starts an empty one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time

from memdir.config import OBSERVATION_MAX_CHARS
from memdir.files.sections import Section, SectionDocument, strip_think
from memdir.results import WriteResult
from memdir.stores.base import Refusal, SectionFileStore, check_text
from memdir.stores.journal import JournalStore
from memdir.stores.validate import flag

# An operation: given the three lists (changed in place) and "YYYY-MM-DD HH:MM",
# returns the milestones to log in the journal.
Change = Callable[[dict[str, list[str]], str], list[str]]
WORKSTATE_STARTER = "# Working State\n\n## Right Now\n\n## Today's Done List\n\n## Pending\n"
FILE_KEYS = {"right_now": "Right Now", "done": "Today's Done List", "pending": "Pending"}
NOTEBOOK_KEYS = {"right_now": "right-now", "done": "done", "pending": "pending"}
VERIFIED = "(verified on the filesystem)"
UNVERIFIED = "(UNVERIFIED: the sub-agent's claim, not checked)"


@dataclass(frozen=True)
class WorkView:
    right_now: list[str]
    done: list[str]
    pending: list[str]
    day: date | None


def _items(body: str) -> list[str]:
    items = []
    for line in body.splitlines():
        text = line.strip()
        if text.startswith(("- [x] ", "- [ ] ")):
            text = text[6:]
        elif text.startswith(("- ", "* ")):
            text = text[2:]
        if text:
            items.append(text)
    return items


_STAMP_RE = re.compile(r" \((\d{4}-\d{2}-\d{2}) (\d{2}):(\d{2})\)$")


def _unstamp(item: str, day: str) -> tuple[str, datetime]:
    """A done item's text and the moment it was done (end of ``day`` if unstamped)."""
    match = _STAMP_RE.search(item)
    if match is None:
        return item, datetime.combine(date.fromisoformat(day), time(23, 59), tzinfo=UTC)
    moment = datetime.combine(
        date.fromisoformat(match.group(1)),
        time(int(match.group(2)), int(match.group(3))),
        tzinfo=UTC,
    )
    return item[: match.start()], moment


def _clean(value: object, what: str) -> str:
    if not isinstance(value, str) or not strip_think(value).strip():
        raise Refusal(f"{what} is empty; nothing was written")
    check_text(
        value,
        what,
        limit=OBSERVATION_MAX_CHARS,
        hint="keep it to a line; details go to the journal",
    )
    return " ".join(strip_think(value).split())


class WorkState:
    def __init__(
        self,
        store: SectionFileStore,
        keys: dict[str, str],
        journal: JournalStore | None,
        *,
        managed: str | None = None,
    ) -> None:
        self.store = store
        self.keys = keys
        self.journal = journal
        self.managed = managed  # "system" when the lists live in NOTEBOOK.md

    def view(self) -> WorkView:
        doc = self.store._read()
        lists: dict[str, list[str]] = {}
        for name, key in self.keys.items():
            section = doc.get(key)
            lists[name] = _items(section.body) if section is not None else []
        done = doc.get(self.keys["done"])
        day = date.fromisoformat(done.meta["day"]) if done and "day" in done.meta else None
        return WorkView(lists["right_now"], lists["done"], lists["pending"], day)

    # -- the triggers ----------------------------------------------------------

    def start(self, task: str) -> WriteResult:
        return self._change(lambda lists, stamp: self._start(lists, _clean(task, "the task")))

    def finish(self, task: str | None = None) -> WriteResult:
        def change(lists: dict[str, list[str]], stamp: str) -> list[str]:
            right_now = lists["right_now"]
            if task is None:
                if not right_now:
                    raise Refusal("Right Now is empty: there is no task to finish")
                done = right_now.pop(0)
            else:
                done = _clean(task, "the task")
                lists["right_now"] = [item for item in right_now if item != done]
            lists["done"].append(f"{done} ({stamp})")
            return []

        return self._change(change)

    def spawn(self, label: str, task: str) -> WriteResult:
        def change(lists: dict[str, list[str]], stamp: str) -> list[str]:
            name, work = _clean(label, "the sub-agent label"), _clean(task, "the task")
            lists["pending"].append(f"Sub-agent {name} spawned at {stamp[-5:]} for {work}")
            self._start(lists, f"Waiting on sub-agent {name} for {work}")
            return [f"Spawned sub-agent {name} for {work}"]

        return self._change(change)

    def result(self, label: str, summary: str, *, verified: bool) -> WriteResult:
        def change(lists: dict[str, list[str]], stamp: str) -> list[str]:
            name, what = _clean(label, "the sub-agent label"), _clean(summary, "the result")
            mine = re.compile(rf"\bsub-agent {re.escape(name)}(?![\w-])", re.I)
            if not any(mine.search(item) for item in lists["pending"]):
                raise Refusal(
                    f"no pending sub-agent {name!r}; pending: {lists['pending'] or 'none'}"
                )
            lists["pending"] = [item for item in lists["pending"] if not mine.search(item)]
            lists["right_now"] = [item for item in lists["right_now"] if not mine.search(item)]
            mark = VERIFIED if verified else UNVERIFIED
            lists["done"].append(f"Sub-agent {name}: {what} {mark} ({stamp})")
            return [f"Sub-agent {name} returned: {what} {mark}"]

        return self._change(change)

    def roll(self) -> int:
        """Move a Done list from an earlier day into that day's journal; return how many."""
        before = len(self.view().done) if self._stale() else 0
        if before:
            self._change(lambda lists, stamp: [])
        return before

    # -- plumbing --------------------------------------------------------------

    @staticmethod
    def _start(lists: dict[str, list[str]], task: str) -> list[str]:
        lists["right_now"] = [task] + [item for item in lists["right_now"] if item != task]
        return []

    def _stale(self) -> bool:
        day = self.view().day
        return day is not None and day < self.store.ctx.clock().date()

    def _change(self, change: Change) -> WriteResult:
        clock = self.store.ctx.clock
        warnings: list[str] = []
        try:
            with self.store._edit() as doc:
                sections = {name: self._section(doc, key) for name, key in self.keys.items()}
                lists = {name: _items(section.body) for name, section in sections.items()}
                today = clock().date()
                done_day = sections["done"].meta.get("day")
                rolled: list[str] = []
                if done_day and done_day < today.isoformat() and lists["done"]:
                    rolled, lists["done"] = lists["done"], []
                stamp = f"{today.isoformat()} {clock():%H:%M}"
                milestones = change(lists, stamp)  # may refuse: then nothing is written
                if self.journal is not None:
                    # Journal first, then this file: a crash in between repeats a line.
                    for item in rolled:
                        text, at = _unstamp(item, str(done_day))
                        self.journal.append("milestone", f"Done: {text}", at=at)
                    for line in milestones:
                        self.journal.append("milestone", line)
                for name, section in sections.items():
                    bullet = "- [x] " if name == "done" else "- "
                    before = section.body
                    section.body = "\n".join(bullet + item for item in lists[name])
                    flags = flag(section.body)
                    flags.mark(section.meta)  # a checklist: flagged or not, no writer
                    if section.body != before:
                        warnings += [w for w in flags.warnings if w not in warnings]
                    if self.managed:
                        section.meta["managed"] = self.managed
                        section.meta["updated"] = f"{today.isoformat()}T{clock():%H:%M:%S}Z"
                sections["done"].meta["day"] = today.isoformat()
        except Refusal as refusal:
            return WriteResult.refused(self.store.store, refusal.reason)
        items = "item" if len(rolled) == 1 else "items"
        notes = (
            (f"rolled {len(rolled)} done {items} into the journal of {done_day}",) if rolled else ()
        )
        return WriteResult(
            ok=True,
            store=self.store.store,
            action="updated",
            notes=notes,
            warnings=tuple(warnings),
        )

    def _section(self, doc: SectionDocument, key: str) -> Section:
        section = doc.get(key)
        if section is None:
            section = doc.append(doc.new_section(key))
        return section
