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
- ``result(label, summary, verified, files)``: Pending and Right Now lose the
  label; Done gains the result, marked verified, or UNVERIFIED (the
  sub-agent's narrative, not checked on the filesystem: never trust it unmarked).
The Done list carries its day; the first operation on a later day rolls the
list into that day's journal (Milestones) and starts an empty one.

Never trust a sub-agent's narrative (section 8): ``spawn`` records its moment,
to the second, in the Pending section's metadata (``spawned.LABEL``); the
files a ``result`` names are checked on disk (``check_outputs``: each exists,
is a file, is not empty, was modified at or after that moment) by their stat
alone, never their content, so a file outside the memory folder (the
project's) may be named. The result is verified only when every check holds;
otherwise the Done line and the result's notes name each file and what it
failed. ``verified=True`` with no files is the caller's word, as before.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path

from memdir.config import OBSERVATION_MAX_CHARS
from memdir.files.sections import Section, SectionDocument
from memdir.results import WriteResult
from memdir.stores.base import Refusal, SectionFileStore, check_text
from memdir.stores.journal import JournalStore
from memdir.stores.validate import flag, one_line
from memdir.textutil import plural
from memdir.timeutil import format_ts, parse_ts

WORKSTATE_STARTER = "# Working State\n\n## Right Now\n\n## Today's Done List\n\n## Pending\n"
FILE_KEYS = {"right_now": "Right Now", "done": "Today's Done List", "pending": "Pending"}
NOTEBOOK_KEYS = {"right_now": "right-now", "done": "done", "pending": "pending"}
VERIFIED = "(verified on the filesystem)"
UNVERIFIED = "(UNVERIFIED: the sub-agent's claim, not checked)"
SPAWNED_META = "spawned."
"""the Pending section's metadata key prefix: ``spawned.LABEL: 2026-11-30T14:30:05Z``"""
RESULT_MAX_FILES = 100
PATH_MAX_CHARS = 4096
_NAMED_IN_LINE = 3  # failures the Done line names; the notes name them all
_META_UNSAFE_RE = re.compile(r"[^\w.-]")


@dataclass
class Edit:
    """What an operation changes in place: the three lists, the spawn moments
    (label -> ``format_ts``), and now as ``YYYY-MM-DD HH:MM``."""

    lists: dict[str, list[str]]
    spawned: dict[str, str]
    stamp: str
    now: datetime


# An operation: changes the Edit in place and returns the milestones to log in the journal.
Change = Callable[[Edit], list[str]]


@dataclass(frozen=True)
class FileCheck:
    """One file a sub-agent claims to have produced, as checked on disk."""

    path: str
    """as the caller named it"""
    problem: str | None = None
    """None when it exists, is a file, is not empty and is newer than the spawn"""

    def describe(self) -> str:
        return f"{self.path} {self.problem}" if self.problem else f"{self.path} passed"


def check_outputs(root: Path, paths: Sequence[str], since: datetime | None) -> list[FileCheck]:
    """Check each path on disk (relative ones from ``root``) by its stat alone: it
    exists, is a regular file, holds at least a byte, and was modified at or after
    ``since`` (to the second). ``since`` None: the spawn's moment is unknown, and no
    file can be shown to be newer."""
    checks = []
    for path in paths:
        checks.append(FileCheck(path, _problem(root, path, since)))
    return checks


def _problem(root: Path, path: str, since: datetime | None) -> str | None:
    try:
        real = Path(path).expanduser()
        info = os.stat(real if real.is_absolute() else root / real)
    except FileNotFoundError:
        return "does not exist"
    except NotADirectoryError:
        return "does not exist (a part of its path is a file)"
    except (OSError, ValueError, RuntimeError) as exc:  # RuntimeError: ~user unknown
        return f"cannot be checked ({getattr(exc, 'strerror', None) or exc})"
    if not stat.S_ISREG(info.st_mode):
        return "is not a file (name the files in a folder one by one)"
    if info.st_size == 0:
        return "is empty (0 bytes)"
    if since is None:
        return "cannot be shown newer than the spawn (its time is not recorded)"
    modified = datetime.fromtimestamp(info.st_mtime, UTC)
    if modified < since.replace(microsecond=0):
        return f"was last modified at {format_ts(modified)}, before the spawn at {format_ts(since)}"
    return None


def _outputs(files: object) -> list[str]:
    """The paths a result names, checked as text (no line break, control character or
    credential: they are written into the Done line); duplicates once."""
    if files is None:
        return []
    if isinstance(files, str) or not isinstance(files, (list, tuple)):
        raise Refusal("files must be a list of paths, such as ['out/report.md']")
    if len(files) > RESULT_MAX_FILES:
        raise Refusal(f"name at most {RESULT_MAX_FILES} files; check the rest yourself")
    paths = []
    for path in files:
        check_text(path, "a file path", limit=PATH_MAX_CHARS)
        if not path.strip() or "\n" in path or "\r" in path:
            raise Refusal(f"{path!r} is not a path: give each file as one line, not empty")
        paths.append(path.strip())
    return list(dict.fromkeys(paths))


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
    empty = f"{what} is empty; nothing was written"
    hint = "keep it to a line; details go to the journal"
    return one_line(value, what, empty=empty, limit=OBSERVATION_MAX_CHARS, hint=hint)


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
        day = None
        with contextlib.suppress(ValueError):  # a hand-edited day that is no date: not known
            day = date.fromisoformat(done.meta["day"]) if done and "day" in done.meta else None
        return WorkView(lists["right_now"], lists["done"], lists["pending"], day)

    # -- the triggers ----------------------------------------------------------

    def start(self, task: str) -> WriteResult:
        return self._change(lambda edit: self._start(edit.lists, _clean(task, "the task")))

    def finish(self, task: str | None = None) -> WriteResult:
        def change(edit: Edit) -> list[str]:
            right_now = edit.lists["right_now"]
            if task is None:
                if not right_now:
                    raise Refusal("Right Now is empty: there is no task to finish")
                done = right_now.pop(0)
            else:
                done = _clean(task, "the task")
                if done not in right_now:  # a typo must not leave the task in Right Now
                    listed = "; ".join(right_now) or "nothing"
                    raise Refusal(
                        f"no task {done!r} in Right Now (it holds: {listed}); name it as "
                        "written there, or name none to finish the first"
                    )
                edit.lists["right_now"] = [item for item in right_now if item != done]
            edit.lists["done"].append(f"{done} ({edit.stamp})")
            return []

        return self._change(change)

    def spawn(self, label: str, task: str) -> WriteResult:
        """Record a sub-agent under Pending, with the moment it was spawned (see module doc)."""

        def change(edit: Edit) -> list[str]:
            name, work = _clean(label, "the sub-agent label"), _clean(task, "the task")
            # Two sub-agents under one label (or one spawn moment's key, "a b" and "a_b"):
            # a result could not tell them apart.
            mine, key = _label_re(name), _meta_key(name)
            taken = [item for item in edit.lists["pending"] if mine.search(item)]
            taken += [f"sub-agent {other}" for other in edit.spawned if _meta_key(other) == key]
            if taken:
                raise Refusal(
                    f"sub-agent {name!r} is already pending ({taken[0]}); record its result "
                    "first, or give this one another label"
                )
            edit.lists["pending"].append(
                f"Sub-agent {name} spawned at {edit.stamp[-5:]} for {work}"
            )
            edit.spawned[name] = format_ts(edit.now)
            self._start(edit.lists, f"Waiting on sub-agent {name} for {work}")
            return [f"Spawned sub-agent {name} for {work}"]

        return self._change(change)

    def result(
        self,
        label: str,
        summary: str,
        *,
        verified: bool,
        files: Sequence[str] | None = None,
    ) -> WriteResult:
        """Move a sub-agent from Pending to Done. With ``files`` (relative to the memory
        folder, or absolute), each is checked on disk and the result is verified only
        if all pass; without, ``verified`` is the caller's word."""
        notes: list[str] = []

        def change(edit: Edit) -> list[str]:
            name, what = _clean(label, "the sub-agent label"), _clean(summary, "the result")
            outputs = _outputs(files)
            mine = _label_re(name)
            pending = edit.lists["pending"]
            if not any(mine.search(item) for item in pending):
                raise Refusal(f"no pending sub-agent {name!r}; pending: {pending or 'none'}")
            edit.lists["pending"] = [item for item in pending if not mine.search(item)]
            edit.lists["right_now"] = [
                item for item in edit.lists["right_now"] if not mine.search(item)
            ]
            mark = VERIFIED if verified else UNVERIFIED
            if outputs:
                moments = [m for n, m in edit.spawned.items() if n.casefold() == name.casefold()]
                since = parse_ts(moments[0]) if moments else None
                mark = _verdict(check_outputs(self.store.ctx.root, outputs, since), notes)
            elif verified:
                notes.append(
                    "verified on your word: name the files it produced and memdir checks them "
                    "on disk"
                )
            edit.lists["done"].append(f"Sub-agent {name}: {what} {mark} ({edit.stamp})")
            return [f"Sub-agent {name} returned: {what} {mark}"]

        return self._change(change, notes)

    def roll(self) -> int:
        """Move a Done list from an earlier day into that day's journal; return how many."""
        before = len(self.view().done) if self._stale() else 0
        if before:
            self._change(lambda edit: [])
        return before

    # -- plumbing --------------------------------------------------------------

    @staticmethod
    def _start(lists: dict[str, list[str]], task: str) -> list[str]:
        lists["right_now"] = [task] + [item for item in lists["right_now"] if item != task]
        return []

    def _stale(self) -> bool:
        day = self.view().day
        return day is not None and day < self.store.ctx.clock().date()

    def _change(self, change: Change, extra_notes: list[str] | None = None) -> WriteResult:
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
                pending_meta = sections["pending"].meta
                edit = Edit(
                    lists,
                    _spawned(pending_meta, lists["pending"]),
                    f"{today.isoformat()} {clock():%H:%M}",
                    clock(),
                )
                milestones = change(edit)  # may refuse: then nothing is written
                if self.journal is not None:
                    # Journal first, then this file: a crash in between repeats a line.
                    for item in rolled:
                        text, at = _unstamp(item, str(done_day))
                        self.journal.append("milestone", f"Done: {text}", at=at)
                    for line in milestones:
                        self.journal.append("milestone", line)
                lists = edit.lists
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
                _keep_spawned(pending_meta, edit.spawned, lists["pending"])
                sections["done"].meta["day"] = today.isoformat()
        except Refusal as refusal:
            return WriteResult.refused(self.store.store, refusal.reason)
        items = "item" if len(rolled) == 1 else "items"
        notes = (
            [f"rolled {len(rolled)} done {items} into the journal of {done_day}"] if rolled else []
        )
        return WriteResult(
            ok=True,
            store=self.store.store,
            action="updated",
            notes=tuple(notes + (extra_notes or [])),
            warnings=tuple(warnings),
        )

    def _section(self, doc: SectionDocument, key: str) -> Section:
        section = doc.get(key)
        if section is None:
            section = doc.append(doc.new_section(key))
        return section


def _label_re(name: str) -> re.Pattern[str]:
    """A Pending or Right Now line about sub-agent ``name`` (the whole label): followed by
    the line's end, punctuation, "spawned", "for", a dash or a bracket, so that ``web`` is
    not ``web scraper`` (a label may hold spaces) nor ``research`` ``research-2``."""
    after = r"(?=$|[:,;.!?)\]](?:\s|$)|\s+(?:spawned|for)\b|\s+[-\u2013\u2014]\s|\s+[(\[])"
    return re.compile(rf"\bsub-agent {re.escape(name)}{after}", re.I)


def _meta_key(name: str) -> str:
    return SPAWNED_META + _META_UNSAFE_RE.sub("_", name)


def _spawned(meta: dict[str, str], pending: list[str]) -> dict[str, str]:
    """Label -> spawn moment, for the sub-agents still pending."""
    found = {}
    for item in pending:
        match = re.match(r"sub-agent (.+?) spawned at ", item, re.I)
        if match is not None and _meta_key(match.group(1)) in meta:
            found[match.group(1)] = meta[_meta_key(match.group(1))]
    return found


def _keep_spawned(meta: dict[str, str], spawned: dict[str, str], pending: list[str]) -> None:
    """The Pending metadata holds the moment of each sub-agent still pending, no other."""
    keep = {
        _meta_key(name): moment
        for name, moment in spawned.items()
        if any(_label_re(name).search(item) for item in pending)
    }
    for key in [key for key in meta if key.startswith(SPAWNED_META)]:
        if key not in keep:
            del meta[key]
    meta.update(keep)


def _verdict(checks: list[FileCheck], notes: list[str]) -> str:
    """The Done line's mark for these checks; ``notes`` gain one line per file that failed."""
    failed = [check for check in checks if check.problem]
    if not failed:
        if len(checks) == 1:
            what = f"{checks[0].path} exists, is not empty and was"
        else:
            what = f"all {len(checks)} files exist, are not empty and were"
        notes.append(f"verified: {what} modified after the spawn")
        return f"(verified on the filesystem: {plural(len(checks), 'file')})"
    notes.append(
        f"recorded as UNVERIFIED: {len(failed)} of {plural(len(checks), 'file')} failed a check"
    )
    notes.extend(check.describe() for check in failed)
    named = "; ".join(check.describe() for check in failed[:_NAMED_IN_LINE])
    more = len(failed) - _NAMED_IN_LINE
    return f"(UNVERIFIED: {named}" + (f"; and {more} more" if more > 0 else "") + ")"
