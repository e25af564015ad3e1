"""A narrative item's neighbours in its vector: the windows a file's items are embedded in.

A short turn of a conversation ("Yes, in May!") means little alone. A file's narrative
items (``NARRATIVE_KINDS``), in file order, are packed greedily into windows of up to
``WINDOW_CHARS`` characters of embedded text, and a window is one model run
(``window_model``): in its first layers every item reads only itself, as its own run
would; in the last ones an item under ``SHORT_CHARS`` reads its own block and the one
before it (and through it, layer by layer, a few more before). Longer items read only
themselves in every layer, so their vector is their lone run's. Only what comes
before an item moves its vector: an append changes no earlier item's vector.

An item that reads its window has a vector key naming every text from its window's
start through itself (its vector depends on exactly those); every other item keeps
the key of its own text (``Item.vector_key``), so equal texts share one vector. An
embedder that cannot run windows embeds a windowed key's own text: the key is still
right, the vector is the item's lone one.

Both backends key items with ``file_keys`` and make the vectors a batch of keys lacks
with ``embed_missing`` (the windows' runs from ``file_runs``), reading their own rows
through the callables it is given: SQLite's ``SqliteVectors``, PostgreSQL's
``storage.postgres.window_vectors``.

bench/RESULTS.md, issue 16 phases 9 and 11: on LoCoMo recall@5 .676 -> .703 and
recall@10 .792 -> .801, on RealMem unchanged but for a query, at about 1.1 times the
model work of embedding each text alone (phase 12's split graphs; 1.2 in phase 11).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from memdir.index.ranking import NARRATIVE_KINDS

if TYPE_CHECKING:
    from memdir.index.embedders import Embedder

WINDOW_CHARS = 1000
"""characters of embedded text a window holds (an item longer than this is one alone)"""
SHORT_CHARS = 200
"""an item shorter than this reads the items before it in its window"""
VERSION = "window-1"
"""what the keys are made by: a change re-keys an index made by another (SQLite drops
its rows with the extractor's version; PostgreSQL keeps this per agent)"""
_VERSION = VERSION.encode() + b"\x1f"
Run = tuple[list[str], list[str]]
"""one model run of a window: its texts from its start, and their vector keys"""


def own_key(text: str) -> str:
    """The key of a text embedded alone (``Item.vector_key``)."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def reads_window(text: str) -> bool:
    return len(text) < SHORT_CHARS


def greedy(sizes: Sequence[int], cap: int) -> list[range]:
    """Consecutive runs of indices, each as long as fits under ``cap`` in all (a size
    over it alone in its run)."""
    runs: list[range] = []
    start = total = 0
    for n, size in enumerate(sizes):
        if n > start and total + size > cap:
            runs.append(range(start, n))
            start, total = n, 0
        total += size
    if sizes:
        runs.append(range(start, len(sizes)))
    return runs


def pack(texts: Sequence[str]) -> list[range]:
    """The windows of a file's narrative texts, in order: each a run of their indices."""
    return greedy([len(text) for text in texts], WINDOW_CHARS)


def needed(texts: Sequence[str]) -> int:
    """How many of a window's items (from its start) a run needs: up to its last item
    that reads the window (none read the items after them). 0: no item reads."""
    readers = [n for n in range(1, len(texts)) if reads_window(texts[n])]
    return readers[-1] + 1 if readers else 0


def keys(texts: Sequence[str]) -> list[str]:
    """Each of a file's narrative texts' vector key, in order."""
    out: list[str] = []
    for window in pack(texts):
        hasher = hashlib.sha1(_VERSION)
        for n in window:
            text = texts[n].encode("utf-8", "surrogatepass")
            hasher.update(len(text).to_bytes(8, "little"))
            hasher.update(text)
            if n > window.start and reads_window(texts[n]):
                out.append(hasher.copy().hexdigest())
            else:  # the first of a window, or a long item: its lone run's vector
                out.append(own_key(texts[n]))
    return out


def file_keys(entries: Sequence[tuple[str, str, Any]]) -> list[str]:
    """The vector key of each of one file's items, given as (kind, embedded text,
    ordinal) in any order: a narrative item's from its window, any other its own."""
    order = sorted(
        (n for n, (kind, _, _) in enumerate(entries) if kind in NARRATIVE_KINDS),
        key=lambda n: entries[n][2],
    )
    out = [own_key(text) for _, text, _ in entries]
    for n, key in zip(order, keys([entries[n][1] for n in order]), strict=True):
        out[n] = key
    return out


def file_runs(entries: Sequence[tuple[str, str]], wanted: Collection[str]) -> list[Run]:
    """The runs of one file's windows that hold a key of ``wanted``, given its narrative
    items as (embedded text, vector key) in file order; each run cut after its last item
    that reads the window (the items after it go alone)."""
    texts = [text for text, _ in entries]
    found: list[Run] = []
    for window in pack(texts):
        own = [texts[n] for n in window]
        cut = needed(own)
        keys = [entries[n][1] for n in window[:cut]]
        if not set(keys).isdisjoint(wanted):
            found.append((own[:cut], keys))
    return found


def embeds_windows(embedder: object) -> bool:
    """Whether ``embedder`` runs windows (``embed_windows``, its ``windows`` not off)."""
    return bool(getattr(embedder, "windows", False)) and hasattr(embedder, "embed_windows")


def embed_missing(
    embedder: Embedder,
    missing: Sequence[tuple[str, str]],
    runs: Callable[[set[str]], list[Run]],
    have: Callable[[list[str]], set[str]],
    stored: Callable[[list[str]], dict[str, Any]],
) -> tuple[dict[str, Any], int]:
    """The vectors of ``missing`` (each key with no vector from ``embedder`` yet, with its
    item's embedded text, each key once), and how many texts the embedder ran; each
    backend reads its rows through the three callables.

    An embedder that runs windows runs each window holding a key asked for once
    (``runs``: the runs of the windows holding these keys, ``file_runs``), when one of
    them is windowed; every key of such a run with no vector (``have``: which of these
    keys have one) gets its vector from it, a key not asked for too. The rest are
    embedded alone, by their own text, but for a windowed key whose own text has a
    vector already (``stored``: own key -> vector, of those with one): it takes that."""
    made: dict[str, Any] = {}
    done: set[str] = set()
    if embeds_windows(embedder) and any(key != own_key(text) for key, text in missing):
        wanted = {key for key, _ in missing}
        found = runs(wanted)
        held = have([key for _, keys in found for key in keys])
        framed = wanted - held
        todo = [run for run in found if not framed.isdisjoint(run[1])]
        vectors = embedder.embed_windows([texts for texts, _ in todo])  # type: ignore[attr-defined]
        for (_, keys), matrix in zip(todo, vectors, strict=True):
            for key, vector in zip(keys, matrix, strict=True):
                if key not in held:
                    made.setdefault(key, vector)
        done = set(made) | held
    embedded = len(made)
    alone = [(key, text) for key, text in missing if key not in done]
    own = {key: own_key(text) for key, text in alone}
    moved = {key: mine for key, mine in own.items() if key != mine}
    if moved:
        by_own = stored(sorted(set(moved.values())))
        made.update((key, by_own[mine]) for key, mine in moved.items() if mine in by_own)
        alone = [(key, text) for key, text in alone if key not in made]
    if alone:
        lone = embedder.embed([text for _, text in alone])
        made.update(zip([key for key, _ in alone], lone, strict=True))
        embedded += len(alone)
    return made, embedded


def embed_text(heading: str, meta: str, body: str) -> str:
    """An item's text as it is embedded (``Item.embed_text``) from its columns."""
    return "\n".join(part for part in (heading, meta, body) if part)


def file_entries(db: sqlite3.Connection, path: str) -> list[tuple[int, str, str]]:
    """A file's narrative items in file order: (id, embedded text, stored key)."""
    return [
        (int(item_id), embed_text(heading, meta, body), str(key))
        for item_id, kind, heading, meta, body, key in db.execute(
            "SELECT i.id, i.kind, i.heading, i.meta, i.body, i.vector_key FROM items AS i "
            "JOIN places AS p ON p.id = i.id WHERE i.path = ? ORDER BY p.ordinal",
            (path,),
        )
        if kind in NARRATIVE_KINDS
    ]


STORES = frozenset({"journal", "archive", "intel", "lessons", "document", "workstate"})
"""the stores whose files hold narrative items (``NARRATIVE_KINDS``)"""


def rekey(db: sqlite3.Connection, path: str, store: str) -> int:
    """Give a file's narrative items the keys their windows name (in the caller's
    transaction); how many changed. A changed item is logged deleted and added, so the
    vectors in memory drop its old vector and the next embedding pass makes its new one.
    A file of another store (knowledge.md, the notebook, cards) is not read."""
    if store not in STORES:
        return 0
    entries = file_entries(db, path)
    if not entries:
        return 0
    wanted = keys([text for _, text, _ in entries])
    changed = [
        (key, item_id)
        for (item_id, _, stored), key in zip(entries, wanted, strict=True)
        if key != stored
    ]
    if changed:
        db.executemany("UPDATE items SET vector_key = ? WHERE id = ?", changed)
        db.executemany(
            "INSERT INTO item_log (item_id, op) VALUES (?, ?)",
            [(item_id, op) for _, item_id in changed for op in ("del", "add")],
        )
    return len(changed)
