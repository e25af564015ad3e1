"""MiniLM's queries run in int8 (``index.quantised_model``): the model converted once
from the pinned packaged file, checked against it before it is kept, kept in the model cache under
a lock, checked by sha256 at load, converted again when damaged, and made in memory
when no cache can be written."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import memdir
from memdir.index import quantised_model
from memdir.index.embedders import EmbedderUnavailable, MiniLMEmbedder, _packaged_model
from memdir.index.model_files import MINILM_SHA256
from memdir.index.quantised_model import MIN_COSINE, agreement, model_cache, quantised


@pytest.fixture
def converted(model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The session's converted model (made by the first test that needs it)."""
    with monkeypatch.context() as patch:
        patch.setenv("MEMDIR_MODEL_CACHE", str(model_cache))
        path = quantised(_packaged_model(), MINILM_SHA256)
    assert isinstance(path, Path)
    return path


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "models"
    monkeypatch.setenv("MEMDIR_MODEL_CACHE", str(cache))
    return cache


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch, converted: Path) -> list[Path]:
    """Conversions from now on, each a copy of the session's converted file (the real
    conversion takes seconds; what these tests check is the cache around it)."""
    made: list[Path] = []

    def copy(source: Path, out: Path) -> None:
        assert source == _packaged_model()
        made.append(out)
        time.sleep(0.05)  # long enough for a second thread to reach the lock
        shutil.copyfile(converted, out)

    monkeypatch.setattr(quantised_model, "_convert", copy)
    return made


def test_the_conversion_agrees_with_the_packaged_model_and_is_kept(converted: Path) -> None:
    assert converted.parent == model_cache() and converted.suffix == ".onnx"
    assert MINILM_SHA256[:16] in converted.name and quantised_model.RECIPE in converted.name
    assert agreement(_packaged_model(), converted) >= MIN_COSINE
    assert converted.stat().st_size < 40_000_000  # most weights stay int8 in the file too
    record = json.loads(converted.with_suffix(".json").read_text())
    assert record["recipe"] == quantised_model.RECIPE and record["onnx"] and record["onnxruntime"]
    assert quantised(_packaged_model(), MINILM_SHA256) == converted  # found, not made again


def test_minilm_queries_run_on_the_int8_graph_and_match_its_items() -> None:
    """A query's vector comes from the int8 graph: close to the packaged graph's for the
    same text, ranking as it does, and the same alone or among other queries."""
    texts = [
        "How many requests per second does the payments API allow?",
        "The payment API is rate limited to 50 requests each second.",
        "My cat likes to sleep on the warm laptop keyboard.",
    ]
    model = MiniLMEmbedder()
    items = model.embed(texts)
    queries = model.embed_queries(texts)
    assert model._queries and model.id == "all-MiniLM-L6-v2-onnx-int8"  # the items' id
    assert not np.array_equal(queries, items)  # another graph ...
    assert (queries * items).sum(axis=1).min() >= MIN_COSINE  # ... of the same model
    assert queries[0] @ items[1] > 0.5 > queries[0] @ items[2]
    alone = np.vstack([model.embed_queries([text]) for text in texts])
    assert np.array_equal(alone, queries)  # a query is run alone: no neighbour moves it
    assert model.embed_queries([]).shape == (0, 384)


def test_search_embeds_its_query_with_embed_queries(folder: Path) -> None:
    from memdir.index.embedders import HashingEmbedder

    class Asymmetric(HashingEmbedder):
        asked: list[str] = []

        def embed_queries(self, texts):  # type: ignore[no-untyped-def]
            self.asked.extend(texts)
            return self.embed(texts)

    embedder = Asymmetric()
    with memdir.open(folder, embedder=embedder) as memory:
        memory.knowledge.save("Deploys happen on Tuesdays after the standup.")
        hits = memory.search("when do deploys happen")
        assert hits and hits[0].semantic is not None
    assert embedder.asked == ["when do deploys happen"]


def test_the_cache_is_made_once_under_its_lock(own_cache: Path, conversions: list[Path]) -> None:
    found: list[Path | bytes] = []
    threads = [
        threading.Thread(target=lambda: found.append(quantised(_packaged_model(), MINILM_SHA256)))
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(conversions) == 1
    assert len(set(found)) == 1 and isinstance(found[0], Path) and found[0].parent == own_cache
    assert not [p for p in own_cache.iterdir() if p.name.startswith(".")]  # no temp left


def test_what_a_killed_conversion_left_is_cleared_by_the_next(
    own_cache: Path, conversions: list[Path]
) -> None:
    own_cache.mkdir()
    name = f"minilm-{quantised_model.RECIPE}-{MINILM_SHA256[:16]}.onnx"
    left = [own_cache / f".{name}.abc123.onnx", own_cache / f".{name}.abc123.onnx.folded.onnx"]
    for path in left:
        path.write_bytes(b"half a model")
    assert quantised(_packaged_model(), MINILM_SHA256) == own_cache / name
    assert not any(path.exists() for path in left) and len(conversions) == 1


def test_a_damaged_cached_model_is_never_used_but_made_again(
    own_cache: Path, conversions: list[Path], converted: Path
) -> None:
    path = quantised(_packaged_model(), MINILM_SHA256)
    assert isinstance(path, Path)
    with path.open("r+b") as handle:
        handle.seek(1 << 20)
        handle.write(b"\x00\xff\x00\xff")
    again = quantised(_packaged_model(), MINILM_SHA256)
    assert again == path and len(conversions) == 2
    assert path.read_bytes() == converted.read_bytes()
    path.with_suffix(".json").write_text("{not json")  # its record lost: made again too
    assert quantised(_packaged_model(), MINILM_SHA256) == path and len(conversions) == 3


def test_a_cache_that_cannot_be_written_costs_a_conversion_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, conversions: list[Path], converted: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("MEMDIR_MODEL_CACHE", str(blocker / "models"))
    model = quantised(_packaged_model(), MINILM_SHA256)
    assert model == converted.read_bytes() and len(conversions) == 1
    vectors = MiniLMEmbedder().embed(["still the same model"])  # from the bytes
    monkeypatch.setenv("MEMDIR_MODEL_CACHE", str(converted.parent))
    assert np.allclose(vectors, MiniLMEmbedder().embed(["still the same model"]), atol=1e-6)


def test_a_cached_model_is_read_from_a_cache_it_cannot_lock(
    own_cache: Path, conversions: list[Path]
) -> None:
    path = quantised(_packaged_model(), MINILM_SHA256)
    assert isinstance(path, Path)
    path.with_suffix(".lock").unlink()
    path.with_suffix(".lock").mkdir()  # no lock can be taken there now
    assert quantised(_packaged_model(), MINILM_SHA256) == path and len(conversions) == 1


def test_a_conversion_that_disagrees_is_refused_and_not_kept(
    own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnxruntime.quantization

    def copy(source: str, out: str, **_: object) -> None:  # quick: the file as it was
        shutil.copyfile(source, out)

    monkeypatch.setattr(onnxruntime.quantization, "quantize_dynamic", copy)
    monkeypatch.setattr(quantised_model, "agreement", lambda source, out: 0.5)
    with pytest.raises(EmbedderUnavailable, match="disagrees with it"):
        quantised(_packaged_model(), MINILM_SHA256)
    assert not list(own_cache.glob("*.onnx")) and not list(own_cache.glob(".*"))


@pytest.mark.parametrize(
    "failure",
    [
        EmbedderUnavailable("the int8 conversion of model.onnx disagrees with it"),
        OSError(28, "No space left on device"),
        TypeError("quantize_dynamic() got an unexpected keyword argument"),  # another release
    ],
)
def test_queries_go_to_the_packaged_graph_when_no_conversion_can_be_made(
    folder: Path,
    own_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: Exception,
) -> None:
    def fail(source: Path, out: Path) -> None:
        raise failure

    monkeypatch.setattr(quantised_model, "_convert", fail)
    model = MiniLMEmbedder()
    # the packaged graph's vector (its quick and optimised sessions agree to 1e-6; a
    # loaded machine can cross from one to the other between the two calls)
    packaged = model.embed(["rate limits"])
    assert np.allclose(model.embed_queries(["rate limits"]), packaged, atol=1e-6)
    reason = str(failure)
    assert any("packaged graph" in r.message and reason in r.message for r in caplog.records)
    with memdir.open(folder, embedder=model) as memory:
        memory.knowledge.save("Deploys happen on Tuesdays.")
        hits = memory.search("when do we ship")
        assert hits and hits[0].semantic is not None  # still a semantic search
        said = [n.message for n in memory.check() if "slower than it should be" in n.message]
        assert len(said) == 1 and "packaged graph" in said[0] and reason in said[0]


def test_a_kept_model_loads_without_the_quantiser(converted: Path) -> None:
    """A command's start: the cached file is opened, onnx and the quantiser not imported."""
    code = (
        "import sys\n"
        "from memdir.index.embedders import MiniLMEmbedder\n"
        "model = MiniLMEmbedder()\n"
        "assert model.embed_queries(['hello']).shape == (1, 384) and model._queries\n"
        "print(sorted(m for m in ('onnx', 'onnxruntime.quantization') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
