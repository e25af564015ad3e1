"""What tells two observations apart, whatever their cosine: the offline planner's checks.

A sentence embedding puts "the limit is 50/s" next to "the limit is 100/s",
"Alice prefers email" next to "Bob prefers email" and "prefers email over calls"
next to "prefers calls over email". ``read_marks(text)`` reads what makes a fact this
fact (numbers, names, negation, the objects of its relations, its contrast
words); ``Marks.margin`` says whether two texts can say the same thing at all,
and how much closer than the duplicate threshold they must be; and
``missing_details`` says what a merged or promoted text leaves out of its
sources.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memdir.dream.contrasts import CONTRAST_SETS, contrast, contrast_words
from memdir.index.search import STOPWORDS
from memdir.timeutil import MONTHS, WEEKDAYS

CALENDAR = frozenset(WEEKDAYS + tuple(m for m in MONTHS if m != "may"))  # may: a verb
NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "cannot", "without"})
RELATIONS = frozenset(
    {"not", "over", "than", "before", "after", "from", "to", "into", "instead", "above", "below",
     "under", "vs", "versus", "beats", "replaces", "replaced", "supersedes", "precedes"}
)  # fmt: skip
"""words with a direction: 'email over calls' is not 'calls over email'"""
_OBJECT_WORDS = 3
_TOKEN_RE = re.compile(r"[^\W\d_][\w'’-]*|[,.;:!?()]")
NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?]\s+)[\"'(\[]*([^\W\d_][\w'’-]*)")
_WORD_RE = re.compile(r"[^\W\d_][\w'’-]*")
_STOP = STOPWORDS
SUBSTITUTION_MARGIN = 0.05
"""extra cosine a one-or-two-word substitution needs (see ``Marks.margin``)"""


def content_words(text: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(text) if w.lower() not in _STOP and len(w) > 2]


@dataclass(frozen=True)
class Marks:
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

    def margin(self, other: Marks) -> float | None:
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

    def _reversed(self, other: Marks) -> bool:
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


def read_marks(text: str) -> Marks:
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
    numbers = frozenset(n.replace(",", "") for n in NUMBER_RE.findall(text))
    negated = any(t.lower() in NEGATIONS or t.lower().endswith("n't") for t in tokens)
    order = tuple(
        dict.fromkeys(w for t in tokens if (w := _stem_possessive(t.lower())) not in _STOP)
    )
    content = tuple(w for w in order if len(w) > 2)
    return Marks(
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
    have = read_marks(text)
    missing: dict[str, None] = {}
    all_marks = [read_marks(source) for source in sources]
    for found in all_marks:
        for number in sorted(found.numbers - have.numbers):
            missing[number] = None
        for name in sorted(found.names - have.words):
            if not {name.removesuffix("s"), name + "s"} & have.words:  # Tuesday / Tuesdays
                missing[name] = None
    for words in CONTRAST_SETS:
        sides = {found.contrasts & words for found in all_marks} - {frozenset()}
        if len(sides) > 1:
            for word in sorted(frozenset().union(*sides) - have.contrasts):
                missing[word] = None
    return list(missing)


def _stem_possessive(word: str) -> str:
    return word[:-2] if word.endswith(("'s", "’s")) else word
