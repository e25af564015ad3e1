"""Working and semantic memory: the notebook, curated sections, observations, state and
the working state, each item with its date, tags, provenance (``by:``) and flags, and
forms to edit them in place.

Each edit is the agent tool of the same name (``update_notebook``, ``memory_update``,
``memory_save``, ``state_update``) called as a ``person``: the caps, the secret check
and the refusals are the tools' own. A refused edit shows the page again with the
reason and the text as it was typed; the file is not touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from memdir.files.sections import SectionDocument
from memdir.safety.provenance import FLAG_KEY, writing_as, written_by
from memdir.stores.base import decode

if TYPE_CHECKING:
    from memdir.ui.app import UI

OBSERVATIONS_KEY = "_observations"
SHOWN_OBSERVATIONS = 200


@dataclass(frozen=True)
class Item:
    key: str
    body: str
    meta: dict[str, str]

    @property
    def by(self) -> str:
        return written_by(self.meta)

    @property
    def flagged(self) -> str:
        return self.meta.get(FLAG_KEY, "")

    @property
    def date(self) -> str:
        for name in ("updated", "date", "created", "day"):
            if self.meta.get(name):
                return self.meta[name]
        return ""

    @property
    def tags(self) -> list[str]:
        return [tag.strip() for tag in self.meta.get("tags", "").split(",") if tag.strip()]


def items(text: str | None, level: int = 2) -> list[Item]:
    """The sections of a file as the page shows them, metadata included."""
    if not text:
        return []
    doc = SectionDocument.parse(text, level=level)
    return [Item(s.key, s.body, dict(s.meta)) for s in doc]


def _file_text(ui: UI, store: str) -> tuple[str, str | None]:
    path = ui.memory.manifest.path_of(store)
    if path is None:
        return "", None
    return path, decode(ui.memory.files.read(path))  # on any backend


def page(
    ui: UI,
    request: Request,
    form: FormData | None,
    *,
    refusal: str | None = None,
    draft: dict[str, str] | None = None,
    status: int = 200,
) -> Response:
    memory = ui.memory
    context: dict[str, Any] = {"draft": draft or {}}
    limits = memory.manifest.limits
    context["limits"] = limits
    if memory.has("notebook"):
        path, text = _file_text(ui, "notebook")
        context["notebook"] = {"path": path, "entries": items(text)}
    if memory.has("knowledge"):
        path, text = _file_text(ui, "knowledge")
        sections = [item for item in items(text) if item.key != OBSERVATIONS_KEY]
        observed = next((item for item in items(text) if item.key == OBSERVATIONS_KEY), None)
        observations = items(observed.body, level=3) if observed else []
        context["knowledge"] = {
            "path": path,
            "sections": sections,
            "observations": observations[-SHOWN_OBSERVATIONS:][::-1],
            "observation_count": len(observations),
            "usage": memory.knowledge.usage(),
        }
    if memory.has("state"):
        path, text = _file_text(ui, "state")
        context["state"] = {"path": path, "entries": items(text)}
    if memory.has("workstate"):
        path, text = _file_text(ui, "workstate")
        context["workstate"] = {"path": path, "entries": items(text)}
    return ui.page(
        request,
        "memory.html",
        status=status,
        view="memory",
        title="Working and semantic memory",
        refusal=refusal,
        **context,
    )


def _text(form: FormData | None, name: str) -> str:
    value = form.get(name) if form is not None else None
    return value.replace("\r\n", "\n") if isinstance(value, str) else ""


def _answer(
    ui: UI,
    request: Request,
    form: FormData | None,
    result: dict[str, Any],
    anchor: str,
    draft: dict[str, str],
) -> Response:
    if result.get("ok"):
        return ui.done("/memory", result, anchor)
    reason = str(result.get("reason") or "refused")
    return page(ui, request, form, refusal=reason, draft=draft, status=422)


def _unknown_action(ui: UI, request: Request, form: FormData | None, other: str) -> Response | None:
    """The page again with a refusal when the form's ``action`` is neither ``save`` (or
    none: a form sent without pressing a button) nor ``other``: a forged or stale form
    is not taken for a save."""
    action = _text(form, "action")
    if action in ("", "save", other):
        return None
    reason = f"unknown action {action!r}: the form sends 'save' or {other!r}; nothing was written"
    return page(ui, request, form, refusal=reason, status=422)


def edit_section(ui: UI, request: Request, form: FormData | None) -> Response:
    section, content = _text(form, "section").strip(), _text(form, "content")
    if (refused := _unknown_action(ui, request, form, "remove")) is not None:
        return refused
    if _text(form, "action") == "remove":
        with writing_as("person"):  # no tool removes a section: the store's own method
            result = ui.memory.knowledge.remove_section(section).to_dict()
        return _answer(ui, request, form, result, "#knowledge", {})
    result = ui.call("memory_update", {"section": section, "content": content, "mode": "replace"})
    return _answer(
        ui, request, form, result, f"#section-{section}", {f"section:{section}": content}
    )


def edit_notebook(ui: UI, request: Request, form: FormData | None) -> Response:
    key, text = _text(form, "key").strip(), _text(form, "text")
    if (refused := _unknown_action(ui, request, form, "clear")) is not None:
        return refused
    if _text(form, "action") == "clear":
        result = ui.call("clear_notebook", {"key": key})
    else:
        result = ui.call("update_notebook", {"key": key, "text": text})
    return _answer(ui, request, form, result, "#notebook", {f"notebook:{key}": text})


def edit_state(ui: UI, request: Request, form: FormData | None) -> Response:
    key, text = _text(form, "key").strip(), _text(form, "text")
    if (refused := _unknown_action(ui, request, form, "remove")) is not None:
        return refused
    args: dict[str, Any] = {"key": key}
    if _text(form, "action") == "remove":
        args["remove"] = True
    else:
        args["text"] = text
    result = ui.call("state_update", args)
    return _answer(ui, request, form, result, "#state", {f"state:{key}": text})


def edit_observation(ui: UI, request: Request, form: FormData | None) -> Response:
    if (refused := _unknown_action(ui, request, form, "delete")) is not None:
        return refused
    if _text(form, "action") == "delete":
        ids = [_text(form, "id").strip()]
        result = ui.call("memory_update", {"mode": "delete", "ids": ids})
        return _answer(ui, request, form, result, "#observations", {})
    content = _text(form, "content")
    tags = [tag.strip() for tag in _text(form, "tags").split(",") if tag.strip()]
    args: dict[str, Any] = {"content": content, "tags": tags}
    if _text(form, "type"):
        args["type"] = _text(form, "type")
    result = ui.call("memory_save", args)
    return _answer(ui, request, form, result, "#observations", {"observation": content})
