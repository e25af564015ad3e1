"""MiniLM's queries on the int8 graph (the default since issue 16 phase 6) against the
packaged graph that runs its weights as float32 (what queries ran on before), in one
process.

    .venv/bin/python bench/model_int8.py [--runs 15]

prints the conversion's time (once per install, into the model cache), each session's
start, one run's time at 8, 50 and 256 tokens on each (interleaved, medians) with
their ratios, and the cosine between the two models' pooled vectors. The packaged
graph runs two ways: optimised (a process that has embedded 0.25 s, a server) and
the quick session (a command's first embeddings: what ``memdir search`` ran on).

    PYTHONPATH=bench .venv/bin/python bench/realmem.py --keep DIR \\
        --methods fts5_porter,plugin --plugin model_int8:PackagedRealMem
    PYTHONPATH=bench .venv/bin/python bench/locomo.py --keep DIR \\
        --methods fts5_porter,plugin --plugin model_int8:PackagedLocomo

score memdir with its queries on the packaged graph instead (items are embedded by
it either way, so the same kept folders serve both): the benchmarks' before, beside
their FTS5 baseline.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memdir.index import embedders


def session(model: Path | bytes, level: str) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])


def main() -> None:
    import numpy as np

    from memdir.index import quantised_model

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    packaged = embedders._packaged_model()
    with tempfile.TemporaryDirectory() as cache:
        began = time.perf_counter()
        quantised_model._convert(packaged, Path(cache) / "m.onnx")
        print(f"conversion with its check: {time.perf_counter() - began:.2f} s (once per install)")
        int8 = (Path(cache) / "m.onnx").read_bytes()
    opened: dict[str, Any] = {}
    for name, model, level in (
        ("packaged, as run before (optimised)", packaged, "ORT_ENABLE_ALL"),
        ("packaged, quick session", packaged, "ORT_DISABLE_ALL"),
        ("int8, as run now", int8, "ORT_DISABLE_ALL"),
    ):
        starts = []
        for _ in range(3):
            began = time.perf_counter()
            opened[name] = session(model, level)
            starts.append(time.perf_counter() - began)
        print(f"session start, {name}: {min(starts) * 1000:.0f} ms")
    old = opened["packaged, as run before (optimised)"]
    quick = opened["packaged, quick session"]
    new = opened["int8, as run now"]
    rng = np.random.default_rng(0)
    print("| tokens | packaged, optimised ms | packaged, quick ms | int8 ms | int8 / optimised "
          "| int8 / quick | cosine int8 : packaged |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for tokens in (8, 50, 256):
        ids = rng.integers(1000, 20000, size=(1, tokens)).astype(np.int64)
        ids[0, 0], ids[0, -1] = 101, 102
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in {node.name for node in old.get_inputs()}:
            feeds["token_type_ids"] = np.zeros_like(ids)
        runs = (old, quick, new)
        times: list[list[float]] = [[] for _ in runs]
        for run in runs:
            run.run(None, feeds)
        for _ in range(args.runs):
            for which, run in enumerate(runs):
                began = time.perf_counter()
                run.run(None, feeds)
                times[which].append(time.perf_counter() - began)
        pooled = [s.run(None, feeds)[0][0].mean(axis=0) for s in (old, new)]
        unit = [vector / np.linalg.norm(vector) for vector in pooled]
        cosine = float(unit[0] @ unit[1])
        a, q, b = (statistics.median(t) * 1000 for t in times)
        ratios = f"{b / a:.2f}x | {b / q:.2f}x"
        print(f"| {tokens} | {a:.1f} | {q:.1f} | {b:.1f} | {ratios} | {cosine:.4f} |")


class PackagedMiniLM(embedders.MiniLMEmbedder):
    """The embedder as it was: queries on the packaged graph too (items always are)."""

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return self.embed(texts)


def _packaged(retriever: type) -> type:
    class Packaged(retriever):  # type: ignore[misc, valid-type]
        name = f"{retriever.name[:-1]}, packaged graph)"

        def embedder_of(self) -> tuple[str, Any]:
            # the same name and id: the same folders serve both
            return super().embedder_of()[0], PackagedMiniLM()

    return Packaged


if __name__ == "__main__":
    main()
else:
    from locomo import MemdirRetriever as _Locomo  # noqa: E402
    from realmem import MemdirRetriever as _RealMem  # noqa: E402

    PackagedLocomo = _packaged(_Locomo)
    PackagedRealMem = _packaged(_RealMem)
