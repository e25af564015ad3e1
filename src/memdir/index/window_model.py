"""MiniLM run over a window of items at once: each item its own view first, then its
neighbours' (``memdir.index.windows`` says which items read which).

The packaged graph is edited in memory, with the ``onnx`` package: each of its six
attention layers adds a mask input of its own (``mask_0`` .. ``mask_5``, ``[1, 1, s,
s]``, 0 or the graph's own "masked" value) where it added the one made from
``attention_mask``, and the position embeddings read a ``position_ids`` input. A window
is one run: every item's tokens as its lone run has them (``[CLS] text [SEP]``); in the
first ``LOCAL_LAYERS`` layers every item attends only to itself, so its states there
are its lone run's; in the rest an item that reads the window attends to its own block
and the block before it, any other only to itself. A reading item's positions run
along the window, any other's from 0, as alone. Each vector is the mean of the item's
own block, normalised, as a lone run pools it: an item that reads nothing gets its lone
vector (to within float error).

The edit needs the ``onnx`` package, whose import takes most of a second, so the
edited graph is made once and kept in the model cache beside the int8 query graph
(``quantised_model.converted``: written atomically, its sha256 checked at load).

A window longer than the model's 512 positions is run in parts, split between items
(text of 1,000 characters is that long only where a character is about a token).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memdir.index import windows

LAYERS = 6
LOCAL_LAYERS = 3
"""layers in which every item reads only itself (phase 9: 3 of 6 is best)"""
MAX_POSITIONS = 512
_MASKED = np.float32(-3.4028235e38)  # the exported graph's own "masked" value


class GraphShapeError(RuntimeError):
    """The packaged graph is not the one this edit was made for."""


def window_graph(model_path: Path) -> bytes:
    """The packaged graph with a mask input a layer and a ``position_ids`` input."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(model_path))
    graph = model.graph
    adds = [n for n in graph.node if n.op_type == "Add" and "val_94" in n.input]
    gathers = [n for n in graph.node if n.name == "node_embedding_2"]
    if len(adds) != LAYERS or len(gathers) != 1:
        raise GraphShapeError(
            f"expected {LAYERS} attention-mask adds and one position gather, "
            f"found {len(adds)} and {len(gathers)}"
        )
    for layer, node in enumerate(adds):
        node.input[list(node.input).index("val_94")] = f"mask_{layer}"
        graph.input.append(
            helper.make_tensor_value_info(
                f"mask_{layer}", TensorProto.FLOAT, ["batch", 1, "seq", "seq"]
            )
        )
    gathers[0].input[1] = "position_ids"
    graph.input.append(
        helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"])
    )
    return bytes(model.SerializeToString())


RECIPE = "windows-v1"


def window_file(source: Path, source_sha256: str) -> Path | bytes:
    """The window graph, from the cache (made now if it is not there)."""
    from memdir.index.quantised_model import Recipe, converted

    saying = "making the window model, once per install"
    return converted(source, source_sha256, Recipe(RECIPE, _write_graph, saying))


def _write_graph(source: Path, out: Path) -> None:
    out.write_bytes(window_graph(source))


def parts(blocks: Sequence[list[int]]) -> list[range]:
    """A window's blocks split, between items, into runs of at most MAX_POSITIONS."""
    return windows.greedy([len(block) for block in blocks], MAX_POSITIONS)


def feeds(
    blocks: Sequence[list[int]], reads: Sequence[bool], types: bool
) -> tuple[dict[str, Any], list[tuple[int, int]]]:
    """One run's inputs for ``blocks`` (each item's token ids), and each block's span."""
    seq: list[int] = []
    positions: list[int] = []
    spans: list[tuple[int, int]] = []
    for block, reading in zip(blocks, reads, strict=True):
        start = len(seq)
        seq.extend(block)
        positions.extend(range(start, len(seq)) if reading else range(len(block)))
        spans.append((start, len(seq)))
    size = len(seq)
    own = np.full((size, size), _MASKED, dtype=np.float32)
    for start, end in spans:
        own[start:end, start:end] = 0.0
    later = own.copy()
    for n, (start, end) in enumerate(spans):
        if reads[n] and n:
            later[start:end, spans[n - 1][0] : end] = 0.0
    fed: dict[str, Any] = {
        "input_ids": np.array([seq], dtype=np.int64),
        "attention_mask": np.ones((1, size), dtype=np.int64),
        "position_ids": np.array([positions], dtype=np.int64),
    }
    if types:
        fed["token_type_ids"] = np.zeros((1, size), dtype=np.int64)
    for layer in range(LAYERS):
        fed[f"mask_{layer}"] = (own if layer < LOCAL_LAYERS else later)[None, None]
    return fed, spans


def run_window(session: Any, blocks: Sequence[list[int]], texts: Sequence[str]) -> np.ndarray:
    """Every item's vector in its window (rows in the window's order)."""
    types = any(node.name == "token_type_ids" for node in session.get_inputs())
    out = np.zeros((len(blocks), 384), dtype=np.float32)
    for part in parts(blocks):
        reads = [n > part.start and windows.reads_window(texts[n]) for n in part]
        fed, spans = feeds([blocks[n] for n in part], reads, types)
        hidden = session.run(None, fed)[0][0]
        for n, (start, end) in zip(part, spans, strict=True):
            vector = hidden[start:end].mean(axis=0)
            out[n] = vector / (np.linalg.norm(vector) or 1.0)
    return out
