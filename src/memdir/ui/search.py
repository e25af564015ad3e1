"""Search: a query, a mode (heartbeat, normal, deep, creative), the hits with their
snippet, tier and score parts (keyword, semantic, relevance) as small bars; a hit
opens the lines it points at (``/file``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

if TYPE_CHECKING:
    from memdir.index.search import Hit
    from memdir.ui.app import UI

MODES = ("heartbeat", "normal", "deep", "creative")
K = 20


def page(ui: UI, request: Request, form: FormData | None) -> Response:
    query = request.query_params.get("q", "").strip()
    mode = request.query_params.get("mode", "normal")
    refusal = None
    hits: list[Hit] = []
    asked = "q" in request.query_params or mode == "creative"
    note = ""
    if mode not in MODES:
        refusal, mode = f"mode must be one of {', '.join(MODES)}, not {mode!r}", "normal"
    elif mode == "creative":
        hits = ui.memory.creative(K)
        note = "a random sample of cold and archived items, not ranked by any query"
    elif asked:
        found = ui.memory.search(query, k=K, mode=mode)
        hits = list(found)
        if getattr(found, "widened", False):
            note = "nothing strong in the usual tiers: widened to cold and archive"
        elif getattr(found, "colder", 0):
            note = f"{found.colder} more in colder tiers: try deep"
    tops = {
        "keyword": max((h.keyword or 0.0 for h in hits), default=0.0),
        "semantic": 1.0,
        "relevance": 1.0,
    }
    return ui.page(
        request,
        "search.html",
        status=400 if refusal else 200,
        view="search",
        title="Search",
        refusal=refusal,
        query=query,
        mode=mode,
        modes=MODES,
        hits=hits,
        asked=asked,
        note=note,
        tops=tops,
    )
