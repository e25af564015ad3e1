"""One pass, two views (research, issue 16 phase 9): a file's narrative items run
through MiniLM together, packed in order into windows of up to 256 tokens, each item
as its own run would be ([CLS] item [SEP], positions from 0), with a mask a layer:
the first ``k`` layers let each item attend only to its own tokens (so up to layer
``k`` every item's states are exactly its lone run's), the rest across the whole
window (its neighbours' context). Each item's vector is pooled from its own block,
as a lone run pools it. ``k = 6`` gives memdir's own vectors back (the check); ``k =
0`` is late chunking with a [CLS] and [SEP] an item. The model work is one run over
the tokens memdir embeds today (each item's own [CLS] and [SEP] included), in windows
of up to 256 tokens instead of batches of short texts.

The graph is MiniLM's packaged one, edited in memory: each layer's attention adds its
own mask input (``mask_0`` .. ``mask_5``, ``[1, 1, s, s]``, 0 or -inf) and the
position embeddings read a ``position_ids`` input. Writes, beside each kept folder's
index, ``late-hyb<k>-<window>.npz`` (vector_key -> vector) for
``bench/dual_probe.py --late hyb<k>-<window>``:

    PYTHONPATH=bench .venv/bin/python bench/hybrid_probe.py --keep /tmp/lead-keep/locomo \
        --local 6,4,3,2,0
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from late_probe import items_in_order

from memdir.index.embedders import MiniLMEmbedder
from memdir.index.ranking import NARRATIVE_KINDS

LAYERS = 6
_MASK_VALUE = np.float32(-3.4028235e38)  # the exported graph's own "masked" value


def hybrid_graph(model_path: Path) -> bytes:
    """The packaged graph with a mask input a layer and a position_ids input."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(model_path))
    graph = model.graph
    adds = [n for n in graph.node if n.op_type == "Add" and "val_94" in n.input]
    if len(adds) != LAYERS:
        raise SystemExit(f"expected {LAYERS} attention-mask adds, found {len(adds)}")
    for layer, node in enumerate(adds):
        node.input[list(node.input).index("val_94")] = f"mask_{layer}"
        graph.input.append(
            helper.make_tensor_value_info(
                f"mask_{layer}", TensorProto.FLOAT, ["batch", 1, "seq", "seq"]
            )
        )
    (gather,) = [n for n in graph.node if n.name == "node_embedding_2"]
    gather.input[1] = "position_ids"
    graph.input.append(
        helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"])
    )
    return model.SerializeToString()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--keep", required=True, help="bench/locomo.py's or realmem.py's kept folders"
    )
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--local", default="6,4,3,2,0", help="layers with the item-only mask")
    parser.add_argument(
        "--positions",
        choices=["item", "window"],
        default="item",
        help="position ids from 0 an item (as its own run), or along the window",
    )
    parser.add_argument(
        "--short",
        type=int,
        default=0,
        help="only items under this many characters read their neighbours (0: every item)",
    )
    parser.add_argument(
        "--reach", type=int, default=0, help="blocks either side an item reads (0: the window)"
    )
    parser.add_argument(
        "--pack-chars",
        type=int,
        default=0,
        help="pack windows by characters (up to this many a window), not tokens",
    )
    parser.add_argument(
        "--back",
        action="store_true",
        help="an item reads only the blocks before it (an append changes no earlier vector)",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--time", type=int, default=0, help="rounds timing a pass against memdir's embed"
    )
    args = parser.parse_args()
    locals_ = [int(k) for k in args.local.split(",")]
    embedder = MiniLMEmbedder()
    embedder._load()
    tok = embedder._tokenizer
    graph = hybrid_graph(embedder._path)
    sessions = [embedder._new_session(optimised=True, model=graph) for _ in range(args.threads)]
    needs_types = "token_type_ids" in embedder._inputs
    inner_cap = args.window - 2
    for db_path in sorted(Path(args.keep).glob("*/.memdir/index.db")):
        rows = items_in_order(db_path)
        files: dict[str, list[tuple[list[int], str, bool]]] = {}
        texts_by_key: dict[str, str] = {}
        for path, kind, heading, meta, body, key in rows:
            if kind not in NARRATIVE_KINDS:
                continue
            text = "\n".join(part for part in (heading, meta, body) if part)
            ids = tok.encode(text[: embedder.MAX_CHARS])[1:-1][:inner_cap]
            texts_by_key[key] = text
            if ids:
                alone = bool(args.short) and len(text) >= args.short
                files.setdefault(path, []).append(([tok.cls, *ids, tok.sep], key, alone, len(text)))
        windows: list[list[tuple[list[int], str, bool]]] = []
        for items in files.values():
            current: list[tuple[list[int], str, bool]] = []
            size = 0
            for *item, chars in items:
                length = chars if args.pack_chars else len(item[0])
                budget = args.pack_chars or args.window
                if current and size + length > budget:
                    windows.append(current)
                    current, size = [], 0
                current.append(tuple(item))
                size += length
            if current:
                windows.append(current)
        outs: dict[int, dict[str, np.ndarray]] = {k: {} for k in locals_}
        began = time.perf_counter()
        tokens = sum(len(ids) for w in windows for ids, _, _ in w)

        def run(
            job: tuple[int, list[tuple[list[int], str, bool]]],
            slot: int,
            outs: dict[int, dict[str, np.ndarray]] = outs,
        ) -> None:
            k, window = job
            seq: list[int] = []
            positions: list[int] = []
            spans = []
            for ids, key, alone in window:
                start = len(seq)
                seq.extend(ids)
                positions.extend(range(len(ids)))
                spans.append((key, start, len(seq), alone))
            if args.positions == "window":  # (an item read alone keeps its own run's)
                positions = [
                    n if not alone else n - start
                    for _, start, end, alone in spans
                    for n in range(start, end)
                ]
            s = len(seq)
            own = np.full((s, s), _MASK_VALUE, dtype=np.float32)
            everyone = np.zeros((s, s), dtype=np.float32)
            for _, start, end, _alone in spans:
                own[start:end, start:end] = 0.0
            for n, (_, start, end, alone) in enumerate(spans):
                if alone:  # a long item reads only itself in every layer
                    everyone[start:end] = own[start:end]
                elif args.reach:  # its own block and ``reach`` blocks either side
                    first = spans[max(n - args.reach, 0)][1]
                    last = end if args.back else spans[min(n + args.reach, len(spans) - 1)][2]
                    everyone[start:end] = _MASK_VALUE
                    everyone[start:end, first:last] = 0.0
            feeds: dict[str, Any] = {
                "input_ids": np.array([seq], dtype=np.int64),
                "attention_mask": np.ones((1, s), dtype=np.int64),
                "position_ids": np.array([positions], dtype=np.int64),
            }
            if needs_types:
                feeds["token_type_ids"] = np.zeros((1, s), dtype=np.int64)
            for layer in range(LAYERS):
                feeds[f"mask_{layer}"] = (own if layer < k else everyone)[None, None]
            hidden = sessions[slot].run(None, feeds)[0][0]
            for key, start, end, _ in spans:
                v = hidden[start:end].mean(axis=0)
                outs[k][key] = v / (np.linalg.norm(v) or 1.0)

        jobs = [(k, w) for k in locals_ for w in windows]
        slots = [n % args.threads for n in range(len(jobs))]
        with ThreadPoolExecutor(args.threads) as pool:
            list(pool.map(run, jobs, slots[: len(jobs)]))
        if args.time:  # one pass of windows against memdir embedding the same items
            texts = [texts_by_key[key] for w in windows for _, key, _ in w]
            embedder.embed(texts)  # warm: memdir's optimised session, as ingest runs it
            embedder.embed(texts)
            windowed, alone = [], []
            for _ in range(args.time):
                t0 = time.perf_counter()
                with ThreadPoolExecutor(args.threads) as pool:
                    timed = [(locals_[0], w) for w in windows]
                    list(pool.map(run, timed, slots[: len(timed)]))
                t1 = time.perf_counter()
                embedder.embed(texts)
                t2 = time.perf_counter()
                windowed.append(t1 - t0)
                alone.append(t2 - t1)
            print(
                f"  time a pass: windows {np.median(windowed):.2f} s, memdir's embed "
                f"{np.median(alone):.2f} s, ratio {np.median(np.divide(windowed, alone)):.2f}",
                flush=True,
            )
        for k, out in outs.items():
            suffix = (
                ("" if args.positions == "item" else "-wpos")
                + (f"-s{args.short}" if args.short else "")
                + (f"-r{args.reach}" if args.reach else "")
                + (f"-c{args.pack_chars}" if args.pack_chars else "")
                + ("-back" if args.back else "")
            )
            np.savez(db_path.parent / f"late-hyb{k}-{args.window}{suffix}.npz", **out)
        print(
            f"{db_path.parent.parent.name}: {len(files)} files, {len(windows)} windows, "
            f"{tokens} tokens a pass, {len(locals_)} passes, {time.perf_counter() - began:.1f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
