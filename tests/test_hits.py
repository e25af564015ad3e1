"""A search's hits: ``Hit.made`` is ``Hit(**fields)``, faster."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from memdir.index.hits import Hit
from memdir.index.words import Marker


def test_a_hit_made_from_its_fields_is_the_hit_init_makes() -> None:
    fields = {
        "path": "journal/2026-11-30.md", "anchor": "ana", "kind": "journal", "layer": "journal",
        "title": "ana", "line_start": 3, "line_end": 4, "score": 0.75, "keyword": 2.5,
        "semantic": None, "relevance": 0.9, "tier": "active",
        "date": datetime(2026, 11, 30, tzinfo=UTC), "tags": ("trip",),
        "body": "the kayak trip on the Wye", "marker": Marker(["kayak"]),
    }  # fmt: skip
    assert set(fields) == {field.name for field in dataclasses.fields(Hit)}
    made, built = Hit.made(fields), Hit(**fields)  # type: ignore[arg-type]
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert made.to_dict() == built.to_dict()
    assert made.snippet == "the **kayak** trip on the Wye"
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.score = 1.0  # type: ignore[misc]
