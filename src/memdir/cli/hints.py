"""What to run instead when a folder has no layer for the store a command needs.

``memdir save`` in a vault layout, ``memdir notebook`` in a workspace: the API
raises ``LayerNotConfigured``; the CLI (``_common.opened``) adds the sentence
``layer_hint`` gives, naming the command that serves the same need here.

The hint is chosen by the layers the manifest declares, never by the layout's
name (a hand-written manifest gets the same help); the name only words it
("this vault layout", else "this folder"). Each store has an ordered list of
(the store that would serve instead, the hint); the first present wins (an
audit journal, for humans only, serves nothing). A hint's ``{path}`` is that
layer's first path.
"""

from __future__ import annotations

import re

from memdir.config import Layer, Manifest
from memdir.layouts import LAYOUTS

# store missing -> [(store present, hint)], first match wins. "working-file" is a
# document layer of working memory (the vault layout's STATE.md), edited by hand.
HINTS: dict[str, list[tuple[str, str]]] = {
    "knowledge": [
        ("vault", "keeps facts in cards: memdir card write TITLE TEXT"),
        ("journal", "keeps what it learns in the daily log: memdir journal append learning TEXT"),
    ],
    "notebook": [
        ("workstate", "keeps what you are doing in {path}: memdir work start TASK, work show"),
        (
            "working-file",
            "keeps its working memory in {path}, a file you edit yourself "
            "(memdir get {path} prints it)",
        ),
    ],  # fmt: skip
    "state": [
        (
            "workstate",
            "has no dated snapshots; what you are doing goes to {path}: memdir work start TASK",
        ),
        (
            "working-file",
            "has no dated snapshots; its hot state is {path}, a file you edit "
            "yourself (memdir get {path} prints it)",
        ),
        (
            "journal",
            "has no dated snapshots; note the day's context with "
            "memdir journal append context TEXT",
        ),
    ],  # fmt: skip
    "vault": [
        ("knowledge", "has no cards; it keeps facts in {path}: memdir save TEXT"),
        ("journal", "has no cards; note facts with memdir journal append learning TEXT"),
        ("intel", "has no cards; notes on a project go to memdir intel add PROJECT TEXT"),
    ],
    "intel": [
        ("vault", "keeps research in cards: memdir card write PROJECT TEXT --type project"),
        ("knowledge", "has no research intel; save a finding with memdir save TEXT --tag PROJECT"),
        (
            "journal",
            "has no research intel; note a finding with memdir journal append learning TEXT",
        ),
    ],  # fmt: skip
    "lessons": [
        ("knowledge", "has no lessons file; save a lesson with memdir save TEXT --type insight"),
        (
            "journal",
            "has no lessons file; log what you learned with memdir journal append learning TEXT",
        ),
    ],  # fmt: skip
    "journal": [
        ("workstate", "has no daily log; what you did goes to memdir work finish TASK"),
        ("knowledge", "has no daily log; save what happened with memdir save TEXT"),
    ],
    "history": [
        (
            "journal",
            "keeps no activity history; what happened is in its daily log: "
            "memdir journal show [DAY]",
        ),
    ],  # fmt: skip
    "sessions": [
        (
            "journal",
            "keeps no conversation sessions; what happened is in its daily log: "
            "memdir journal show [DAY]",
        ),
    ],  # fmt: skip
}

_STORE_RES = (re.compile(r"store = '([\w-]+)'"), re.compile(r"\bno ([\w-]+) layer\b"))


def missing_store(message: str) -> str | None:
    """The store a ``LayerNotConfigured`` message names (``memory.py`` words them)."""
    for pattern in _STORE_RES:
        match = pattern.search(message)
        if match is not None:
            return match.group(1)
    return None


def layer_hint(store: str, manifest: Manifest) -> str | None:
    """The sentence saying which command serves ``store``'s need in this folder, or None."""
    for instead, hint in HINTS.get(store, []):
        layer = _layer(manifest, instead)
        if layer is not None:
            where = (
                f"this {manifest.layout} layout" if manifest.layout in LAYOUTS else "this folder"
            )
            return f"{where} {hint.format(path=layer.paths[0])}"
    return None


def with_hint(message: str, manifest: Manifest) -> str:
    """``message`` and, when there is one, the hint for the store it names."""
    store = missing_store(message)
    hint = layer_hint(store, manifest) if store is not None else None
    return f"{message}; {hint}" if hint else message


def _layer(manifest: Manifest, store: str) -> Layer | None:
    if store == "working-file":
        for layer in manifest.layers.values():
            if layer.store == "document" and layer.memory == "working":
                return layer
        return None
    for layer in manifest.layers.values():
        if layer.store == store and not layer.audit:  # an audit log is for humans only
            return layer
    return None
