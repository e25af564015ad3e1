"""The offline planner: no network, no model beyond the folder's embedder.

1. Exact duplicates (the same text once case, accents and punctuation are
   folded) merge into one entry naming all their ids.
2. Near duplicates merge too: a cosine above the embedder's duplicate threshold,
   and nothing that tells them apart. Two observations with different numbers,
   different names (capitalised words), a negation in one only, a relation
   turned round ("email over calls", "calls over email") or different words of
   one contrast set ("the first / last day", see ``contrasts``) are different
   facts however close their vectors are ("the limit is 50/s" is not "the
   limit is 100/s"). Groups are complete-link: every member is close to the one kept,
   so a chain of small steps never merges two distant facts. The merged text is
   the member with the most to say.
3. Themes: three or more observations (``theme_min``) sharing a tag, or a tight
   cluster of untagged ones, are promoted into a curated section named for the
   theme, one fact per line, each line keeping its source ids. Larger themes go
   first; what does not fit the caps stays in the buffer.

Nothing else is removed: when in doubt an observation stays (seed rule 7).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memdir.dream.contrasts import CONTRAST_SETS, contrast, contrast_words
from memdir.dream.plan import Entry, Merge, Plan, Promotion, normalise
from memdir.index.embedders import Embedder
from memdir.index.search import STOPWORDS
from memdir.textutil import plural

CALENDAR = frozenset(
    [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ]
)
NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "cannot", "without"})
RELATIONS = frozenset(
    {"not", "over", "than", "before", "after", "from", "to", "into", "instead", "above", "below",
     "under", "vs", "versus", "beats", "replaces", "replaced", "supersedes", "precedes"}
)  # fmt: skip
"""words with a direction: 'email over calls' is not 'calls over email'"""
_OBJECT_WORDS = 3
_TOKEN_RE = re.compile(r"[^\W\d_][\w'’-]*|[,.;:!?()]")
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?]\s+)[\"'(\[]*([^\W\d_][\w'’-]*)")
_WORD_RE = re.compile(r"[^\W\d_][\w'’-]*")
_STOP = STOPWORDS
DEFAULT_DUPLICATE = 0.9
"""cosine for an embedder that names no ``duplicate_threshold`` of its own"""
SUBSTITUTION_MARGIN = 0.05
"""extra cosine a one-or-two-word substitution needs (see ``_Marks.margin``)"""
CLUSTER_MARGIN = 0.12
"""an untagged theme's members are this much less alike than duplicates, no less"""


class OfflinePlanner:
    name = "offline"

    def __init__(
        self,
        embedder: Embedder | None,
        *,
        threshold: float | None = None,
        theme_min: int = 3,
        existing_sections: Sequence[str] = (),
    ) -> None:
        self.embedder = embedder
        default = getattr(embedder, "duplicate_threshold", DEFAULT_DUPLICATE)
        self.threshold = float(threshold if threshold is not None else default)
        self.theme_min = theme_min
        self.existing = {s.casefold(): s for s in existing_sections}

    def plan(self, entries: list[Entry]) -> Plan:
        plan = Plan()
        if not entries:
            return plan
        vectors = self._vectors(entries)
        groups = self._duplicates(entries, vectors)
        units: list[tuple[int, tuple[int, ...]]] = []  # (the member that speaks, all members)
        grouped: set[int] = set()
        for members in groups:
            keep = max(members, key=lambda i: (_richness(entries[i].content), entries[i].date))
            plan.merge.append(Merge(tuple(entries[i].id for i in members), entries[keep].content))
            units.append((keep, tuple(members)))
            grouped.update(members)
        units += [(i, (i,)) for i in range(len(entries)) if i not in grouped]
        plan.promote, promoted = self._themes(entries, vectors, units)
        if promoted:  # a promoted group needs no merge of its own: the promotion names it
            plan.merge = [m for m in plan.merge if not set(m.ids) & promoted]
        if plan.merge or plan.promote:
            plan.notes.append(
                f"offline planner: {plural(len(plan.merge), 'merge')}, "
                f"{plural(len(plan.promote), 'promotion')} "
                f"(duplicate cosine {self.threshold:.2f})"
            )
        return plan

    # -- duplicates ------------------------------------------------------------------

    def _vectors(self, entries: list[Entry]) -> np.ndarray | None:
        if self.embedder is None:
            return None
        matrix = np.asarray(self.embedder.embed([e.content for e in entries]), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1, norms)

    def _duplicates(self, entries: list[Entry], vectors: np.ndarray | None) -> list[list[int]]:
        """Groups of two or more entries that say the same thing, oldest first in each."""
        order = sorted(range(len(entries)), key=lambda i: (entries[i].date, i))
        keys = [normalise(e.content) for e in entries]
        marks = [_marks(e.content) for e in entries]
        sims = vectors @ vectors.T if vectors is not None else None
        taken: set[int] = set()
        groups: list[list[int]] = []
        for i in order:
            if i in taken:
                continue
            members = [i]
            for j in order:
                if j == i or j in taken:
                    continue
                same = all(
                    keys[m] == keys[j]
                    or (sims is not None and self._same(marks[m], marks[j], sims[m, j]))
                    for m in members
                )
                if same:
                    members.append(j)
            if len(members) > 1:
                taken.update(members)
                groups.append(members)
        return groups

    def _same(self, a: _Marks, b: _Marks, cosine: float) -> bool:
        margin = a.margin(b)
        return margin is not None and cosine >= self.threshold + margin

    # -- themes -----------------------------------------------------------------------

    def _themes(
        self,
        entries: list[Entry],
        vectors: np.ndarray | None,
        units: list[tuple[int, tuple[int, ...]]],
    ) -> tuple[list[Promotion], set[str]]:
        by_tag: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
        for unit in units:
            tags = {t.casefold() for member in unit[1] for t in entries[member].tags}
            for tag in sorted(tags):
                by_tag.setdefault(tag, []).append(unit)
        candidates: list[tuple[str, list[tuple[int, tuple[int, ...]]]]] = [
            (tag, members) for tag, members in by_tag.items() if len(members) >= self.theme_min
        ]
        untagged = [u for u in units if not any(entries[m].tags for m in u[1])]
        candidates += self._clusters(entries, vectors, untagged)
        candidates.sort(key=lambda item: (-len(item[1]), item[0]))
        used: set[int] = set()
        promotions: list[Promotion] = []
        promoted: set[str] = set()
        for theme, members in candidates:
            fresh = [m for m in members if m[0] not in used]
            if len(fresh) < self.theme_min:
                continue
            fresh.sort(key=lambda unit: entries[unit[0]].date)
            lines, ids = [], []
            fallback: list[Merge] = []
            seen: set[str] = set()
            for head, group in fresh:
                if len(group) > 1:
                    texts = tuple(entries[i].id for i in group)
                    fallback.append(Merge(texts, entries[head].content))
                text = " ".join(entries[head].content.split())
                group_ids = [entries[i].id for i in group]
                if normalise(text) not in seen:
                    seen.add(normalise(text))
                    lines.append(f"- {text} <!-- {' '.join(group_ids)} -->")
                ids += group_ids
                used.add(head)
            name = " ".join(re.sub(r"[^\w -]+", " ", theme).split()) or "notes"
            section = self.existing.get(name.casefold(), name)
            promotions.append(Promotion(section, "\n".join(lines), tuple(ids), tuple(fallback)))
            promoted.update(ids)
        return promotions, promoted

    def _clusters(
        self,
        entries: list[Entry],
        vectors: np.ndarray | None,
        units: list[tuple[int, tuple[int, ...]]],
    ) -> list[tuple[str, list[tuple[int, tuple[int, ...]]]]]:
        """Tight clusters of untagged entries, named by ``theme_name``."""
        if vectors is None or len(units) < self.theme_min:
            return []
        heads = [u[0] for u in units]
        sims = vectors[heads] @ vectors[heads].T
        tight = max(self.threshold - CLUSTER_MARGIN, 0.0)
        taken: set[int] = set()
        found: list[tuple[str, list[tuple[int, tuple[int, ...]]]]] = []
        for a in range(len(heads)):
            if a in taken:
                continue
            members = [a] + [
                b for b in range(len(heads)) if b != a and b not in taken and sims[a, b] >= tight
            ]
            members = [m for m in members if all(sims[m, o] >= tight for o in members)]
            if len(members) >= self.theme_min:
                taken.update(members)
                name = theme_name([entries[heads[m]].content for m in members])
                found.append((name, [units[m] for m in members]))
        return found


_PREFERRED_LENGTH = (2, 3, 1)
"""a two-word phrase names a theme best ('pull request'), then three, then one"""


def theme_name(texts: Sequence[str]) -> str:
    """A name for texts on one theme: the phrase of up to three content words that
    most of them share ('pull request', 'sandbox database', 'payment terms'); on a
    tie two words before three before one, then the one that comes first. A phrase
    stays within a clause and does not start or end on a past form ('reviewed',
    'closed': the verb of the sentence, not its subject); names of people are left
    out (a theme is what is said, not who said it)."""
    counts: Counter[tuple[str, ...]] = Counter()
    places: dict[tuple[str, ...], int] = {}
    for text in texts:
        names = _marks(text).names
        grams: dict[tuple[str, ...], int] = {}
        at = 0
        for clause in re.split(r"[,.;:!?()]+", text):
            words = [w for w in _content_words(clause) if w not in names]
            for n in (1, 2, 3):
                for i in range(len(words) - n + 1):
                    gram = tuple(words[i : i + n])
                    if n == 1 or not (gram[0].endswith("ed") or gram[-1].endswith("ed")):
                        grams.setdefault(gram, at + i)
            at += len(words)
        for gram, place in grams.items():
            counts[gram] += 1
            places[gram] = places.get(gram, 0) + place
    if not counts:
        return "notes"
    best = min(
        counts,
        key=lambda g: (
            -counts[g],
            g[0].endswith("ed"),
            _PREFERRED_LENGTH.index(len(g)),
            places[g] / counts[g],
            g,
        ),  # fmt: skip
    )
    return " ".join(best)


def _content_words(text: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(text) if w.lower() not in _STOP and len(w) > 2]


def _richness(text: str) -> int:
    return len(set(_content_words(text))) + len(_NUMBER_RE.findall(text))


@dataclass(frozen=True)
class _Marks:
    """What makes a fact this fact and not a close neighbour: its numbers, its names
    (capitalised words), whether it is negated."""

    numbers: frozenset[str]
    names: frozenset[str]
    words: frozenset[str]
    negated: bool

    order: tuple[str, ...]
    """content words in the order they come"""
    starts: frozenset[str]
    """words that open a sentence (capitalised whether or not they are names)"""
    objects: dict[str, frozenset[str]]
    """up to three content words after each relation word (see ``RELATIONS``), within
    its clause: what the relation points at"""
    contrasts: frozenset[str]
    """its words from the contrast sets (see ``memdir.dream.contrasts``)"""

    def margin(self, other: _Marks) -> float | None:
        """How much closer than the threshold two texts must be to say the same thing,
        or None if they cannot: numbers and negation must agree, and each one's names
        must appear in the other (in any case: 'Email' and 'email'), and no relation
        may be turned round. Two texts that differ only in a word or two, in any
        order ('the staging / production database') are a substitution: that is
        how different facts look, so it takes ``SUBSTITUTION_MARGIN`` more; a
        substitution in a sentence's first word or in what a relation points at
        ('prefers Slack over phone calls / text messages') never merges."""
        if (
            self.numbers != other.numbers
            or self.negated != other.negated
            or not self.names <= other.words
            or not other.names <= self.words
        ):
            return None
        if contrast(self.contrasts, other.contrasts) is not None:
            return None  # 'the first / last day', 'night / day shifts', 'at least / most'
        if self._reversed(other) or _swapped_ends(self.order, other.order):
            return None  # 'prefers email over calls' / 'prefers calls over email'
        swapped = _substitution(self.order, other.order)
        if swapped & (self.starts | other.starts):
            return None  # the subject swapped: 'Alice prefers ...' / 'Bob prefers ...'
        if swapped and any(
            swapped <= mine | other.objects.get(relation, frozenset())
            for relation, mine in self.objects.items()
        ):
            return None  # what a relation points at: 'Slack over email' / 'Slack over SMS'
        return SUBSTITUTION_MARGIN if swapped else 0.0

    def _reversed(self, other: _Marks) -> bool:
        """The same words on the other side of a relation: what one text has after
        'over' (or 'than', 'before', 'from', ...) and the other has not is elsewhere
        in the other text, both ways. A paraphrase keeps what the relation points at;
        a reworded object ('before the deploy' / 'before release') is no reversal."""
        for relation, mine in self.objects.items():
            theirs = other.objects.get(relation)
            if theirs is None:
                continue
            moved, came = mine - theirs, theirs - mine
            if moved and came and moved <= other.words and came <= self.words:
                return True
        return False


def _objects(text: str) -> dict[str, frozenset[str]]:
    found: dict[str, frozenset[str]] = {}
    tokens = [t.lower() for t in _TOKEN_RE.findall(text)]
    for at, token in enumerate(tokens):
        if token not in RELATIONS or token in found:
            continue
        words: list[str] = []
        for word in tokens[at + 1 :]:
            if not word[0].isalpha() or word in RELATIONS or len(words) == _OBJECT_WORDS:
                break
            if word not in _STOP and len(word) > 2:
                words.append(_stem_possessive(word))
        found[token] = frozenset(words)
    return found


def _swapped_ends(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """The same words with three blocks in a row reversed round the middle one: 'the
    frontend calls the gateway, which calls auth' / 'auth calls the gateway, which
    calls the frontend'; 'reads go to the replica, writes to the primary' / 'writes
    go to the replica, reads to the primary'. A reworded sentence moves one block
    (2am every night / every night at 2am) or swaps two neighbours."""
    shared = set(a)
    where = {word: n for n, word in enumerate(w for w in b if w in shared)}
    positions = [where[w] for w in a if w in where]
    blocks: list[list[int]] = []
    for position in positions:
        if blocks and position == blocks[-1][-1] + 1:
            blocks[-1].append(position)
        else:
            blocks.append([position])
    starts = [block[0] for block in blocks]
    return any(a > b > c for a, b, c in zip(starts, starts[1:], starts[2:], strict=False))


def _substitution(a: tuple[str, ...], b: tuple[str, ...]) -> set[str]:
    """A word or two swapped: each side has one or two content words the other lacks
    (two forms of one word not counted), wherever the shared words stand ('the
    staging database is backed up every Saturday' / 'every Saturday the production
    database gets backed up'). Returns the swapped words, or nothing."""
    set_a, set_b = set(a), set(b)
    only_a = {w for w in set_a - set_b if not any(w[:3] == v[:3] for v in set_b - set_a)}
    only_b = {w for w in set_b - set_a if not any(w[:3] == v[:3] for v in set_a - set_b)}
    if not (0 < len(only_a) <= 2 and 0 < len(only_b) <= 2):
        return set()
    return only_a | only_b


def _marks(text: str) -> _Marks:
    tokens = _WORD_RE.findall(text)
    words = frozenset(_stem_possessive(t.lower()) for t in tokens)
    letters = [ch for ch in text if ch.isalpha()]
    shouting = sum(ch.isupper() for ch in letters) > 0.6 * len(letters)  # no case to read
    starts = {m.group(1) for m in _SENTENCE_START_RE.finditer(text)}
    names = frozenset(
        _stem_possessive(t.lower())
        for t in tokens
        if (t[0].isupper() and t.lower() not in _STOP and t not in starts and not shouting)
        or t.lower().rstrip("s") in CALENDAR  # slot words, whatever their case
    )
    numbers = frozenset(n.replace(",", "") for n in _NUMBER_RE.findall(text))
    negated = any(t.lower() in NEGATIONS or t.lower().endswith("n't") for t in tokens)
    order = tuple(
        dict.fromkeys(w for t in tokens if (w := _stem_possessive(t.lower())) not in _STOP)
    )
    content = tuple(w for w in order if len(w) > 2)
    return _Marks(
        numbers,
        names,
        words,
        negated,
        content,
        frozenset(t.lower() for t in starts),
        _objects(text),
        contrast_words(tokens),
    )


def missing_details(sources: Sequence[str], text: str) -> list[str]:
    """The numbers and names of ``sources`` that ``text`` leaves out: what a merge or
    a promotion written by a model must keep (case aside: 'Email' is 'email'). Where
    the sources disagree within a contrast set ('first' in one, 'last' in another),
    the text must keep every side of it."""
    have = _marks(text)
    missing: dict[str, None] = {}
    all_marks = [_marks(source) for source in sources]
    for marks in all_marks:
        for number in sorted(marks.numbers - have.numbers):
            missing[number] = None
        for name in sorted(marks.names - have.words):
            if not {name.removesuffix("s"), name + "s"} & have.words:  # Tuesday / Tuesdays
                missing[name] = None
    for words in CONTRAST_SETS:
        sides = {marks.contrasts & words for marks in all_marks} - {frozenset()}
        if len(sides) > 1:
            for word in sorted(frozenset().union(*sides) - have.contrasts):
                missing[word] = None
    return list(missing)


def _stem_possessive(word: str) -> str:
    return word[:-2] if word.endswith(("'s", "’s")) else word
