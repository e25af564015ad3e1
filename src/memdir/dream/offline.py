"""The offline planner: no network, no model beyond the folder's embedder.

1. Exact duplicates (the same text once case, accents and punctuation are
   folded) merge into one entry naming all their ids.
2. Near duplicates merge too: a cosine above the embedder's duplicate threshold,
   and nothing that tells them apart. Two observations with different numbers,
   different names (capitalised words), a negation in one only, a relation
   turned round ("email over calls", "calls over email") or different words of
   one contrast set ("the first / last day") are different facts however close
   their vectors are ("the limit is 50/s" is not "the limit is 100/s"); those
   checks are in ``marks``. Groups are complete-link: every member is close to
   every other, so a chain of small steps never merges two distant facts. The
   merged text is the member with the most to say.
3. Themes: three or more observations (``theme_min``) sharing a tag, or a tight
   cluster of untagged ones, are promoted into a curated section named for the
   theme (its tag, or ``theme_name``), one fact per line, each line keeping its
   source ids. Larger themes go
   first; what does not fit the caps stays in the buffer.

Nothing else is removed: when in doubt an observation stays (seed rule 7).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from memdir.dream.marks import (
    NUMBER_RE,
    Marks,
    content_words,
    read_marks,
)
from memdir.dream.plan import Entry, Merge, Plan, Promotion, normalise
from memdir.index.embedders import Embedder
from memdir.textutil import plural

DEFAULT_DUPLICATE = 0.9
"""cosine for an embedder that names no ``duplicate_threshold`` of its own"""
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
        marks = [read_marks(e.content) for e in entries]
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

    def _same(self, a: Marks, b: Marks, cosine: float) -> bool:
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
        names = read_marks(text).names
        grams: dict[tuple[str, ...], int] = {}
        at = 0
        for clause in re.split(r"[,.;:!?()]+", text):
            words = [w for w in content_words(clause) if w not in names]
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


def _richness(text: str) -> int:
    return len(set(content_words(text))) + len(NUMBER_RE.findall(text))
