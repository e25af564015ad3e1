"""Credential detection (memdir.safety.secrets): recall per kind, false positives, cost per call.

    .venv/bin/python bench/secrets.py [--seed N] [--per-context N] [--runs N] [--show]

Positives: every kind of ``bench/secrets_corpus.py`` (generated with a seeded
generator, never stored) in five contexts (prose, assignment, JSON, .env, code),
``--per-context`` fresh bodies each. A sample is caught when a finding of
``find_secrets`` overlaps the secret (what the importer redacts; the stores refuse
on any finding). Ordinary memories: every turn of the LoCoMo dev conversations
plus the technical notes of ``bench/data/secrets_notes.json``; one finding in one
is a false positive. Cost: ``find_secrets`` on 2 KB memories (chat and technical),
p50 / p95 in microseconds, set against one ``knowledge.save`` measured in the same
run. Then every positive goes through the real write path once
(``memory.knowledge.save`` on a temp folder, hashing embedder): refused or stored.
Targets (issue 12): recall >= 95%, at most 0.5% false positives.
"""

from __future__ import annotations

import importlib
import os
import sys

# This file's name is the standard library's ``secrets``, which memdir uses, and a
# script in this folder has the folder first on its path. Imported as ``secrets`` (by
# memdir, from another bench script), it hands that import the standard module
# instead of itself; run as a script, it takes the standard module first, then runs
# the benchmark (bench/secrets_bench.py).
_HERE = os.path.dirname(os.path.abspath(__file__))
_path = sys.path[:]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.modules.pop("secrets", None)
_standard = importlib.import_module("secrets")
sys.path[:] = _path

if __name__ == "__main__":
    from secrets_bench import main

    raise SystemExit(main())
sys.modules[__name__] = _standard  # what the import statement receives
