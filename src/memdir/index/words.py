"""Query words and snippets: how a query is cut into the words a search looks for, and
how a hit's text marks them.

Invariants:
- A possessive suffix (``'s``, ``’s``) is never a word, and neither is any other
  token of one letter ("o'clock", "don't", "l'amour"), unless the query holds nothing
  else (a query of "x" looks for x). A digit is a word ("room 5"), and so is a
  character of a script that writes a word in one (CJK ideographs, kana, Hangul).
- Stopwords are dropped, unless nothing else is left.
- A snippet marks whole words whose stem is a query word's stem ("sailboat" marks
  sailboats, "run" marks running), never a word that merely starts like one.
- The snippet's window is the first with the most marked words in it; found with one
  sliding pass, linear in the matches (a megabyte body holds very many). Each distinct
  token is judged once per query (``Marker``), however many hits hold it.
"""

from __future__ import annotations

import re
import unicodedata

SNIPPET_CHARS = 240

WORD_RE = re.compile(r"\w+", re.UNICODE)
_POSSESSIVE_RE = re.compile(r"(?<=\w)['’]s\b", re.IGNORECASE)
_STOPWORDS_TEXT = """
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


def is_word(token: str) -> bool:
    """A token that can be a word on its own: two characters or more, a digit, or a
    character of a script that writes whole words in one (East Asian wide)."""
    if len(token) > 1 or token.isdigit():
        return True
    return bool(token) and unicodedata.east_asian_width(token) in ("W", "F")


def query_words(query: str) -> list[str]:
    """The query's distinct words, lower-cased, in order: possessives and one-letter
    tokens dropped, then stopwords (each kept only if nothing else is left)."""
    tokens = list(dict.fromkeys(t.lower() for t in WORD_RE.findall(_POSSESSIVE_RE.sub("", query))))
    words = [token for token in tokens if is_word(token)] or tokens
    content = [word for word in words if word not in STOPWORDS]
    return content or words


def stem(word: str) -> str:
    """A light stem, enough to mark a word's regular inflections alike: ``-ies/-ied`` to
    ``-y``, one of ``-ing -ed -es -s -ly`` off (three letters at least stay; ``-ss`` keeps
    its s), a doubled final consonant undoubled, then a final ``e`` off."""
    word = word.lower()
    for suffix in ("ies", "ied"):
        if word.endswith(suffix) and len(word) > 4:
            return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouslz":
                word = word[:-1]  # running, stopped
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]  # bake, baked, baking alike
    return word


def _prefix(word_stem: str) -> str:
    """What every inflection of ``word_stem`` starts with (retry: retr-ies)."""
    return word_stem[:-1] if len(word_stem) > 3 and word_stem.endswith("y") else word_stem


class Marker:
    """A query's words, ready to mark in many bodies: the stems and each token's verdict
    are worked out once per query, not once per hit.

    A token is marked when it starts like a query word (what every inflection of its
    stem starts with) and is that word or one of its inflections."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self._stems = {stem(word) for word in words}
        self._exact = {word.lower() for word in words}
        self._prefixes = tuple(sorted({_prefix(s) for s in self._stems}, key=len, reverse=True))
        self._verdicts: dict[str, bool] = {}

    def marks(self, token: str) -> bool:
        low = token.lower()
        verdict = self._verdicts.get(low)
        if verdict is None:
            verdict = low.startswith(self._prefixes) and (
                low in self._exact or (is_word(low) and stem(low) in self._stems)
            )
            self._verdicts[low] = verdict
        return verdict

    def snippet(self, body: str, width: int = SNIPPET_CHARS) -> str:
        """A window of ``body`` around the densest run of query words, each marked **so**."""
        flat = " ".join(body.split())
        if not self.words:
            return flat[:width] + ("…" if len(flat) > width else "")
        marks = self.marks
        starts = [m.start() for m in WORD_RE.finditer(flat) if marks(m.group(0))]
        start = 0
        if starts and len(flat) > width:
            # The first match with the most matches less than ``width`` after it.
            best, most, end = 0, 0, 0
            for i, first in enumerate(starts):
                while end < len(starts) and starts[end] - first < width:
                    end += 1
                if end - i > most:
                    best, most = i, end - i
            start = max(0, starts[best] - width // 4)
            if start:
                space = flat.find(" ", start)
                start = space + 1 if 0 <= space < starts[best] else start
        window = flat[start : start + width]
        marked = WORD_RE.sub(
            lambda m: f"**{m.group(0)}**" if marks(m.group(0)) else m.group(0), window
        )
        return ("…" if start else "") + marked + ("…" if start + width < len(flat) else "")


def snippet(body: str, words: list[str], width: int = SNIPPET_CHARS) -> str:
    """A window of ``body`` around the densest run of query words, each marked **so**."""
    return Marker(words).snippet(body, width)
