"""``memdir decay`` over N cards; the target: 10,000 cards in under 5 s.

    .venv/bin/python bench/decay.py [--cards 10000] [--keep DIR] [--profile]

Writes N cards straight to disk under ``vault/<folder>/`` of a vault-layout
folder: frontmatter as a weekly decay run left it seven days ago (cards
touched since then read relevance 1.0, active), last access spread over the
last 120 days, 1 card in 500 ``core``, a few paragraphs of body with wiki links
and a ``## History``. The index is synced first (``memory.scan()``, as any
search does), so each rewrite updates the index rows the card already has.
Then, through ``memory.decay()``: (a) the first run, (b) again the same day
(idempotent: nothing changes), (c) a day later (every card under 61 days old
changes), (d) ``dry_run`` another day later (nothing written). Checks: a file
is rewritten exactly when decay reports it changed, and every body stays byte
for byte. ``--profile`` prints where run (a)'s time goes. Progress on stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import shutil
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import memdir
from memdir.testing import FakeClock

NOW, TODAY = "2026-11-30T10:00:00Z", date(2026, 11, 30)
LAST_RUN_DAYS = 7  # the previous (weekly) decay run
TARGET_SECONDS, TARGET_CARDS = 5.0, 10_000
FOLDERS = {"crm/clients": "person", "crm/leads": "person", "crm/personal": "person",
           "projects": "project", "companies": "company", "ideas": "idea"}  # fmt: skip
FIRST = ["alice", "bruno", "chloe", "dmitri", "elena", "farid", "greta", "hiro", "ines"]
LAST = ["moreau", "keller", "novak", "silva", "tanaka", "okafor", "berg", "rossi", "larsen"]
WORDS = ["renewal", "budget", "pipeline", "migration", "contract", "invoice", "berlin",
         "roadmap", "launch", "review", "pricing", "onboarding", "churn", "forecast", "hiring",
         "security", "audit", "vendor", "latency", "backlog"]  # fmt: skip
RUNS = [("(a) first run", 0, False), ("(b) same day again", 0, False),
        ("(c) a day later", 1, False), ("(d) dry run, a day later", 1, True)]  # fmt: skip


def tier_for(days: int) -> str:
    return "active" if days <= 7 else "warm" if days <= 21 else "cold" if days <= 60 else "archive"


def card(rng: random.Random, name: str, names: list[str], kind: str, core: bool) -> tuple[str, int]:
    """A card's text and its days since last access."""
    age = rng.randint(0, 120)
    last = TODAY - timedelta(days=age)
    created = last - timedelta(days=rng.randint(0, 400))
    since = max(age - LAST_RUN_DAYS, 0)
    rel, tier = round(max(0.1, 1 - since * 0.015), 3), tier_for(since)
    if core or age < LAST_RUN_DAYS:  # core, or touched after the last run
        rel, tier = 1.0, "core" if core else "active"
    links = rng.sample(names, 2)

    def para() -> str:
        return " ".join(rng.choices(WORDS, k=rng.randint(30, 60))).capitalize() + "."

    history = "\n".join(f"- {created + timedelta(days=d)} (agent-1): {para()[:80]}" for d in (1, 9))
    front = (
        f"---\ntype: {kind}\ntags: [{rng.choice(WORDS)}, {rng.choice(WORDS)}]\n"
        f"created: {created}\nupdated: {created + (last - created) / 2}\nlast_accessed: {last}\n"
        f"access_count: {rng.randint(0, 40)}\nrelevance: {rel}\ntier: {tier}\n"
        f"links: [{links[0]}]\n---\n"
    )
    body = (
        f"# {name.replace('-', ' ').title()}\n\n{para()} Works with [[{links[1]}]].\n\n"
        f"{para()}\n\n{para()}\n\n## History\n{history}\n"
    )
    return front + body, age


def snapshot(paths: list[Path]) -> dict[Path, tuple[int, int, int]]:
    return {p: (s.st_ino, s.st_mtime_ns, s.st_size) for p in paths for s in [os.stat(p)]}


def body(path: Path) -> bytes:
    data = path.read_bytes()
    return data[data.index(b"\n---\n", 3) + 5 :]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cards", type=int, default=TARGET_CARDS)
    parser.add_argument("--keep", type=Path, help="Build the folder here and keep it.")
    parser.add_argument("--profile", action="store_true", help="cProfile run (a).")
    args = parser.parse_args()
    root = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="memdir-decay-"))
    try:
        memdir.init(root, layout="vault")
        rng = random.Random(7)
        names = [f"{rng.choice(FIRST)}-{rng.choice(LAST)}-{n}" for n in range(args.cards)]
        start, ages, paths = time.perf_counter(), {}, []
        for n, name in enumerate(names):
            folder, core = list(FOLDERS)[n % len(FOLDERS)], n % 500 == 0
            text, age = card(rng, name, names, FOLDERS[folder], core)
            paths.append(root / "vault" / folder / f"{name}.md")
            paths[-1].parent.mkdir(parents=True, exist_ok=True)
            paths[-1].write_text(text, encoding="utf-8")
            ages[paths[-1]] = None if core else age
        print(f"wrote {args.cards} cards in {time.perf_counter() - start:.1f}s", file=sys.stderr)
        clock = FakeClock(NOW)
        memory = memdir.open(root, clock=clock, embedder="hashing")
        scan = memory.scan()
        print(f"indexed {len(scan.added)} files in {scan.seconds:.1f}s", file=sys.stderr)
        bodies = {p: body(p) for p in paths}
        rows = []
        for label, days, dry in RUNS:
            clock.advance(days=days)
            before = snapshot(paths)
            profiler = cProfile.Profile() if args.profile and not rows else None
            start = time.perf_counter()
            run = profiler.runcall if profiler else lambda f, **kw: f(**kw)
            report = run(memory.decay, dry_run=dry)
            seconds = time.perf_counter() - start
            after = snapshot(paths)
            rewritten = sum(before[p] != after[p] for p in paths)
            assert report.cards == args.cards, report.cards
            assert rewritten == (0 if dry else len(report.changed)), rewritten
            if label.startswith("(b)"):
                assert not report.changed, f"not idempotent: {len(report.changed)} changed"
            if label.startswith("(c)"):  # under 61 days a day ago: relevance or tier moves
                want = sum(age is not None and age <= 60 for age in ages.values())
                assert len(report.changed) == want, (len(report.changed), want)
            rows.append((label, report.cards, len(report.changed), rewritten, seconds))
            print(f"{label}: {seconds:.2f}s", file=sys.stderr)
            if profiler:
                pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
        assert all(body(p) == bodies[p] for p in paths), "a card body changed"
        memory.close()
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    core = sum(age is None for age in ages.values())
    print(f"`memdir decay` over {args.cards} cards ({core} core), bodies byte-identical after:\n")
    print("| run | cards | changed | rewritten | seconds | cards/s | target |")
    print("|---|---|---|---|---|---|---|")
    for label, cards, changed, rewritten, seconds in rows:
        met = "met" if seconds < TARGET_SECONDS * cards / TARGET_CARDS else "MISSED"
        print(f"| {label} | {cards} | {changed} | {rewritten} | {seconds:.2f} | "
              f"{cards / seconds:,.0f} | < {TARGET_SECONDS:g} s per 10k: {met} |")  # fmt: skip


if __name__ == "__main__":
    main()
