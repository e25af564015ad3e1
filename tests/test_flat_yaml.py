"""Flat frontmatter read without YAML: whenever it answers, YAML says the same."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.files.flat_yaml import load_flat

_KEYS = st.sampled_from(
    ["type", "tier", "relevance", "tags", "a-b", "_x", "k9", "title", "when", "count"] * 4
    + ["yes", "Null", "ON", "y", "n", "nan", "e1", "x y", "1a", "<<", "=", "tier", "k:"]
)  # fmt: skip
_PLAIN = [
    "warm", "0.85", "1.0", "12", "2026-11-30", "a b", "a, b", "a#b", "a:b", "Bob's", "x\u00e9",
    "https://x.y/z", "[a, b]", "[]", "[ a , 1 , 2026-11-30 ]", "100%", "v1.2",
]  # fmt: skip
_HAZARDS = [
    "1e3", "1.5e-3", "0x1F", "0o17", "017", "1_000", "1:30", "190:20:30", ".inf", "-.inf", ".NaN",
    "~", "null", "Null", "true", "False", "yes", "off", "y", "n", "=", "2026-11-30T10:00:00Z",
    "2026-11-30 10:00:00", "2001-12-14t21:59:43.10-05:00", "2026-13-45", "-5", "+5", "a #b",
    "a: b", "a:", "'q'", '"q"', "|", ">", "&a x", "*a", "!t", "%p", "@x", "`x`", "[a,b,]",
    "[a: b]", "[a:]", "[[a]]", "{a: 1}", "a]", "\u00a0x", "x\u0085y", "x\u2028y", "x\ufeff",
    "x\x00", "x\x7f", "x\ttab", "~x", "?x", "a - b", "- a", "x" * 80, "1" * 70 + ".5", "0.1.2",
    "$5k", "5ms", "[a:b]", "[a, 'b']", "[a, ~]", "[yes, 1e3, 0x1F]", "[a #b]", "a ]", "x\ry",
]  # fmt: skip
_WORDS = st.sampled_from(_PLAIN * 3 + _HAZARDS)
_SEPARATORS = st.sampled_from([": "] * 12 + [":", ":  ", ":\t", " : ", ": \t"])
_ENDS = st.sampled_from([""] * 8 + [" ", "  ", "\t"])
_LINES = st.one_of(
    st.tuples(_KEYS, _SEPARATORS, _WORDS, _ENDS).map(lambda t: "".join(t)),
    st.sampled_from(["", "  ", "# a comment", "#", "# x\u0085y: z", "  # indented comment",
                     "  nested: 1", "- x", "\tk: v", "---", "...", "%YAML 1.1", "k: v # c", "k:",
                     "k:  ", "# \x01"]),
)  # fmt: skip
_TEXTS = st.tuples(st.lists(_LINES, max_size=8), st.sampled_from(["\n"] * 6 + ["\r\n", "\r"])).map(
    lambda t: "".join(line + t[1] for line in t[0])
)
_LOADERS = [yaml.SafeLoader] + ([yaml.CSafeLoader] if hasattr(yaml, "CSafeLoader") else [])


def _yaml(text: str, loader: Any) -> Any:
    try:
        return yaml.load(text, Loader=loader)
    except (yaml.YAMLError, ValueError, TypeError):
        return "refused"


def _parse(text: str) -> Any:
    return yaml.load(text, Loader=yaml.SafeLoader)


def _check(text: str) -> bool:
    """Whether ``load_flat`` answered; if it did, it said what YAML says."""
    found = load_flat(text, _parse)
    if found is None:
        return False
    for loader in _LOADERS:
        expected = _yaml(text, loader)
        assert expected != "refused", text
        assert found == (expected or {}), text
        assert [type(v) for v in found.values()] == [type(v) for v in (expected or {}).values()]
    return True


@pytest.mark.parametrize("word", _PLAIN + _HAZARDS)
def test_each_value_alone_and_among_others(word: str) -> None:
    for text in (f"k: {word}\n", f"type: person\nk: {word}\ntier: warm\n", f"k: [{word}]\n"):
        _check(text)
    if word in _PLAIN:
        assert _check(f"k: {word}\n")


@settings(max_examples=3000)
@given(text=st.one_of(_TEXTS, st.text(max_size=40)))
def test_whenever_it_answers_yaml_says_the_same(text: str) -> None:
    if _check(text):
        answered.append(text)


answered: list[str] = []


def test_the_texts_above_were_often_answered() -> None:
    test_whenever_it_answers_yaml_says_the_same()
    assert len(answered) > 300  # the property was not tested on nothing


def test_it_answers_for_a_card_as_memdir_writes_one() -> None:
    text = (
        "type: person\ntags: [client, berlin]\ncreated: 2026-01-04\nupdated: 2026-11-20\n"
        "last_accessed: 2026-11-28\naccess_count: 12\nrelevance: 0.85\ntier: warm\n"
        "links: [bob-keller]\n# added by hand\n\ntitle: Alice Moreau, CFO\n"
    )
    found = load_flat(text, _parse)
    assert found is not None
    assert found == _parse(text)
    assert load_flat(text.replace("\n", "\r\n"), _parse) == found
