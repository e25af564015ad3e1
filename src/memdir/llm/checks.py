"""Checks on text a model wrote, before memdir keeps any of it.

A model's answer is kept only if it is what was asked for; each check here
returns the problem as a sentence a model can act on ("it has 5 sentences; at
most 3"), or None. The same sentence goes back to the model when it is asked
once more, and into the report when memdir falls back to its offline path.
A closed ``<think>...</think>`` block before the answer is a reasoning model's
habit and is dropped; any other ``<think>`` tag is a leak, and refused.
"""

from __future__ import annotations

import json
import re
from typing import Any

_THINK_BLOCK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_TAG_RE = re.compile(r"</?think\b", re.IGNORECASE)
_HEADING_RE = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_FENCE_RE = re.compile(r" {0,3}(```|~~~)")
_PREAMBLE_RE = re.compile(
    r"(?:sure|certainly|of course|okay|as an ai|i cannot|i can't)\b|.*:$", re.IGNORECASE
)
_UNSPACED_RE = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_WORD_RE = re.compile(r"[^\W\d_][\w'-]*|\d[\d.,:]*", re.UNICODE)
_COMMON_TEXT = (
    "about after also been before being but can could did does done each from had has have "
    "here into its just made make many more most much not only other over same should some "
    "such than that the their them then there these they this those very was were what when "
    "where which while will with would your today week day"
)
_COMMON = frozenset(_COMMON_TEXT.split())


def strip_reasoning(text: str) -> tuple[str, str | None]:
    """The answer without closed ``<think>`` blocks, and the problem if a tag is left."""
    answer = _THINK_BLOCK_RE.sub("", text).strip()
    if _THINK_TAG_RE.search(answer):
        return answer, "a <think> block leaked into the answer"
    return answer, None


def line_problem(line: str) -> str | None:
    """Why one line is not plain text: a markdown heading, a code fence, a lead-in
    ("Sure!", "Here is the summary:")."""
    if _HEADING_RE.match(line):
        return f"it holds a markdown heading ({line.strip()[:60]!r}); write plain sentences"
    if _FENCE_RE.match(line):
        return "it holds a code fence; write plain sentences"
    if _PREAMBLE_RE.match(line.strip()):
        return f"it talks about the task ({line.strip()[:60]!r}); give only the content"
    return None


def content_words(text: str) -> set[str]:
    """Lower-cased words of four letters or more that carry meaning, and numbers; text in
    a script written without spaces (Chinese, Japanese, Korean) gives its character pairs."""
    found: set[str] = set()
    for word in _WORD_RE.findall(text):
        word = word.lower().strip("'-.,:")
        if _UNSPACED_RE.search(word):
            found.update(word[n : n + 2] for n in range(len(word) - 1))
        elif (len(word) >= 4 and word not in _COMMON) or word[:1].isdigit():
            found.add(word)
    return found


def grounded(line: str, source_words: set[str]) -> bool:
    """True if ``line`` shares a meaningful word or number with its source (or has none
    to share: a line of short words is not held against the model)."""
    words = content_words(line)
    return not words or bool(words & source_words)


def parse_json(text: str) -> tuple[Any, str | None]:
    """JSON from an answer that may wrap it in a code fence; the problem if it is not."""
    answer = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", answer, re.DOTALL | re.IGNORECASE)
    if fenced:
        answer = fenced.group(1)
    try:
        return json.loads(answer), None
    except ValueError:
        return None, f"it is not valid JSON ({' '.join(answer.split())[:60]!r})"
