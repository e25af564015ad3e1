"""``OpenAIEmbedder`` (``embedder = "openai:MODEL"``) over real loopback HTTP against
``ChatServer``'s ``/v1/embeddings`` (deterministic vectors): the request, batching as
the server allows, errors, and a folder switched to it and back re-embedding by the
stored identity without ever mixing two models' vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import memdir
from memdir.index.embedders import EmbedderUnavailable, HashingEmbedder, load_embedder
from memdir.index.openai_embedder import OpenAIEmbedder
from memdir.testing import ChatReply, ChatServer

KEY = "sk-embed-" + "q9" * 10


def test_the_request_and_the_vectors() -> None:
    with ChatServer(embedding_dim=32) as server:
        embedder = OpenAIEmbedder(
            "nomic-embed-text", base_url=server.base_url, api_key_env="EMB_KEY",
            environ={"EMB_KEY": KEY},
        )  # fmt: skip
        vectors = embedder.embed(["deploys happen on Tuesdays", "", "the cat sat"])
    [request] = server.requests  # the empty text was not sent
    assert (request.method, request.path) == ("POST", "/v1/embeddings")
    assert request.body == {
        "model": "nomic-embed-text",
        "input": ["deploys happen on Tuesdays", "the cat sat"],
    }
    assert request.headers["authorization"] == f"Bearer {KEY}"
    expected = HashingEmbedder(32).embed(["deploys happen on Tuesdays", "the cat sat"])
    assert vectors.shape == (3, 32) and vectors.dtype == np.float32
    assert np.allclose(vectors[[0, 2]], expected, atol=1e-6) and not vectors[1].any()
    assert embedder.dim == 32
    assert embedder.id == f"openai:nomic-embed-text@{server.base_url}"


def test_batches_go_as_the_server_allows() -> None:
    texts = [f"fact number {i} about the release" for i in range(10)]
    with ChatServer(max_inputs=3) as server:
        embedder = OpenAIEmbedder("m", base_url=server.base_url, batch_size=8)
        first = embedder.embed(texts)
        assert embedder.batch_size <= 3  # learnt from the 413s, kept
        sent_before = len(server.requests)
        again = embedder.embed(texts)
    assert np.allclose(first, again) and np.allclose(first, HashingEmbedder(64).embed(texts))
    sizes = [len(r.body["input"]) for r in server.requests[sent_before:]]
    assert max(sizes) <= 3 and sum(sizes) == 10  # no refused request the second time


def test_a_batch_size_the_server_refused_is_not_sent_again() -> None:
    """14 texts to a server that takes 4: the second half of a refused 7 was sent as 7
    again, and refused again."""
    texts = [f"fact number {i} about the release" for i in range(14)]
    with ChatServer(max_inputs=4) as server:
        embedder = OpenAIEmbedder("m", base_url=server.base_url, batch_size=64)
        vectors = embedder.embed(texts)
    assert np.allclose(vectors, HashingEmbedder(64).embed(texts), atol=1e-6)
    assert [len(r.body["input"]) for r in server.requests] == [14, 7, 4, 3, 4, 3]


def test_a_429_is_retried_and_dimensions_are_sent() -> None:
    with ChatServer(embedding_dim=16) as server:
        server.embedding_failures.append(ChatReply.error(429, "busy", retry_after="0"))
        embedder = OpenAIEmbedder("m", base_url=server.base_url, dimensions=16)
        assert embedder.embed(["one"]).shape == (1, 16)
        assert embedder.id == f"openai:m/16d@{server.base_url}"
    assert [r.body.get("dimensions") for r in server.requests] == [16, 16]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (ChatReply.error(401, "Incorrect API key"), "HTTP 401: Incorrect API key"),
        (ChatReply.error(404, "model 'nope' not found"), "HTTP 404: model 'nope'"),
        (ChatReply(body={"data": []}), "answered 0 embeddings for 1 texts"),
        (ChatReply(body={"data": [{"index": 0, "embedding": "x"}]}), "not an embedding"),
        (ChatReply(body={"data": [{"index": 0, "embedding": []}]}), "unusable vectors"),
        (ChatReply.malformed("<html>"), "not JSON"),
    ],
)
def test_failures_are_clear(reply: ChatReply, expected: str) -> None:
    with ChatServer() as server:
        server.embedding_failures.append(reply)
        embedder = OpenAIEmbedder("m", base_url=server.base_url, api_key_env="K",
                                  environ={"K": KEY})  # fmt: skip
        with pytest.raises(EmbedderUnavailable, match=expected) as caught:
            embedder.embed(["one"])
    assert KEY not in str(caught.value)


def test_settings_are_checked() -> None:
    with pytest.raises(EmbedderUnavailable, match="needs a server: base_url"):
        OpenAIEmbedder("m", environ={})
    with pytest.raises(EmbedderUnavailable, match="needs a model"):
        load_embedder("openai:", {"base_url": "http://127.0.0.1:1/v1"})
    with pytest.raises(EmbedderUnavailable, match="http:// or https://"):
        OpenAIEmbedder("m", base_url="localhost:11434", environ={})
    with pytest.raises(EmbedderUnavailable, match="does not take these"):
        load_embedder("openai:m", {"base_url": "http://127.0.0.1:1/v1", "colour": "blue"})
    made = OpenAIEmbedder("m", environ={"MEMDIR_EMBEDDER_BASE_URL": "http://127.0.0.1:9/v1"})
    assert made.url == "http://127.0.0.1:9/v1/embeddings"  # the environment wins


def with_embedder(folder: Path, name: str, options: str = "") -> None:
    text = (folder / "memdir.toml").read_text().split("\n[index]")[0]
    table = f"\n[index]\nembedder = {name!r}\n"
    if options:
        table += f"\n[index.embedder_options]\n{options}\n"
    (folder / "memdir.toml").write_text(text + table)


def models(folder: Path) -> dict[str, int]:
    import sqlite3

    db = sqlite3.connect(folder / ".memdir" / "index.db")
    try:
        rows = db.execute("SELECT model, count(*) FROM vectors GROUP BY model").fetchall()
    finally:
        db.close()
    return {str(model): int(count) for model, count in rows}


def test_a_folder_switched_to_it_and_back_reembeds_and_never_mixes(folder: Path) -> None:
    with_embedder(folder, "hashing")
    with memdir.open(folder) as memory:
        memory.knowledge.save("Deploys happen on Tuesdays after the standup.")
        memory.knowledge.save("Dana owns the release checklist.")
        assert memory.search("when do we deploy")
        memory.reindex()
    texts = models(folder)["hashing-v1-256"]  # the layout's starter files' texts too
    assert models(folder) == {"hashing-v1-256": texts} and texts >= 2

    with ChatServer(embedding_dim=48) as server:
        with_embedder(folder, "openai:nomic-embed-text", f'base_url = "{server.base_url}"')
        with memdir.open(folder) as memory:
            assert memory.index.embedder is not None
            assert memory.index.embedder.id == f"openai:nomic-embed-text@{server.base_url}"
            hits = memory.search("when do we deploy", mode="deep")
            assert hits and "Tuesdays" in hits[0].snippet
            memory.reindex()  # keeps the current model's vectors, drops the others
        sent = [r for r in server.requests if r.path == "/v1/embeddings"]
        assert sent and all(r.body["model"] == "nomic-embed-text" for r in sent)
    assert models(folder) == {f"openai:nomic-embed-text@{server.base_url}": texts}

    with_embedder(folder, "hashing")  # back: embedded again by the stored identity
    with memdir.open(folder) as memory:
        assert memory.search("release checklist")
        memory.reindex()
    assert models(folder) == {"hashing-v1-256": texts}


@pytest.mark.parametrize("dimensions", ["\ndimensions = 8", ""])
def test_a_server_that_is_down_leaves_keyword_search(folder: Path, dimensions: str) -> None:
    with ChatServer() as server:
        url = server.base_url
    with_embedder(folder, "openai:m", f'base_url = "{url}"{dimensions}')
    with memdir.open(folder) as memory:
        memory.knowledge.save("Deploys happen on Tuesdays.")
        hits = memory.search("Tuesdays")
        assert hits and "Tuesdays" in hits[0].snippet  # by keyword
        said = [n.message for n in memory.check() if "keyword search only" in n.message]
        assert said and "connection refused" in said[0]


def test_a_write_asks_the_server_nothing(folder: Path) -> None:
    with ChatServer() as server:
        with_embedder(folder, "openai:m", f'base_url = "{server.base_url}"')
        with memdir.open(folder) as memory:
            assert memory.knowledge.save("Deploys happen on Tuesdays.").ok
            assert memory.index.embedder is not None
            assert server.requests == []  # not even for the dimension
            assert memory.search("when do we deploy", mode="deep")
        assert server.requests  # a search embeds
