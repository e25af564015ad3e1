"""Overview: each layer against its caps, the boot context against its budget, what
was left out of it and why, the last dream and what is due, and doctor's findings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.stores.history import Activity
    from memdir.ui.app import UI


@dataclass(frozen=True)
class Gauge:
    label: str
    value: float
    cap: float
    unit: str


@dataclass(frozen=True)
class LayerRow:
    name: str
    store: str
    memory: str
    boot: str
    files: int
    bytes: int
    gauges: list[Gauge]
    link: str


def layer_rows(ui: UI) -> list[LayerRow]:
    memory = ui.memory
    limits = memory.manifest.limits
    rows = []
    files = ui.files()
    for name, layer in memory.manifest.layers.items():
        listed = files[name]
        gauges: list[Gauge] = []
        link = ""
        if layer.store == "notebook":
            mine = [e for e in memory.notebook.entries() if e.managed == "agent"]
            gauges.append(Gauge("agent entries", len(mine), limits.notebook_max_agent_entries, ""))
            link = ui.url("/memory") + "#notebook"
        elif layer.store == "knowledge":
            usage = memory.knowledge.usage()
            gauges.append(Gauge("curated", usage.total_chars, usage.total_max, "chars"))
            for key, chars in usage.section_chars.items():
                gauges.append(Gauge(f"section {key}", chars, usage.section_max, "chars"))
            gauges.append(Gauge("observations", usage.observations, usage.observations_max, ""))
            link = ui.url("/memory") + "#knowledge"
        elif layer.store == "vault":
            link = ui.url("/vault")
        elif layer.store in ("state", "workstate"):
            link = ui.url("/memory") + f"#{layer.store}"
        elif layer.store in ("journal", "history", "sessions"):
            link = ui.url("/episodes")
        rows.append(
            LayerRow(
                name,
                layer.store,
                layer.memory or "",
                layer.boot,
                len(listed),
                sum(got[0] for got in listed.values()),
                gauges,
                link,
            )
        )
    return rows


def last_dream(memory: Memory) -> Activity | None:
    from memdir.dream.cycle import DREAM_LABEL

    if not memory.has("history"):
        return None
    for activity in memory.history.recent(200, type="internal"):
        if activity.label == DREAM_LABEL:
            return activity
    return None


def dream_due(memory: Memory) -> str:
    from memdir.dream.cycle import dream_due as due

    if not memory.has("knowledge"):
        return "no knowledge layer: nothing to dream over"
    is_due, why = due(memory)
    return f"{'due' if is_due else 'not due'}: {why}"


def page(ui: UI, request: Request, form: FormData | None) -> Response:
    memory = ui.memory
    context = memory.context()
    parts = [(report.layer, report.tokens) for report in context.layers]
    boot: dict[str, Any] = {
        "parts": parts,
        "tokens": context.tokens,
        "budget": context.budget,
        "layers": context.layers,
        "left_out": context.left_out,
        "warnings": context.warnings,
        "counter": context.counter,
    }
    return ui.page(
        request,
        "overview.html",
        view="overview",
        title="Overview",
        layers=layer_rows(ui),
        boot=boot,
        dream=last_dream(memory),
        due=dream_due(memory),
        doctor=ui.soon("doctor", ui.fingerprint(), lambda own: own.doctor()),
        budget=memory.budget(),
    )
