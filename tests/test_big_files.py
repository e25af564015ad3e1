"""Files far over every cap, already on disk: read, searched and written like small ones.

How long they take is measured by bench/big_files.py (no timing here); these tests
pin what the linear rewrites must keep: the same snippets, the same vectors for
ordinary text, and every byte of the big file through a write.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import BertWordPieceTokenizer, Tokenizer, models, pre_tokenizers, trainers

import memdir
from memdir.context.tokens import TokenizerFileCounter, chunks
from memdir.index.embedders import HashingEmbedder, _vocab_path
from memdir.index.words import SNIPPET_CHARS, snippet
from memdir.index.words import stem as _stem
from memdir.testing import FakeClock


def _reference_snippet(body: str, words: list[str], width: int = SNIPPET_CHARS) -> str:
    """snippet() as first written: the densest window found by counting from each match."""
    flat = " ".join(body.split())
    if not words:
        return flat[:width] + ("…" if len(flat) > width else "")
    stems = sorted({_stem(word) for word in words}, key=len, reverse=True)
    pattern = re.compile(r"\b(" + "|".join(re.escape(stem) for stem in stems) + r")\w*", re.I)
    matches = list(pattern.finditer(flat))
    start = 0
    if matches and len(flat) > width:
        best = max(
            range(len(matches)),
            key=lambda i: sum(1 for m in matches[i:] if m.start() - matches[i].start() < width),
        )
        start = max(0, matches[best].start() - width // 4)
        if start:
            space = flat.find(" ", start)
            start = space + 1 if 0 <= space < matches[best].start() else start
    window = flat[start : start + width]
    marked = pattern.sub(lambda m: f"**{m.group(0)}**", window)
    return ("…" if start else "") + marked + ("…" if start + width < len(flat) else "")


_WORDS = st.sampled_from(["pay", "payments", "api", "retry", "webhook", "x", "  ", "\n", "é"])


@settings(max_examples=300)
@given(
    body=st.lists(_WORDS, max_size=200).map(" ".join),
    query=st.lists(st.sampled_from(["payments", "api", "retries", "zzz"]), max_size=3),
    width=st.integers(min_value=5, max_value=80),
)
def test_snippet_picks_the_window_the_first_version_did(
    body: str, query: list[str], width: int
) -> None:
    assert snippet(body, query, width) == _reference_snippet(body, query, width)


def test_the_hashing_embedder_reads_a_bounded_prefix() -> None:
    """Past MAX_CHARS more text changes nothing (and costs nothing); before it, it does."""
    embedder = HashingEmbedder(dim=64)
    text = "payments api webhook " * (HashingEmbedder.MAX_CHARS // 10)
    long, longer, short = embedder.embed([text, text + " refunds" * 1000, "payments api"])
    assert (long == longer).all()
    assert not (long == short).all()


def _byte_level_bpe() -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=alphabet)
    tokenizer.train_from_iterator(["payments api webhook retries, idempotency key."] * 50, trainer)
    return tokenizer


@pytest.mark.parametrize("kind", ["wordpiece", "byte-level-bpe"])
def test_a_long_text_counts_in_pieces_as_it_would_whole(kind: str, tmp_path: Path) -> None:
    if kind == "wordpiece":
        tokenizer: Tokenizer = BertWordPieceTokenizer(str(_vocab_path()), lowercase=True)
    else:
        tokenizer = _byte_level_bpe()
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    counter = TokenizerFileCounter(path)
    words = "payments api  webhook   retries, idempotency key.\n Über\t"
    text = words * 2_000 + "x" * 50_000 + " " * 30_000 + words * 100  # runs with no cut
    assert len(list(chunks(text, counter.CHUNK_CHARS))) > 5
    assert counter.count(text) == len(tokenizer.encode(text, add_special_tokens=False).ids)


@settings(max_examples=300)
@given(text=st.lists(st.sampled_from(["a", "bc", " ", "  ", "\n", "\t"]), max_size=80).map("".join))
def test_pieces_join_back_and_each_starts_at_a_word(text: str) -> None:
    pieces = list(chunks(text, 7))
    assert "".join(pieces) == text
    for before, piece in zip(pieces, pieces[1:], strict=False):
        assert piece[0] == " " and piece[1:2] and not piece[1].isspace()
        if len(before) > 7:  # longer only where no word starts within the first 7
            after = [before[i + 1 : i + 2] for i in range(1, 8) if before[i] == " "]
            assert all(not nxt or nxt.isspace() for nxt in after)


def _giant_observation(words: int) -> str:
    body = "\n".join(f"line {n} of the import about payments" for n in range(words))
    return (
        "# Knowledge\n\n## _observations\n### obs_1764496800000_a1b2c3\n"
        "<!-- type: fact; date: 2026-11-30T10:00:00Z -->\n"
        f"{body}\nThe zanzibar webhook retries for three days.\n"
    )


def test_a_megabyte_observation_is_read_found_and_kept_through_a_save(
    folder: Path, clock: FakeClock
) -> None:
    text = _giant_observation(30_000)
    assert len(text) > 1_000_000
    (folder / "knowledge.md").write_text(text, encoding="utf-8")
    with memdir.open(folder, clock=clock, embedder="hashing") as memory:
        (observation,) = memory.knowledge.observations()
        assert observation.content.endswith("The zanzibar webhook retries for three days.")
        assert len(observation.content) > 1_000_000
        (hit,) = memory.search("zanzibar", kinds=["observation"])
        assert hit.anchor == "obs_1764496800000_a1b2c3"
        assert "**zanzibar**" in hit.snippet
        assert memory.knowledge.save("A small new fact.").ok
    after = (folder / "knowledge.md").read_text(encoding="utf-8")
    assert after.startswith(text)  # the big one byte for byte; the new one after it
    assert after[len(text) :].count("### obs_") == 1


def test_a_file_that_is_one_long_line_opens_and_takes_a_save(
    folder: Path, clock: FakeClock
) -> None:
    """No newline, no heading: it is all preamble; a save appends the buffer after it."""
    text = "# Knowledge " + "payments api webhook " * 100_000
    (folder / "knowledge.md").write_text(text, encoding="utf-8")
    with memdir.open(folder, clock=clock, embedder="hashing") as memory:
        assert memory.knowledge.observations() == []
        assert memory.knowledge.save("A small new fact.").ok
        assert [o.content for o in memory.knowledge.observations()] == ["A small new fact."]
    assert (folder / "knowledge.md").read_text(encoding="utf-8").startswith(text + "\n")


def test_a_search_embeds_a_bounded_share_and_later_ones_catch_up(
    folder: Path, clock: FakeClock
) -> None:
    """Thousands of items without vectors (an import, a big file edited by hand) do not
    hold a search back: under a time budget one batch is embedded, and the next call
    goes on from there until every item has its vector."""
    blocks = "".join(
        f"### obs_{1764496800000 + n}_{n:06x}\n<!-- type: fact; date: 2026-11-30T10:00:00Z -->\n"
        f"Shipment {n} left dock {n % 7} on time.\n\n"
        for n in range(300)
    )
    (folder / "knowledge.md").write_text(f"# Knowledge\n\n## _observations\n{blocks}")
    with memdir.open(folder, clock=clock, embedder="hashing") as memory:
        index = memory.index
        index.scan()
        first = index.ensure_vectors(seconds=0)
        second = index.ensure_vectors(seconds=0)
        assert first == second == 64  # one batch each
        rest = index.ensure_vectors()
        assert rest > 300 - 128
        assert index.ensure_vectors() == 0
        (missing,) = index.db.execute(
            "SELECT count(*) FROM items AS i WHERE NOT EXISTS (SELECT 1 FROM vectors AS v "
            "WHERE v.vector_key = i.vector_key)"
        ).fetchone()
        assert missing == 0
