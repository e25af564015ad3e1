"""LoCoMo evidence retrieval through memdir's own search, scored by the shared scorer.

    .venv/bin/python bench/locomo.py                       # memdir + baselines, dev split
    .venv/bin/python bench/locomo.py --methods plugin      # memdir only
    .venv/bin/python bench/locomo.py --embedder hashing    # any memdir embedder
    .venv/bin/python bench/locomo.py --keep /tmp/lc-keep   # build the folders once, reuse
    .venv/bin/python bench/locomo.py --backend postgres    # SQLite, then PostgreSQL, compared

Each conversation goes into a fresh memdir folder: one journal file per
session (``journal/YYYY-MM-DD-sNN.md``), one ``## speaker`` section per turn
carrying the session's date and time, and an image's caption as the words
"[shares ...]" (what a person reading the log would see). Every question is
run through ``Memory.search(question, k, mode="deep")`` (the sessions are
years old, so their tier is archive). ``../shared/bench/locomo_bench.py``
scores the plugin beside its baselines (FTS5 with Porter, MiniLM dense, their
RRF hybrid) in the same call, so the figures stay comparable.

``--keep DIR`` (or ``MEMDIR_BENCH_KEEP``) builds each folder under DIR once and
reuses it, index and vectors included, while the data and embedder stay the same.

``--backend postgres`` runs memdir twice in one run: on SQLite, then with the same
folders' rows in PostgreSQL (``storage.postgres.index.postgres_index``: the real
``Index`` and ``index.search`` over ``PgIndex``, one agent per conversation in one
table; pgserver started in a temporary folder, or ``MEMDIR_DATABASE_URL``), and prints
both R@10, their difference (the issue's target: at most 0.02), each backend's search
p50 and its index bytes per item.

The baselines need the bench extras: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from bench_folders import backend, built_folder, on_backend, p50_ratio
from retrieval import FolderRetriever, anchors, run_scorer, scorer_args

import memdir
from memdir.files.sections import Section, SectionDocument

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("MEMDIR_SHARED_BENCH", HERE.parent.parent / "shared" / "bench"))
EMBEDDER = os.environ.get("MEMDIR_BENCH_EMBEDDER", "minilm")
SCHEMA = "bench_locomo"
RETRIEVERS: list[MemdirRetriever] = []
"""every retriever made in this process (``--backend postgres`` reads their sizes)"""


def session_moment(text: str) -> datetime | None:
    """'1:56 pm on 8 May, 2023' -> a datetime (naive, read as UTC)."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None


def render_session(number: int, date_text: str, turns: list[dict[str, Any]]) -> str:
    moment = session_moment(date_text)
    stamp = moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else ""
    doc = SectionDocument(f"# Session {number}: {date_text}\n")
    for turn in turns:
        body = turn["text"]
        if turn.get("caption"):
            body += f" [shares {turn['caption']}]"
        meta = {"date": stamp} if stamp else {}
        doc.append(Section(turn["speaker"], body, meta))
    return doc.render()


class MemdirRetriever(FolderRetriever):
    """A locomo_bench plugin: one memdir folder per conversation."""

    name = f"memdir({EMBEDDER})" if backend() == "sqlite" else f"memdir({EMBEDDER}, postgres)"
    prefix = "memdir-locomo-"

    def __init__(self) -> None:
        super().__init__()
        RETRIEVERS.append(self)

    def embedder_of(self) -> tuple[str, Any]:
        """(the embedder's name a kept folder is built for, what ``memdir.open`` is
        given): ``--embedder``'s name for both here; a probe passes an object."""
        return EMBEDDER, EMBEDDER

    def index(self, conv_id: str, docs: list[dict[str, Any]]) -> None:
        folder = self.folder(conv_id)
        sessions: dict[int, list[dict[str, Any]]] = {}
        for doc in docs:
            sessions.setdefault(doc["session"], []).append(doc)
        files: dict[str, str] = {}
        mapping: dict[tuple[str, str], str] = {}
        for number, turns in sorted(sessions.items()):
            moment = session_moment(turns[0]["date"])
            day = moment.strftime("%Y-%m-%d") if moment else "undated"
            relpath = f"journal/{day}-s{number:02d}.md"
            files[relpath] = render_session(number, turns[0]["date"], turns)
            for turn, anchor in zip(turns, anchors(t["speaker"] for t in turns), strict=True):
                mapping[(relpath, anchor)] = turn["dia_id"]
        name, embedder = self.embedder_of()
        memory = built_folder(folder, files, name, lambda f: memdir.open(f, embedder=embedder))
        self.memories[conv_id] = on_backend(memory, folder.name, SCHEMA)
        self.ids[conv_id] = mapping

    def search(self, conv_id: str, query: str, k: int) -> list[str]:
        return self.found(conv_id, self.memories[conv_id].search(query, k=k, mode="deep"))


def _interleaved(locomo_bench: Any, sqlite: MemdirRetriever, postgres: MemdirRetriever) -> float:
    _, questions, _ = locomo_bench.load_locomo(locomo_bench.DEFAULT_DATA)
    asked = [q for q in questions if q["conv"] in sqlite.memories and q["evidence"]]
    return p50_ratio(
        (
            partial(sqlite.search, q["conv"], q["question"], 10),
            partial(postgres.search, q["conv"], q["question"], 10),
        )
        for q in asked
    )


def main() -> None:
    sys.path.insert(0, str(SHARED))
    sys.path.insert(0, str(HERE))
    import locomo_bench  # type: ignore[import-not-found]

    flags = {
        "--embedder": "MEMDIR_BENCH_EMBEDDER",
        "--keep": "MEMDIR_BENCH_KEEP",
        "--backend": "MEMDIR_BENCH_BACKEND",
    }
    defaults = {
        "--methods": "fts5_porter,dense,hybrid_porter,plugin",
        "--plugin": "locomo:MemdirRetriever",
        "--split": "dev",
        "--out": str(HERE.parent / "bench-results"),
    }
    run_scorer(
        locomo_bench,
        scorer_args(sys.argv[1:], flags, defaults),
        plugin_module="locomo",
        schema=SCHEMA,
        results="locomo_*.json",
        summary_of=lambda found: found["summaries"][-1],
        overall=lambda summary: summary["overall_cat1_4"],
        interleaved=partial(_interleaved, locomo_bench),
    )


if __name__ == "__main__":
    main()
