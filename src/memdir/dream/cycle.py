"""The dream cycle: when it is due, and one run from snapshot to report.

Due (notebook seed, section 8): ``## _observations`` holds ``min_observations``
(50) or more and no dream ran today; with ``bloated_observations`` (500) or more,
up to ``max_runs_bloated`` (4) a day. The runs of a day are read back from the
activity history, where every dream records itself (an ``internal`` activity
labelled ``dream``); a dry run or a skipped one records nothing.

A run: the planner's checked plan, made without the folder lock (an LLM may be
slow; the agent's writes must not wait); then under the lock, the plan
restricted to observations unchanged since, knowledge.md saved under
``archive/dreams/`` (the newest ``SNAPSHOTS_KEPT`` are kept; every text a dream
takes out is in the archive anyway), and in one write: hygiene, the plan, the
caps; then the state.md TTL prune; then the report, to the history and to the
caller.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from memdir.dream import hygiene
from memdir.dream.apply import Applied, apply_plan
from memdir.dream.offline import OfflinePlanner
from memdir.dream.plan import Entry, Plan, PlanError, conservative
from memdir.errors import MemdirError
from memdir.files.encoding import encode
from memdir.llm.chat import LLMError
from memdir.safety.provenance import writing_as
from memdir.stores.base import Refusal
from memdir.textutil import plural
from memdir.timeutil import format_ts

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.stores.history import Activity
    from memdir.stores.knowledge_edit import KnowledgeEdit

DREAM_LABEL = "dream"
SNAPSHOTS_KEPT = 30


class Planner(Protocol):
    name: str

    def plan(self, entries: list[Entry]) -> Plan: ...


class _DryRun(Refusal):
    """Raised at the end of a dry run: the transaction computed everything, writes nothing."""


@dataclass
class DreamReport:
    planner: str = ""
    due: str = ""
    """why it ran (or why it did not)"""
    ran: bool = False
    """the dream was carried out (due, or forced), not skipped; with ``dry_run`` as far as
    the report of what it would change, nothing written"""
    dry_run: bool = False
    rejected: str | None = None
    """why the plan was rejected whole (nothing of it applied)"""
    observations_before: int = 0
    observations_after: int = 0
    curated_chars_before: int = 0
    curated_chars_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    merged: list[dict[str, Any]] = field(default_factory=list)
    promoted: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    hygiene: list[str] = field(default_factory=list)
    state_pruned: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    snapshot: str | None = None
    archive: str | None = None
    activity_id: str | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """A few sentences for the history and the command line."""
        if not self.ran:
            return f"dream not run: {self.due}"
        same = (self.bytes_before, self.observations_before, self.curated_chars_before) == (
            self.bytes_after,
            self.observations_after,
            self.curated_chars_after,
        ) and not (self.merged or self.promoted or self.removed or self.hygiene)
        if same:
            head = f"{'would leave' if self.dry_run else 'left'} knowledge.md as it was"
        else:
            head = f"{'would change' if self.dry_run else 'changed'} knowledge.md"
        merged = sum(len(m["ids"]) for m in self.merged)
        promoted = sum(len(p["ids"]) for p in self.promoted)
        parts = [
            f"{self.planner} dream {head}: {self.observations_before} -> "
            f"{self.observations_after} observations, curated {self.curated_chars_before} -> "
            f"{self.curated_chars_after} chars, file {self.bytes_before} -> {self.bytes_after} "
            f"bytes.",
        ]
        done = [
            f"merged {plural(merged, 'observation')} into {len(self.merged)}"
            if self.merged
            else "",
            f"promoted {promoted} into {plural(len(self.promoted), 'section')}"
            if self.promoted
            else "",
            f"removed {plural(len(self.removed), 'exact duplicate')}" if self.removed else "",
        ]
        done = [part for part in done if part]
        parts.append(
            ("; ".join(done) if done else "nothing to merge or promote").capitalize() + "."
        )
        if self.refused:
            parts.append(
                f"{plural(len(self.refused), 'promotion')} did not fit the caps; kept as "
                "observations."
            )
        if self.rejected:
            parts.append(f"Plan rejected: {self.rejected}.")
        if self.hygiene:
            parts.append("Hygiene: " + "; ".join(self.hygiene) + ".")
        if self.state_pruned:
            parts.append(f"Pruned {plural(len(self.state_pruned), 'expired state snapshot')}.")
        return " ".join(parts)


def runs_today(memory: Memory) -> int:
    """Dreams recorded in the history since midnight UTC."""
    now = memory.clock()
    midnight = datetime(now.year, now.month, now.day, tzinfo=UTC)
    found = memory.history.recent(100, type="internal", since=midnight)
    return sum(1 for a in found if a.label == DREAM_LABEL and a.success is not False)


def last_dream(memory: Memory) -> Activity | None:
    """The most recent dream recorded in the history, if any."""
    found = memory.history.search(DREAM_LABEL, limit=50, type="internal")
    dreams = [a for a in found if a.label == DREAM_LABEL]
    return max(dreams, key=lambda a: a.started_at, default=None)


def dream_due(memory: Memory) -> tuple[bool, str]:
    """Whether a dream is due now, and why (or why not)."""
    settings = memory.manifest.dream
    count = len(memory.knowledge.observations())
    if count < settings.min_observations:
        return False, f"{plural(count, 'observation')}, fewer than {settings.min_observations}"
    done = runs_today(memory) if memory.has("history") else 0
    if done == 0:
        return True, f"{plural(count, 'observation')} and no dream yet today"
    if count >= settings.bloated_observations and done < settings.max_runs_bloated:
        return True, f"{count} observations (bloated): dream {done + 1} of up to " + str(
            settings.max_runs_bloated
        )
    return (
        False,
        f"already dreamt {plural(done, 'time')} today ({plural(count, 'observation')})",
    )


def choose_planner(memory: Memory, name: str | None = None) -> Planner:
    """``offline``, ``llm`` or ``auto`` (the manifest's ``[dream] planner`` by default)."""
    from memdir.dream.llm_planner import LLMPlanner

    settings = memory.manifest.dream
    chosen = name or settings.planner
    sections = [s.key for s in memory.knowledge.sections()]
    if chosen in ("llm", "auto"):
        chat = memory.llm
        if chat is not None:
            return LLMPlanner(
                chat,
                sections,
                context_tokens=memory.manifest.llm.context_tokens,
                embedder=memory.index.embedder,
            )
        if chosen == "llm":
            # an [llm] that is set but unusable (not http(s), a provider that fails): say why
            why = [n.message for n in memory.notices if n.store == "llm"]
            raise MemdirError(
                f"the llm planner cannot run: {why[-1]}"
                if why
                else "the llm planner needs an [llm] endpoint in memdir.toml (base_url and "
                "model) or MEMDIR_LLM_BASE_URL and MEMDIR_LLM_MODEL"
            )
    embedder = memory.index.embedder if memory.has("knowledge") else None
    return OfflinePlanner(
        embedder,
        threshold=settings.near_duplicate,
        theme_min=settings.theme_min,
        existing_sections=sections,
    )


def run_dream(
    memory: Memory,
    *,
    force: bool = False,
    dry_run: bool = False,
    planner: Planner | str | None = None,
) -> DreamReport:
    """One dream (see the module docstring); ``force`` runs it even when not due. What it
    writes records ``by: dream``."""
    with writing_as("dream"):
        return _dream(memory, force=force, dry_run=dry_run, planner=planner)


def _dream(
    memory: Memory,
    *,
    force: bool,
    dry_run: bool,
    planner: Planner | str | None,
) -> DreamReport:
    if not memory.has("knowledge"):
        raise MemdirError(
            f"nothing to dream over: {memory.manifest_where} declares no knowledge layer "
            "(the dream consolidates knowledge.md's observations)"
        )
    began = time.perf_counter()
    report = DreamReport(dry_run=dry_run)
    due, report.due = dream_due(memory)
    if not (due or force):
        return report
    if force and not due:
        report.due = f"forced ({report.due})"
    chosen = planner if planner is not None and not isinstance(planner, str) else None
    chosen = chosen or choose_planner(memory, planner if isinstance(planner, str) else None)
    report.planner, report.ran = chosen.name, True
    settings = memory.manifest.dream
    store = memory.knowledge
    # Plan outside the folder lock: an LLM may take a minute, and the agent's own
    # writes must not wait for it. The plan is then applied under the lock to the
    # observations that have not changed since.
    entries = [Entry(o.id, o.type, o.date, o.tags, o.content) for o in store.observations()][
        : settings.max_entries
    ]
    try:
        plan = conservative(chosen.plan(entries).keeping_details(entries), entries)
    except LLMError as exc:
        asked = planner if isinstance(planner, str) else memory.manifest.dream.planner
        if asked != "auto" or isinstance(chosen, OfflinePlanner):
            report.rejected = f"no usable plan ({exc})"  # "llm" asked for the model itself
            plan = Plan()
        else:  # "auto": the model unreachable or unreadable, so the offline path runs
            offline = choose_planner(memory, "offline")
            report.planner = offline.name
            report.notes.append(f"the LLM planner failed ({exc}); the offline planner ran")
            try:
                plan = conservative(offline.plan(entries).keeping_details(entries), entries)
            except (PlanError, MemdirError) as again:
                report.rejected = f"no usable plan ({again})"
                plan = Plan()
    except (PlanError, MemdirError) as exc:
        report.rejected = f"no usable plan ({exc})"
        plan = Plan()
    with memory.lock:
        unwritable = store.ctx.files.unwritable(store.relpath)
        if unwritable is not None:  # a folder, or a link out, where knowledge.md should be
            raise MemdirError(unwritable)
        original = store.ctx.read(store.relpath) or ""  # bytes not UTF-8 kept as they are
        report.bytes_before = len(encode(original))
        observations = store.observations()
        report.observations_before = len(observations)
        report.curated_chars_before = sum(len(s.text) for s in store.sections())
        current = [Entry(o.id, o.type, o.date, o.tags, o.content) for o in observations]
        now = {e.id: e.content for e in current}
        unchanged = {e.id for e in entries if now.get(e.id) == e.content}
        # a removal is checked again: the duplicate it relied on may be gone
        plan = conservative(plan.restricted_to(unchanged), current)
        report.notes += plan.notes
        if not dry_run:
            report.snapshot = _snapshot(memory, original)
        applied = Applied()
        try:
            with store.transaction() as edit:
                report.hygiene = edit.notes + hygiene.clean(memory, edit, dry_run=dry_run)
                try:
                    applied = apply_plan(
                        edit,
                        plan,
                        current,
                        memory.clock(),
                        max_curated_drop=settings.max_curated_drop,
                    )
                except Refusal as refusal:
                    report.rejected, applied = refusal.reason, Applied()
                    raise
                _measure(report, edit)
                if dry_run:
                    raise _DryRun("dry run")
            report.archive = edit.archive
        except _DryRun:
            pass
        except Refusal:
            _hygiene_alone(memory, report, dry_run)
        report.merged, report.promoted = applied.merged, applied.promoted
        report.refused, report.removed = applied.refused, applied.removed
        if memory.has("state"):
            state = memory.state
            expired = state.expired() if dry_run else state.prune()
            report.state_pruned = [entry.key for entry in expired]
    report.seconds = time.perf_counter() - began
    if not dry_run and memory.has("history"):
        report.activity_id = _record(memory, report)
    return report


def _measure(report: DreamReport, edit: KnowledgeEdit) -> None:
    """knowledge.md's size as the dream leaves it, into ``report``."""
    report.observations_after = len(edit.observations)
    report.curated_chars_after = edit.curated_chars()
    report.bytes_after = len(encode(edit.text()))


def _hygiene_alone(memory: Memory, report: DreamReport, dry_run: bool) -> None:
    """The plan rejected whole: the hygiene alone, in a second write (none in a dry run)."""
    try:
        with memory.knowledge.transaction() as edit:
            report.hygiene = edit.notes + hygiene.clean(memory, edit, dry_run=dry_run)
            _measure(report, edit)
            if dry_run:
                raise _DryRun("dry run")
        report.archive = edit.archive
    except _DryRun:
        pass


def _snapshot(memory: Memory, text: str) -> str | None:
    """knowledge.md as it was, under ``archive/dreams/`` (not indexed: ``.md.bak``)."""
    if not text:
        return None
    folder = f"{memory.manifest.archive_dir()}/dreams"
    stamp = format_ts(memory.clock()).replace(":", "-")
    path = f"{folder}/{stamp}.knowledge.md.bak"
    memory.files.write_all([(path, encode(text))])
    kept = [
        p for p in memory.files.paths(folder)
        if "/" not in p[len(folder) + 1 :] and p.endswith(".knowledge.md.bak")
    ]  # fmt: skip
    for old in sorted(kept)[:-SNAPSHOTS_KEPT]:
        memory.files.remove(old)
    return path


def _record(memory: Memory, report: DreamReport) -> str:
    history = memory.history
    activity = history.start_activity("internal", DREAM_LABEL)
    history.log(activity, "text", report.summary(), metadata=report.to_dict())
    history.end_activity(
        activity,
        summary=report.summary()[:1000],
        keywords=["dream", report.planner, "consolidation"],
        success=report.rejected is None,
    )
    return activity
