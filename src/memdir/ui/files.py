"""A memory file's lines, the range a hit points at marked (``memory_get``: a path
outside the folder, a hidden one or memdir's own is refused)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

if TYPE_CHECKING:
    from memdir.ui.app import UI


def _line(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def page(ui: UI, request: Request, form: FormData | None) -> Response:
    path = request.query_params.get("path", "")
    start = _line(request.query_params.get("from"))
    end = _line(request.query_params.get("to"))
    got = ui.memory.get(path)  # the whole file; the range is marked, not cut
    if not got.ok:
        return ui.page(
            request,
            "file.html",
            status=404 if (got.reason or "").startswith("no file") else 403,
            view="",
            title=path or "File",
            refusal=got.reason,
            lines=[],
            path=path,
        )
    lines = got.text.splitlines()
    marked = (start or 0, end or start or 0)
    return ui.page(
        request,
        "file.html",
        view="",
        title=got.path,
        path=got.path,
        lines=list(enumerate(lines, 1)),
        marked=marked,
    )
