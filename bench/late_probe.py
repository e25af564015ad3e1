"""Late chunking (research, issue 16 phase 8): a file's narrative items run through
MiniLM together, packed in order into windows of up to 256 tokens, and each item's
vector pooled from its own tokens (with the window's [CLS] and [SEP], as a lone run
pools them), so that it is read in its neighbours' context for about the model work
of one run an item. Writes, beside each kept folder's index,
``late-<mode>-<window>[-int8].npz`` (vector_key -> vector), which
``bench/dual_probe.py --late`` (and ``--own``) read:

    PYTHONPATH=bench .venv/bin/python bench/late_probe.py --keep /tmp/lead-keep/locomo
    PYTHONPATH=bench .venv/bin/python bench/late_probe.py --keep /tmp/lead-keep/locomo \
        --graph int8                     # the windows on the int8 query graph
    PYTHONPATH=bench .venv/bin/python bench/late_probe.py --keep /tmp/lead-keep/locomo \
        --mode own --graph int8          # every item alone, on the int8 graph

``--mode own --graph float`` gives back memdir's own vectors (one text a run): the
check that the pooling here is the embedder's.
"""

from __future__ import annotations

import argparse
import sqlite3
import time
from pathlib import Path

import numpy as np

from memdir.index.embedders import MiniLMEmbedder
from memdir.index.ranking import NARRATIVE_KINDS


def items_in_order(db_path: Path) -> list[tuple[str, str, str, str, str, str]]:
    """A kept index's items, file by file in their order: path, kind, heading, meta,
    body and vector key."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return db.execute(
            "SELECT i.path, i.kind, i.heading, i.meta, i.body, i.vector_key FROM items AS i "
            "JOIN places AS p ON p.id = i.id ORDER BY i.path, p.ordinal"
        ).fetchall()
    finally:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--keep", required=True, help="bench/locomo.py's or realmem.py's kept folders"
    )
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--mode", choices=["pack", "own"], default="pack")
    parser.add_argument("--graph", choices=["float", "int8"], default="float")
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    embedder._load()
    tok = embedder._tokenizer
    session = embedder._session if args.graph == "float" else embedder._query_session()
    tag = f"{args.mode}-{args.window}" + ("-int8" if args.graph == "int8" else "")
    inner_cap = args.window - 2
    for db_path in sorted(Path(args.keep).glob("*/.memdir/index.db")):
        rows = items_in_order(db_path)
        files: dict[str, list[tuple[list[int], str]]] = {}
        for path, kind, heading, meta, body, key in rows:
            if kind not in NARRATIVE_KINDS and args.mode != "own":
                continue
            text = "\n".join(part for part in (heading, meta, body) if part)
            ids = tok.encode(text[: embedder.MAX_CHARS])[1:-1][:inner_cap]
            files.setdefault(path, []).append((ids, key))
        out: dict[str, np.ndarray] = {}
        runs = tokens = 0
        began = time.perf_counter()
        for items in files.values():
            windows: list[list[int]] = []  # item indexes per window
            if args.mode == "own":
                windows = [[n] for n in range(len(items))]
            else:
                current: list[int] = []
                size = 0
                for n, (ids, _) in enumerate(items):
                    if current and size + len(ids) > inner_cap:
                        windows.append(current)
                        current, size = [], 0
                    current.append(n)
                    size += len(ids)
                if current:
                    windows.append(current)
            for window in windows:
                seq = [tok.cls]
                spans = []
                for n in window:
                    start = len(seq)
                    seq.extend(items[n][0])
                    spans.append((n, start, len(seq)))
                seq.append(tok.sep)
                feeds = {
                    "input_ids": np.array([seq], dtype=np.int64),
                    "attention_mask": np.ones((1, len(seq)), dtype=np.int64),
                }
                if "token_type_ids" in embedder._inputs:
                    feeds["token_type_ids"] = np.zeros((1, len(seq)), dtype=np.int64)
                hidden = session.run(None, feeds)[0][0]
                runs += 1
                tokens += len(seq)
                for n, start, end in spans:
                    if end > start:
                        # own tokens, with the window's [CLS] and [SEP] as a lone run has
                        picked = np.vstack([hidden[0:1], hidden[start:end], hidden[-1:]])
                        v = picked.mean(axis=0)
                        out[items[n][1]] = v / (np.linalg.norm(v) or 1.0)
        np.savez(db_path.parent / f"late-{tag}.npz", **out)
        print(
            f"{db_path.parent.parent.name}: {len(out)} vectors, {runs} runs, {tokens} tokens, "
            f"{time.perf_counter() - began:.1f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
