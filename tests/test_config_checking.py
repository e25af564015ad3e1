"""The manifest's two readings agree: the strict one (plain Python, for a valid manifest)
accepts only what pydantic accepts, and gives what pydantic gives (memdir.config.checking)."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
import sys
import tomllib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from memdir import layouts
from memdir.config import Limits, Manifest, parse_manifest
from memdir.config.checking import Bound, _Unsure, build, strict
from memdir.errors import ManifestError

PYDANTIC = TypeAdapter(Manifest)
SEEDS = [tomllib.loads(layouts.manifest_text(layout)) for layout in layouts.LAYOUTS]
VALUES = st.one_of(
    st.integers(-3, 30_000),
    st.sampled_from([0.0, 0.5, 1.0, 1.5, -0.5, float("inf"), float("nan"), 10.0]),
    st.booleans(),
    st.sampled_from(["", "x", "5", "0.5", "always", "never", "recent", "journal", "vault",
                     "knowledge", "notebook", "date", "access", "none", "semantic", "-x",
                     "a b", "auto", "llm", "all", "compact", " ", "memory_save"]),
    st.lists(st.sampled_from(["a.md", "/x", "../x", "MEMORY.md", "*.md", "memory_save",
                              "memory_search", "nonexistent"]), max_size=3),
    # built afresh each draw: a later mutation must never change a shared constant
    st.builds(lambda: [1]),
    st.builds(dict),
    st.builds(lambda: {"a": 1}),
)  # fmt: skip

SAME_TYPE: dict[type, st.SearchStrategy[Any]] = {
    int: st.integers(0, 30_000),
    float: st.one_of(st.floats(0, 1), st.floats(0, 100)),
    bool: st.booleans(),
}


def paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path in a TOML document (tables and their keys)."""
    found = [prefix] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            found += paths(value, (*prefix, key))
    return found


@st.composite
def manifests(draw: st.DrawFn) -> dict[str, Any]:
    data = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(paths(data)))
        parent = data
        for key in where[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["nudge", "nudge", "set", "delete", "add", "rename"]))
        if action == "nudge":  # another value of the same type: often still valid
            parent[where[-1]] = draw(SAME_TYPE.get(type(parent[where[-1]]), VALUES))
        elif action == "set":
            parent[where[-1]] = draw(VALUES)
        elif action == "delete":
            del parent[where[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["bogus", "budget", "days", "mount", "audit"]))] = draw(
                VALUES
            )
        elif action == "rename" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["Bad", "x-y", "again", "k2"]))] = parent.pop(where[-1])
    return data


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(manifests())
def test_the_strict_reading_accepts_only_what_pydantic_accepts_and_agrees(
    data: dict[str, Any],
) -> None:
    try:
        expected: Manifest | None = PYDANTIC.validate_python(copy.deepcopy(data))
    except ValidationError:
        expected = None
    try:
        got = strict(Manifest, copy.deepcopy(data))
    except _Unsure:
        return  # pydantic decides, as build does
    assert expected is not None, "the strict reading accepted what pydantic refuses"
    assert dataclasses.asdict(got) == dataclasses.asdict(expected)
    assert repr(got) == repr(expected)  # the same types too (10.0, not 10)


@pytest.mark.parametrize("layout", layouts.LAYOUTS)
def test_every_layout_is_read_strictly(layout: str) -> None:
    data = tomllib.loads(layouts.manifest_text(layout))
    assert strict(Manifest, data) == PYDANTIC.validate_python(data)


def test_what_only_pydantic_accepts_is_coerced_as_before() -> None:
    # a string for an int, an int for a float: the strict reading leaves them to pydantic
    data = copy.deepcopy(SEEDS[0])
    data["limits"]["observations_max"] = "400"
    data["index"] = {"rescan_seconds": 3}
    with pytest.raises(_Unsure):
        strict(Manifest, copy.deepcopy(data))
    manifest = build(Manifest, data)
    assert manifest.limits.observations_max == 400
    assert manifest.index.rescan_seconds == 3.0 and isinstance(manifest.index.rescan_seconds, float)


def test_a_bound_the_strict_reading_does_not_know_is_refused() -> None:
    with pytest.raises(TypeError, match="unknown bounds"):
        Bound(lt=3)


def test_the_pydantic_methods_callers_use() -> None:
    limits = Limits.model_validate({"observations_max": 9})
    assert limits.observations_max == 9
    assert limits.model_copy(update={"state_ttl_days": 3}).state_ttl_days == 3
    assert limits.model_dump()["observations_max"] == 9
    with pytest.raises(ValidationError):
        Limits.model_validate({"observations_max": 0})


def test_a_valid_manifest_is_read_without_pydantic() -> None:
    text = layouts.manifest_text("workspace")
    code = (
        "import sys\n"
        "from memdir.config import parse_manifest\n"
        f"parse_manifest({text!r})\n"
        "assert 'pydantic' not in sys.modules, 'pydantic was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_bad_manifest_still_gets_pydantic_s_sentence() -> None:
    text = layouts.manifest_text("default").replace("rate = 0.015", "rate = 0", 1)
    with pytest.raises(ManifestError, match="decay.rate: Input should be greater than 0"):
        parse_manifest(text)
