"""History: where the folder is backed up with git (``memdir backup``), a file's past
versions, one version beside the file as it is now, and a restore."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from memdir.files.reader import resolve_inside
from memdir.maintain.restore import (
    is_git_folder,
    restore_version,
    tracked_files,
    version_text,
    versions,
)
from memdir.safety.provenance import writing_as
from memdir.stores.base import read_text
from memdir.ui.diffs import diff

if TYPE_CHECKING:
    from memdir.ui.app import UI


def page(
    ui: UI,
    request: Request,
    form: FormData | None,
    *,
    refusal: str | None = None,
    status: int = 200,
) -> Response:
    memory, params = ui.memory, request.query_params
    path, rev = params.get("path", ""), params.get("rev", "")
    if form is not None:
        path = str(form.get("path") or "")
    git = memory.backend == "local" and is_git_folder(memory.root)
    context: dict[str, object] = {"git": git, "path": path, "rev": rev, "backend": memory.backend}
    if git and not path:
        context["files"] = tracked_files(memory)
    if git and path:
        inside = resolve_inside(memory.space, path)
        if isinstance(inside, str):
            refusal, status = inside, 403
        else:
            target, path = inside
            context["path"] = path
            context["versions"] = versions(memory, path)
            if rev:
                old = version_text(memory, path, rev)
                if old is None:
                    refusal, status = f"git has no version {rev!r} of {path}", 404
                else:
                    context["old"] = old
                    context["changes"] = diff(old, read_text(target) or "")
    return ui.page(
        request,
        "history.html",
        status=status,
        view="history",
        title="History",
        refusal=refusal,
        **context,
    )


def restore(ui: UI, request: Request, form: FormData | None) -> Response:
    path = str(form.get("path") or "") if form is not None else ""
    rev = str(form.get("rev") or "") if form is not None else ""
    with writing_as("person"):
        result = restore_version(ui.memory, path, rev)
    if not result.ok:
        return page(ui, request, form, refusal=result.reason, status=422)
    return ui.done("/history", result)
