"""Embedders: the offline MiniLM default, the hashing fake, and choosing one by name."""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import memdir
from memdir.index import embedders
from memdir.index.embedders import (
    EmbedderUnavailable,
    HashingEmbedder,
    MiniLMEmbedder,
    load_embedder,
    token_batches,
)


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_minilm_runs_offline_and_ranks_paraphrases_first(
    minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    vectors = minilm.embed(
        [
            "How many requests per second does the payments API allow?",
            "The payment API is rate limited to 50 requests each second.",
            "My cat likes to sleep on the warm laptop keyboard.",
        ]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert similar > 0.5 > unrelated
    assert minilm.id == "all-MiniLM-L6-v2-onnx-int8" and minilm.dim == 384


def test_minilm_is_the_same_for_a_text_alone_or_in_a_batch(minilm: MiniLMEmbedder) -> None:
    texts = ["short", "a somewhat longer sentence about memory and search " * 3, "mid length"]
    batch = minilm.embed(texts)
    alone = np.vstack([minilm.embed([text]) for text in texts])
    assert np.allclose(batch, alone, atol=1e-4)
    assert minilm.embed([]).shape == (0, 384)


def test_minilm_pads_little_and_gives_each_text_its_vector_alone(minilm: MiniLMEmbedder) -> None:
    """Texts of every length in one call: sorted into runs of neighbours (two at once),
    padded under 1.15x their tokens, and each vector is the text's own, embedded alone."""
    texts = [" ".join(["word"] * (n % 37 + 1)) + f" {n}" for n in range(90)]
    texts += ["a long one " * 150, "", "x"]
    before = minilm.stats.padded_tokens, minilm.stats.tokens
    batch = MiniLMEmbedder(threads=2).embed(texts)
    one = MiniLMEmbedder(threads=1)
    vectors = one.embed(texts)
    assert one.stats.texts == len(texts) and one.stats.runs < len(texts) / 4
    assert one.stats.padding < 1.15
    assert np.array_equal(batch, vectors)
    alone = np.vstack([minilm.embed([text]) for text in texts[::7]])
    assert np.allclose(vectors[::7], alone, atol=1e-5)
    assert minilm.stats.padded_tokens - before[0] == minilm.stats.tokens - before[1]  # one each


@given(st.lists(st.integers(1, 256), max_size=200), st.sampled_from([256, 512, 1024]))
def test_token_batches_cover_every_text_in_order_within_the_budget(
    lengths: list[int], budget: int
) -> None:
    ordered = np.array(sorted(lengths), dtype=np.int64)
    batches = list(token_batches(ordered, budget, 1.15))
    assert [i for rows in batches for i in range(len(ordered))[rows]] == list(range(len(ordered)))
    for rows in batches:
        chunk = ordered[rows]
        assert len(chunk) >= 1
        if len(chunk) > 1:
            assert len(chunk) * chunk.max() <= budget
            assert len(chunk) * chunk.max() <= 1.15 * chunk.sum()


def test_the_vendored_vocabulary_is_checked(tmp_path: Path) -> None:
    path = embedders._vocab_path()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == embedders.VOCAB_SHA256
    assert path.read_text().splitlines()[100:104] == ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_hashing_embedder_is_deterministic_and_unit_length() -> None:
    embedder = HashingEmbedder(dim=64)
    first = embedder.embed(["memory systems for agents", ""])
    again = HashingEmbedder(dim=64).embed(["memory systems for agents", ""])
    assert np.array_equal(first, again)
    assert np.linalg.norm(first[0]) == pytest.approx(1.0) and not first[1].any()
    close, far = embedder.embed(["memory system for an agent", "quarterly tax filing"])
    assert first[0] @ close > first[0] @ far


def test_embedders_are_chosen_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(load_embedder("minilm"), MiniLMEmbedder)
    assert isinstance(load_embedder("hashing"), HashingEmbedder)
    assert load_embedder("none") is None
    with pytest.raises(EmbedderUnavailable, match="known: hashing, minilm, none"):
        load_embedder("word2vec")

    class Plugin:
        name = "mine"

        def load(self) -> type[HashingEmbedder]:
            return HashingEmbedder

    monkeypatch.setattr(metadata, "entry_points", lambda group: [Plugin()])
    assert isinstance(load_embedder("mine"), HashingEmbedder)


def test_the_manifest_names_the_embedder(folder: Path) -> None:
    text = (folder / "memdir.toml").read_text() + '\n[index]\nembedder = "hashing"\n'
    (folder / "memdir.toml").write_text(text)
    assert memdir.open(folder).index.embedder.id == "hashing-v1-256"  # type: ignore[union-attr]
    bad = text.replace('embedder = "hashing"', 'embedder = "word2vec"')
    (folder / "memdir.toml").write_text(bad)
    memory = memdir.open(folder)
    memory.knowledge.save("still searchable")
    assert [h.semantic for h in memory.search("searchable")] == [None]
    assert any("keyword search only" in str(notice) for notice in memory.check())


def test_the_embedder_is_named_by_open_then_the_environment_then_the_manifest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memdir.config.manifest import IndexSettings
    from memdir.folder_index import embedder_named

    options = {"base_url": "http://127.0.0.1:9/v1"}
    settings = IndexSettings(embedder="openai:small", embedder_options=options)
    assert embedder_named(settings) == ("openai:small", options)
    assert embedder_named(IndexSettings()) == ("minilm", {})  # the team server's default
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")
    assert embedder_named(settings) == ("hashing", None)  # not the manifest's options
    assert embedder_named(IndexSettings()) == ("hashing", None)
    assert embedder_named(settings, "none") == ("none", None)
    monkeypatch.setenv("MEMDIR_EMBEDDER", "openai:small")
    assert embedder_named(settings) == ("openai:small", options)


def test_minilm_starts_on_the_quick_session_and_moves_to_the_optimised_one() -> None:
    model = MiniLMEmbedder()
    texts = ["Dana keeps the release checklist.", "The deploy needs a rollback plan."]
    quick = model.embed(texts)
    assert not model._optimised  # one short call: the session that is quick to make
    model._tokens = model.LIGHT_TOKENS  # as if it had been given that many
    optimised = model.embed(texts)
    assert model._optimised
    assert np.allclose(quick, optimised, atol=1e-5)  # the same vectors either way
    assert np.allclose(model.embed(texts[:1]), optimised[:1], atol=1e-5)


def test_minilm_goes_to_the_optimised_session_at_once_for_a_big_call() -> None:
    model = MiniLMEmbedder()
    many = [
        f"Turn {n}: Dana moved the release to Friday after the rollback drill." for n in range(200)
    ]
    vectors = model.embed(many)
    assert model.stats.tokens >= model.LIGHT_TOKENS  # (one call brought that many)
    assert model._optimised  # a reindex's batch: no run on the quick session first
    small = MiniLMEmbedder()
    assert np.allclose(small.embed(many[:2]), vectors[:2], atol=1e-5)
    assert not small._optimised
