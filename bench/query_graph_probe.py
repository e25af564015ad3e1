"""RealMem and LoCoMo with the queries on another int8 graph (research; nothing in
``src`` changes): ``MEMDIR_PROBE_QUERY_GRAPH`` names an ONNX file made like
``quantised_model``'s but with other settings, run for queries as memdir runs its own.

    MEMDIR_PROBE_QUERY_GRAPH=/tmp/u8.onnx PYTHONPATH=bench .venv/bin/python bench/realmem.py \\
        --keep DIR --methods plugin --plugin query_graph_probe:RealMem
"""

from __future__ import annotations

import os
from typing import Any

from locomo import MemdirRetriever as _Locomo
from realmem import MemdirRetriever as _RealMem

from memdir.index.minilm import MiniLMEmbedder


class ProbeMiniLM(MiniLMEmbedder):
    """MiniLM whose query session runs the graph the environment names."""

    def _query_session(self) -> Any:
        with self._lock:
            if self._queries is None:
                self._prepare()
                self._queries = self._new_session(
                    optimised=False, model=os.environ["MEMDIR_PROBE_QUERY_GRAPH"]
                )
            return self._queries


def _probed(retriever: type) -> type:
    class Probed(retriever):  # type: ignore[misc, valid-type]
        name = f"{retriever.name[:-1]}, {os.path.basename(os.environ['MEMDIR_PROBE_QUERY_GRAPH'])})"

        def embedder_of(self) -> tuple[str, Any]:
            return super().embedder_of()[0], ProbeMiniLM()

    return Probed


RealMem = _probed(_RealMem)
Locomo = _probed(_Locomo)
