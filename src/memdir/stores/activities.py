"""What the activity history holds, on either backend: an ``Activity`` (one row of
``agent_activities``), an ``ActivityDetail`` (it with its ordered logs), and an
``ActivityRun`` (an activity being run inside ``history.activity(...)``).

``run_activity`` is ``HistoryStore.activity`` for both backends: start, yield the
run, end it as failed (the exception logged) if the block raised.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memdir.stores.history_digest import LogEvent
from memdir.timeutil import format_ts, parse_ts

if TYPE_CHECKING:
    from memdir.storage.seam import HistoryStore

ACTIVITY_COLUMNS = (
    "id, agent_id, type, label, task_id, summary, keywords, started_at, ended_at, "
    "total_tokens, total_tools, success"
)
"""``agent_activities``' columns in ``Activity``'s order (``activity_from_row``)"""


@dataclass(frozen=True)
class Activity:
    id: str
    agent_id: str
    type: str
    label: str
    task_id: str | None
    summary: str | None
    keywords: tuple[str, ...]
    started_at: datetime
    ended_at: datetime | None
    total_tokens: int
    total_tools: int
    success: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agentId": self.agent_id,
            "type": self.type,
            "label": self.label,
            "taskId": self.task_id,
            "summary": self.summary,
            "keywords": list(self.keywords),
            "startedAt": format_ts(self.started_at),
            "endedAt": format_ts(self.ended_at) if self.ended_at else None,
            "totalTokens": self.total_tokens,
            "totalTools": self.total_tools,
            "success": self.success,
        }


@dataclass(frozen=True)
class ActivityDetail:
    activity: Activity
    logs: tuple[LogEvent, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.activity.to_dict(),
            "logs": [
                {"seq": e.seq, "type": e.type, "content": e.content, "metadata": e.metadata}
                for e in self.logs
            ],
        }


def activity_from_row(row: tuple[Any, ...]) -> Activity:
    """An ``Activity`` from a row of ``ACTIVITY_COLUMNS`` in ``history.db``."""
    keys = tuple(k.strip() for k in (row[6] or "").split(",") if k.strip())
    started = parse_ts(row[7])
    assert started is not None
    success = None if row[11] is None else bool(row[11])
    return Activity(
        row[0], row[1], row[2], row[3], row[4], row[5], keys, started, parse_ts(row[8]),
        int(row[9]), int(row[10]), success,
    )  # fmt: skip


class ActivityRun:
    """An activity being run inside ``History.activity(...)``."""

    def __init__(self, history: HistoryStore, activity_id: str) -> None:
        self.history = history
        self.id = activity_id
        self.summary: str | None = None
        self.keywords: list[str] | None = None

    def log(self, type: str, content: str, metadata: dict[str, Any] | None = None) -> int:
        return self.history.log(self.id, type, content, metadata)


@contextmanager
def run_activity(
    history: HistoryStore, type: str, label: str, task_id: str | None = None
) -> Iterator[ActivityRun]:
    """``HistoryStore.activity`` on either backend: start, yield the run, end it (as
    failed, with the exception logged, if the block raised)."""
    run = ActivityRun(history, history.start_activity(type, label, task_id))
    try:
        yield run
    except BaseException as exc:
        history.log(run.id, "error", f"{exc.__class__.__name__}: {exc}")
        history.end_activity(run.id, run.summary, run.keywords, success=False)
        raise
    history.end_activity(run.id, run.summary, run.keywords, success=True)
