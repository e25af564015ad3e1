"""memdir at scale: indexing, rescan, vectors, search, writes and decay at 1k, 10k and 100k.

    .venv/bin/python bench/scale.py [--sizes 1000,10000,100000] [--embed-all] [--keep DIR]

Each size is a fresh folder of journal files, ten ``##`` sections each (N items
are N/10 files) dated over the last two years, of seeded synthetic text:
Zipf-distributed English words, entity names and numbers, so BM25 sees
realistic term statistics. The files are written straight to disk, then
indexed with ``memory.reindex()``. Vectors are synthetic, blends of 1,000 real
MiniLM embeddings (``--embed-all``: every item embedded for real); queries are
always embedded by the real MiniLM. Decay runs over a vault of N cards
(bench/decay.py's cards, as its first run). Progress goes to stderr, the table
to stdout.

Each phase of each size runs in a fresh process, so every peak RSS is that
phase's own (``ru_maxrss``): ``index`` (write, reindex, rescan, vectors),
``vectors`` (twice: the first open of the vector matrix, then the next
process's), ``search`` (searches, writes, a due rescan: MiniLM loaded) and
``decay``. Floors are measured in the same process, interleaved where they can
be: a bare ``executemany`` of the same rows into a table with no index or
trigger (reindex), a bare ``os.scandir`` walk that stats every file (the due
rescan), one ``readinto`` of the matrix's bytes from a file (the vector open),
reading every card and atomically rewriting the changed ones in the same 4
threads (decay), and MiniLM loaded alone (peak RSS).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from timing import measure

import memdir
from memdir.index.embedders import VOCAB_FILE, MiniLMEmbedder, Vectors
from memdir.testing import FakeClock

SECTIONS = 10
MODEL_ID, DIM = MiniLMEmbedder().id, MiniLMEmbedder().dim  # loads nothing
TARGETS = {
    "hybrid search (ms)": "p50 <= 30 at 100k",
    "no-change rescan (s)": "<= 1 at 10k files",
    "knowledge.save (ms)": "p50 <= 10 at 10k",
    "reindex (us / item)": "100k within 1.1x of 10k",
    "context(), rescan due (ms)": "<= 30 at 10k files",
    "decay (s)": "<= 2 at 10k cards",
    "vector open, next process (ms)": "<= ~100 at 100k, no RSS spike",
    "peak RSS, search (MB)": "<= 350 at 100k",
}
NOTES = """
Latencies: p50 / p95 over {} queries or {} writes; writes include the index update.
Searches run in deep mode (every item a candidate) but the normal row (recent tiers only).
The first hybrid search loads the model (unless --embed-all did), the vectors, and rescans.
Floors (same process): reindex, a bare executemany of the same rows into a table with no
index or trigger; the due rescan, a bare os.scandir walk statting every file (p50 of {} runs,
interleaved with the context() calls); the vector open, one readinto of the matrix's bytes;
decay, reading every card and atomically rewriting the changed ones (fsync, rename, 4
threads, each folder synced once); peak RSS, MiniLM loaded alone in a fresh process.
MiniLM embedding throughput: {:.0f} items/s (1,000 real sections of this text, 2 cores)."""
SYNTHETIC = """
Vectors are synthetic, not embedded: each item's is a random blend of two of those 1,000
real MiniLM vectors plus noise, stored under the MiniLM model id, so vector search costs
what it would and cosines spread as real ones do, but the semantic ranking is meaningless.
Queries are embedded by the real MiniLM model."""
ITEM_COLUMNS = (
    "path, anchor, kind, agent, title, heading, body, meta, tags, date, content_hash, "
    "vector_key, ordinal, line_start, line_end, layer, tier, decay_from, relevance"
)
DUE_RUNS = 20


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


def journals(corpus: Corpus, files: int) -> Iterator[tuple[str, str]]:
    """(file name, text) of each journal file, the same for the same seed."""
    today = date.today()
    for n in range(files):
        day = today - timedelta(days=corpus.rng.randrange(730))
        yield f"{day.isoformat()}-{n:05d}.md", corpus.journal(day)


def write_journal(folder: Path, corpus: Corpus, files: int) -> None:
    (folder / "journal").mkdir(exist_ok=True)
    for name, text in journals(corpus, files):
        (folder / "journal" / name).write_text(text)


def fake_vectors(
    memory: memdir.Memory, anchors: Vectors, seed: int, model_id: str = MODEL_ID
) -> int:
    """For each item text without one, a vector under the MiniLM id (or ``model_id``): a
    random blend of two real ``anchors`` plus noise (cosines to queries spread as real
    ones do)."""
    db, rng = memory.index.db, np.random.default_rng(seed)
    sql = "SELECT vector_key FROM items EXCEPT SELECT vector_key FROM vectors WHERE model = ?"
    keys = [row[0] for row in db.execute(sql, (model_id,))]
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
            ((key, model_id, DIM, row.tobytes()) for key, row in zip(chunk, matrix, strict=True)),
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


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def insert_floor(rows: list[tuple[object, ...]], folder: Path) -> float:
    """Seconds to ``executemany`` ``rows`` into a fresh table with no index or trigger."""
    path = folder / "floor.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute(f"CREATE TABLE items (id INTEGER PRIMARY KEY, {ITEM_COLUMNS})")
    start = time.perf_counter()
    db.execute("BEGIN IMMEDIATE")
    db.executemany(f"INSERT INTO items ({ITEM_COLUMNS}) VALUES ({', '.join('?' * 19)})", rows)
    db.execute("COMMIT")
    seconds = time.perf_counter() - start
    db.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return seconds


def walk_floor(root: Path) -> int:
    """A bare os.scandir walk of the folder (hidden entries left out), statting each file."""
    count, folders = 0, [str(root)]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                else:
                    entry.stat()
                    count += 1
    return count


def phase_index(args: argparse.Namespace) -> dict[str, str]:
    """Write the folder, reindex it (against the insert floor), rescan, add vectors."""
    row: dict[str, str] = {}
    folder, size = args.folder, args.size
    corpus, files = Corpus(args.seed), max(size // SECTIONS, 1)
    memdir.init(folder)
    start = time.perf_counter()
    write_journal(folder, corpus, files)
    row["write files (s)"] = f"{time.perf_counter() - start:.1f}"
    log(f"  wrote {files} journal files in {row['write files (s)']} s")

    keyword = memdir.open(folder, embedder="none")
    runs = 3 if size <= 10_000 else 1
    reindex, floor, report, reindex_rss = [], [], None, 0.0
    for _ in range(runs):
        start = time.perf_counter()
        report = keyword.reindex()
        reindex.append(time.perf_counter() - start)
        reindex_rss = reindex_rss or peak_mb()  # before the floor's rows are in memory
        rows = keyword.index.db.execute(
            f"SELECT {ITEM_COLUMNS} FROM items JOIN places USING (id) ORDER BY id"
        ).fetchall()
        floor.append(insert_floor(rows, args.work))
        del rows
    assert report is not None
    items = keyword.index.db.execute("SELECT count(*) FROM items").fetchone()[0]
    per_item = statistics.median(reindex) / items * 1e6
    floor_item = statistics.median(floor) / items * 1e6
    row["items / files"] = f"{items} / {len(report.added)}"
    row["full reindex (s)"] = f"{statistics.median(reindex):.1f}"
    row["reindex (us / item)"] = (
        f"{per_item:.0f} (floor {floor_item:.0f}: {per_item / floor_item:.1f}x)"
    )
    row["_reindex_us"] = f"{per_item:.2f}"
    row["_reindex_floor_us"] = f"{floor_item:.2f}"
    log(f"  reindexed {items} items in {row['full reindex (s)']} s: {row['reindex (us / item)']}")
    scans = [keyword.scan() for _ in range(3)]
    if any(scan.changed for scan in scans):
        raise RuntimeError(f"a rescan of an unchanged folder changed something: {scans}")
    row["no-change rescan (s)"] = f"{statistics.median(scan.seconds for scan in scans):.3f}"
    row["peak RSS, reindex (MB)"] = f"{reindex_rss:.0f}"

    start = time.perf_counter()
    if args.embed_all:
        hybrid = memdir.open(folder, embedder="minilm")
        what = f"embedded {hybrid.index.ensure_vectors()} for real"
        hybrid.close()
    else:
        what = f"{fake_vectors(keyword, np.load(args.anchors), args.seed)} synthetic"
    row["vectors (s)"] = f"{time.perf_counter() - start:.1f} ({what})"
    log(f"  vectors: {row['vectors (s)']}")
    keyword.index.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    mb = (folder / ".memdir" / "index.db").stat().st_size / 1e6
    row["index.db (MB)"] = f"{mb:.1f}"
    # the vector open's floor: the same bytes read back from one file
    np.zeros((items, DIM), dtype=np.float32).tofile(args.work / "matrix.floor")
    keyword.close()
    return row


def phase_vectors(args: argparse.Namespace) -> dict[str, str]:
    """Open the vector matrix in a fresh process: its time and how far the peak RSS rose
    (the matrix itself is rows x 384 x 4 bytes); then the floor, one readinto of as many
    bytes from a file."""
    memory = memdir.open(args.folder, embedder=MiniLMEmbedder())  # the model is not loaded
    index = memory.index
    assert index.vectors is not None
    before = peak_mb()
    start = time.perf_counter()
    index.vectors.refresh(index.db)
    ms = (time.perf_counter() - start) * 1000
    after = peak_mb()
    rows = len(index.vectors)
    memory.close()
    floor_path = args.work / "matrix.floor"
    start = time.perf_counter()
    floor = np.empty(floor_path.stat().st_size // 4, dtype=np.float32)
    with floor_path.open("rb") as handle:
        handle.readinto(memoryview(floor).cast("B"))
    floor_ms = (time.perf_counter() - start) * 1000
    return {"ms": f"{ms:.0f}", "floor": f"{floor_ms:.0f}", "rss": f"{after - before:.0f}",
            "rows": str(rows), "matrix": f"{rows * DIM * 4 / 2**20:.0f}"}  # fmt: skip


def phase_search(args: argparse.Namespace) -> dict[str, str]:
    """Searches (MiniLM loaded), writes, and context() with a rescan due."""
    row: dict[str, str] = {}
    folder, corpus = args.folder, Corpus(args.seed)
    for _ in journals(corpus, max(args.size // SECTIONS, 1)):
        pass  # the corpus draws what it drew writing the folder: the same sample phrases
    keyword = memdir.open(folder, embedder="none")
    hybrid = memdir.open(folder, embedder="minilm")
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

    def due(_: int) -> None:
        keyword.index.scanned_at = None
        keyword.context()

    samples: dict[str, list[float]] = {"due": [], "not due": [], "floor": []}
    keyword.context()
    for _ in range(DUE_RUNS):  # interleaved, so load swings hit all three alike
        for label, action in (("due", lambda: due(0)), ("not due", keyword.context),
                              ("floor", lambda: walk_floor(folder))):  # fmt: skip
            start = time.perf_counter()
            action()
            samples[label].append((time.perf_counter() - start) * 1000)
    due_ms, plain, floor = (statistics.median(samples[k]) for k in ("due", "not due", "floor"))
    files = walk_floor(folder)
    row["context(), rescan due (ms)"] = (
        f"{due_ms:.1f} (not due {plain:.1f}; walk floor {floor:.1f}: {due_ms / floor:.1f}x; "
        f"{files} files)"
    )
    log(f"  context() with a rescan due: {row['context(), rescan due (ms)']}")

    text = "Deploys to staging need a second reviewer and a rollback plan ({})."
    kb, nb, writes = hybrid.knowledge, hybrid.notebook, args.writes
    row["knowledge.save (ms)"] = timed(lambda n: kb.save(text.format(n)), writes)
    row["notebook.update (ms)"] = timed(lambda n: nb.update(f"t{n % 3}", text.format(n)), writes)
    keyword.close()
    hybrid.close()
    row["peak RSS, search (MB)"] = f"{peak_mb():.0f}"
    log(f"  writes: {row['knowledge.save (ms)']}; peak RSS {row['peak RSS, search (MB)']} MB")
    return row


def phase_anchors(args: argparse.Namespace) -> dict[str, str]:
    """The 1,000 real MiniLM vectors the synthetic ones blend, and MiniLM's throughput
    (in a child, so that the parent stays small: a process spawned keeps its parent's
    peak RSS as its own ``ru_maxrss`` starting point)."""
    throughput, anchors = embed_sample(args.size, args.seed)
    np.save(args.anchors, anchors)
    return {"throughput": f"{throughput:.1f}"}


def phase_model(args: argparse.Namespace) -> dict[str, str]:
    """MiniLM alone, one query embedded: the floor of a searching process's RSS."""
    MiniLMEmbedder().embed(["what did we decide about the rollout"])
    return {"rss": f"{peak_mb():.0f}"}


def rewrite_floor(cards: list[Path], paths: list[Path]) -> float:
    """Seconds to read every card and atomically rewrite ``paths`` (bytes as they are):
    temp file, fsync, rename, in decay's 4 threads taking turns between folders; each
    folder fsynced once."""
    start = time.perf_counter()
    texts = {path: path.read_bytes() for path in cards}

    def write(path: Path) -> None:
        tmp = path.with_name(f".{path.name}.floor")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, texts[path])
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)

    by_folder: dict[Path, list[Path]] = {}
    for path in paths:
        by_folder.setdefault(path.parent, []).append(path)
    turns = itertools.zip_longest(*by_folder.values())  # folders take turns, as decay's do
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(write, [path for turn in turns for path in turn if path is not None]))
    for folder in {path.parent for path in paths}:
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return time.perf_counter() - start


def phase_decay(args: argparse.Namespace) -> dict[str, str]:
    """A vault of N cards as bench/decay.py builds it; its first decay run, against the floor."""
    from decay import FOLDERS, NOW, card

    root = args.folder
    memdir.init(root, layout="vault")
    rng = random.Random(args.seed)
    names = [f"card-{n}" for n in range(args.size)]
    paths = []
    for n, name in enumerate(names):
        folder = list(FOLDERS)[n % len(FOLDERS)]
        paths.append(root / "vault" / folder / f"{name}.md")
        paths[-1].parent.mkdir(parents=True, exist_ok=True)
        paths[-1].write_text(card(rng, name, names, FOLDERS[folder], n % 500 == 0)[0], "utf-8")
    memory = memdir.open(root, clock=FakeClock(NOW), embedder="none")
    start = time.perf_counter()
    memory.scan()
    log(f"  wrote and indexed {args.size} cards ({time.perf_counter() - start:.1f} s to index)")
    start = time.perf_counter()
    report = memory.decay()
    seconds = time.perf_counter() - start
    changed = [memory.space.real(path) for path in report.changed]
    floor = rewrite_floor(paths, changed)
    memory.close()
    return {"decay (s)": f"{seconds:.2f} ({len(changed)} changed; floor {floor:.2f}: "
                         f"{seconds / floor:.1f}x)"}  # fmt: skip


PHASES: dict[str, Callable[[argparse.Namespace], dict[str, str]]] = {
    "anchors": phase_anchors,
    "index": phase_index,
    "vectors": phase_vectors,
    "search": phase_search,
    "model": phase_model,
    "decay": phase_decay,
}


def run_phase(phase: str, size: int, folder: Path, work: Path, args: argparse.Namespace) -> Any:
    """One phase in a fresh process; what it reports (its last line of stdout, JSON)."""
    command = [sys.executable, __file__, "--phase", phase, "--size", str(size),
               "--folder", str(folder), "--work", str(work), "--seed", str(args.seed),
               "--queries", str(args.queries), "--writes", str(args.writes)]  # fmt: skip
    command += ["--embed-all"] if args.embed_all else []
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_size(size: int, base: Path, work: Path, args: argparse.Namespace) -> dict[str, str]:
    folder = base / f"scale-{size}"
    row: dict[str, str] = run_phase("index", size, folder, work, args)
    first = run_phase("vectors", size, folder, work, args)
    second = run_phase("vectors", size, folder, work, args)
    for label, found in (("first", first), ("next process", second)):
        row[f"vector open, {label} (ms)"] = (
            f"{found['ms']} (floor {found['floor']}; peak RSS +{found['rss']} MB for a "
            f"{found['matrix']} MB matrix)"
        )
    log(f"  vector open: {first['ms']} ms first, {second['ms']} ms in the next process")
    row.update(run_phase("search", size, folder, work, args))
    (work / "matrix.floor").unlink(missing_ok=True)
    if args.keep is None:
        shutil.rmtree(folder)  # the 100k folder is over half a gigabyte
    vault = base / f"decay-{size}"
    row.update(run_phase("decay", size, vault, work, args))
    log(f"  decay: {row['decay (s)']}")
    if args.keep is None:
        shutil.rmtree(vault)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000", help="item counts, comma-separated")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument("--embed-all", action="store_true", help="embed every item for real")
    parser.add_argument("--keep", type=Path, help="build the folders here and keep them")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        args.anchors = args.work / "anchors.npy"
        print(json.dumps(PHASES[args.phase](args)))
        return
    sizes = [int(size) for size in args.sizes.split(",")]
    columns: dict[int, dict[str, str]] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memdir-scale-") as tmp:
        work = Path(tmp)
        log("embedding 1,000 sections with MiniLM ...")
        throughput = float(run_phase("anchors", 1000, work, work, args)["throughput"])
        log(f"  {throughput:.0f} items/s")
        model_rss = run_phase("model", 0, work, work, args)["rss"]
        for size in sizes:
            log(f"{size} items:")
            start = time.perf_counter()
            columns[size] = bench_size(size, args.keep or work, work, args)
            columns[size]["peak RSS, search (MB)"] += f" (MiniLM alone {model_rss})"
            log(f"  done in {time.perf_counter() - start:.0f} s")
    log(f"total {time.perf_counter() - started:.0f} s")

    print(f"| metric | {' | '.join(f'{size:,} items' for size in sizes)} | target |")
    print(f"|---|{'---|' * len(sizes)}---|")
    for metric in columns[sizes[0]]:
        if metric.startswith("_"):
            continue
        cells = " | ".join(columns[size][metric] for size in sizes)
        print(f"| {metric} | {cells} | {TARGETS.get(metric, '')} |")
    if 10_000 in columns and 100_000 in columns:
        big, small = columns[100_000], columns[10_000]
        ratio = float(big["_reindex_us"]) / float(small["_reindex_us"])
        floors = float(big["_reindex_floor_us"]) / float(small["_reindex_floor_us"])
        print(
            f"\nReindex per item, 100k / 10k: {ratio:.2f}x (target: at most 1.1x); "
            f"{ratio / floors:.2f}x against each size's own floor (the floors: {floors:.2f}x, "
            "minutes apart on a shared machine)."
        )
    print(
        NOTES.format(args.queries, args.writes, DUE_RUNS, throughput)
        + ("" if args.embed_all else SYNTHETIC)
    )


if __name__ == "__main__":
    main()
