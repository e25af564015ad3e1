"""``memdir maintain``: every job that is due, in order, safe to call from cron.

Order: decay (once a day), the state.md TTL prune, the dream (when due), journal
compression (days over 20 KB), research-intel rotation (a finished week). Each
job is skipped where the folder has no layer for it, and each decides for itself
whether it is due, so calling ``maintain`` every few minutes costs a few
lookups. One ``maintain`` runs at a time per folder: a second one finds the
maintenance lock taken and leaves at once, saying so. Jobs that run once a day
(decay, dream) record themselves in the activity history as ``internal``
activities; that record is what tells the next call they are done.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memdir.config import STATE_DIR
from memdir.textutil import plural

if TYPE_CHECKING:
    from memdir.memory import Memory

JOBS = ("decay", "state", "dream", "journals", "intel")
MAINTAIN_LOCK = "maintain.lock"


@dataclass
class JobResult:
    name: str
    ran: bool
    summary: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"job": self.name, "ran": self.ran, "summary": self.summary, **self.details}


@dataclass
class MaintainReport:
    jobs: list[JobResult] = field(default_factory=list)
    busy: bool = False
    """another maintain held the lock: nothing was done"""
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "busy": self.busy,
            "seconds": round(self.seconds, 3),
            "jobs": [job.to_dict() for job in self.jobs],
        }


def run_maintenance(
    memory: Memory, *, only: list[str] | None = None, dry_run: bool = False
) -> MaintainReport:
    began = time.perf_counter()
    report = MaintainReport()
    unknown = [name for name in only or [] if name not in JOBS]
    if unknown:
        raise ValueError(f"unknown job {', '.join(unknown)}: the jobs are {', '.join(JOBS)}")
    from filelock import FileLock, Timeout  # JOBS (the CLI's help) needs no lock

    from memdir.errors import ReadOnlyFolder
    from memdir.files.atomic import storage_error

    if memory.read_only is not None:
        if not dry_run:  # the lock file cannot be made: say why, as a write does
            raise ReadOnlyFolder(memory.read_only)
        # a dry run writes nothing, so it needs no lock: what the jobs would do, reported
        report.jobs.extend(_JOBS[name](memory, True) for name in JOBS if not only or name in only)
        report.seconds = time.perf_counter() - began
        return report
    lock = FileLock(str(memory.root / STATE_DIR / MAINTAIN_LOCK))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        report.busy = True
        return report
    except OSError as exc:  # the lock file cannot be made: say why as a write would
        raise storage_error(memory.root, exc) or exc from exc
    try:
        for name in JOBS:
            if only and name not in only:
                continue
            report.jobs.append(_JOBS[name](memory, dry_run))
    finally:
        lock.release()
    report.seconds = time.perf_counter() - began
    return report


def _ran_today(memory: Memory, label: str) -> bool:
    if not memory.has("history"):
        return False
    now = memory.clock()
    midnight = datetime(now.year, now.month, now.day, tzinfo=UTC)
    return any(
        a.label == label for a in memory.history.recent(100, type="internal", since=midnight)
    )


def _record(memory: Memory, label: str, summary: str, details: dict[str, Any]) -> None:
    if not memory.has("history"):
        return
    history = memory.history
    activity = history.start_activity("internal", label)
    history.log(activity, "text", summary, metadata=details)
    history.end_activity(activity, summary=summary, keywords=[label, "maintain"], success=True)


def _decay(memory: Memory, dry_run: bool) -> JobResult:
    if not memory.has("vault"):
        return JobResult("decay", False, "no vault layer")
    if _ran_today(memory, "decay"):
        return JobResult("decay", False, "already ran today")
    report = memory.decay(dry_run=dry_run)
    summary = f"{report.cards} cards, {len(report.changed)} changed" + (
        " (dry run)" if dry_run else ""
    )
    if not dry_run:
        _record(memory, "decay", summary, report.to_dict())
    return JobResult("decay", True, summary, report.to_dict())


def _state(memory: Memory, dry_run: bool) -> JobResult:
    if not memory.has("state"):
        return JobResult("state", False, "no state layer")
    expired = memory.state.expired() if dry_run else memory.state.prune()
    keys = [entry.key for entry in expired]
    verb = "would prune" if dry_run else "pruned"
    return JobResult("state", True, f"{verb} {len(keys)} expired snapshots", {"pruned": keys})


def _dream(memory: Memory, dry_run: bool) -> JobResult:
    if not memory.has("knowledge"):
        return JobResult("dream", False, "no knowledge layer")
    report = memory.dream(dry_run=dry_run)
    return JobResult("dream", report.ran, report.summary(), {"report": report.to_dict()})


def _journals(memory: Memory, dry_run: bool) -> JobResult:
    if not memory.has("journal"):
        return JobResult("journals", False, "no journal layer")
    if dry_run:
        return JobResult("journals", False, "dry run: journal compression skipped")
    done = memory.compress_journals()
    days = [r.day for r in done]
    notes = [note for r in done for note in r.notes]
    details: dict[str, Any] = {"days": days, **({"notes": notes} if notes else {})}
    return JobResult(
        "journals",
        bool(done),
        _with_notes(f"compressed {plural(len(days), 'day')}", notes),
        details,
    )


def _intel(memory: Memory, dry_run: bool) -> JobResult:
    if not memory.has("intel"):
        return JobResult("intel", False, "no intel layer")
    if dry_run:
        return JobResult("intel", False, "dry run: intel rotation skipped")
    report = memory.intel.rotate()
    summary = _with_notes(f"rotated {plural(len(report.rotated), 'week')}", report.notes)
    return JobResult("intel", bool(report.rotated), summary, report.to_dict())


def _with_notes(summary: str, notes: list[str]) -> str:
    """A summariser's fallbacks, counted in the job's line (each is in its details)."""
    if not notes:
        return summary
    return f"{summary}; {plural(len(notes), 'summary', 'summaries')} fell back to the offline one"


_JOBS = {
    "decay": _decay,
    "state": _state,
    "dream": _dream,
    "journals": _journals,
    "intel": _intel,
}
