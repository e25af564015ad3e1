"""Assembling a memory folder into the context an agent runs on, within budgets.

The manifest's layers, in their order, each by its boot policy:

| boot        | loaded                                                        |
|-------------|---------------------------------------------------------------|
| always      | documents whole; knowledge's curated sections (never         |
|             | observations); the notebook's entries; the working state     |
| reflex      | only in the reflex profile: state as short lines             |
| recent      | journals: the layer's ``days``, today included (unset: today |
|             | and yesterday; the deep profile: at least a week)            |
| core        | vault cards whose tier is core                                |
| heartbeat   | only in the heartbeat profile                                 |
| never       | not at boot (searched; a query can still bring it in)        |

Profiles: ``reflex`` (no knowledge, a few state lines, no journal, no cards),
``default``, ``deep`` (at least a week of journals), ``heartbeat`` (adds HEARTBEAT.md).

The text has two parts. The stable part (identity, procedures, curated
knowledge, core cards) changes rarely: a prompt cache can keep it. The live part
(working memory, state, journals, the dashboard, query hits) comes last, under
``[Live context]``, as the notebook seed's Scheme A puts the notebook in the
volatile tail.

Budgets: each layer's own (manifest ``budget``; knowledge also capped by
``knowledge_prompt_max_tokens``), the query slot's, and the total. Items are
whole (a file, a section, an entry, a card, a day, a hit): nothing is cut
mid-sentence. When something must go, whole items go, lowest priority first,
and the report says which and why. Priority, highest first: identity and
working memory (never dropped), state lines, knowledge and the dashboard,
today's journal and the query's hits, core cards, older days.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memdir.config import DEEP_DAYS, Layer, file_template
from memdir.context.notes import NOTES_PREAMBLE, note, quote, uncommented, warned
from memdir.context.tokens import TokenCounter
from memdir.files.encoding import clean
from memdir.stores.base import decode
from memdir.stores.knowledge import prompt_text

if TYPE_CHECKING:
    from memdir.memory import Memory

PROFILES = ("reflex", "default", "deep", "heartbeat")
LIVE_MARK = "[Live context]"
# Lower numbers stay longest; 0 is never dropped for the total budget.
PRIORITY = {
    "identity": 0,
    "working": 0,
    "state": 1,
    "knowledge": 2,
    "heartbeat": 2,
    "today": 3,
    "hit": 3,  # a hit for this turn's query outranks cards and older days
    "card": 4,
    "older": 5,
}
_HEADINGS = {
    "knowledge": "## Your Knowledge",
    "notebook": "## Notebook",
    "state": "## State",
    "journal": "## Journal",
    "vault": "## Core cards",
}


@dataclass(frozen=True)
class Block:
    layer: str
    source: str
    """the file, or ``file#anchor`` for a part of one"""
    text: str
    tokens: int
    part: str
    priority: int
    quoted: bool = False
    """a memory, shown as a quoted note with its source (``context.notes``)"""


@dataclass(frozen=True)
class LeftOut:
    layer: str
    source: str
    reason: str
    tokens: int = 0


@dataclass(frozen=True)
class LayerReport:
    layer: str
    part: str
    bytes: int
    tokens: int
    included: int
    left_out: int
    budget: int | None


@dataclass(frozen=True)
class Context:
    profile: str
    query: str | None
    blocks: tuple[Block, ...]
    left_out: tuple[LeftOut, ...]
    layers: tuple[LayerReport, ...]
    budget: int
    counter: str
    headings: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def tokens(self) -> int:
        return sum(block.tokens for block in self.blocks)

    @property
    def over_budget(self) -> int:
        """Tokens over ``budget`` (0 when it fits). Only items that are never dropped
        (identity, working memory) can put a context over: everything else goes first."""
        return max(0, self.tokens - self.budget)

    @property
    def warnings(self) -> list[str]:
        """What a caller should know before using the text (an overrun budget)."""
        if not self.over_budget:
            return []
        kept = sorted({b.layer for b in self.blocks if b.priority == 0})
        return [
            f"the context is {self.tokens} tokens, {self.over_budget} over the budget of "
            f"{self.budget}: what is never left out ({', '.join(kept)}) does not fit. Raise "
            "the budget, or shorten those files"
        ]

    def _render(self, part: str) -> str:
        chunks: list[str] = []
        current = None
        told = False  # the first memory of each part says how to read memories
        for block in self.blocks:
            if block.part != part:
                continue
            if block.layer != current:
                current = block.layer
                heading = self.headings.get(block.layer)
                if heading:
                    chunks.append(heading)
            if block.quoted and not told:
                chunks.append(NOTES_PREAMBLE)
                told = True
            chunks.append(block.text)
        return clean("\n\n".join(chunks))  # no surrogates reach a prompt

    @property
    def stable(self) -> str:
        """Identity, procedures, curated knowledge, core cards: cacheable."""
        return self._render("stable")

    @property
    def live(self) -> str:
        """Working memory, state, journals, the dashboard, query hits: changes every turn."""
        body = self._render("live")
        return f"{LIVE_MARK}\n\n{body}" if body else ""

    @property
    def text(self) -> str:
        return "\n\n".join(part for part in (self.stable, self.live) if part) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "query": self.query,
            "tokens": self.tokens,
            "budget": self.budget,
            "over_budget": self.over_budget,
            "warnings": self.warnings,
            "counter": self.counter,
            "layers": [layer.__dict__ for layer in self.layers],
            "left_out": [item.__dict__ for item in self.left_out],
            "stable": self.stable,
            "live": self.live,
        }


@dataclass
class _Candidate:
    layer: str
    source: str
    text: str
    part: str
    priority: int
    tokens: int = 0
    whole_file: bool = False
    quoted: bool = True
    raw: str = ""
    """a quoted memory's own text, checked for instructions once it fits (``warned``)"""


def assemble(
    memory: Memory,
    counter: TokenCounter,
    profile: str = "default",
    query: str | None = None,
    budget: int | None = None,
) -> Context:
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, not {profile!r}")
    settings = memory.manifest.context
    total = settings.max_tokens if budget is None else budget
    kept: list[_Candidate] = []
    left: list[LeftOut] = []
    layer_budgets: dict[str, int | None] = {}
    headings: dict[str, str] = {}
    for name, layer in memory.manifest.layers.items():
        candidates, excluded = _layer(memory, name, layer, profile)
        left += excluded
        limit = _layer_budget(memory, layer)
        layer_budgets[name] = limit
        used = 0
        for candidate in candidates:
            candidate.tokens = counter.count(candidate.text)
            if limit is not None and used + candidate.tokens > limit:
                left.append(
                    LeftOut(name, candidate.source, "over the layer budget", candidate.tokens)
                )
                continue
            used += candidate.tokens
            kept.append(candidate)
        if candidates and layer.store in _HEADINGS:
            headings[name] = _HEADINGS[layer.store]
            if layer.store == "state":
                headings[name] += f" ({memory.state.relpath}, short dated snapshots)"
    if query:
        hits, excluded = _query_slot(memory, query, profile, kept, counter, settings.query_tokens)
        kept += hits
        left += excluded
        layer_budgets["query"] = settings.query_tokens
        headings["query"] = f"## Found for: {query}"
    kept, dropped = _fit(kept, total)
    left += dropped
    for candidate in kept:  # only what fits is checked: linear in the context, not the folder
        if candidate.quoted and candidate.raw:
            marked = warned(candidate.text, candidate.raw)
            if marked is not candidate.text:
                candidate.text, candidate.tokens = marked, counter.count(marked)
    order = {name: n for n, name in enumerate([*memory.manifest.layers, "query"])}
    kept.sort(key=lambda c: (c.part != "stable", order.get(c.layer, 99)))
    blocks = tuple(
        Block(c.layer, c.source, c.text, c.tokens, c.part, c.priority, c.quoted) for c in kept
    )
    return Context(
        profile,
        query,
        blocks,
        tuple(left),
        _reports(blocks, left, layer_budgets, memory),
        total,
        counter.name,
        headings,
    )


def _layer_budget(memory: Memory, layer: Layer) -> int | None:
    if layer.store == "knowledge":
        cap = memory.manifest.limits.knowledge_prompt_max_tokens
        return cap if layer.budget is None else min(cap, layer.budget)
    return layer.budget


def _part(layer: Layer) -> str:
    if layer.boot in ("heartbeat", "reflex", "recent") or layer.memory in ("working", "episodic"):
        return "live"
    return "stable"


def _layer(
    memory: Memory, name: str, layer: Layer, profile: str
) -> tuple[list[_Candidate], list[LeftOut]]:
    """The items ``layer`` offers at boot in ``profile``, and what it leaves out and why."""
    if layer.audit or layer.boot == "never":
        return [], []
    part = _part(layer)
    if layer.boot == "heartbeat" and profile != "heartbeat":
        return [], [LeftOut(name, name, "profile: loaded only for heartbeat checks")]
    if layer.boot == "reflex" and profile != "reflex":
        return [], [LeftOut(name, name, "profile: short state lines are for the reflex profile")]
    if (
        profile == "reflex"
        and layer.boot in ("recent", "core")
        or (profile == "reflex" and layer.store == "knowledge")
    ):
        return [], [LeftOut(name, name, "profile: reflex loads no knowledge, journal or cards")]
    store = layer.store
    if store == "knowledge":
        return _knowledge(memory, name, part)
    if store == "notebook":
        entries = [e for e in memory.notebook.entries() if e.text.strip()]
        source = memory.notebook.relpath
        items = [
            _Candidate(
                name,
                f"{source}#{e.key}",
                note(e.key, e.text, source, f"by {e.by}", _day(e.updated_at)),
                part,
                PRIORITY["working"],
                raw=e.text,
            )
            for e in entries
        ]
        return items, []
    if store == "state":
        lines = memory.state.reflex_lines()
        source = memory.state.relpath
        items = [
            _Candidate(name, f"{source}#{n}", quote(f"- {line}"), part, PRIORITY["state"], raw=line)
            for n, line in enumerate(lines, start=1)
        ]
        return items, []
    if store == "journal":
        return _journal(memory, name, layer, part, profile)
    if store == "vault":
        return _core_cards(memory, name, part)
    return _documents(memory, name, layer, part), []


def _file_block(
    memory: Memory, name: str, relpath: str, part: str, priority: int
) -> _Candidate | None:
    text = (decode(memory.files.read(relpath)) or "").strip()
    if not text:
        return None
    return _Candidate(
        name,
        relpath,
        f'<file path="{relpath}">\n{text}\n</file>',
        part,
        priority,
        whole_file=True,
        quoted=False,  # identity and procedures: a person's instructions, as they are
    )


def _documents(memory: Memory, name: str, layer: Layer, part: str) -> list[_Candidate]:
    kind = (
        "heartbeat"
        if layer.boot == "heartbeat"
        else ("working" if layer.memory == "working" else "identity")
    )
    blocks = [
        _file_block(memory, name, p, part, PRIORITY[kind]) for p in memory.layer_files(name, layer)
    ]
    return [b for b in blocks if b is not None]


def _knowledge(memory: Memory, name: str, part: str) -> tuple[list[_Candidate], list[LeftOut]]:
    source = memory.knowledge.relpath
    items = [
        _Candidate(
            name,
            f"{source}#{s.key}",
            note(s.key, prompt_text(s.text), source, f"by {s.by}", _day(s.updated_at)),
            part,
            PRIORITY["knowledge"],
            raw=prompt_text(s.text),
        )
        for s in memory.knowledge.sections()
        if s.text.strip()
    ]
    count = len(memory.knowledge.observations())
    reason = f"observations are searched, never loaded ({count})"
    source = f"{memory.knowledge.relpath}#_observations"
    return items, [LeftOut(name, source, reason)] if count else []


def _journal(
    memory: Memory, name: str, layer: Layer, part: str, profile: str
) -> tuple[list[_Candidate], list[LeftOut]]:
    today = memory.clock().date()
    days = max(layer.recent_days, DEEP_DAYS) if profile == "deep" else layer.recent_days
    template = file_template(layer.paths[0], "date")
    items = []
    for back in range(days):
        day = today - timedelta(days=back)
        relpath = template.format(date=day.isoformat())
        text = decode(memory.files.read(relpath))  # never through a link out of the folder
        if not text or not text.strip():
            continue
        text = uncommented(text)
        label = _day_label(back, day)
        rendered = note(relpath, text.strip(), label)
        priority = PRIORITY["today" if back == 0 else "older"]
        items.append(_Candidate(name, relpath, rendered, part, priority, whole_file=True, raw=text))
    return items, []


def _day_label(back: int, day: date) -> str:
    if back < 2:
        return "yesterday" if back else "today"
    # a weekday names one day only within the week (a week ago is today's weekday too)
    return day.strftime("%A") if back < 7 else f"{back} days ago, {day:%A}"


def _core_cards(memory: Memory, name: str, part: str) -> tuple[list[_Candidate], list[LeftOut]]:
    index = memory._fresh_index()

    def read() -> list[tuple[str, str, str]]:
        with index.lock:
            found = index.rows.select(kind="card", tier="core", layer=name)
        return [(row["path"], row["title"], row["body"]) for row in found]

    rows = index.guard(read)  # a damaged index is rebuilt from the files, then read
    return [
        _Candidate(
            name,
            path,
            note(title, body, path),
            part,
            PRIORITY["card"],
            whole_file=True,
            raw=f"{title}\n{body}",
        )
        for path, title, body in rows
    ], []


def _query_slot(
    memory: Memory,
    query: str,
    profile: str,
    loaded: list[_Candidate],
    counter: TokenCounter,
    budget: int,
) -> tuple[list[_Candidate], list[LeftOut]]:
    whole = {c.source for c in loaded if c.whole_file}
    parts = {c.source for c in loaded}
    # A heartbeat check searches its own tiers and never widens; normal mode widens when
    # nothing in core, active and warm is strong.
    mode = profile if profile in ("deep", "heartbeat") else "normal"
    hits, left, used = [], [], 0
    found = memory.search(query, k=10, mode=mode)
    if found.colder:
        more = "1 more hit" if found.colder == 1 else f"{found.colder} more hits"
        reason = f"{more} in colder tiers (the deep profile searches them)"
        left.append(LeftOut("query", ", ".join(found.beyond), reason))
    for hit in found:
        source = f"{hit.path}#{hit.anchor}" if hit.anchor else hit.path
        if hit.path in whole or source in parts or hit.path in parts:
            left.append(LeftOut("query", source, "already loaded"))
            continue
        opened = memory.get(hit.path, hit.line_start, hit.line_end)
        if not opened.ok:
            continue
        where = f"{hit.path}:{hit.line_start}-{hit.line_end}"
        raw = uncommented(opened.text).strip()
        text = note(where, raw, hit.kind, f"{hit.tier} tier")
        tokens = counter.count(text)
        if used + tokens > budget:
            left.append(LeftOut("query", source, "over the query budget", tokens))
            continue
        used += tokens
        hits.append(_Candidate("query", source, text, "live", PRIORITY["hit"], tokens, raw=raw))
    return hits, left


def _day(moment: datetime | None) -> str | None:
    return f"{moment:%Y-%m-%d}" if moment is not None else None


def _fit(kept: list[_Candidate], total: int) -> tuple[list[_Candidate], list[LeftOut]]:
    """Drop whole items, lowest priority (and latest) first, until the total fits."""
    used = sum(c.tokens for c in kept)
    if used <= total:
        return kept, []
    dropped: list[LeftOut] = []
    order = sorted(range(len(kept)), key=lambda i: (-kept[i].priority, -i))
    gone: set[int] = set()
    for index in order:
        if used <= total or kept[index].priority == 0:
            break
        gone.add(index)
        used -= kept[index].tokens
        dropped.append(
            LeftOut(
                kept[index].layer, kept[index].source, "over the total budget", kept[index].tokens
            )
        )
    return [c for i, c in enumerate(kept) if i not in gone], dropped


def _reports(
    blocks: tuple[Block, ...],
    left: list[LeftOut],
    budgets: dict[str, int | None],
    memory: Memory,
) -> tuple[LayerReport, ...]:
    reports = []
    for name in [*memory.manifest.layers, "query"]:
        mine = [b for b in blocks if b.layer == name]
        missing = [item for item in left if item.layer == name]
        if not mine and not missing:
            continue
        layer = memory.manifest.layers.get(name)
        part = "live" if layer is None else _part(layer)
        size = sum(len(b.text.encode("utf-8", "surrogatepass")) for b in mine)
        reports.append(
            LayerReport(
                name,
                part,
                size,
                sum(b.tokens for b in mine),
                len(mine),
                len(missing),
                budgets.get(name),
            )
        )
    return tuple(reports)
