"""Vault: the cards with type, tier and relevance, the spread of cards over tiers, the
``[[link]]`` graph (neighbours, backlinks, orphans) and a card's forgetting curve.

The graph is drawn on the server: a card's neighbourhood (``?focus=``, two hops) or,
without one, the most linked cards, on rings around the centre; each node is a link
to its card, so it reads and works without JavaScript. ``static/graph.js`` lets a
person drag nodes and pan, and relaxes the rings with a small force layout. Showing
a card never touches it: a person looking is not the agent recalling.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from memdir.errors import FileShapeError
from memdir.files.cards import Card
from memdir.stores.base import decode
from memdir.stores.vault import CardInfo, CardRead, as_date
from memdir.tiers import TIERS, relevance

if TYPE_CHECKING:
    from memdir.config import Decay
    from memdir.maintain.graph import Graph
    from memdir.ui.app import UI

PAGE_SIZE = 100
GRAPH_MAX = 60
CURVE_AHEAD_DAYS = 30
_HISTORY_DAY = re.compile(r"^- (\d{4}-\d{2}-\d{2})", re.MULTILINE)


@dataclass(frozen=True)
class Node:
    path: str
    title: str
    tier: str
    x: float
    y: float
    focus: bool


def _graph(ui: UI) -> tuple[Graph, int]:
    """The link graph (read again only when a card changed) and its fingerprint."""
    from memdir.maintain.graph import build_graph

    vault = ui.memory.vault  # no state_dir: looking writes no graph.json
    cards = ui.fingerprint(("vault",))
    return ui.cached("graph", cards, lambda: build_graph(vault)), cards


def _rings(centre: list[str], rings: list[list[str]]) -> dict[str, tuple[float, float]]:
    placed = {path: (0.0, 0.0) for path in centre}
    for n, ring in enumerate(rings, 1):
        radius = 150.0 * n
        for i, path in enumerate(ring):
            angle = 2 * math.pi * i / max(len(ring), 1) + n * 0.4
            placed[path] = (radius * math.cos(angle), radius * math.sin(angle))
    return placed


def neighbourhood(graph: Graph, focus: str | None) -> tuple[list[Node], list[tuple[str, str]]]:
    """The nodes and edges drawn: ``focus`` and two hops around it, or the most linked."""
    cards = graph.cards
    if focus in cards:
        first = [p for p in graph.neighbours(focus) if p in cards][:GRAPH_MAX]
        seen = {focus, *first}
        second: list[str] = []
        for path in first:
            for other in graph.neighbours(path):
                if other not in seen and len(seen) < GRAPH_MAX:
                    seen.add(other)
                    second.append(other)
        placed = _rings([focus], [first, second])
    else:
        ranked = sorted(cards, key=lambda p: (-len(graph.neighbours(p)), p))
        chosen = [p for p in ranked if graph.neighbours(p)][:GRAPH_MAX]
        inner, outer = chosen[:8], chosen[8:]
        placed = _rings([], [inner, outer]) if inner else {}
    nodes = [
        Node(path, cards[path].title, cards[path].tier, x, y, path == focus)
        for path, (x, y) in placed.items()
    ]
    edges = [
        (source, target)
        for source in placed
        for target in graph.links.get(source, [])
        if target in placed
    ]
    return nodes, edges


def _ordered(graph: Graph) -> tuple[list[CardInfo], dict[str, int], list[str]]:
    """The cards by tier and relevance, how many in each tier, and their types: once
    per graph (sorting 10k cards is most of a page's time)."""
    infos = list(graph.cards.values())
    spread: dict[str, int] = {tier: 0 for tier in TIERS}
    for info in infos:
        spread[info.tier] = spread.get(info.tier, 0) + 1
    order: dict[str, int] = {name: n for n, name in enumerate(TIERS)}
    infos.sort(key=lambda i: (order.get(i.tier, 9), -i.relevance, i.path))
    return infos, spread, sorted({i.type for i in infos})


def page(ui: UI, request: Request, form: FormData | None) -> Response:
    if not ui.memory.has("vault"):
        return ui.page(request, "vault.html", view="vault", title="Vault", cards=None, refusal=None)
    params = request.query_params
    graph, cards = _graph(ui)
    infos, spread, types = ui.cached("vault-cards", cards, lambda: _ordered(graph))
    tier, kind = params.get("tier", ""), params.get("type", "")
    shown = [i for i in infos if (not tier or i.tier == tier) and (not kind or i.type == kind)]
    try:
        at = max(int(params.get("page", "1")), 1)
    except ValueError:
        at = 1
    pages = max((len(shown) + PAGE_SIZE - 1) // PAGE_SIZE, 1)
    focus = params.get("focus") or None
    if focus in graph.cards:
        nodes, edges = neighbourhood(graph, focus)
    else:  # the most linked cards: ranking 10k cards by their links, once per graph
        nodes, edges = ui.cached("graph-top", cards, lambda: neighbourhood(graph, None))
    return ui.page(
        request,
        "vault.html",
        view="vault",
        title="Vault",
        cards=shown[(at - 1) * PAGE_SIZE : at * PAGE_SIZE],
        total=len(infos),
        matching=len(shown),
        spread=spread,
        types=types,
        tiers=TIERS,
        tier=tier,
        kind=kind,
        at=at,
        pages=pages,
        nodes=nodes,
        edges=edges,
        by_path={n.path: n for n in nodes},
        focus=focus if focus in graph.cards else None,
        orphans=graph.orphans,
        broken=graph.broken,
    )


def touches(meta: dict[str, object], body: str) -> list[date]:
    """The days a card was touched, as far as it tells: created, its History lines'
    days, and its last access (decay's clock: ``last_accessed``, else ``updated``), none
    after that last access, so the curve ends where decay puts the card today."""
    last = as_date(meta.get("last_accessed")) or as_date(meta.get("updated"))
    days = {as_date(meta.get("created")), last}
    days |= {as_date(day) for day in _HISTORY_DAY.findall(body)}
    return sorted(day for day in days if day is not None and (last is None or day <= last))


def forgetting_curve(
    marks: list[date], today: date, decay: Decay, tier: str
) -> list[tuple[date, float]]:
    """Relevance each day from the first touch to ``CURVE_AHEAD_DAYS`` past today,
    reset at each touch (a core card stays at 1)."""
    if not marks:
        return []
    points = []
    day, last, end = marks[0], marks[0], today + timedelta(days=CURVE_AHEAD_DAYS)
    pending = list(marks)
    while day <= end:
        while pending and pending[0] <= day:
            last = pending.pop(0)
        value = 1.0 if tier == "core" else relevance((day - last).days, decay)
        points.append((day, value))
        day += timedelta(days=1)
    return points


def _read(ui: UI, graph: Graph, ref: str) -> CardRead | None:
    """The card ``ref`` names, without touching it: a card of the graph (just listed)
    read at once, anything else (a title, a bare name) resolved by the vault."""
    vault = ui.memory.vault
    try:
        if ref in graph.cards:
            text = decode(ui.memory.files.read(ref))
            if text is not None:
                parsed = Card.parse(text)
                return CardRead(ref, parsed.meta, parsed.body, text, touched=False)
        return vault.read(ref, touch=False)
    except FileShapeError:  # its frontmatter broke since it was listed: doctor says so
        return None


def card(ui: UI, request: Request, form: FormData | None) -> Response:
    if not ui.memory.has("vault"):
        return ui.page(request, "card.html", status=404, view="vault", title="Card",
                       refusal="this folder has no vault")  # fmt: skip
    ref = request.query_params.get("path", "")
    graph, _ = _graph(ui)
    read = _read(ui, graph, ref)
    if read is None:
        return ui.page(request, "card.html", status=404, view="vault", title="Card",
                       refusal=f"no card {ref!r} in the vault")  # fmt: skip
    info: CardInfo | None = graph.cards.get(read.path)
    today = ui.memory.clock().date()
    tier = info.tier if info else str(read.meta.get("tier", ""))
    marks = touches(read.meta, read.body)
    return ui.page(
        request,
        "card.html",
        view="vault",
        title=info.title if info else read.path,
        read=read,
        info=info,
        links=graph.links.get(read.path, []),
        backlinks=graph.backlinks.get(read.path, []),
        broken=graph.broken.get(read.path, []),
        titles={path: c.title for path, c in graph.cards.items()},
        curve=forgetting_curve(marks, today, ui.memory.manifest.decay, tier),
        marks=marks,
        today=today,
        rate=ui.memory.manifest.decay.rate,
        floor=ui.memory.manifest.decay.floor,
    )
