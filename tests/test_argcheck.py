"""Plainly valid tool arguments (memdir.tools.argcheck) are valid for jsonschema too: every
tool's schema, with arguments made from it and then broken."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from memdir.tools.argcheck import plainly_valid
from memdir.tools.catalog import TOOLS

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 20_000),
    st.sampled_from([0.0, 1.0, 1.5, -2.5, float("nan")]),
    st.text(max_size=6),
    st.sampled_from(["fact", "note", "insight", "deep", "normal", "", "x" * 200]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def value_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values meant to meet ``schema`` (often they do), or anything at all."""
    kind = schema.get("type")
    if "enum" in schema:
        made: st.SearchStrategy[Any] = st.sampled_from(schema["enum"])
    elif kind == "string":
        made = st.text(min_size=schema.get("minLength", 0), max_size=8)
    elif kind == "integer":
        made = st.integers(schema.get("minimum", -10), schema.get("maximum", 500))
    elif kind == "boolean":
        made = st.booleans()
    elif kind == "array":
        made = st.lists(value_for(schema.get("items", {})), max_size=3)
    elif kind == "object":
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        made = st.fixed_dictionaries(
            {name: value_for(properties[name]) for name in required},
            optional={n: value_for(s) for n, s in properties.items() if n not in required},
        )
    else:
        made = VALUES
    return st.one_of(made, made, made, VALUES)


@pytest.mark.parametrize("tool", TOOLS, ids=[tool.name for tool in TOOLS])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_plainly_valid_arguments_are_valid(tool: Any, data: st.DataObject) -> None:
    arguments = data.draw(value_for(tool.parameters))
    if isinstance(arguments, dict) and data.draw(st.booleans()):
        arguments[data.draw(st.sampled_from(["bogus", *tool.parameters.get("properties", {})]))] = (
            data.draw(VALUES)
        )
    if plainly_valid(tool.parameters, arguments):
        errors = list(Draft202012Validator(tool.parameters).iter_errors(arguments))
        assert not errors, f"{tool.name}: {arguments!r}: {errors[0].message}"


def test_a_typical_call_is_plainly_valid_and_a_bad_one_is_not() -> None:
    search = next(tool for tool in TOOLS if tool.name == "memory_search")
    assert plainly_valid(search.parameters, {"query": "release checklist"})
    assert not plainly_valid(search.parameters, {"query": 5})
    assert not plainly_valid(search.parameters, {"query": "x", "bogus": 1})
    assert not plainly_valid(search.parameters, {"k": 0})  # under its minimum
    assert not plainly_valid({"type": "string", "pattern": "x"}, "x")  # a keyword it does not know
