"""The pages' charts, drawn on the server as SVG (no script needed to see them).

Each function returns markup safe to put in a template: every text in it is
escaped. Colours come from CSS classes (``static/style.css``), so the charts follow
the page's theme; each chart has a ``<title>`` and an ``aria-label`` saying in words
what it shows, for a screen reader and for a test.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from markupsafe import Markup, escape

TIER_ORDER = ("core", "active", "warm", "cold", "archive")


def _label(text: str) -> str:
    return str(escape(text))


def fill(value: float, cap: float, label: str, *, width: int = 220) -> Markup:
    """How full something is against its cap: a bar, marked ``over`` past the cap."""
    share = 0.0 if cap <= 0 else value / cap
    shown = min(share, 1.0) * width
    over = " over" if share > 1 else ""
    said = _label(f"{label}: {value:,.0f} of {cap:,.0f} ({share:.0%})")
    return Markup(
        f'<svg class="fill{over}" width="{width}" height="12" viewBox="0 0 {width} 12" '
        f'role="img" aria-label="{said}"><title>{said}</title>'
        f'<rect class="track" width="{width}" height="12" rx="3"/>'
        f'<rect class="value" width="{shown:.1f}" height="12" rx="3"/></svg>'
    )


def stacked(parts: Sequence[tuple[str, int]], target: int, *, width: int = 640) -> Markup:
    """Parts side by side against a target (the boot context's layers against its
    token budget): each part a segment, the target a line."""
    total = sum(value for _, value in parts)
    scale = max(total, target, 1)
    x = 0.0
    segments = []
    for n, (name, value) in enumerate(parts):
        w = value / scale * width
        said = _label(f"{name}: {value:,} tokens")
        segments.append(
            f'<rect class="seg seg{n % 8}" x="{x:.1f}" y="0" width="{w:.1f}" height="28">'
            f"<title>{said}</title></rect>"
        )
        x += w
    line = target / scale * width
    said = _label(
        f"boot context: {total:,} tokens of a {target:,}-token target "
        + ", ".join(f"{name} {value:,}" for name, value in parts)
    )
    return Markup(
        f'<svg class="stacked" viewBox="0 0 {width} 40" preserveAspectRatio="none" '
        f'role="img" aria-label="{said}"><title>{said}</title>'
        f'<rect class="track" width="{width}" height="28"/>{"".join(segments)}'
        f'<line class="target" x1="{line:.1f}" x2="{line:.1f}" y1="0" y2="40"/></svg>'
    )


def score_parts(parts: Sequence[tuple[str, float | None, float]]) -> Markup:
    """A hit's score parts (keyword, semantic, relevance) as small bars, each against the
    most it can be in this list (``parts``: name, value or None, the scale's top)."""
    rows = []
    for n, (name, value, top) in enumerate(parts):
        share = 0.0 if value is None or top <= 0 else max(0.0, min(value / top, 1.0))
        shown = "none" if value is None else f"{value:.3f}"
        said = _label(f"{name} {shown}")
        rows.append(
            f'<g transform="translate(0 {n * 10})"><title>{said}</title>'
            f'<rect class="track" width="80" height="7"/>'
            f'<rect class="part part-{_label(name)}" width="{share * 80:.1f}" height="7"/></g>'
        )
    said = _label(
        ", ".join(
            f"{name} {'none' if value is None else format(value, '.3f')}"
            for name, value, _ in parts
        )
    )
    return Markup(
        f'<svg class="parts" width="80" height="{len(parts) * 10}" role="img" '
        f'aria-label="{said}">{"".join(rows)}</svg>'
    )


def spread(counts: dict[str, int], *, width: int = 320) -> Markup:
    """Cards over tiers: one bar a tier, its count beside it."""
    top = max(counts.values(), default=0) or 1
    rows = []
    for n, tier in enumerate(TIER_ORDER):
        count = counts.get(tier, 0)
        w = count / top * (width - 120)
        rows.append(
            f'<g transform="translate(0 {n * 20})"><text x="0" y="13">{tier}</text>'
            f'<rect class="tier tier-{tier}" x="60" y="2" width="{w:.1f}" height="14"/>'
            f'<text x="{66 + w:.1f}" y="13">{count:,}</text></g>'
        )
    said = _label("cards by tier: " + ", ".join(f"{t} {counts.get(t, 0)}" for t in TIER_ORDER))
    return Markup(
        f'<svg class="spread" viewBox="0 0 {width} {len(TIER_ORDER) * 20}" width="{width}" '
        f'role="img" aria-label="{said}"><title>{said}</title>{"".join(rows)}</svg>'
    )


def curve(
    points: Sequence[tuple[date, float]],
    touches: Sequence[date],
    today: date,
    *,
    width: int = 560,
    height: int = 160,
) -> Markup:
    """Relevance over time (the forgetting curve), each touch marked, today a line."""
    if not points:
        return Markup("")
    first, last = points[0][0], points[-1][0]
    span = max((last - first).days, 1)

    def x(day: date) -> float:
        return 30 + (day - first).days / span * (width - 40)

    def y(value: float) -> float:
        return 10 + (1 - value) * (height - 30)

    line = " ".join(f"{x(day):.1f},{y(value):.1f}" for day, value in points)
    marks = "".join(
        f'<circle class="touch" cx="{x(day):.1f}" cy="{height - 20:.1f}" r="4">'
        f"<title>touched {day.isoformat()}</title></circle>"
        for day in touches
        if first <= day <= last
    )
    now = x(today) if first <= today <= last else None
    today_line = (
        f'<line class="today" x1="{now:.1f}" x2="{now:.1f}" y1="5" y2="{height - 20}"/>'
        if now is not None
        else ""
    )
    said = _label(
        f"relevance from {first.isoformat()} to {last.isoformat()}, "
        f"{len(touches)} touches; today {points_at(points, today):.2f}"
    )
    return Markup(
        f'<svg class="curve" viewBox="0 0 {width} {height}" role="img" aria-label="{said}">'
        f"<title>{said}</title>"
        f'<text x="0" y="14">1.0</text><text x="0" y="{height - 20}">0</text>'
        f'<line class="axis" x1="30" x2="{width - 10}" y1="{height - 20}" y2="{height - 20}"/>'
        f'<polyline class="relevance" points="{line}"/>{today_line}{marks}'
        f'<text x="30" y="{height - 4}">{first.isoformat()}</text>'
        f'<text x="{width - 90}" y="{height - 4}">{last.isoformat()}</text></svg>'
    )


def points_at(points: Sequence[tuple[date, float]], day: date) -> float:
    best = points[0][1]
    for moment, value in points:
        if moment <= day:
            best = value
    return best
