"""What issue 18's packaging costs and saves, each against its floor in the same run.

    .venv/bin/python bench/packaging_costs.py [--rounds 7]

- the model check: hashing the 23 MB model file (the first load of a file
  version) against looking up the kept result (every later load), interleaved;
- the tokenizer: ``index.wordpiece`` against the ``tokenizers`` library (dev extra)
  over the bench texts, interleaved, with the ids compared;
- resolving a plugin name in a fresh process: memdir's own (its dist-info read
  directly) against ``importlib.metadata.entry_points`` (what a name that is not
  memdir's own costs), and ``python -c pass`` as the floor, interleaved.

Every figure is the median over the rounds; the ratios are taken round by round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent


def timed(work: Callable[[], object]) -> float:
    began = time.perf_counter()
    work()
    return time.perf_counter() - began


def texts() -> list[str]:
    found: list[str] = []

    def walk(data: object) -> None:
        if isinstance(data, str) and data.strip():
            found.append(data)
        elif isinstance(data, dict):
            for value in data.values():
                walk(value)
        elif isinstance(data, list):
            for value in data:
                walk(value)

    for path in sorted((HERE / "data").glob("*.json")):
        walk(json.loads(path.read_text(encoding="utf-8")))
    return found


def fresh(code: str) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    os.environ["MEMDIR_HOME"] = tempfile.mkdtemp(prefix="memdir-packaging-")

    from memdir.index import model_files
    from memdir.index.embedders import MiniLMEmbedder, _packaged_model, _vocab_path
    from memdir.index.wordpiece import WordPiece

    model = _packaged_model()
    hashing, cached = [], []
    for _ in range(args.rounds):
        hashing.append(timed(lambda: model_files.file_sha256(model)))
        model_files.verify(model, model_files.MINILM_SHA256, "bench")
        cached.append(timed(lambda: model_files.verify(model, model_files.MINILM_SHA256, "b")))
    ratio = statistics.median(h / c for h, c in zip(hashing, cached, strict=True))
    print(f"model check: hash {statistics.median(hashing) * 1e3:.1f} ms, kept result "
          f"{statistics.median(cached) * 1e3:.2f} ms ({ratio:.0f}x less)")  # fmt: skip

    corpus = [text[: MiniLMEmbedder.MAX_CHARS] for text in texts()]
    ours_times, theirs_times, same = [], [], True
    try:
        import tokenizers
    except ImportError:
        tokenizers = None
    for _ in range(args.rounds):
        ours = WordPiece(_vocab_path(), MiniLMEmbedder.MAX_TOKENS)
        began = time.perf_counter()
        mine = ours.encode_batch(corpus)
        ours_times.append(time.perf_counter() - began)
        if tokenizers is not None:
            reference = tokenizers.BertWordPieceTokenizer(str(_vocab_path()), lowercase=True)
            reference.enable_truncation(max_length=MiniLMEmbedder.MAX_TOKENS)
            began = time.perf_counter()
            theirs = [e.ids for e in reference.encode_batch(corpus)]
            theirs_times.append(time.perf_counter() - began)
            same = same and mine == theirs
    line = f"tokenizer: {len(corpus)} texts, wordpiece {statistics.median(ours_times) * 1e3:.0f} ms"
    if theirs_times:
        ratio = statistics.median(o / t for o, t in zip(ours_times, theirs_times, strict=True))
        line += (f", tokenizers {statistics.median(theirs_times) * 1e3:.0f} ms "
                 f"(wordpiece / tokenizers {ratio:.2f}), same ids: {same}")  # fmt: skip
    load = [timed(lambda: WordPiece(_vocab_path(), 256)) for _ in range(args.rounds)]
    print(line + f"; vocabulary load {statistics.median(load) * 1e3:.1f} ms")

    floor, own, every = [], [], []
    ready = "import memdir.plugins, memdir.index.embedders"  # what a search imports anyway
    for _ in range(args.rounds):
        floor.append(fresh(ready))
        own.append(fresh(f"{ready}; memdir.plugins.resolve('embedders', 'minilm')"))
        every.append(
            fresh(
                f"{ready}; from importlib import metadata; "
                "[e for e in metadata.entry_points(group='memdir.embedders')]"
            )  # fmt: skip
        )
    own_over = statistics.median((o - f) * 1e3 for o, f in zip(own, floor, strict=True))
    every_over = statistics.median((e - f) * 1e3 for e, f in zip(every, floor, strict=True))
    print(f"resolving a plugin name in a fresh process, over importing the modules "
          f"({statistics.median(floor) * 1e3:.0f} ms): memdir's own {own_over:+.1f} ms, "
          f"through importlib.metadata {every_over:+.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
