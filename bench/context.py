"""Context assembly on a full folder (issue: p50 <= 20 ms, <= 50 ms with a query), and
the tokens each layout loads at boot.

    .venv/bin/python bench/context.py [--cards 10000] [--runs 100] [--queries 50]
                                      [--embed-all] [--profile] [--keep DIR]

A default-layout folder: N cards written straight to vault/<folder>/ (1 in 500 core),
knowledge.md near its 15,000-char cap plus 500 observations, 4 notebook entries, 4 state
snapshots, journals today and yesterday; ``reindex()`` with the hashing embedder, then
timed with MiniLM: non-card items and 500 cards embedded for real, the other cards
synthetic blends of those (as bench/scale.py; ``--embed-all``: all real). Then each
layout fresh from ``memdir.init`` plus a little content. Progress on stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

import memdir
from memdir.index.db import transaction

LAYOUTS = ("default", "notebook", "vault", "workspace")
TARGETS = {"default": 20.0, "default + query": 50.0}  # p50 ms
QUERIES = ("{who} {a}", "what did we decide about the {a} {b}?", "{who}", "{a}",
           "when is the {a} review with {first} due")  # fmt: skip
FOLDERS = {"crm/clients": "person", "crm/leads": "person", "projects": "project",
           "companies": "company", "ideas": "idea"}  # fmt: skip
FIRST = ["alice", "bruno", "chloe", "dmitri", "elena", "farid", "greta", "hiro", "ines"]
LAST = ["moreau", "keller", "novak", "silva", "tanaka", "okafor", "berg", "rossi", "larsen"]
WORDS = ["renewal", "budget", "pipeline", "migration", "contract", "invoice", "berlin",
         "roadmap", "launch", "review", "pricing", "onboarding", "churn", "forecast", "hiring",
         "security", "audit", "vendor", "latency", "backlog"]  # fmt: skip


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high))).capitalize() + "."


def lines(rng: random.Random, size: int) -> str:
    out = [f"- {words(rng, 8, 16)}"]
    while sum(len(line) + 1 for line in out) < size:
        out.append(f"- {words(rng, 8, 16)}")
    return "\n".join(out[:-1])


def card(rng: random.Random, name: str, names: list[str], kind: str, core: bool, today) -> str:
    age = rng.randint(0, 120)
    last, tier, relevance = today - timedelta(days=age), "core", 1.0
    created = last - timedelta(days=rng.randint(0, 400))
    if not core:
        tier = "active" if age <= 7 else "warm" if age <= 21 else "cold" if age <= 60 else "archive"
        relevance = max(0.1, 1 - age * 0.015)
    link, other = rng.sample(names, 2)
    return (
        f"---\ntype: {kind}\ntags: [{rng.choice(WORDS)}, {rng.choice(WORDS)}]\n"
        f"created: {created}\nupdated: {last}\nlast_accessed: {last}\n"
        f"access_count: {rng.randint(0, 40)}\nrelevance: {relevance:.3f}\n"
        f"tier: {tier}\nlinks: [{link}]\n---\n# {name.replace('-', ' ').title()}\n\n"
        f"{words(rng, 20, 40)} Works with [[{other}]].\n\n"
        f"## History\n- {created} (agent-1): {words(rng, 6, 12)}\n"
    )


def build(root: Path, args: argparse.Namespace) -> list[str]:
    memdir.init(root)
    rng, memory = random.Random(args.seed), memdir.open(root, embedder="hashing")
    now = memory.clock().replace(hour=8)
    names = [f"{rng.choice(FIRST)}-{rng.choice(LAST)}-{n}" for n in range(args.cards)]
    for n, name in enumerate(names):
        folder = list(FOLDERS)[n % len(FOLDERS)]
        path = root / "vault" / folder / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(card(rng, name, names, FOLDERS[folder], n % 500 == 0, now.date()), "utf-8")
    log(f"  wrote {args.cards} cards")
    results = [memory.knowledge.update(f"{w.title()} notes", lines(rng, 2450)) for w in WORDS[:6]]
    for n in range(500):
        who = " ".join(rng.choice(names).split("-")[:2]).title()
        results.append(memory.knowledge.save(f"{who}: {words(rng, 8, 20)}", tags=[WORDS[n % 20]]))
    results += [memory.notebook.update(f"task-{n}", lines(rng, 900)) for n in range(4)]
    results += [memory.state.set(f"{w}-status", words(rng, 6, 14)) for w in WORDS[6:10]]
    for n, kind in enumerate(("decision", "learning", "milestone", "context") * 6):
        at = now - timedelta(days=n % 2) + timedelta(minutes=n)  # today, yesterday, ...
        results.append(memory.journal.append(kind, words(rng, 8, 18), why="it is cheaper", at=at))
    assert all(r.ok and not r.archived for r in results), [r for r in results if not r.ok]
    args.curated = memory.knowledge.usage().total_chars
    start = time.perf_counter()
    report = memory.reindex()
    log(f"  reindexed {len(report.added)} files in {time.perf_counter() - start:.1f} s")
    memory.close()
    return names


def vectors(memory: memdir.Memory, args: argparse.Namespace) -> str:
    """MiniLM vectors for every item: real, or for most cards synthetic blends of real ones."""
    index, rng, start, fake = memory.index, np.random.default_rng(args.seed), time.perf_counter(), 0
    model = index.embedder
    assert model is not None
    if not args.embed_all:
        sql = "SELECT vector_key, min(id) FROM items WHERE kind = 'card' GROUP BY vector_key"
        cards = index.db.execute(sql).fetchall()
        chosen = set(rng.choice(len(cards), min(500, len(cards)), replace=False).tolist())
        sample = [row for n, row in enumerate(cards) if n in chosen]
        rest = [key for n, (key, _) in enumerate(cards) if n not in chosen]
        texts = index._embed_texts([item for _, item in sample])
        anchors = model.embed([texts[item] for _, item in sample])
        pick, blend = rng.integers(0, len(anchors), (2, len(rest))), rng.random((len(rest), 1))
        matrix = (blend * anchors[pick[0]] + (1 - blend) * anchors[pick[1]]).astype(np.float32)
        matrix += rng.standard_normal(matrix.shape, dtype=np.float32) * 0.02
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        keys, fake = [key for key, _ in sample] + rest, len(rest)
        pairs = zip(keys, np.vstack([anchors, matrix]), strict=True)
        sql = "INSERT INTO vectors (vector_key, model, dim, vector) VALUES (?, ?, ?, ?)"
        with index.lock, transaction(index.db):
            index.db.executemany(sql, [(k, model.id, model.dim, v.tobytes()) for k, v in pairs])
    real = index.ensure_vectors() + (0 if args.embed_all else len(anchors))
    return f"{real} embedded for real, {fake} synthetic ({time.perf_counter() - start:.0f} s)"


def timed(memory: memdir.Memory, call: Any, runs: int, prof: Any) -> list[Any]:
    """[p50 ms, p95 ms, runs, how many runs rescanned the folder, the last context]."""
    samples, scans, ctx = [], 0, None
    for n in range(runs):
        before, start = memory.index.scanned_at, time.perf_counter()
        ctx = prof.runcall(call, n) if prof else call(n)
        samples.append((time.perf_counter() - start) * 1000)
        scans += memory.index.scanned_at != before
    samples.sort()
    return [statistics.median(samples), samples[max(int(runs * 0.95) - 1, 0)], runs, scans, ctx]


def split(ctx: Any) -> list[int]:
    stable = sum(block.tokens for block in ctx.blocks if block.part == "stable")
    return [ctx.tokens, stable, ctx.tokens - stable]


def boot(root: Path, layout: str) -> list[list[object]]:
    memdir.init(root, layout)
    memory = memdir.open(root, embedder="none")
    writes = {
        "notebook": lambda: memory.notebook.update("focus", "Ship the billing migration."),
        "knowledge": lambda: memory.knowledge.update("Deploys", "Staging needs two reviewers."),
        "journal": lambda: memory.journal.append("decision", "Use Postgres", why="we know it"),
        "workstate": lambda: memory.workstate.start("Migrate the invoices table"),
    }
    can = {"workstate": memory.has("workstate") or memory.has("notebook")}
    done = [key for key, write in writes.items() if can.get(key, memory.has(key)) and write().ok]
    rows: list[list[object]] = []
    for profile in ("default", "reflex"):
        ctx = memory.context(profile)
        parts = ", ".join(f"{r.layer} {r.tokens}" for r in ctx.layers if r.included)
        rows.append([layout, profile, *split(ctx), parts, ", ".join(done) * (not rows)])
    memory.close()
    return rows


def table(header: str, rows: list[list[object]]) -> None:
    print(f"| {header} |\n|{'---|' * (header.count('|') + 1)}")
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    for flag, default in (("--cards", 10_000), ("--runs", 100), ("--queries", 50), ("--seed", 7)):
        parser.add_argument(flag, type=int, default=default)
    parser.add_argument("--embed-all", action="store_true", help="embed every card for real")
    parser.add_argument("--profile", action="store_true", help="cProfile the timed runs")
    parser.add_argument("--keep", type=Path, help="build the folders here and keep them")
    args = parser.parse_args()
    base = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="memdir-context-"))
    try:
        log(f"building a default-layout folder with {args.cards} cards ...")
        names = build(base / "full", args)
        memory = memdir.open(base / "full", embedder="minilm")
        log(f"  vectors: {(note := vectors(memory, args))}")
        prof, rows = cProfile.Profile() if args.profile else None, {}
        for profile in ("default", "reflex", "heartbeat"):
            memory.context(profile)  # warm-up
            rows[profile] = timed(memory, lambda n, p=profile: memory.context(p), args.runs, prof)
        due = lambda n: setattr(memory.index, "scanned_at", None) or memory.context()  # noqa: E731
        rows["default, rescan due (turns > 10 s apart)"] = timed(memory, due, 20, None)
        start = time.perf_counter()
        memory.context(query="billing renewal with alice")  # warm-up: loads the vector matrix
        first, rng = (time.perf_counter() - start) * 1000, random.Random(args.seed + 1)
        asks = []
        for n in range(args.queries):
            who, (a, b) = " ".join(rng.choice(names).split("-")[:2]), rng.sample(WORDS, 2)
            asks.append(QUERIES[n % len(QUERIES)].format(who=who, a=a, b=b, first=who.split()[0]))
        query = timed(memory, lambda n: memory.context(query=asks[n]), len(asks), prof)
        rows["default + query"] = query
        memory.close()
        if prof:
            pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
        layouts = [row for layout in LAYOUTS for row in boot(base / f"layout-{layout}", layout)]
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)

    print(f"`Memory.context()`, default layout: {args.cards:,} cards ({-(-args.cards // 500)} "
          f"core), knowledge.md at {args.curated:,} curated chars + 500 observations, 4 notebook "
          "entries, 4 state snapshots, journals today and yesterday.\n")  # fmt: skip
    cells = []
    for label, (p50, p95, runs, scans, ctx) in rows.items():
        target = TARGETS.get(label)
        met = "" if target is None else "met" if p50 <= target else "MISSED"
        goal = f"p50 <= {target:g} ms: {met}" if target else ""
        cells.append([label, f"{p50:.1f}", f"{p95:.1f}", runs, scans, *split(ctx), goal])
    table("profile | p50 ms | p95 ms | runs | rescans | tokens | stable | live | target", cells)
    print(f"\nThe first query (the model already loaded by the embedding step) took {first:.0f} "
          f"ms. Vectors: {note}. Tokens: bytes/4.\n\nLayers with the last query:\n")  # fmt: skip
    why = Counter((item.layer, item.reason) for item in query[4].left_out)
    layers = [[r.layer, r.part, r.tokens, r.budget or "", r.included,
               "; ".join(f"{n} {reason}" for (name, reason), n in why.items() if name == r.layer)]
              for r in query[4].layers]  # fmt: skip
    table("layer | part | tokens | budget | included | left out (why)", layers)
    print("\nTokens at boot per layout, fresh from `memdir.init` plus the content added:\n")
    table("layout | profile | tokens | stable | live | layers (tokens) | content added", layouts)


if __name__ == "__main__":
    main()
