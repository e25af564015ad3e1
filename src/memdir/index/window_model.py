"""MiniLM run over a window of items at once: each item its own view first, then its
neighbours' (``memdir.index.windows`` says which items read which).

The packaged graph is edited in memory, with the ``onnx`` package, and cut in two
after its first ``LOCAL_LAYERS`` attention layers:

- the lower graph is the packaged one up to there, with a ``position_ids`` input for
  its position embeddings and a ``mask`` input (``[batch, 1, 1, seq]``, 0 or the
  graph's own "masked" value) where its layers added the one made from
  ``attention_mask``. In these layers every item reads only itself, so items run here
  in batches of similar length, as lone texts do (``token_batches``): the same work
  as embedding them alone.
- the upper graph is the rest, from those layers' hidden states and a ``mask`` of
  its own (``[batch, 1, seq, seq]``): an item that reads its window attends to its own
  block and the block before it, any other only to itself. Only this part runs over a
  window, so only it pays for the window's longer attention (bench/RESULTS.md, issue
  16 phase 12: the window runs went from about 1.2 to about 1.0 times the model time
  of embedding each text alone).

Every item's tokens are its lone run's (``[CLS] text [SEP]``). A reading item's
positions run along its window, any other's from 0, as alone. Each vector is the mean
of the item's own block, normalised, as a lone run pools it: an item that reads
nothing gets its lone vector (to within float error). An item that reads nothing
depends on nothing before it, so a window's upper run is cut before each such item
(``segments``): shorter runs, the same vectors.

The edit needs the ``onnx`` package, whose import takes most of a second, so the two
graphs are made once and kept in the model cache beside the int8 query graph
(``quantised_model.converted``: written atomically, its sha256 checked at load).

A window longer than the model's 512 positions is split between items (text of 1,000
characters is that long only where a character is about a token).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memdir.index import windows

LAYERS = 6
LOCAL_LAYERS = 3
"""layers in which every item reads only itself (phase 9: 3 of 6 is best)"""
MAX_POSITIONS = 512
DIM = 384
_MASKED = np.float32(-3.4028235e38)  # the exported graph's own "masked" value
_MASK_ADD = "val_94"  # the packaged graph's additive mask, made from attention_mask
_POSITIONS = "node_embedding_2"  # its position embeddings' gather
_OUTPUT = "last_hidden_state"


class GraphShapeError(RuntimeError):
    """The packaged graph is not the one this edit was made for."""


def _edited(model_path: Path) -> tuple[Any, str]:
    """The packaged graph with ``position_ids`` and the two masks as inputs, and the
    name of the hidden states after its lower layers."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(model_path))
    graph = model.graph
    adds = [n for n in graph.node if n.op_type == "Add" and _MASK_ADD in n.input]
    gathers = [n for n in graph.node if n.name == _POSITIONS]
    norms = [n for n in graph.node if n.op_type == "LayerNormalization"]
    if len(adds) != LAYERS or len(gathers) != 1 or len(norms) != 2 * LAYERS + 1:
        raise GraphShapeError(
            f"expected {LAYERS} attention-mask adds, one position gather and "
            f"{2 * LAYERS + 1} layer norms; found {len(adds)}, {len(gathers)} and {len(norms)}"
        )
    for layer, node in enumerate(adds):
        name = "mask_local" if layer < LOCAL_LAYERS else "mask_window"
        node.input[list(node.input).index(_MASK_ADD)] = name
    graph.input.extend(
        [
            helper.make_tensor_value_info("mask_local", TensorProto.FLOAT, ["batch", 1, 1, "seq"]),
            helper.make_tensor_value_info(
                "mask_window", TensorProto.FLOAT, ["batch", 1, "seq", "seq"]
            ),
            helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"]),
        ]
    )
    gathers[0].input[1] = "position_ids"
    # norms: the embeddings', then two a layer; the lower part ends at its last one
    return model, norms[2 * LOCAL_LAYERS].output[0]


def _part(model: Any, inputs: list[str], output: str) -> bytes:
    """The graph from ``inputs`` (those it has; kept where its nodes read them) to
    ``output``."""
    import onnx.utils

    known = {value.name for value in model.graph.input}
    known.update(name for node in model.graph.node for name in node.output)
    part = onnx.utils.Extractor(model).extract_model(
        [name for name in inputs if name in known], [output]
    )
    read = {name for node in part.graph.node for name in node.input}
    for value in [value for value in part.graph.input if value.name not in read]:
        part.graph.input.remove(value)
    return bytes(part.SerializeToString())


def lower_graph(model_path: Path) -> bytes:
    model, cut = _edited(model_path)
    inputs = ["input_ids", "token_type_ids", "position_ids", "mask_local"]
    return _part(model, inputs, cut)


def upper_graph(model_path: Path) -> bytes:
    model, cut = _edited(model_path)
    # the graph's shape arithmetic reads the ids' inputs: they stay, fed with zeros
    return _part(model, [cut, "mask_window", "input_ids", "token_type_ids"], _OUTPUT)


RECIPES = ("window-lower-v2", "window-upper-v2")


def window_files(source: Path, source_sha256: str) -> tuple[Path | bytes, Path | bytes]:
    """The lower and upper graphs, from the cache (made now if they are not there)."""
    from memdir.index.quantised_model import Recipe, converted

    lower, upper = RECIPES
    saying = "making the window model, once per model cache"
    return (
        converted(source, source_sha256, Recipe(lower, _writer(lower_graph), saying)),
        converted(source, source_sha256, Recipe(upper, _writer(upper_graph), "")),
    )


def _writer(make: Callable[[Path], bytes]) -> Callable[[Path, Path], None]:
    def write(source: Path, out: Path) -> None:
        out.write_bytes(make(source))

    return write


@dataclass(frozen=True)
class Block:
    """One item of a window run: its token ids, their positions, whether it reads."""

    ids: list[int]
    positions: range
    reads: bool


def plan(
    groups: Sequence[Sequence[list[int]]], texts: Sequence[Sequence[str]]
) -> tuple[list[Block], list[list[int]]]:
    """Every item of the windows ``groups`` (each its items' token ids) as a block, in
    order, and the upper runs: runs of block indices, each cut before an item that
    reads nothing and kept within MAX_POSITIONS."""
    blocks: list[Block] = []
    runs: list[list[int]] = []
    for ids, said in zip(groups, texts, strict=True):
        for part in windows.greedy([len(one) for one in ids], MAX_POSITIONS):
            start = 0
            for n in part:
                reads = n > part.start and windows.reads_window(said[n])
                size = len(ids[n])
                positions = range(start, start + size) if reads else range(size)
                if not reads:
                    runs.append([])
                runs[-1].append(len(blocks))
                blocks.append(Block(ids[n], positions, reads))
                start += size
    return blocks, runs


Runner = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]


def run_windows(
    lower: Any, upper: Any, blocks: list[Block], runs: list[list[int]], side_by_side: Runner
) -> np.ndarray:
    """Every block's vector (rows in ``blocks``' order): the lower layers in batches of
    similar length, then each upper run (runs of similar length batched, padded)."""
    from memdir.index.minilm import token_batches

    lengths = np.fromiter((len(b.ids) for b in blocks), dtype=np.int64, count=len(blocks))
    states: list[np.ndarray] = [np.zeros((0, DIM), dtype=np.float32)] * len(blocks)

    def low(chunk: np.ndarray) -> list[np.ndarray]:
        width = int(lengths[chunk].max())
        ids = np.zeros((len(chunk), width), dtype=np.int64)
        positions = np.zeros_like(ids)
        mask = np.full((len(chunk), 1, 1, width), _MASKED, dtype=np.float32)
        for row, n in enumerate(chunk):
            size = int(lengths[n])
            ids[row, :size] = blocks[n].ids
            positions[row, :size] = blocks[n].positions
            mask[row, 0, 0, :size] = 0.0
        fed = {"input_ids": ids, "position_ids": positions, "mask_local": mask}
        hidden = lower.run(None, _inputs(lower, fed, ids))[0]
        return [hidden[row, : lengths[n]] for row, n in enumerate(chunk)]

    order = np.argsort(lengths, kind="stable")
    chunks = [order[rows] for rows in token_batches(lengths[order], BATCH_TOKENS, PADDING)]
    for chunk, found in zip(chunks, side_by_side(low, chunks), strict=True):
        for n, state in zip(chunk, found, strict=True):
            states[n] = state

    sizes = np.array([sum(int(lengths[n]) for n in run) for run in runs], dtype=np.int64)

    def high(batch: np.ndarray) -> list[np.ndarray]:
        width = int(sizes[batch].max())
        hidden = np.zeros((len(batch), width, DIM), dtype=np.float32)
        mask = np.full((len(batch), 1, width, width), _MASKED, dtype=np.float32)
        spans: list[list[tuple[int, int]]] = []
        for row, r in enumerate(batch):
            at: list[tuple[int, int]] = []
            for n in runs[r]:
                start = at[-1][1] if at else 0
                end = start + int(lengths[n])
                hidden[row, start:end] = states[n]
                mask[row, 0, start:end, start:end] = 0.0
                if blocks[n].reads:  # (never the first of a run)
                    mask[row, 0, start:end, at[-1][0] : start] = 0.0
                at.append((start, end))
            spans.append(at)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        fed = {_cut_name(upper): hidden, "mask_window": mask}
        out = upper.run(None, _inputs(upper, fed, ids))[0]
        pooled = []
        for row, at in enumerate(spans):
            for start, end in at:
                vector = out[row, start:end].mean(axis=0)
                pooled.append(vector / (np.linalg.norm(vector) or 1.0))
        return pooled

    order = np.argsort(sizes, kind="stable")
    batches = [order[rows] for rows in token_batches(sizes[order], BATCH_TOKENS, PADDING)]
    out = np.zeros((len(blocks), DIM), dtype=np.float32)
    for batch, pooled in zip(batches, side_by_side(high, batches), strict=True):
        out[[n for r in batch for n in runs[r]]] = pooled
    return out


BATCH_TOKENS = 384
"""padded tokens a run holds (as ``MiniLMEmbedder.BATCH_TOKENS``)"""
PADDING = 1.15


def _cut_name(session: Any) -> str:
    names = [node.name for node in session.get_inputs()]
    return str(next(name for name in names if name not in ("mask_window", *_ID_INPUTS)))


_ID_INPUTS = ("input_ids", "token_type_ids", "attention_mask")


def _inputs(session: Any, fed: dict[str, Any], ids: np.ndarray) -> dict[str, Any]:
    """``fed`` with the id inputs the graph still reads (zeros: only their shape is
    read above the embeddings; the token ids and ones for the mask below)."""
    for node in session.get_inputs():
        if node.name == "token_type_ids":
            fed[node.name] = np.zeros_like(ids)
        elif node.name == "attention_mask":
            fed[node.name] = np.ones_like(ids)
        elif node.name == "input_ids" and node.name not in fed:
            fed[node.name] = ids
    return {node.name: fed[node.name] for node in session.get_inputs()}
