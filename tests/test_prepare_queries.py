"""The search model is made ready before the first search needs it: ``memdir init``
converts MiniLM to int8 (once per model cache, said on stderr while it runs), a server
starts the conversion beside its start, and a search that has to convert says why it
waits. Real conversions in real processes: what a newcomer's first commands do."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memdir.index import quantised_model
from memdir.index.embedders import MiniLMEmbedder, prepare_in_background, prepare_queries
from memdir.index.model_files import MINILM_SHA256

SAID = f"memdir: {quantised_model.CONVERTING}"


def _env(cache: Path, embedder: str | None = None) -> dict[str, str]:
    env = dict(os.environ)  # the test's MEMDIR_HOME
    env["MEMDIR_MODEL_CACHE"] = str(cache)
    env.pop("MEMDIR_EMBEDDER", None)
    if embedder:
        env["MEMDIR_EMBEDDER"] = embedder
    return env


def _memdir(
    cache: Path, *args: str | Path, embedder: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memdir", *map(str, args)],
        capture_output=True, text=True, env=_env(cache, embedder), timeout=300,
    )  # fmt: skip


def test_init_converts_once_and_says_so_then_search_waits_for_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "models"
    first = _memdir(cache, "init", tmp_path / "a")
    assert first.returncode == 0, first.stderr
    assert first.stderr.count(SAID) == 1  # while it ran, on stderr
    assert first.stderr.count("making the window model") == 1  # both its graphs
    assert "INFO:" not in first.stderr  # (not again through a root logger's handler)
    kept = sorted(cache.glob("minilm-*.onnx"))  # the int8 query graph, the two window ones
    assert len(kept) == 3 and all(path.with_suffix(".json").is_file() for path in kept)
    second = _memdir(cache, "init", tmp_path / "b")
    assert second.returncode == 0 and SAID not in second.stderr  # made once per model cache
    saved = _memdir(cache, "save", "Deploys happen on Tuesdays", "--dir", tmp_path / "a")
    assert saved.returncode == 0, saved.stderr
    found = _memdir(cache, "search", "when do we ship", "--dir", tmp_path / "a")
    assert found.returncode == 0 and "Tuesdays" in found.stdout
    assert SAID not in found.stderr and sorted(cache.glob("minilm-*.onnx")) == kept


def test_a_search_that_must_convert_says_why_it_waits(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    cache = tmp_path / "models"
    for args in (("init", folder), ("save", "Deploys happen on Tuesdays", "--dir", folder)):
        done = _memdir(cache, *args, embedder="hashing")  # set up with nothing to convert
        assert done.returncode == 0 and SAID not in done.stderr, done.stderr
    assert not cache.exists() or not list(cache.glob("minilm-*"))
    found = _memdir(cache, "search", "when do we ship", "--dir", folder)
    assert found.returncode == 0 and "Tuesdays" in found.stdout
    assert found.stderr.count(SAID) == 1 and list(cache.glob("minilm-*.onnx"))


def test_the_server_converts_beside_its_start(tmp_path: Path) -> None:
    """``memdir serve`` with no request at all: the conversion is made while it waits."""
    cache, folder = tmp_path / "models", tmp_path / "a"
    assert _memdir(cache, "init", folder, embedder="hashing").returncode == 0
    log = tmp_path / "server.err"
    with log.open("w") as err, subprocess.Popen(
        [sys.executable, "-m", "memdir", "serve", "--dir", str(folder)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, env=_env(cache),
    ) as server:  # fmt: skip
        assert server.stdin is not None
        try:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and not list(cache.glob("minilm-*.json")):
                assert server.poll() is None, log.read_text()
                time.sleep(0.2)
            assert list(cache.glob("minilm-*.onnx")) and list(cache.glob("minilm-*.json"))
        finally:
            server.stdin.close()  # the client goes away: a stdio server ends
            server.wait(timeout=60)


def test_prepare_queries_is_one_look_once_the_model_is_made(
    model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_MODEL_CACHE", str(model_cache))
    model = MiniLMEmbedder()
    assert prepare_queries(model) is None  # made now, or by an earlier test
    assert quantised_model.made(MINILM_SHA256)

    def refuse(source: Path, out: Path) -> None:
        raise AssertionError("converted again")

    monkeypatch.setattr(quantised_model, "_convert", refuse)
    again = MiniLMEmbedder()
    assert prepare_queries(again) is None and again._queries is None  # no session made yet
    thread = prepare_in_background(again)
    assert thread is not None
    thread.join(timeout=60)
    assert again._queries is None


def test_an_embedder_with_nothing_to_prepare_is_left_alone() -> None:
    class Plain:
        id, dim = "plain", 3

        def embed(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0, 0.0] for _ in texts]

    assert prepare_queries(Plain()) is None  # type: ignore[arg-type]
    assert prepare_in_background(Plain()) is None  # type: ignore[arg-type]
    assert prepare_queries(None) is None and prepare_in_background(None) is None


def test_init_converts_nothing_into_a_cache_that_cannot_keep_it(tmp_path: Path) -> None:
    """A model cache that is a file, not a folder: a conversion made now would be thrown
    away with the process, so init leaves it to the search (which converts in memory)."""
    blocker = tmp_path / "models"
    blocker.write_text("not a folder")
    done = _memdir(blocker, "init", tmp_path / "a")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "a" / "memdir.toml").is_file()
    assert SAID not in done.stderr and blocker.read_text() == "not a folder"
