"""Episodes: the journal by day, the activity history as a timeline filterable by type,
an activity's logs in order, and sessions with their messages."""

from __future__ import annotations

from datetime import date
from itertools import groupby
from typing import TYPE_CHECKING, Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from memdir.stores.history import HistoryError

if TYPE_CHECKING:
    from memdir.ui.app import UI

ACTIVITY_TYPES = ("task", "chat", "heartbeat", "a2a", "internal", "respond_in_session")
SHOWN = 100


def page(ui: UI, request: Request, form: FormData | None) -> Response:
    memory, params = ui.memory, request.query_params
    context: dict[str, Any] = {"types": ACTIVITY_TYPES}
    if memory.has("journal"):
        days = memory.journal.days()[::-1]
        try:
            day = date.fromisoformat(params["day"]) if params.get("day") else None
        except ValueError:
            day = None
        day = day if day in days else (days[0] if days else None)
        context["journal"] = {
            "days": days,
            "day": day,
            "text": memory.journal.text(day) if day else None,
        }
    if memory.has("history"):
        kind = params.get("type", "")
        kind = kind if kind in ACTIVITY_TYPES else ""
        recent = memory.history.recent(SHOWN, type=kind or None)
        context["type"] = kind
        context["timeline"] = [
            (day, list(group)) for day, group in groupby(recent, key=lambda a: a.started_at.date())
        ]
    if memory.has("sessions"):
        context["sessions"] = memory.sessions.list()[:SHOWN]
    return ui.page(request, "episodes.html", view="episodes", title="Episodes", **context)


def activity(ui: UI, request: Request, form: FormData | None) -> Response:
    found = None
    if ui.memory.has("history"):
        found = ui.memory.history.get(request.query_params.get("id", ""))
    if found is None:
        return ui.page(request, "activity.html", status=404, view="episodes", title="Activity",
                       refusal="no such activity in the history")  # fmt: skip
    return ui.page(
        request, "activity.html", view="episodes", title=found.activity.label, detail=found
    )


def session(ui: UI, request: Request, form: FormData | None) -> Response:
    sid = request.query_params.get("id", "")
    loaded = None
    if ui.memory.has("sessions") and ui.memory.sessions.exists(sid):
        try:
            loaded = ui.memory.sessions.load(sid)
        except (HistoryError, LookupError, ValueError):
            loaded = None
    if loaded is None:
        return ui.page(request, "session.html", status=404, view="episodes", title="Session",
                       refusal=f"no session {sid!r}")  # fmt: skip
    return ui.page(request, "session.html", view="episodes", title=f"Session {sid}", s=loaded)
