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

import os
import re
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from bench_folders import BACKEND, backend, both_backends, built_folder, on_backend, p50_ratio

import memdir
from memdir.files.sections import Section, SectionDocument
from memdir.timeutil import parse_ts

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("MEMDIR_SHARED_BENCH", HERE.parent.parent / "shared" / "bench"))
EMBEDDER = os.environ.get("MEMDIR_BENCH_EMBEDDER", "minilm")
MODE = os.environ.get("MEMDIR_BENCH_MODE", "deep")
KEEP = os.environ.get("MEMDIR_BENCH_KEEP", "")
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


class MemdirRetriever:
    """A realmem_bench plugin: one memdir folder per persona, its sessions as journals."""

    name = f"memdir({EMBEDDER}, {MODE})" + ("" if backend() == "sqlite" else ", postgres")

    def __init__(self) -> None:
        RETRIEVERS.append(self)
        if KEEP:
            self.root = Path(KEEP)
            self.root.mkdir(parents=True, exist_ok=True)
        else:
            self.tmp = tempfile.TemporaryDirectory(prefix="memdir-realmem-")
            self.root = Path(self.tmp.name)
        self.memories: dict[str, memdir.Memory] = {}
        self.turn_ids: dict[str, dict[tuple[str, str], str]] = {}
        self.now = datetime(2000, 1, 1, tzinfo=UTC)

    def clock(self) -> datetime:
        """The folders' clock: the moment the current query is asked."""
        return self.now

    def index(self, hid: str, docs: list[dict[str, Any]], sessions: list[dict[str, Any]]) -> None:
        folder = self.root / re.sub(r"\W", "_", hid)
        files = {session_path(s): render_session(s) for s in sessions}
        mapping: dict[tuple[str, str], str] = {}
        for session in sessions:
            seen: dict[str, int] = {}
            for turn in session["turns"]:
                if not turn["text"].strip():
                    continue  # a section with nothing under it is not an item
                count = seen.get(turn["speaker"], 0) + 1
                seen[turn["speaker"]] = count
                anchor = turn["speaker"] if count == 1 else f"{turn['speaker']} ({count})"
                mapping[(session_path(session), anchor)] = turn["id"]
        memory = built_folder(
            folder, files, EMBEDDER, lambda f: memdir.open(f, embedder=EMBEDDER, clock=self.clock)
        )
        self.memories[hid] = on_backend(memory, folder.name, SCHEMA)
        self.turn_ids[hid] = mapping

    def search(self, hid: str, question: dict[str, Any], depth: int) -> list[str]:
        asked = moment_of(question["before_moment"])
        self.now = asked
        until = asked - timedelta(seconds=1)
        hits = self.memories[hid].search(question["question"], k=depth, mode=MODE, until=until)
        mapping = self.turn_ids[hid]
        places = [(hit.path, hit.anchor) for hit in hits]
        return [mapping[place] for place in places if place in mapping]


def _run_pass(realmem_bench: Any, args: list[str]) -> dict[str, Any]:
    """One pass of the shared scorer; the plugin's summary (from its result file)."""
    import json

    out = Path(args[args.index("--out") + 1])
    sys.argv = ["realmem_bench.py", *args]
    realmem_bench.main()
    newest = max(out.glob("results_*.json"), key=lambda path: path.stat().st_mtime)
    summary: dict[str, Any] = json.loads(newest.read_text())[-1]
    return summary


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

    args = sys.argv[1:]
    for flag, variable in (
        ("--embedder", "MEMDIR_BENCH_EMBEDDER"),
        ("--mode", "MEMDIR_BENCH_MODE"),
        ("--keep", "MEMDIR_BENCH_KEEP"),
        ("--backend", "MEMDIR_BENCH_BACKEND"),
    ):
        if flag in args:
            at = args.index(flag)
            os.environ[variable] = args[at + 1]
            del args[at : at + 2]
    defaults = {
        "--data": str(SHARED / "realmem-dev.json"),
        "--methods": "fts5_porter,fts5_porter_session,plugin",
        "--plugin": "realmem:MemdirRetriever",
        "--out": str(HERE.parent / "bench-results"),
    }
    for flag, value in defaults.items():
        if flag not in args:
            args += [flag, value]
    if os.environ.get(BACKEND, "sqlite") == "postgres":
        data = args[args.index("--data") + 1]
        both_backends(
            partial(_run_pass, realmem_bench, args), "realmem", SCHEMA,
            lambda summary: summary["overall"], partial(_interleaved, data),
        )  # fmt: skip
        return
    sys.argv = ["realmem_bench.py", *args]
    realmem_bench.main()


if __name__ == "__main__":
    main()
