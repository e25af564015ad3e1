"""Words that tell facts apart however close their sentence vectors are.

An embedding puts "the first day of the month" next to "the last day of the
month", "night shifts" next to "day shifts" and "at least 12" next to "at most
12": antonyms and members of one closed class score higher than synonyms do.
No cosine separates them, so the offline planner asks the words: two texts
that each use a word of one contrast set, and not the same ones, are different
facts; a degree word ("least", "less") in one text only turns its meaning
round, as a negation does.

These are closed classes of general English (ordinals, extremes, frequencies,
units of time, parts of the day, sides and directions, polarity, degree,
environments, visibility, family roles, platforms), not the words of any one
domain. They only ever keep two observations apart; they never merge any.
"""

from __future__ import annotations

CONTRAST_SETS: tuple[frozenset[str], ...] = tuple(
    frozenset(words.split())
    for words in (
        # position and order
        "first second third fourth fifth last final next previous initial earliest latest",
        "before after earlier later prior",
        "above below over under top bottom upper lower",
        "start end beginning",
        # extremes and amounts
        "minimum maximum min max most least highest lowest best worst largest smallest "
        "fastest slowest",
        "more less fewer",
        "all none some",
        # time
        "hourly daily nightly weekly fortnightly biweekly monthly quarterly yearly annually",
        "millisecond second minute hour day week month quarter year decade",
        "morning afternoon evening night midnight noon day",
        "always never sometimes often rarely usually seldom",
        "past present future",
        # sides and directions
        "left right",
        "up down",
        "north south east west",
        "front back rear",
        "inbound outbound upstream downstream incoming outgoing input output import export",
        "push pull",
        "read write",
        "send receive",
        "buy sell",
        "upload download",
        # polarity
        "enable enabled disable disabled on off",
        "open opened closed close",
        "allow allowed deny denied block blocked forbid forbidden permit permitted",
        "true false",
        "accept accepted reject rejected approve approved decline declined",
        "include included exclude excluded",
        "pass passed fail failed success failure succeed",
        "like likes dislike dislikes love loves hate hates",
        "add added remove removed",
        "win won lose lost",
        "increase increased decrease decreased raise raised cut",
        "start started stop stopped",
        # degree
        "small large big little tiny huge",
        "short long",
        "high low",
        "fast slow quick",
        "light dark",
        "hot cold warm cool",
        "old new young",
        "early late",
        "cheap expensive",
        "easy hard difficult",
        "strict lenient loose",
        "sync synchronous async asynchronous",
        # places in a system
        "dev development staging production prod test testing qa sandbox local",
        "public private internal external",
        "frontend backend client server",
        "mobile web desktop",
        "primary secondary replica",
        "major minor patch",
        "alpha beta stable",
        # people
        "male female",
        "son daughter child",
        "brother sister sibling",
        "mother father parent",
        "husband wife partner",
        "boy girl",
        "aunt uncle",
        "niece nephew",
        "grandmother grandfather",
        "manager mentor report",
        "junior senior",
    )
)
"""Each set holds words of one class; two texts using different ones differ."""

DEGREE_WORDS = frozenset({"least", "less", "fewer", "worst", "non", "un", "anti"})
"""Words that turn a statement's sense when only one text has them ('favourite' /
'least favourite'), as a negation does."""


def contrast_words(tokens: list[str]) -> frozenset[str]:
    """The lowercased words of ``tokens`` with hyphenated words split ('left-handed'
    gives 'left') and an inflected form read as its stem where that is a contrast
    word ('hours' as 'hour', 'pushed' as 'push', 'closing' as 'close')."""
    found: set[str] = set()
    for token in tokens:
        for part in token.lower().split("-"):
            if not part:
                continue
            found.add(part)
            found.update(stem for stem in _stems(part) if stem in _ALL)
    return frozenset(found & (_ALL | DEGREE_WORDS))


def _stems(word: str) -> list[str]:
    stems = []
    for suffix, replacement in (("s", ""), ("es", ""), ("ed", ""), ("d", ""), ("ing", ""),
                                ("ing", "e")):  # fmt: skip
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            stems.append(word[: -len(suffix)] + replacement)
    return stems


def contrast(a: frozenset[str], b: frozenset[str]) -> str | None:
    """Why two texts' ``contrast_words`` make them different facts, or None."""
    degree = (a ^ b) & DEGREE_WORDS
    if degree:
        return f"'{sorted(degree)[0]}' in one only"
    for words in CONTRAST_SETS:
        mine, theirs = a & words, b & words
        if mine and theirs and mine != theirs:
            return f"{'/'.join(sorted(mine))} against {'/'.join(sorted(theirs))}"
    return None


_ALL = frozenset().union(*CONTRAST_SETS)
