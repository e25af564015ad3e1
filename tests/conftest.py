"""Shared fixtures: every test gets its own MEMDIR_HOME and a clock it controls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

import memdir
from memdir.testing import FakeClock
from pg_fixture import pg_db, pg_schema, pg_url  # noqa: F401  (PostgreSQL, started for real)
from pg_vector_fixtures import embedder, fresh_vector_cache  # noqa: F401

# Hypothesis fails an example slower than 200 ms, and a test whose data comes slowly:
# timing assertions that a loaded machine breaks. Speed is measured in bench/.
settings.register_profile("memdir", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("memdir")


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of converted models for the whole session: MiniLM's int8 conversion
    (``index.quantised_model``, a few seconds) is made once, by the first test that
    embeds, not once per test's home."""
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(autouse=True)
def memdir_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, model_cache: Path
) -> Path:
    """Never touch the real ~/.memdir."""
    home = tmp_path_factory.mktemp("memdir-home")
    monkeypatch.setenv("MEMDIR_HOME", str(home))
    monkeypatch.setenv("MEMDIR_MODEL_CACHE", str(model_cache))
    return home


@pytest.fixture(autouse=True)
def offline_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never reach a developer's own LLM endpoint from a test (the MEMDIR_LLM_* variables)."""
    for name in (
        "MEMDIR_LLM_BASE_URL",
        "MEMDIR_LLM_MODEL",
        "MEMDIR_LLM_API_KEY",
        "MEMDIR_EMBEDDER",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock("2026-11-30T10:00:00Z")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A fresh memory folder with the default layout."""
    root = tmp_path / "mem"
    memdir.init(root)
    return root


@pytest.fixture
def memory(folder: Path, clock: FakeClock) -> Iterator[memdir.Memory]:
    """The folder opened with a fake clock and the hashing embedder (no model to load)."""
    with memdir.open(folder, clock=clock, embedder="hashing") as opened:
        yield opened
