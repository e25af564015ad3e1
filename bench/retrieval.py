"""What the retrieval benchmarks' plugins and entry points share (bench/locomo.py,
bench/realmem.py): each is a plugin of a shared scorer (``../shared/bench/``) over
memdir folders, one per conversation or persona, and a ``main`` that turns its own
flags into the environment the plugin module reads when the scorer imports it.

- ``FolderRetriever``: the folders' root (``--keep DIR`` / ``MEMDIR_BENCH_KEEP``, or a
  temporary one), the opened memories, and the hits mapped back to the scorer's ids;
- ``anchors``: the ``## speaker`` anchors a session's turns get (``speaker (2)``, ...);
- ``scorer_args``: the flags taken into the environment, the scorer's defaults added;
- ``run_scorer``: one pass of the scorer, or (``--backend postgres``) SQLite then
  PostgreSQL over the same folders, compared (``bench_folders.both_backends``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from bench_folders import BACKEND, both_backends

import memdir
from memdir.index.search import Hit

KEEP = "MEMDIR_BENCH_KEEP"


class FolderRetriever:
    """A scorer plugin over one memdir folder per conversation, under one root."""

    prefix = "memdir-bench-"

    def __init__(self) -> None:
        keep = os.environ.get(KEEP, "")
        if keep:
            self.root = Path(keep)
            self.root.mkdir(parents=True, exist_ok=True)
        else:
            self.tmp = tempfile.TemporaryDirectory(prefix=self.prefix)
            self.root = Path(self.tmp.name)
        self.memories: dict[str, memdir.Memory] = {}
        self.ids: dict[str, dict[tuple[str, str], str]] = {}
        """per conversation: (file, anchor) -> the scorer's id of what it holds"""

    def folder(self, key: str) -> Path:
        return self.root / re.sub(r"\W", "_", key)

    def found(self, key: str, hits: Iterable[Hit]) -> list[str]:
        """The scorer's ids of the hits, best first (a hit it has no id for is left out)."""
        mapping = self.ids[key]
        places = [(hit.path, hit.anchor) for hit in hits]
        return [mapping[place] for place in places if place in mapping]


def anchors(speakers: Iterable[str]) -> Iterator[str]:
    """The anchor of each turn's ``## speaker`` section in one file: the speaker, then
    ``speaker (2)``, ``speaker (3)``... as the sections parser names repeated headings."""
    seen: dict[str, int] = {}
    for speaker in speakers:
        count = seen.get(speaker, 0) + 1
        seen[speaker] = count
        yield speaker if count == 1 else f"{speaker} ({count})"


def scorer_args(argv: list[str], flags: dict[str, str], defaults: dict[str, str]) -> list[str]:
    """``argv`` without this benchmark's own ``flags`` (flag -> the environment variable
    it sets, read by the plugin module when the scorer imports it), with the scorer's
    ``defaults`` added where not given."""
    args = list(argv)
    for flag, variable in flags.items():
        if flag in args:
            at = args.index(flag)
            os.environ[variable] = args[at + 1]
            del args[at : at + 2]
    for flag, value in defaults.items():
        if flag not in args:
            args += [flag, value]
    return args


def one_pass(
    scorer: Any, args: list[str], results: str, summary_of: Callable[[Any], dict[str, Any]]
) -> dict[str, Any]:
    """One pass of the shared scorer; the plugin's summary, read from the newest result
    file matching ``results`` in ``--out`` (``summary_of`` picks it from the file's JSON)."""
    out = Path(args[args.index("--out") + 1])
    sys.argv = [Path(scorer.__file__).name, *args]
    scorer.main()
    newest = max(out.glob(results), key=lambda path: path.stat().st_mtime)
    time.sleep(1.1)  # a result file named by the second: the next pass's gets a later one
    return summary_of(json.loads(newest.read_text()))


def run_scorer(
    scorer: Any,
    args: list[str],
    *,
    plugin_module: str,
    schema: str,
    results: str,
    summary_of: Callable[[Any], dict[str, Any]],
    overall: Callable[[dict[str, Any]], dict[str, float]],
    interleaved: Callable[[Any, Any], float],
) -> None:
    """The scorer once, on the backend chosen; with ``--backend postgres``, a pass on
    SQLite and one on PostgreSQL, compared (``both_backends``)."""
    if os.environ.get(BACKEND, "sqlite") == "postgres":
        run = partial(one_pass, scorer, args, results, summary_of)
        both_backends(run, plugin_module, schema, overall, interleaved)
        return
    sys.argv = [Path(scorer.__file__).name, *args]
    scorer.main()
