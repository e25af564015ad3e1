"""Research intel: one file per project, this week in detail, past weeks in a line.

    # Project Alpha Research Intel

    ## Current Week (Feb 10-16, 2025)      <- ``### topic`` bullets, ended by ``---``
    ### Competitor Analysis
    - CompetitorX launched new pricing: $49/mo (down from $79)

    ---

    ## Previous Weeks (Compressed)          <- newest first, 1-3 sentences a week
    - **Feb 3-9:** CompetitorX beta launched with 3 integrations.

Rules (workspace seed, section 7): weeks run Monday to Sunday. ``add`` appends
a bullet to this week, rotating first. ``rotate`` compresses each past week (a
``Summariser``, extractive and offline by default) into the first Previous
Weeks bullet and starts an empty Current Week; the week's full text goes to
the archive before the file is rewritten. Rotating twice in a week changes
nothing; a week with no notes leaves no bullet; other sections keep their bytes.
Summaries are made before the folder lock is taken (a model may take its time)
and only used if the week is still as it was when it was summarised.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol

from memdir.files.sections import FenceTracker, Section, SectionDocument, strip_think
from memdir.results import WriteResult
from memdir.stores.base import (
    ArchivedText,
    Refusal,
    SectionFileStore,
    StoreContext,
    check_text,
    normalize_key,
)
from memdir.stores.validate import flag
from memdir.stores.weeks import Week, parse_week, week_label, week_of
from memdir.textutil import shorten

ARCHIVE_KIND = "intel"
INTEL_ENTRY_MAX_CHARS = 2000
SUMMARY_MAX_SENTENCES = 3
SUMMARY_MAX_CHARS = 300
PREVIOUS_KEY = "Previous Weeks (Compressed)"
_CURRENT_RE = re.compile(r"current week\b(?:\s*\((.*)\))?.*", re.IGNORECASE)
_PREVIOUS_RE = re.compile(r"previous weeks\b.*", re.IGNORECASE)
_BULLET_RE = re.compile(r"[-*+][ \t]+\*\*(?P<label>.+?):?\*\*:?[ \t]*(?P<text>.*)")
_RULE_RE = re.compile(r" {0,3}-{3,}[ \t]*")
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[$])")
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'-]*|\$?\d[\d.,]*%?")
_STOPWORD_TEXT = (
    "a an and are as at be been but by for from had has have in into is it its of on or our "
    "over that the their this to up was we were which will with week new also than"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_Dated = tuple[Week, Section]


class Summariser(Protocol):
    """Turns a week's notes into at most ``max_sentences`` sentences of one line.

    A summariser may also keep a ``notes`` list of sentences about what it did
    (an LLM answer rejected, the offline summary used instead); the store moves
    them into its report (``RotationReport.notes``, ``WriteResult.notes``).
    """

    def summarise(self, texts: list[str], max_sentences: int) -> str: ...


class ExtractiveSummariser:
    """Keeps the week's most telling sentences in their order; offline, deterministic.
    A sentence scores by how often its content words recur in the week, numbers and
    capitalised names counting extra, earlier and shorter ones preferred."""

    def __init__(self, max_chars: int = SUMMARY_MAX_CHARS) -> None:
        self.max_chars = max_chars

    def summarise(self, texts: list[str], max_sentences: int) -> str:
        flat = [" ".join(text.split()) for text in texts]
        sentences = [_as_sentence(part) for text in flat for part in _SENTENCE_SPLIT_RE.split(text)]
        sentences = [sentence for sentence in sentences if len(sentence) > 1]
        if not sentences or max_sentences < 1:
            return ""
        words = [_content_words(sentence) for sentence in sentences]
        freq = Counter(word for found in words for word in set(found))

        def score(n: int) -> float:
            tokens = _WORD_RE.findall(sentences[n])
            numbers = sum(1 for token in tokens if token.lstrip("$")[:1].isdigit())
            names = sum(1 for token in tokens[1:] if token[0].isupper())
            base = sum(freq[word] for word in set(words[n])) + 1.5 * min(numbers, 3)
            base += min(names, 3)
            return base / (1 + len(tokens) / 15) * (1 - 0.3 * n / len(sentences))

        ranked = sorted(range(len(sentences)), key=lambda n: (-score(n), n))
        chosen: list[int] = []
        for n in ranked:  # the best that fit in max_chars, joined by spaces
            if (
                len(chosen) < max_sentences
                and len(" ".join(sentences[c] for c in [*chosen, n])) <= self.max_chars
            ):
                chosen.append(n)
        if not chosen:
            return shorten(sentences[ranked[0]], self.max_chars)
        return " ".join(sentences[n] for n in sorted(chosen))


@dataclass
class RotationReport:
    rotated: list[tuple[str, str]] = field(default_factory=list)  # (project, week label)
    archives: list[str] = field(default_factory=list)
    unchanged: int = 0
    notes: list[str] = field(default_factory=list)
    """what the summariser reported (a fallback to the offline summary)"""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "rotated": [{"project": project, "week": week} for project, week in self.rotated],
            "archives": list(self.archives),
            "unchanged": self.unchanged,
        }
        if self.notes:
            data["notes"] = list(self.notes)
        return data


@dataclass(frozen=True)
class PreviousWeek:
    label: str
    week: Week | None
    summary: str


class IntelStore:
    """Research intel files at ``template`` (a relative path holding ``{project}``)."""

    def __init__(
        self, ctx: StoreContext, template: str, summariser: Summariser | None = None
    ) -> None:
        if "{project}" not in template:
            raise ValueError(f"intel template {template!r} must hold '{{project}}'")
        self.ctx = ctx
        self.template = template
        self.summariser: Summariser = summariser or ExtractiveSummariser()

    def projects(self) -> list[str]:
        prefix, suffix = self.template.split("{project}", 1)
        found = []
        folder = prefix.rpartition("/")[0]
        for rel in self.ctx.files.paths(folder):
            if not (rel.startswith(prefix) and rel.endswith(suffix)):
                continue
            name = rel[len(prefix) : len(rel) - len(suffix)]
            if name and "/" not in name:
                found.append(name)
        return sorted(found)

    def path(self, project: str) -> str:
        """The project's file: an existing file named exactly so, else the slugified name."""
        exact = self.template.replace("{project}", project)
        if project and not re.search(r"[/\\]|^\.", project) and self.ctx.exists(exact):
            return exact
        slug = slugify(project)
        if not slug:
            raise ValueError(_unnamed(project))
        return self.template.replace("{project}", slug)

    def current_week(self, project: str) -> str:
        """This week's notes ('' if the file has none for this week yet)."""
        doc = self._file(project)._read()
        this = week_of(self.ctx.clock().date())
        for section in doc:
            if _CURRENT_RE.fullmatch(section.key) and _week(section, this[0]) == this:
                return _content(section.body)
        return ""

    def previous_weeks(self, project: str) -> list[PreviousWeek]:
        """The compressed bullets, newest first, with the weeks they name."""
        doc = self._file(project)._read()
        section = next((s for s in doc if _PREVIOUS_RE.fullmatch(s.key)), None)
        current = [_week(s, self.ctx.clock().date()) for s in doc if _CURRENT_RE.fullmatch(s.key)]
        ref = min((week[0] for week in current if week), default=self.ctx.clock().date())
        out = []
        for line in (section.body if section else "").split("\n"):
            match = _BULLET_RE.fullmatch(line.strip())
            if match:
                week = parse_week(match["label"], ref)
                ref = week[0] if week else ref
                out.append(PreviousWeek(match["label"], week, match["text"]))
        return out

    def add(self, project: str, text: str, topic: str = "Key Findings") -> WriteResult:
        """Append ``- text`` under ``### topic`` in this week's section."""
        store = self.path(project) if slugify(project) else ""
        try:
            if not slugify(project):
                raise Refusal(_unnamed(project))
            topic = normalize_key(topic, "topic", "Competitor Analysis")
            checked = check_text(
                text, "text", limit=INTEL_ENTRY_MAX_CHARS, hint="an intel note is a short finding"
            )
            lines = [line.strip() for line in strip_think(checked).strip().splitlines()]
            lines = [line for line in lines if line]
            if not lines:
                raise Refusal("text is empty; give one finding, such as a sentence or two")
            bullet = "- " + re.sub(r"^[-*+][ \t]+", "", "\n  ".join(lines))
            if len(bullet) > INTEL_ENTRY_MAX_CHARS:
                raise Refusal(
                    f"text is {len(bullet)} chars; an intel note is a short finding "
                    f"(at most {INTEL_ENTRY_MAX_CHARS})"
                )
            file = self._file(project)
            now = self.ctx.clock()
            summaries, said = self._summaries(file, now)
            with file._edit() as doc:
                created = not doc.preamble and not doc.sections
                if created:
                    doc.preamble = f"# {_title(project)} Research Intel\n"
                rotated, archive, section = self._rotate_doc(doc, file, now, summaries, said)
                action = _add_bullet(section, topic, bullet)
                flags = flag(bullet)
                flags.add_to(section.meta)
        except Refusal as refusal:
            return WriteResult.refused(store, refusal.reason)
        notes = tuple(f"rotated week {label} into {PREVIOUS_KEY}" for label in rotated)
        action = "created" if created else action
        return WriteResult(
            True,
            store,
            action,
            key=topic,
            archive=archive,
            notes=notes + tuple(said),
            archived=tuple(rotated),
            warnings=flags.warnings,
        )

    def rotate(self, project: str | None = None, now: datetime | None = None) -> RotationReport:
        """Compress every past Current Week into Previous Weeks (all projects by default).
        A project named that has no intel file is a ValueError, not an empty report."""
        moment = now or self.ctx.clock()
        report = RotationReport()
        prefix, suffix = self.template.split("{project}", 1)
        if project is not None and not self.ctx.exists(path := self.path(project)):
            known = ", ".join(self.projects()) or "none yet"
            raise ValueError(f"no intel on {project!r} ({path}); projects: {known}")
        names = self.projects() if project is None else [project]
        for name in names:
            file = self._file(name)
            summaries, said = self._summaries(file, moment)
            with file._edit() as doc:
                if not doc.preamble and not doc.sections:
                    continue  # no such file: nothing to rotate
                before = doc.render()
                rotated, archive, _ = self._rotate_doc(doc, file, moment, summaries, said)
                changed = doc.render() != before
            report.notes += said
            key = file.relpath[len(prefix) : len(file.relpath) - len(suffix)]
            report.rotated += [(key, label) for label in rotated]
            if archive and archive not in report.archives:
                report.archives.append(archive)
            report.unchanged += 0 if changed else 1
        return report

    # -- internals -------------------------------------------------------------

    def _file(self, project: str) -> SectionFileStore:
        return SectionFileStore(self.ctx, self.path(project))

    def _summaries(
        self, file: SectionFileStore, now: datetime
    ) -> tuple[dict[tuple[str, ...], str], list[str]]:
        """The summary of each past week's notes in ``file`` as it is now, made without
        the lock; and what the summariser said while making them."""
        said: list[str] = []
        summaries: dict[tuple[str, ...], str] = {}
        for _, section in _past_weeks(file._read(), file, now):
            notes = tuple(_notes(section.body))
            if notes and notes not in summaries:
                summaries[notes] = self._summarise(list(notes), said)
        return summaries, said

    def _summarise(self, notes: list[str], said: list[str]) -> str:
        summary = self.summariser.summarise(notes, SUMMARY_MAX_SENTENCES)
        reported = getattr(self.summariser, "notes", None)
        if isinstance(reported, list):
            said += [str(note) for note in reported]
            reported.clear()
        return " ".join(summary.split())

    def _rotate_doc(
        self,
        doc: SectionDocument,
        file: SectionFileStore,
        now: datetime,
        summaries: dict[tuple[str, ...], str],
        said: list[str],
    ) -> tuple[list[str], str | None, Section]:
        """Rotate past weeks in ``doc`` (archived first); return their labels, the
        archive and this week's section (made if missing). A week whose notes are not
        in ``summaries`` (changed since they were made) is summarised here."""
        this = week_of(now.date())
        dated = _dated_weeks(doc, file, now)
        past = _past_weeks(doc, file, now)
        present = [s for w, s in dated if w[1] >= this[0] and w[0] <= this[1]]
        slots = [n for n, s in enumerate(doc) if any(s is p for _, p in past)]
        doc.sections = [s for s in doc if all(s is not p for _, p in past)]
        if present:
            current = present[0]
            if _week(current, now.date()) is None:  # undated: counted from the file's time
                current.key = _current_key(now)
        else:
            previous = (n for n, s in enumerate(doc) if _PREVIOUS_RE.fullmatch(s.key))
            slot = slots[0] if slots else next(previous, 0)
            current = doc.insert(slot, doc.new_section(_current_key(now), "---"))
        items = [(w, s) for w, s in past if _content(s.body).strip()]
        kept = [
            ArchivedText(s.key, s.body, "rotated", {**s.meta, "week": week_label(w)})
            for w, s in items
        ]
        archive = file._keep(ARCHIVE_KIND, kept)
        for week, section in items:
            notes = _notes(section.body)
            summary = summaries.get(tuple(notes))
            if summary is None:
                summary = self._summarise(notes, said)
            bullet = f"- **{week_label(week, year=False)}:** {summary or f'See {archive}.'}"
            _prepend_bullet(doc, bullet)
        return [week_label(week) for week, _ in items], archive, current


# -- weeks -----------------------------------------------------------------------


def _dated_weeks(doc: SectionDocument, file: SectionFileStore, now: datetime) -> list[_Dated]:
    """Each Current Week section with its week (an undated one: the file's time)."""
    fallback = week_of((file.mtime() or now).date())
    return [(_week(s, now.date()) or fallback, s) for s in doc if _CURRENT_RE.fullmatch(s.key)]


def _past_weeks(doc: SectionDocument, file: SectionFileStore, now: datetime) -> list[_Dated]:
    """The Current Week sections of weeks before this one, oldest first."""
    this = week_of(now.date())
    dated = _dated_weeks(doc, file, now)
    return sorted(((w, s) for w, s in dated if w[1] < this[0]), key=lambda item: item[0])


def _current_key(now: datetime) -> str:
    return f"Current Week ({week_label(week_of(now.date()))})"


def _week(section: Section, reference: date) -> Week | None:
    match = _CURRENT_RE.fullmatch(section.key)
    return parse_week(match.group(1), reference) if match and match.group(1) else None


# -- text ------------------------------------------------------------------------


def slugify(name: object) -> str:
    if not isinstance(name, str):
        return ""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:80].strip("-")


def _unnamed(project: object) -> str:
    """Why ``project`` names no file: its file is named by its letters and digits."""
    such = "give a name such as 'project-alpha'"
    if not isinstance(project, str) or not project.strip():
        return f"project name is empty; {such}"
    return (
        f"project name {shorten(repr(project), 60)} has no letter or digit (a-z, 0-9) to "
        f"name its file after; {such}"
    )


def _title(project: str) -> str:
    name = " ".join(re.split(r"[-_\s]+", project.strip()))
    return name if name != name.lower() else name.title()


def _content(body: str) -> str:
    """A Current Week body without its closing ``---`` line."""
    lines = body.split("\n")
    if lines and _RULE_RE.fullmatch(lines[-1]):
        lines.pop()
    return "\n".join(lines).rstrip()


def _notes(body: str) -> list[str]:
    """The week's notes: one text per bullet or line, headings and code left out."""
    notes: list[str] = []
    fence = FenceTracker()
    for line in _content(body).split("\n"):
        stripped = line.strip()
        if fence.in_fence(line) or not stripped or stripped.startswith("#"):
            continue
        if _RULE_RE.fullmatch(stripped) or re.fullmatch(r"\[.*\]", stripped):
            continue
        if line[:1] in (" ", "\t") and notes and not re.match(r"[-*+]\s|\d+[.)]\s", stripped):
            notes[-1] += " " + stripped
        else:
            notes.append(re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", stripped))
    return notes


def _add_bullet(section: Section, topic: str, bullet: str) -> str:
    topics = SectionDocument.parse(_content(section.body), level=3)
    target = next((s for s in topics if s.key.casefold() == topic.casefold()), None)
    if target is None:
        target = topics.append(topics.new_section(topic))
    elif bullet in target.body.split("\n"):
        return "unchanged"
    target.body = f"{target.body}\n{bullet}" if target.body else bullet
    section.body = topics.render().rstrip() + "\n\n---"
    return "updated"


def _prepend_bullet(doc: SectionDocument, bullet: str) -> None:
    section = next((s for s in doc if _PREVIOUS_RE.fullmatch(s.key)), None)
    if section is None:
        at = max((n for n, s in enumerate(doc) if _CURRENT_RE.fullmatch(s.key)), default=-1)
        section = doc.insert(at + 1, doc.new_section(PREVIOUS_KEY))
    lines = section.body.split("\n") if section.body else []
    first = next((n for n, line in enumerate(lines) if re.match(r"[-*+]\s", line)), len(lines))
    section.body = "\n".join([*lines[:first], bullet, *lines[first:]])


def _as_sentence(text: str) -> str:
    text = text.strip().rstrip(",;:-– ").strip()
    if text.split(" ", 1)[0].islower():  # 'old news' -> 'Old news', not 'iPhone' -> 'IPhone'
        text = text[0].upper() + text[1:]
    return text if not text or text[-1] in ".!?…" else text + "."


def _content_words(sentence: str) -> list[str]:
    words = (word.lower().strip("'-") for word in _WORD_RE.findall(sentence))
    return [word for word in words if len(word) > 2 and word not in _STOPWORDS]
