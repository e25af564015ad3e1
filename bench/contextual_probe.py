"""Contextual item vectors (research, issue 16 phase 6): each narrative item embedded
with the turn before it in its file, the way a reader takes a reply ("yes, it was
amazing") with what it answers. Nothing in src changes: the probe patches
``SqliteRows.embed_texts`` (what an item is embedded as) and runs under its own
embedder id, so kept folders never mix its vectors with memdir's.

    PYTHONPATH=bench .venv/bin/python bench/locomo.py --keep /tmp/ctx/locomo \\
        --methods fts5_porter,plugin --plugin contextual_probe:Locomo
    PYTHONPATH=bench .venv/bin/python bench/realmem.py --keep /tmp/ctx/realmem \\
        --methods fts5_porter,plugin --plugin contextual_probe:RealMem

``MEMDIR_CONTEXT_CHARS`` (default 300) bounds the previous turn's share; the item's
own text comes first, so MiniLM's 256-token cut drops context before content.
``MEMDIR_CONTEXT_SHORT`` (default 0: every item): only items whose own text is
shorter than this get the context (a reply too short to stand alone).
"""

from __future__ import annotations

import os
from typing import Any

from memdir.index import sqlite_rows
from memdir.index.embedders import MiniLMEmbedder
from memdir.index.ranking import NARRATIVE_KINDS

CHARS = int(os.environ.get("MEMDIR_CONTEXT_CHARS", "300"))
SHORT = int(os.environ.get("MEMDIR_CONTEXT_SHORT", "0"))
"""only items whose own text is under this many characters get context (0: every item)"""


def embed_texts(self: Any, item_ids: list[int]) -> dict[int, str]:
    marks = ",".join("?" * len(item_ids))
    sql = (
        "SELECT i.id, i.kind, i.heading, i.meta, i.body, p.heading, p.body FROM items AS i "
        "JOIN places AS here ON here.id = i.id "
        "LEFT JOIN places AS there ON there.ordinal = here.ordinal - 1 "
        "AND there.id IN (SELECT id FROM items WHERE path = i.path) "
        "LEFT JOIN items AS p ON p.id = there.id "
        f"WHERE i.id IN ({marks})"
    )
    out: dict[int, str] = {}
    for item_id, kind, heading, meta, body, before_heading, before in self.db.execute(
        sql, item_ids
    ):
        text = "\n".join(part for part in (heading, meta, body) if part)
        if kind in NARRATIVE_KINDS and before and (not SHORT or len(text) < SHORT):
            text += f"\n(after {before_heading}: {before[:CHARS]})"
        out[item_id] = text
    return out


sqlite_rows.SqliteRows.embed_texts = embed_texts  # type: ignore[method-assign]


class ContextualMiniLM(MiniLMEmbedder):
    @property
    def id(self) -> str:
        return f"minilm-contextual-probe-{CHARS}-{SHORT}"


def _contextual(retriever: type) -> type:
    class Contextual(retriever):  # type: ignore[misc, valid-type]
        name = f"{retriever.name[:-1]}, contextual {CHARS}, short {SHORT})"

        def embedder_of(self) -> tuple[str, Any]:
            return f"minilm-contextual-{CHARS}-{SHORT}", ContextualMiniLM()

    return Contextual


from locomo import MemdirRetriever as _Locomo  # noqa: E402
from realmem import MemdirRetriever as _RealMem  # noqa: E402

Locomo = _contextual(_Locomo)
RealMem = _contextual(_RealMem)
