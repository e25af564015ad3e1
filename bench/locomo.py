"""LoCoMo evidence retrieval through memdir's own search, scored by the shared scorer.

    .venv/bin/python bench/locomo.py                       # memdir + baselines, dev split
    .venv/bin/python bench/locomo.py --methods plugin      # memdir only
    .venv/bin/python bench/locomo.py --embedder hashing    # any memdir embedder
    .venv/bin/python bench/locomo.py --keep /tmp/lc-keep   # build the folders once, reuse

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

The baselines need the bench extras: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from bench_folders import built_folder

import memdir
from memdir.files.sections import Section, SectionDocument

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("MEMDIR_SHARED_BENCH", HERE.parent.parent / "shared" / "bench"))
EMBEDDER = os.environ.get("MEMDIR_BENCH_EMBEDDER", "minilm")
KEEP = os.environ.get("MEMDIR_BENCH_KEEP", "")


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


class MemdirRetriever:
    """A locomo_bench plugin: one memdir folder per conversation."""

    name = f"memdir({EMBEDDER})"

    def __init__(self) -> None:
        if KEEP:
            self.root = Path(KEEP)
            self.root.mkdir(parents=True, exist_ok=True)
        else:
            self.tmp = tempfile.TemporaryDirectory(prefix="memdir-locomo-")
            self.root = Path(self.tmp.name)
        self.memories: dict[str, memdir.Memory] = {}
        self.dia_ids: dict[str, dict[tuple[str, str], str]] = {}

    def index(self, conv_id: str, docs: list[dict[str, Any]]) -> None:
        folder = self.root / re.sub(r"\W", "_", conv_id)
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
            seen: dict[str, int] = {}
            for turn in turns:
                count = seen.get(turn["speaker"], 0) + 1
                seen[turn["speaker"]] = count
                anchor = turn["speaker"] if count == 1 else f"{turn['speaker']} ({count})"
                mapping[(relpath, anchor)] = turn["dia_id"]
        memory = built_folder(folder, files, EMBEDDER, lambda f: memdir.open(f, embedder=EMBEDDER))
        self.memories[conv_id] = memory
        self.dia_ids[conv_id] = mapping

    def search(self, conv_id: str, query: str, k: int) -> list[str]:
        hits = self.memories[conv_id].search(query, k=k, mode="deep")
        mapping = self.dia_ids[conv_id]
        places = [(hit.path, hit.anchor) for hit in hits]
        return [mapping[place] for place in places if place in mapping]


def main() -> None:
    sys.path.insert(0, str(SHARED))
    sys.path.insert(0, str(HERE))
    import locomo_bench  # type: ignore[import-not-found]

    args = sys.argv[1:]
    for flag, variable in (
        ("--embedder", "MEMDIR_BENCH_EMBEDDER"),
        ("--keep", "MEMDIR_BENCH_KEEP"),
    ):
        if flag in args:
            at = args.index(flag)
            os.environ[variable] = args[at + 1]
            del args[at : at + 2]
    defaults = {
        "--methods": "fts5_porter,dense,hybrid_porter,plugin",
        "--plugin": "locomo:MemdirRetriever",
        "--split": "dev",
        "--out": str(HERE.parent / "bench-results"),
    }
    for flag, value in defaults.items():
        if flag not in args:
            args += [flag, value]
    sys.argv = ["locomo_bench.py", *args]
    locomo_bench.main()


if __name__ == "__main__":
    main()
