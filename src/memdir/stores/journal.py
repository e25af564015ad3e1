"""Daily journals: ``journal/YYYY-MM-DD.md`` (workspace layout: ``memory/YYYY-MM-DD.md``).

    # 2026-11-30

    ## Decisions
    - Chose Redis over Postgres for caching because reads dominate 50:1

    ## Learnings
    - The Stripe webhook needs HTTPS even in dev

    ## Milestones
    - 14:30 — Deployed v2.1

    ## Context
    - Owner is travelling next week

Rules (workspace seed, "Daily Logs"; vault seed, "Daily Files"):
- Append mid-session, as things happen; the four sections appear in this order.
- Log decisions and WHY: a decision with no reason is written, marked
  "(why: not recorded)", and the result says so.
- Days are never deleted. A day over ``JOURNAL_MAX_BYTES`` (20 KB) is compressed:
  its full text goes to the archive first, key facts go to cards (a line naming
  a card joins that card's History) and lessons (learnings), and the day is
  trimmed to a summary of at most ``SUMMARY_LINES`` lines, frontmatter kept.
  The summary is the first lines of each section, or the lines a
  ``summarise_day`` (an LLM) gives, made before the lock is taken and kept only
  if they pass ``check_day_summary`` and the day did not change meanwhile; a
  summary not kept is a note in the report.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import PurePosixPath

from memdir.files.sections import SectionDocument, strip_think
from memdir.llm.checks import content_words, grounded, line_problem, strip_reasoning
from memdir.results import WriteResult
from memdir.stores.base import (
    ArchivedText,
    Refusal,
    SectionFileStore,
    StoreContext,
    check_text,
    encode,
    normalize_key,
)
from memdir.stores.validate import blank, flag

SECTIONS = {
    "decision": "Decisions",
    "learning": "Learnings",
    "milestone": "Milestones",
    "context": "Context",
}
ORDER = list(SECTIONS.values())
JOURNAL_MAX_BYTES = 20 * 1024
SUMMARY_LINES = 20
SUMMARY_LINE_MAX_CHARS = 200
NO_REASON = "(why: not recorded)"
UNREASONED = "decision logged without its reason: add {why} so future-you knows"
"""the note of a decision written without its reason; ``why`` names how to give one (the
tools' argument ``why=...``, the command line's option)"""
_LONG_ENTRY = "a journal line is a sentence or two; save a document as a vault card or a file"
# What gives a decision its reason, read conservatively: a causal conjunction or phrase
# ("because", "so that", "due to", "given that", "as it is ..."), or "reason" as a noun
# that introduces one ("the reason is", "reason:", "for the reason that"). "since"
# counts only before a clause, not a time ("since Monday", "since 2024", "since then",
# "since last week"); "no reason", "reasoned" and "as it stands" give none.
_REASON_RE = re.compile(
    r"\b(?:because|so that|due to|owing to|in order to|to avoid|given that|"
    r"as a result of|thanks to|which means|"
    r"the reasons? (?:is|are|was|were|being)|for the reasons? that|"
    r"as (?:it|they|this|that)(?:'s| is| are| was| were| will| would| has| had| does| did| costs?"
    r"| needs?| takes?| gives?| keeps?| saves?| makes?)|"
    r"since(?!\s+(?:then|when|yesterday|today|tonight|last|this\s+(?:week|month|year|morning|quarter|sprint)|the\s+(?:start|beginning|"
    r"end|morning|weekend|launch|release|meeting)|early|late|morning|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|"
    r"july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept?|"
    r"oct|nov|dec|q[1-4]|v?\d))"
    r")\b|\breasons?\s*:",
    re.I,
)


def gives_reason(line: str) -> bool:
    """Whether a decision's own words give its reason (``_REASON_RE``); a decision
    without one is marked ``NO_REASON`` unless a ``why`` comes with it."""
    return _REASON_RE.search(line) is not None


_DAY_RE = re.compile(r"(\d{4}-\d{2}-\d{2})")
_HEADING_RE = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*")

DaySummariser = Callable[[str, int], Sequence[str]]
"""``summarise_day(day_text, max_lines) -> lines``: the summary's body, under the day's
own ``## headings``; checked by ``check_day_summary`` before it is kept."""


@dataclass
class CompressionReport:
    day: str
    compressed: bool
    bytes_before: int = 0
    bytes_after: int = 0
    archive: str | None = None
    to_cards: list[str] = field(default_factory=list)
    to_lessons: int = 0
    notes: list[str] = field(default_factory=list)
    """why a ``summarise_day`` summary was not kept (the first-lines one was)"""


class JournalStore:
    """One section file per day, from the journal layer's path pattern."""

    def __init__(self, ctx: StoreContext, template: str) -> None:
        self.ctx = ctx
        self.template = template  # e.g. "journal/{date}.md"

    def path(self, day: date) -> str:
        return self.template.format(date=day.isoformat())

    def _file(self, day: date) -> SectionFileStore:
        return SectionFileStore(self.ctx, self.path(day), starter=f"# {day.isoformat()}\n")

    def days(self) -> list[date]:
        folder = str(PurePosixPath(self.template).parent).strip(".")
        found = []
        for path in self.ctx.files.paths(folder):
            name = PurePosixPath(path)
            if str(name.parent).strip(".") != folder or name.suffix != ".md":
                continue
            match = _DAY_RE.fullmatch(name.stem)
            if match is None:
                continue
            with contextlib.suppress(ValueError):  # 2026-13-45.md names no day: no journal
                found.append(date.fromisoformat(match.group(1)))
        return sorted(found)

    def text(self, day: date) -> str | None:
        return self.ctx.read(self.path(day))

    def append(
        self, kind: str, text: str, *, why: str | None = None, at: datetime | None = None
    ) -> WriteResult:
        """Add a line to today's Decisions, Learnings, Milestones or Context."""
        moment = at or self.ctx.clock()
        store = self._file(moment.date())
        try:
            heading = (
                SECTIONS.get(kind.strip().lower().rstrip("s")) if isinstance(kind, str) else None
            )
            if heading is None:
                raise Refusal(f"kind must be one of {', '.join(SECTIONS)}, not {kind!r}")
            limit = self.ctx.limits.journal_entry_max_chars
            check_text(text, "text", limit=limit, hint=_LONG_ENTRY)
            if why is not None:
                check_text(why, "why", limit=limit, hint=_LONG_ENTRY)
            if blank(strip_think(text)):  # (zero-width and bidi characters show nothing)
                raise Refusal("the journal line is empty; nothing was written")
            line = " ".join(strip_think(text).split())
            notes: list[str] = []
            # a reason is kept on any line (it was dropped from all but a decision's)
            reason = " ".join(why.split()) if isinstance(why, str) and not blank(why) else ""
            if reason:
                line = f"{line} because {reason}"
            elif heading == "Decisions" and not gives_reason(line):
                line = f"{line} {NO_REASON}"
                notes.append(UNREASONED.format(why="why=..."))
            if heading == "Milestones":
                line = f"{moment:%H:%M} — {line}"
            check_text(line, "text")  # with its reason
            flags = flag(line)
            with store._edit() as doc:
                section = doc.get(heading)
                if section is None:
                    section = doc.new_section(heading)
                    later = [doc.index(h) for h in ORDER[ORDER.index(heading) + 1 :]]
                    positions = [p for p in later if p is not None]
                    doc.insert(min(positions) if positions else len(doc), section)
                section.body = f"{section.body}\n- {line}" if section.body else f"- {line}"
                flags.add_to(section.meta)  # the section holds many writers' lines
        except Refusal as refusal:
            return WriteResult.refused(store.store, refusal.reason)
        return WriteResult(
            ok=True,
            store=store.store,
            action="updated",
            key=heading,
            notes=tuple(notes),
            warnings=flags.warnings,
        )

    def add_section(
        self, day: date, key: str, body: str, meta: dict[str, str] | None = None
    ) -> WriteResult:
        """Add a section of its own to a day (an imported conversation, say)."""
        store = self._file(day)
        try:
            key = normalize_key(key, "section", "Decisions")
            check_text(body, "body")
            flags = flag(body)
            meta = dict(meta or {})
            flags.stamp(meta)
            with store._edit() as doc:
                doc.append(doc.new_section(key, body, meta))
        except Refusal as refusal:
            return WriteResult.refused(store.store, refusal.reason)
        return WriteResult(
            ok=True, store=store.store, action="updated", key=key, warnings=flags.warnings
        )

    def sections(self, day: date) -> list[tuple[str, dict[str, str]]]:
        """(key, metadata) of each section of a day, in order."""
        return [(s.key, dict(s.meta)) for s in self._file(day)._read()]

    def compress(
        self,
        day: date,
        *,
        to_card: Callable[[str], str | None] | None = None,
        to_lesson: Callable[[str], bool] | None = None,
        limit: int = JOURNAL_MAX_BYTES,
        summarise_day: DaySummariser | None = None,
    ) -> CompressionReport:
        """Trim a day over ``limit`` bytes to a summary; nothing is lost (see module doc).

        ``to_card(line)`` files a line under a card's History and returns the card's
        path (or None if the line names no card); ``to_lesson(line)`` files a learning.
        ``summarise_day(text, max_lines)`` writes the summary's lines (see ``DaySummariser``).
        """
        store = self._file(day)
        report = CompressionReport(day.isoformat(), compressed=False)
        drafted: list[str] | None = None
        first = self.ctx.read(store.relpath) or ""
        if summarise_day is not None and len(first.encode("utf-8", "surrogateescape")) > limit:
            drafted = _draft(first, summarise_day, report)  # outside the lock: a model is slow
        with self.ctx.lock:
            original = self.ctx.read(store.relpath) or ""
            report.bytes_before = len(original.encode("utf-8", "surrogateescape"))
            if report.bytes_before <= limit:
                return report
            doc = SectionDocument.parse(original)
            lines = {s.key: [ln for ln in s.body.splitlines() if ln.strip()] for s in doc}
            for heading, raws in lines.items():  # any line may name a card
                for raw in raws:
                    line = re.sub(r"^\s*(?:[-*+]|\d+\.)\s+", "", raw)  # the text, not the bullet
                    card = to_card(line) if to_card is not None else None
                    if card is not None and card not in report.to_cards:
                        report.to_cards.append(card)
                    if heading == "Learnings" and to_lesson is not None and to_lesson(line):
                        report.to_lessons += 1
            report.archive = self.ctx.archive.keep(
                "journal", store.relpath, [ArchivedText(day.isoformat(), original, "compressed")]
            )
            if drafted is not None and original != first:
                report.notes.append(
                    "the day changed while it was summarised; used the offline summary"
                )
                drafted = None
            if drafted is not None:
                summary = "\n".join([*_head(doc), "", *drafted, *_tail(report.archive)]) + "\n"
            else:
                summary = _summary(doc, lines, report.archive)
            with store._edit() as current:
                trimmed = SectionDocument.parse(summary)
                current.preamble, current.sections = trimmed.preamble, trimmed.sections
            report.bytes_after = len(encode(summary))  # bytes not UTF-8 kept as they are
            report.compressed = True
        return report


def _summary(doc: SectionDocument, lines: dict[str, list[str]], archive: str) -> str:
    """At most SUMMARY_LINES lines: the preamble (frontmatter and title), then the first
    lines of each section, decisions first, then where the full text went."""
    head, tail = _head(doc), _tail(archive)
    room = SUMMARY_LINES - len(head) - len(tail)
    order = [h for h in ORDER if lines.get(h)] + [
        s.key for s in doc if s.key not in ORDER and lines.get(s.key)
    ]
    body: list[str] = []
    per_section = max(1, room // max(1, len(order)) - 2)
    for heading in order:
        block = ["", f"## {heading}"] + [
            line if len(line) <= SUMMARY_LINE_MAX_CHARS else line[:197] + "..."
            for line in lines[heading][:per_section]
        ]
        if len(body) + len(block) > room:
            break
        body += block
    return "\n".join(head + body + tail) + "\n"


def _head(doc: SectionDocument) -> list[str]:
    return doc.preamble.rstrip("\n").splitlines() or ["# journal"]


def _tail(archive: str) -> list[str]:
    return ["", f"Compressed: the full day is kept in {archive}."]


def _draft(text: str, summarise_day: DaySummariser, report: CompressionReport) -> list[str] | None:
    """The summary's body lines from ``summarise_day``, or None (and a note) if it fails
    or its lines do not pass ``check_day_summary``."""
    room = SUMMARY_LINES - len(_head(SectionDocument.parse(text))) - 1 - len(_tail(""))
    if room < 2:
        return None  # a preamble that long leaves no room: the offline summary
    try:
        answer = summarise_day(text, room)
    except Exception as exc:  # a summariser is optional: any failure falls back
        report.notes.append(f"summary of the day failed: {exc}; used the offline summary")
        return None
    lines, problem = check_day_summary(answer, text, room)
    if problem is not None:
        report.notes.append(f"summary of the day rejected: {problem}; used the offline summary")
        return None
    return lines


def check_day_summary(
    lines: Sequence[str], day_text: str, max_lines: int
) -> tuple[list[str], str | None]:
    """The summary's lines cleaned (blank ones dropped, a ``## Summary`` heading first if
    it has none), or the problem: more than ``max_lines``, a heading the day does not
    have, a line over ``SUMMARY_LINE_MAX_CHARS``, a code fence or preamble, a leaked
    ``<think>``, or a line that shares no word with the day."""
    if isinstance(lines, str) or not all(isinstance(line, str) for line in lines):
        return [], "the summary must be a list of lines of text"
    text, problem = strip_reasoning("\n".join(lines))
    if problem is not None:
        return [], problem
    out = [line.rstrip() for line in text.splitlines() if line.strip()]
    if not out:
        return [], "the summary is empty"
    doc = SectionDocument.parse(day_text)
    keys = {section.key.casefold(): section.key for section in doc}
    keys.setdefault("summary", "Summary")
    words = content_words(day_text)
    seen: set[str] = set()
    for n, line in enumerate(out, 1):
        heading = _HEADING_RE.fullmatch(line)
        if heading:
            key = keys.get(heading.group(2).strip().casefold())
            if len(heading.group(1)) != 2 or key is None:
                allowed = ", ".join(f"## {k}" for k in keys.values()) or "none"
                return [], (
                    f"line {n} is a heading the day does not have ({line.strip()!r}); "
                    f"use only {allowed}"
                )
            if key in seen:
                return [], f"the heading '## {key}' appears twice"
            seen.add(key)
            out[n - 1] = f"## {key}"
            continue
        problem = line_problem(line)
        if problem is not None:
            return [], f"line {n}: {problem}"
        if len(line) > SUMMARY_LINE_MAX_CHARS:
            return [], f"line {n} is {len(line)} characters; at most {SUMMARY_LINE_MAX_CHARS}"
        if not grounded(line, words):
            return [], f"line {n} is not about the day ({line.strip()[:80]!r})"
    if not out[0].startswith("## "):
        out.insert(0, "## Summary")
    if len(out) == len(seen):
        return [], "the summary has headings and no lines"
    if len(out) > max_lines:
        return [], f"it has {len(out)} lines, headings included; at most {max_lines}"
    return out, None
