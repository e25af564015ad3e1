"""``index.wordpiece`` gives the ids the ``tokenizers`` library gives (the reference,
installed with the dev extra only) for BERT's uncased vocabulary: edge cases by hand,
texts from the bench data, and generated text over every Unicode category."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.index.embedders import MiniLMEmbedder, _vocab_path
from memdir.index.wordpiece import WordPiece

tokenizers = pytest.importorskip("tokenizers")

DATA = Path(__file__).resolve().parent.parent / "bench" / "data"
MAX = MiniLMEmbedder.MAX_TOKENS


@pytest.fixture(scope="module")
def both() -> tuple[WordPiece, object]:
    reference = tokenizers.BertWordPieceTokenizer(str(_vocab_path()), lowercase=True)
    reference.enable_truncation(max_length=MAX)
    return WordPiece(_vocab_path(), MAX), reference


def same(both: tuple[WordPiece, object], texts: list[str]) -> None:
    ours, reference = both
    expected = [e.ids for e in reference.encode_batch(texts)]  # type: ignore[attr-defined]
    got = ours.encode_batch(texts)
    for text, mine, theirs in zip(texts, got, expected, strict=True):
        assert mine == theirs, repr(text)


EDGES = [
    "",
    " ",
    "Deploys happen on Tuesdays.",
    "Hello, WORLD! It's 3:45pm -- the $5 fee (10%) isn't <ok>; a_b c~d e|f g^h `x`",
    "Café naïve résumé Ångström ÉCOLE façade jalapeño",
    "İstanbul ΣΊΣΥΦΟΣ straße ǅemal ﬁne ß",
    "数据库 in 東京 and 한국어 text, 日本語のテキスト",
    "tab\tnew\nline\rcr\x00nul\ufffdrepl\x1cfs\x85nel\u00a0nbsp\u2028ls\u200bzw\u3000ideo",
    "emoji 🙂👍🏽 and symbols ©®™ ∑∫ → ← ★ §¶ «quotes» „low“ ‘single’ — en–dash…",
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101,
    "unaffable unbelievably antidisestablishmentarianism xqzvwj",
    "https://example.com/path?q=1&r=2#frag user@example.org C:\\Users\\dana",
    "word " * 400,
    "ends with a hyphenated-word- and 'quotes' \"double\"",
    "Ωmega µ micro ﬀ ligature ²³ superscripts ½ fractions Ⅻ roman",
    "\u0301leading combining and trailing e\u0301",
    "Arabic مرحبا Hebrew שלום Thai สวัสดี Devanagari नमस्ते",
]


def test_edge_cases(both: tuple[WordPiece, object]) -> None:
    same(both, EDGES)


def test_the_bench_texts(both: tuple[WordPiece, object]) -> None:
    texts: list[str] = []
    for path in sorted(DATA.glob("*.json")):
        found: list[str] = []
        _strings(json.loads(path.read_text(encoding="utf-8")), found)
        texts += found[:400]
    assert len(texts) > 500
    same(both, texts)


# Characters whose category has not changed since Unicode 3.2: the library's own tables
# are older than this Python's (a mark added in Unicode 9, such as U+11438, is one it
# keeps and this tokenizer strips); text in the scripts people write is all in here.
# No Cn (wordpiece's step 1) and no Cs (the library refuses a lone surrogate).
ASSIGNED = st.characters(exclude_categories=["Cn", "Cs"]).filter(
    lambda char: unicodedata.ucd_3_2_0.category(char) == unicodedata.category(char)
)


@given(st.lists(st.text(ASSIGNED, max_size=80), min_size=1, max_size=8))
def test_generated_text(both: tuple[WordPiece, object], texts: list[str]) -> None:
    same(both, texts)


@settings(max_examples=40)
@given(st.text(alphabet=ASSIGNED, min_size=200, max_size=1200))
def test_long_generated_text_is_truncated_alike(both: tuple[WordPiece, object], text: str) -> None:
    same(both, [text])


def _strings(data: object, out: list[str]) -> None:
    if isinstance(data, str) and data.strip():
        out.append(data)
    elif isinstance(data, dict):
        for value in data.values():
            _strings(value, out)
    elif isinstance(data, list):
        for value in data:
            _strings(value, out)
