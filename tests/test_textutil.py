"""Text helpers: comments dropped as the regex would, in one pass; cuts at boundaries."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.textutil import cut_point, drop_comments

_COMMENT_RE = re.compile(r"[ \t]*<!--.*?-->", re.DOTALL)
_PIECES = st.sampled_from(["<!--", "-->", "<!-", "--", ">", " ", "\t", "a", "\n", "-", "<", "!"])
COMMENTISH = st.one_of(st.text(), st.lists(_PIECES, max_size=25).map("".join))


@settings(max_examples=500)
@given(text=COMMENTISH)
def test_drop_comments_agrees_with_the_regex(text: str) -> None:
    assert drop_comments(text) == _COMMENT_RE.sub("", text)


def test_drop_comments_keeps_an_unclosed_comment_and_what_follows() -> None:
    assert drop_comments("a <!-- b --> c\t<!-- d") == "a c\t<!-- d"
    assert drop_comments("x" + " <!--" * 100_000) == "x" + " <!--" * 100_000


def test_cut_point_prefers_a_paragraph_then_a_line_then_a_sentence() -> None:
    text = "First part here.\n\nSecond part goes on and on."
    assert text[: cut_point(text, 30)] == "First part here."
    assert cut_point("no boundary at all in this one", 10) == 10  # no space past half
    assert cut_point("short", 10) == 5
