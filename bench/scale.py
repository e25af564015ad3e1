"""memdir at scale: indexing, rescan, search and write latency at 1k, 10k and 100k items.

    .venv/bin/python bench/scale.py [--sizes 1000,10000,100000] [--embed-all] [--keep DIR]

Each size is a fresh folder of journal files, ten ``##`` sections each (N items
are N/10 files) dated over the last two years, of seeded synthetic text:
Zipf-distributed English words, entity names and numbers, so BM25 sees
realistic term statistics. The files are written straight to disk, then
indexed with ``memory.reindex()``. Vectors are synthetic, blends of 1,000 real
MiniLM embeddings (``--embed-all``: every item embedded for real); queries are
always embedded by the real MiniLM. Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import itertools
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date, timedelta
from importlib import resources
from pathlib import Path

import numpy as np
from timing import measure

import memdir
from memdir.index.embedders import VOCAB_FILE, MiniLMEmbedder, Vectors

SECTIONS = 10
MODEL_ID, DIM = MiniLMEmbedder().id, MiniLMEmbedder().dim  # loads nothing
TARGETS = {
    "hybrid search (ms)": "p50 <= 30 at 100k",
    "no-change rescan (s)": "<= 1 at 10k files",
    "knowledge.save (ms)": "p50 <= 10 at 10k",
}
NOTES = """
Latencies: p50 / p95 over {} queries or {} writes; writes include the index update.
Searches run in deep mode (every item a candidate) but the normal row (recent tiers only).
The first hybrid search loads the model (unless --embed-all did), the vectors, and rescans.
MiniLM embedding throughput: {:.0f} items/s (1,000 real sections of this text, 2 cores)."""
SYNTHETIC = """
Vectors are synthetic, not embedded: each item's is a random blend of two of those 1,000
real MiniLM vectors plus noise, stored under the MiniLM model id, so vector search costs
what it would and cosines spread as real ones do, but the semantic ranking is meaningless.
Queries are embedded by the real MiniLM model."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Corpus:
    """Seeded synthetic text: Zipf-distributed words, entity names and numbers."""

    def __init__(self, seed: int, words: int = 5000) -> None:
        self.rng = random.Random(seed)
        vocab = resources.files("memdir.index").joinpath("data", VOCAB_FILE).read_text("utf-8")
        # BERT's whole words from "the" on, roughly by frequency: Zipf ranks for free.
        self.vocab = [w for w in vocab.splitlines()[1996:] if w.isascii() and w.isalpha()][:words]
        self.cum = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(words)))
        self.content = self.vocab[150:]  # topic words: past the function words
        self.content_cum = list(itertools.accumulate(1.0 / (r + 20) for r in range(words - 150)))
        syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"] + ["ch", "sh", "th"]
        names = sorted({"".join(self.rng.choices(syllables, k=3)).capitalize() for _ in range(300)})
        self.entities = names[:200] + [f"Project {n}" for n in names[200:250]]
        self.entities += [f"{n} Labs" for n in names[250:]]
        self.samples: list[str] = []

    def topic(self, n: int) -> list[str]:
        return self.rng.choices(self.content, cum_weights=self.content_cum, k=n)

    def number(self) -> str:
        n = self.rng.randint(1, 999)
        return self.rng.choice((str(n), f"{n % 100}%", f"v{n % 9}.{n % 20}", f"${n}k", f"{n}ms"))

    def sentence(self) -> str:
        words = self.rng.choices(self.vocab, cum_weights=self.cum, k=self.rng.randint(6, 16))
        if self.rng.random() < 0.35:
            words.insert(self.rng.randrange(len(words)), self.rng.choice(self.entities))
        if self.rng.random() < 0.25:
            words.insert(self.rng.randrange(len(words)), self.number())
        words[0] = words[0][:1].upper() + words[0][1:]
        return " ".join(words) + "."

    def section(self) -> tuple[str, str]:
        heading = " ".join(self.topic(self.rng.randint(2, 4))).capitalize()
        sentences = [self.sentence() for _ in range(self.rng.randint(1, 3))]
        if self.rng.random() < 0.01:
            self.samples.append(sentences[0])
        return heading, " ".join(sentences)

    def journal(self, day: date) -> str:
        sections = (self.section() for _ in range(SECTIONS))
        return f"# {day.isoformat()}\n" + "".join(f"\n## {h}\n{b}\n" for h, b in sections)

    def queries(self, n: int, seed: int) -> list[str]:
        self.rng = random.Random(seed)  # the same queries at every size but the phrases
        self.samples = self.samples or [self.sentence()]
        makers: list[Callable[[], str]] = [
            lambda: " ".join(self.topic(self.rng.randint(1, 2))),
            lambda: f"{self.rng.choice(self.entities)} {self.topic(1)[0]}",
            lambda: f"what did we decide about the {' '.join(self.topic(2))}?",
            lambda: f"when does {self.rng.choice(self.entities)} need the {self.topic(1)[0]} done",
            lambda: f"{self.topic(1)[0]} {self.number()}",
            lambda: " ".join(self.rng.choice(self.samples).rstrip(".").split()[1:5]).lower(),
        ]
        return [makers[i % len(makers)]() for i in range(n)]


def write_journal(folder: Path, corpus: Corpus, files: int) -> None:
    today = date.today()
    (folder / "journal").mkdir(exist_ok=True)
    for n in range(files):
        day = today - timedelta(days=corpus.rng.randrange(730))
        (folder / "journal" / f"{day.isoformat()}-{n:05d}.md").write_text(corpus.journal(day))


def fake_vectors(memory: memdir.Memory, anchors: Vectors, seed: int) -> int:
    """For each item text without one, a vector under the MiniLM id: a random blend of two
    real ``anchors`` plus noise (cosines to queries spread as real ones do)."""
    db, rng = memory.index.db, np.random.default_rng(seed)
    sql = "SELECT vector_key FROM items EXCEPT SELECT vector_key FROM vectors WHERE model = ?"
    keys = [row[0] for row in db.execute(sql, (MODEL_ID,))]
    db.execute("BEGIN IMMEDIATE")
    for start in range(0, len(keys), 10_000):
        chunk = keys[start : start + 10_000]
        pick = rng.integers(0, len(anchors), (2, len(chunk)))
        blend = rng.random((len(chunk), 1), dtype=np.float32)
        matrix = blend * anchors[pick[0]] + (1 - blend) * anchors[pick[1]]
        matrix += rng.standard_normal(matrix.shape, dtype=np.float32) * 0.02
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        db.executemany(
            "INSERT INTO vectors (vector_key, model, dim, vector) VALUES (?, ?, ?, ?)",
            ((key, MODEL_ID, DIM, row.tobytes()) for key, row in zip(chunk, matrix, strict=True)),
        )
    db.execute("COMMIT")
    return len(keys)


def embed_sample(n: int, seed: int) -> tuple[float, Vectors]:
    """MiniLM's items per second on ``n`` synthetic sections (model loaded), and their vectors."""
    corpus = Corpus(seed)
    texts = ["\n".join(corpus.section()) for _ in range(n)]
    model = MiniLMEmbedder()  # dropped on return: the peak RSS then holds one model only
    model.embed(["warm up"])
    start = time.perf_counter()
    vectors = model.embed(texts)
    return n / (time.perf_counter() - start), vectors


def timed(action: Callable[[int], object], runs: int) -> str:
    """p50 / p95 in milliseconds of ``action(0..runs-1)``."""
    p50, p95 = measure(action, runs)
    return f"{p50:.1f} / {p95:.1f}"


def bench_size(
    folder: Path, size: int, args: argparse.Namespace, anchors: Vectors, row: dict[str, str]
) -> None:
    corpus = Corpus(args.seed)
    files = max(size // SECTIONS, 1)
    memdir.init(folder)
    start = time.perf_counter()
    write_journal(folder, corpus, files)
    row["write files (s)"] = f"{time.perf_counter() - start:.1f}"
    log(f"  wrote {files} journal files in {row['write files (s)']} s")

    keyword = memdir.open(folder, embedder="none")
    start = time.perf_counter()
    report = keyword.reindex()
    row["full reindex (s)"] = f"{time.perf_counter() - start:.1f}"
    items = keyword.index.db.execute("SELECT count(*) FROM items").fetchone()[0]
    row["items / files"] = f"{items} / {len(report.added)}"
    log(f"  reindexed {items} items in {row['full reindex (s)']} s")
    scans = [keyword.scan() for _ in range(3)]
    if any(scan.changed for scan in scans):
        raise RuntimeError(f"a rescan of an unchanged folder changed something: {scans}")
    row["no-change rescan (s)"] = f"{statistics.median(scan.seconds for scan in scans):.3f}"

    hybrid = memdir.open(folder, embedder="minilm")
    start = time.perf_counter()
    if args.embed_all:
        what = f"embedded {hybrid.index.ensure_vectors()} for real"
    else:
        what = f"{fake_vectors(keyword, anchors, args.seed)} synthetic"
    row["vectors (s)"] = f"{time.perf_counter() - start:.1f} ({what})"
    log(f"  vectors: {row['vectors (s)']}")
    keyword.index.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    mb = (folder / ".memdir" / "index.db").stat().st_size / 1e6
    row["index.db (MB)"] = f"{mb:.1f}"

    queries = corpus.queries(args.queries, args.seed + 1)
    runs = len(queries)
    keyword.search(queries[-1], mode="deep")
    row["keyword search (ms)"] = timed(lambda n: keyword.search(queries[n], mode="deep"), runs)
    start = time.perf_counter()
    hybrid.search(queries[-1], mode="deep")
    row["first hybrid search (s)"] = f"{time.perf_counter() - start:.2f}"
    scanned = hybrid.index.scanned_at
    row["hybrid search (ms)"] = timed(lambda n: hybrid.search(queries[n], mode="deep"), runs)
    row["hybrid, normal mode (ms)"] = timed(lambda n: hybrid.search(queries[n]), runs)
    if hybrid.index.scanned_at != scanned:
        log("  note: a periodic rescan (rescan_seconds) ran during the timed searches")
    log(f"  first hybrid search {row['first hybrid search (s)']} s; keyword / hybrid:")
    log(f"  {row['keyword search (ms)']} / {row['hybrid search (ms)']} ms")

    text = "Deploys to staging need a second reviewer and a rollback plan ({})."
    kb, nb, writes = hybrid.knowledge, hybrid.notebook, args.writes
    row["knowledge.save (ms)"] = timed(lambda n: kb.save(text.format(n)), writes)
    row["notebook.update (ms)"] = timed(lambda n: nb.update(f"t{n % 3}", text.format(n)), writes)
    keyword.close()
    hybrid.close()
    row["peak RSS (MB)"] = f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}"
    log(f"  writes: {row['knowledge.save (ms)']}; peak RSS {row['peak RSS (MB)']} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000", help="item counts, comma-separated")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument("--embed-all", action="store_true", help="embed every item for real")
    parser.add_argument("--keep", type=Path, help="build the folders here and keep them")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    columns: dict[int, dict[str, str]] = {}
    started = time.perf_counter()
    log("embedding 1,000 sections with MiniLM ...")
    throughput, anchors = embed_sample(1000, args.seed)
    log(f"  {throughput:.0f} items/s")
    with tempfile.TemporaryDirectory(prefix="memdir-scale-") as tmp:
        for size in sizes:
            log(f"{size} items:")
            start = time.perf_counter()
            folder = (args.keep or Path(tmp)) / f"scale-{size}"
            bench_size(folder, size, args, anchors, columns.setdefault(size, {}))
            log(f"  done in {time.perf_counter() - start:.0f} s")
            if args.keep is None:
                shutil.rmtree(folder)  # the 100k folder is over half a gigabyte
    log(f"total {time.perf_counter() - started:.0f} s")

    print(f"| metric | {' | '.join(f'{size:,} items' for size in sizes)} | target |")
    print(f"|---|{'---|' * len(sizes)}---|")
    for metric in columns[sizes[0]]:
        cells = " | ".join(columns[size][metric] for size in sizes)
        print(f"| {metric} | {cells} | {TARGETS.get(metric, '')} |")
    print(
        NOTES.format(args.queries, args.writes, throughput) + ("" if args.embed_all else SYNTHETIC)
    )


if __name__ == "__main__":
    main()
