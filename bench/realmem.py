"""RealMem session retrieval through memdir's own search, scored by the shared scorer.

    .venv/bin/python bench/realmem.py                       # memdir + baselines, dev three
    .venv/bin/python bench/realmem.py --methods plugin      # memdir only
    .venv/bin/python bench/realmem.py --embedder hashing    # any memdir embedder
    .venv/bin/python bench/realmem.py --keep /tmp/rm-keep   # build the folders once, reuse
    .venv/bin/python bench/realmem.py --backend postgres    # SQLite, then PostgreSQL, compared

Each persona's history goes into one memdir folder, as a real user's would: one
journal file per session (``journal/YYYY-MM-DD-sNNN.md``, named by its ``day``),
one ``## User`` or ``## Assistant`` section per turn carrying the session's
``moment``. A query is asked at its own moment: the folder's clock reads
``before_moment`` (so the tiers and decay are what they were then) and the search
gets ``until`` just before it, so that only earlier sessions can answer (memdir's
``until`` is inclusive and the query's own session starts at that moment). The
search runs in ``deep`` mode, as bench/locomo.py's does: every earlier session may
answer, and decay still weighs older ones down; ``--mode normal`` (or
``MEMDIR_BENCH_MODE``) runs what an agent asks by default, which keeps to the
recent sessions when they hold a strong hit (bench/RESULTS.md gives both).
``../shared/bench/realmem_bench.py`` scores the plugin beside its baselines (FTS5
over turns, FTS5 over whole sessions) in the same call.

``--keep DIR`` (or ``MEMDIR_BENCH_KEEP``) builds each folder under DIR once and
reuses it, index and vectors included, while the data and embedder stay the same.

``--backend postgres`` runs memdir on SQLite, then with the same folders' rows in
PostgreSQL (bench/locomo.py's docstring says how), and prints both.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from bench_folders import backend, built_folder, on_backend, p50_ratio
from retrieval import KEEP, FolderRetriever, anchors, run_scorer, scorer_args

import memdir
from memdir.files.sections import Section, SectionDocument
from memdir.timeutil import parse_ts

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("MEMDIR_SHARED_BENCH", HERE.parent.parent / "shared" / "bench"))
EMBEDDER = os.environ.get("MEMDIR_BENCH_EMBEDDER", "minilm")
MODE = os.environ.get("MEMDIR_BENCH_MODE", "deep")
SCHEMA = "bench_realmem"
RETRIEVERS: list[MemdirRetriever] = []
"""every retriever made in this process (``--backend postgres`` reads their sizes)"""


def moment_of(text: str) -> datetime:
    """'2025-12-15T08:00:00Z' -> an aware datetime in UTC."""
    moment = parse_ts(text)
    assert moment is not None, text
    return moment


def render_session(session: dict[str, Any]) -> str:
    doc = SectionDocument(f"# {session['day']}, session {session['index'] + 1}\n")
    for turn in session["turns"]:
        doc.append(Section(turn["speaker"], turn["text"], {"date": session["moment"]}))
    return doc.render()


def session_path(session: dict[str, Any]) -> str:
    return f"journal/{session['day']}-s{session['index']:03d}.md"


class MemdirRetriever(FolderRetriever):
    """A realmem_bench plugin: one memdir folder per persona, its sessions as journals."""

    name = f"memdir({EMBEDDER}, {MODE})" + ("" if backend() == "sqlite" else ", postgres")
    prefix = "memdir-realmem-"

    def __init__(self) -> None:
        super().__init__()
        RETRIEVERS.append(self)
        self.now = datetime(2000, 1, 1, tzinfo=UTC)

    def clock(self) -> datetime:
        """The folders' clock: the moment the current query is asked."""
        return self.now

    def embedder_of(self) -> tuple[str, Any]:
        """(the embedder's name a kept folder is built for, what ``memdir.open`` is
        given): ``--embedder``'s name for both here; a probe passes an object."""
        return EMBEDDER, EMBEDDER

    def index(self, hid: str, docs: list[dict[str, Any]], sessions: list[dict[str, Any]]) -> None:
        folder = self.folder(hid)
        files = {session_path(s): render_session(s) for s in sessions}
        mapping: dict[tuple[str, str], str] = {}
        for session in sessions:
            # a section with nothing under it is not an item
            turns = [turn for turn in session["turns"] if turn["text"].strip()]
            for turn, anchor in zip(turns, anchors(t["speaker"] for t in turns), strict=True):
                mapping[(session_path(session), anchor)] = turn["id"]
        name, embedder = self.embedder_of()
        memory = built_folder(
            folder, files, name, lambda f: memdir.open(f, embedder=embedder, clock=self.clock)
        )
        self.memories[hid] = on_backend(memory, folder.name, SCHEMA)
        self.ids[hid] = mapping

    def search(self, hid: str, question: dict[str, Any], depth: int) -> list[str]:
        asked = moment_of(question["before_moment"])
        self.now = asked
        until = asked - timedelta(seconds=1)
        hits = self.memories[hid].search(question["question"], k=depth, mode=MODE, until=until)
        return self.found(hid, hits)


def kept(keep: str) -> tuple[dict[str, Any], MemdirRetriever]:
    """The dev data and a retriever over its personas' folders under ``keep`` (built
    there first if they are not), for the probes that search them outside the scorer."""
    os.environ[KEEP] = keep
    data: dict[str, Any] = json.loads((SHARED / "realmem-dev.json").read_text(encoding="utf-8"))
    retriever = MemdirRetriever()
    for hid, sessions in data["haystacks"].items():
        retriever.index(hid, [], sessions)
    return data, retriever


def _interleaved(data: str, sqlite: MemdirRetriever, postgres: MemdirRetriever) -> float:
    import json

    questions = json.loads(Path(data).read_text(encoding="utf-8"))["questions"]
    asked = [q for q in questions if q.get("haystack") in sqlite.memories]
    return p50_ratio(
        (
            partial(sqlite.search, q["haystack"], q, 10),
            partial(postgres.search, q["haystack"], q, 10),
        )
        for q in asked
    )


def main() -> None:
    sys.path.insert(0, str(SHARED))
    sys.path.insert(0, str(HERE))
    import realmem_bench  # type: ignore[import-not-found]

    flags = {
        "--embedder": "MEMDIR_BENCH_EMBEDDER",
        "--mode": "MEMDIR_BENCH_MODE",
        "--keep": "MEMDIR_BENCH_KEEP",
        "--backend": "MEMDIR_BENCH_BACKEND",
    }
    defaults = {
        "--data": str(SHARED / "realmem-dev.json"),
        "--methods": "fts5_porter,fts5_porter_session,plugin",
        "--plugin": "realmem:MemdirRetriever",
        "--out": str(HERE.parent / "bench-results"),
    }
    args = scorer_args(sys.argv[1:], flags, defaults)
    run_scorer(
        realmem_bench,
        args,
        plugin_module="realmem",
        schema=SCHEMA,
        results="results_*.json",
        summary_of=lambda found: found[-1],
        overall=lambda summary: summary["overall"],
        interleaved=partial(_interleaved, args[args.index("--data") + 1]),
    )


if __name__ == "__main__":
    main()
