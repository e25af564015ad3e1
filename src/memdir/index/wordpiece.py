"""BERT's uncased WordPiece tokenizer in plain Python, for the MiniLM embedder.

It gives the ids the Hugging Face ``tokenizers`` library's
``BertWordPieceTokenizer(vocab, lowercase=True)`` gives, with truncation to
``max_length`` tokens, ``[CLS]`` first and ``[SEP]`` last
(tests/test_wordpiece.py compares the two over a corpus of hand-picked edge cases
and generated text; they differ only for characters whose Unicode category changed
or was assigned after the library's own tables, such as marks of scripts added in
Unicode 9 and later, and code points this Python does not know): so memdir needs
neither that library nor what it pulls in (the Hugging Face hub client, hf-xet,
fsspec, tqdm: about 33 MB installed).

The steps, as the library's ``BertNormalizer``, ``BertPreTokenizer`` and
``WordPiece`` model take them:
1. clean: drop NUL, U+FFFD and every character of category Cc, Cf, Cs or Co but
   tab, newline and carriage return; every white-space character becomes a space
   (a code point unassigned in this Python's Unicode database is kept, an [UNK]:
   the one place the two may differ, for code points no text uses yet);
2. a space each side of every CJK ideograph;
3. strip accents: NFD, then drop the nonspacing marks (Mn);
4. lowercase, character by character (no final-sigma rule, as the library);
5. split on white space, and each punctuation character (ASCII punctuation or a
   Unicode P* category) on its own;
6. each word: ``[UNK]`` past ``MAX_WORD_CHARS`` characters, else the longest
   prefix in the vocabulary, then the longest ``##`` continuations; a word with
   a part in no entry is ``[UNK]`` whole.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

MAX_WORD_CHARS = 100
_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
# Categories the library drops (its C*). Not Cn: a code point this Python's Unicode
# database does not know yet is most likely one a newer database (the library's) has
# assigned (a new emoji, a new CJK block); kept, it is an [UNK] as there.
_DROPPED = frozenset(("Cc", "Cf", "Cs", "Co"))
_ASCII_SAFE = re.compile(r"[a-z0-9 ]*\Z")  # a text of these needs no step but the split
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # Cc but tab, LF, CR
_ASCII_WORD = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")  # a word, or one punctuation mark


class WordPiece:
    """``encode_batch(texts)``: each text's token ids, ``[CLS] ... [SEP]``, truncated."""

    def __init__(self, vocab: Path, max_length: int) -> None:
        lines = vocab.read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        self.vocab = {token: number for number, token in enumerate(lines)}
        self.max_length = max_length
        self.cls, self.sep, self.unk = (self.vocab[t] for t in ("[CLS]", "[SEP]", "[UNK]"))
        self._words: dict[str, tuple[int, ...]] = {}

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode(text) for text in texts]

    def encode(self, text: str) -> list[int]:
        room = self.max_length - 2
        ids: list[int] = [self.cls]
        for word in words(text):
            ids.extend(self._word(word))
            if len(ids) > room:
                break
        del ids[room + 1 :]
        ids.append(self.sep)
        return ids

    def _word(self, word: str) -> tuple[int, ...]:
        known = self._words.get(word)
        if known is None:
            known = self._pieces(word)
            if len(self._words) < 200_000:  # words repeat; a bound on what is kept
                self._words[word] = known
        return known

    def _pieces(self, word: str) -> tuple[int, ...]:
        if len(word) > MAX_WORD_CHARS:
            return (self.unk,)
        vocab = self.vocab
        pieces: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return (self.unk,)
            pieces.append(found)
            start = end
        return tuple(pieces)


def words(text: str) -> list[str]:
    """Steps 1-5: the text's words and punctuation marks, normalised."""
    if text.isascii():  # most text: no accents, no CJK, every non-alnum mark punctuation
        lowered = text.lower()
        if _ASCII_SAFE.match(lowered):
            return lowered.split()
        return _ASCII_WORD.findall(_ASCII_CONTROL.sub("", lowered))
    return _split(_normalise(text))


def _normalise(text: str) -> str:
    out: list[str] = []
    for char in text:
        if char in "\t\n\r":
            out.append(" ")
            continue
        if char == "\0" or char == "\ufffd" or unicodedata.category(char) in _DROPPED:
            continue
        if char.isspace() and _rust_whitespace(char):
            out.append(" ")
        elif _is_cjk(ord(char)):
            out.append(f" {char} ")
        else:
            out.append(char)
    decomposed = unicodedata.normalize("NFD", "".join(out))
    kept = "".join(c for c in decomposed if unicodedata.category(c) != "Mn")
    if "\u03a3" in kept or not kept.isascii():
        return "".join(_lower(c) for c in kept)
    return kept.lower()


@lru_cache(maxsize=4096)
def _lower(char: str) -> str:
    return char.lower()


def _split(text: str) -> list[str]:
    found: list[str] = []
    for chunk in text.split(" "):
        if not chunk:
            continue
        if chunk.isalnum():
            found.append(chunk)
            continue
        current: list[str] = []
        for char in chunk:
            if _is_punctuation(char):
                if current:
                    found.append("".join(current))
                    current = []
                found.append(char)
            elif _rust_whitespace(char):
                if current:
                    found.append("".join(current))
                    current = []
            else:
                current.append(char)
        if current:
            found.append("".join(current))
    return found


@lru_cache(maxsize=4096)
def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _rust_whitespace(char: str) -> bool:
    """Rust's ``char::is_whitespace`` (the Unicode White_Space property): Python's
    ``isspace`` but for U+001C..U+001F, which are controls (dropped before this)."""
    return char.isspace() and not "\x1c" <= char <= "\x1f"


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK)
