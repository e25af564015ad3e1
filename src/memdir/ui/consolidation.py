"""Consolidation: each dream's report (removed, merged, promoted, sizes before and
after) with a diff of knowledge.md, and a form to restore the snapshot it took.

The dream saves knowledge.md as it found it (``archive/dreams/``); the diff shown is
from that snapshot to the next one (what the following dream found) or, for the
newest, to knowledge.md now, so it holds the dream's changes and anything written
after it, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from memdir.maintain.restore import dream_snapshots, restore_snapshot, snapshot_text
from memdir.safety.provenance import writing_as
from memdir.stores.base import decode
from memdir.ui.diffs import DiffLine, diff

if TYPE_CHECKING:
    from memdir.stores.history import Activity
    from memdir.ui.app import UI

SHOWN = 30


@dataclass
class Dream:
    activity: Activity
    report: dict[str, Any]
    snapshot: str | None
    diff: list[DiffLine]
    against: str


def dreams(ui: UI) -> list[Dream]:
    from memdir.dream.cycle import DREAM_LABEL

    memory = ui.memory
    if not memory.has("history") or not memory.has("knowledge"):
        return []
    runs = [a for a in memory.history.recent(500, type="internal") if a.label == DREAM_LABEL]
    snapshots = [s.path for s in dream_snapshots(memory)]  # newest first
    knowledge = decode(memory.files.read(memory.knowledge.store)) or ""
    found = []
    for activity in runs[:SHOWN]:
        detail = memory.history.get(activity.id)
        report: dict[str, Any] = {}
        if detail is not None and detail.logs:
            report = dict(detail.logs[0].metadata or {})
        snapshot = report.get("snapshot")
        changes: list[DiffLine] = []
        against = ""
        if isinstance(snapshot, str) and snapshot in snapshots:
            before = snapshot_text(memory, snapshot) or ""
            newer = snapshots.index(snapshot) - 1
            if newer >= 0:
                after, against = snapshot_text(memory, snapshots[newer]) or "", snapshots[newer]
            else:
                after, against = knowledge, f"{memory.knowledge.store} now"
            changes = diff(before, after)
        else:
            snapshot = None
        found.append(Dream(activity, report, snapshot, changes, against))
    return found


def page(
    ui: UI,
    request: Request,
    form: FormData | None,
    *,
    refusal: str | None = None,
    status: int = 200,
) -> Response:
    return ui.page(
        request,
        "consolidation.html",
        status=status,
        view="consolidation",
        title="Consolidation",
        refusal=refusal,
        dreams=dreams(ui),
        snapshots=dream_snapshots(ui.memory),
        store=ui.memory.knowledge.store if ui.memory.has("knowledge") else None,
    )


def restore(ui: UI, request: Request, form: FormData | None) -> Response:
    snapshot = form.get("snapshot") if form is not None else None
    if not ui.memory.has("knowledge"):
        return page(ui, request, form, refusal="this folder has no knowledge layer", status=422)
    with writing_as("person"):
        result = restore_snapshot(ui.memory, snapshot if isinstance(snapshot, str) else "")
    if not result.ok:
        return page(ui, request, form, refusal=result.reason, status=422)
    return ui.done("/consolidation", result)
