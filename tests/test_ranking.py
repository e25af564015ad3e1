"""The ranking's shortcuts answer as the definitions they stand for: an exact match is
the query's words in a row among the text's words, a value is a word of the text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.index.ranking import Phrase, _text_values, _values, heading_words
from memdir.index.words import WORD_RE

PIECES = st.sampled_from([
    "kayak", "trip", "the", "a", "ka", "kayaks", "monday", "mondays", "xmonday", "monday_",
    "june", "may", "Friday", " ", "  ", ", ", "-", "'", "_", "\n", "é", "İ", "K", "5", "ǅ",
])  # fmt: skip
TEXTS = st.lists(PIECES, max_size=14).map("".join)


def _in_a_row(tokens: list[str], text: str) -> bool:
    """The definition: the query's words joined by spaces, among the text's words joined."""
    return " " + " ".join(tokens) + " " in f" {' '.join(WORD_RE.findall(text))} "


@settings(max_examples=400)
@given(query=TEXTS, before=TEXTS, after=TEXTS, inside=st.booleans())
def test_an_exact_match_is_the_query_s_words_in_a_row(
    query: str, before: str, after: str, inside: bool
) -> None:
    tokens = WORD_RE.findall(query.lower())
    text = (before + (query if inside else "") + after).lower()
    if tokens:  # the ranking asks only then
        assert Phrase(tokens).found_in(text) == _in_a_row(tokens, text)


@settings(max_examples=400)
@given(text=TEXTS)
def test_a_text_s_values_are_its_words_values(text: str) -> None:
    lowered = text.lower()
    assert _text_values(lowered) == _values(WORD_RE.findall(lowered))


@given(heading=TEXTS)
def test_a_heading_s_words_are_its_words_lower_cased(heading: str) -> None:
    assert heading_words(heading) == {word.lower() for word in WORD_RE.findall(heading)}
