"""The body of ``bench/secrets.py`` (run that; its docstring says what is measured).

Kept apart so that ``bench/secrets.py`` can hand an ``import secrets`` from another
bench script the standard library's module.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from secrets_corpus import (
    FRESH,
    LOCOMO,
    NOTES,
    Sample,
    credentials,
    fresh_credentials,
    locomo_turns,
)
from timing import measure

import memdir
from memdir.safety.secrets import find_secrets


def caught(sample: Sample) -> bool:
    start = sample.text.index(sample.secret)
    end = start + len(sample.secret)
    return any(f.start < end and f.end > start for f in find_secrets(sample.text))


def two_kb(texts: list[str]) -> list[str]:
    """Memories of about 2,000 characters, each made of consecutive ``texts``."""
    out, chunk = [], ""
    for text in texts:
        chunk += text + "\n"
        if len(chunk) >= 2000:
            out.append(chunk[:2000])
            chunk = ""
    return out


def store_refusals(samples: list[Sample], notes: list[str]) -> tuple[int, int]:
    """(credentials refused, notes stored) through ``knowledge.save`` on a temp folder."""
    with tempfile.TemporaryDirectory() as tmp:
        memdir.init(Path(tmp) / "mem")
        memory = memdir.open(Path(tmp) / "mem", embedder="hashing")
        refused = sum(
            not result.ok and "Never store credentials" in (result.reason or "")
            for result in (memory.knowledge.save(s.text) for s in samples)
        )
        stored = sum(memory.knowledge.save(note).ok for note in notes)
    return refused, stored


def save_cost(notes: list[str], runs: int) -> float:
    """p50 in microseconds of one ``knowledge.save`` of a 2 KB note (hashing embedder)."""
    with tempfile.TemporaryDirectory() as tmp:
        memdir.init(Path(tmp) / "mem")
        memory = memdir.open(Path(tmp) / "mem", embedder="hashing")
        texts = two_kb(notes * 4)
        return (
            measure(lambda n: memory.knowledge.save(f"{n} {texts[n % len(texts)]}"), runs)[0] * 1000
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument(
        "--per-context", type=int, default=2, help="fresh bodies per kind and context"
    )
    parser.add_argument("--runs", type=int, default=2000, help="timed calls per measurement")
    parser.add_argument("--show", action="store_true", help="print misses and false positives")
    parser.add_argument("--no-store", action="store_true", help="skip the write-path run")
    parser.add_argument("--fresh", action="store_true", help=f"the held-out set, {FRESH.name}")
    args = parser.parse_args()

    began = time.perf_counter()
    find_secrets("warm up: load the rules once")
    first_call_ms = (time.perf_counter() - began) * 1000
    samples = credentials(args.seed, args.per_context)
    notes: list[str] = json.loads(NOTES.read_text(encoding="utf-8"))
    if args.fresh:
        samples, notes = fresh_credentials(args.seed)
    by_kind: dict[str, list[Sample]] = defaultdict(list)
    misses = []
    for sample in samples:
        by_kind[sample.kind].append(sample)
        if not caught(sample):
            misses.append(sample)
    missed_kinds = {s.kind for s in misses}
    kinds = list(dict.fromkeys(s.kind for s in samples))
    print(f"memdir.safety.secrets on {len(samples)} generated credentials of {len(kinds)} kinds "
          f"(seed {args.seed}), {LOCOMO.name} turns and "
          f"{(FRESH if args.fresh else NOTES).name}:\n")  # fmt: skip
    print("| kind | caught | missed in |\n|---|---|---|")
    for kind in kinds:
        group = by_kind[kind]
        hit = sum(s not in misses for s in group)
        where = sorted({s.context for s in misses if s.kind == kind})
        print(f"| {kind} | {hit}/{len(group)} | {', '.join(where)} |")
    recall = 1 - len(misses) / len(samples)

    turns = locomo_turns()
    flagged = {name: [t for t in texts if find_secrets(t)] for name, texts in
               (("LoCoMo dev turns", turns), ("technical notes", notes))}  # fmt: skip
    ordinary = len(turns) + len(notes)
    false_positives = sum(len(v) for v in flagged.values())

    chat, tech = two_kb(turns), two_kb(notes)
    cost = {name: measure(lambda n, t=texts: find_secrets(t[n % len(t)]), args.runs)
            for name, texts in (("chat", chat), ("technical", tech))}  # fmt: skip
    save_us = save_cost(notes, 200)

    print("\n| measure | value | target |\n|---|---|---|")
    full = len(kinds) - len(missed_kinds)
    print(f"| recall | {len(samples) - len(misses)}/{len(samples)} ({recall:.1%}); "
          f"{full}/{len(kinds)} kinds fully caught | >= 95% |")  # fmt: skip
    print(
        f"| false positives | {false_positives}/{ordinary} ({false_positives / ordinary:.2%}) "
        "| <= 0.5% |"
    )
    for name, texts in flagged.items():
        total = len(turns) if name.startswith("LoCoMo") else len(notes)
        print(f"| ... in {name} | {len(texts)}/{total} | |")
    for name, (p50, p95) in cost.items():
        print(f"| find_secrets on a 2 KB {name} memory, p50 / p95 | "
              f"{p50 * 1000:.0f} / {p95 * 1000:.0f} us | a few hundred us |")  # fmt: skip
    print(f"| ... against one knowledge.save of 2 KB ({save_us / 1000:.1f} ms) | "
          f"{cost['technical'][0] * 1000 / save_us:.1%} | |")  # fmt: skip
    print(f"| first call (loads the rules) | {first_call_ms:.1f} ms | |")
    if not args.no_store:
        refused, stored = store_refusals(samples, notes[:100])
        print(f"| refused by knowledge.save | {refused}/{len(samples)} | |")
        print(f"| technical notes stored by knowledge.save | {stored}/100 | 100 |")
    if args.show:
        for sample in misses:
            print(
                f"MISSED {sample.kind} ({sample.context}): {sample.text[:160]!r}", file=sys.stderr
            )
        for name, texts in flagged.items():
            for text in texts:
                kinds = ", ".join(f.kind for f in find_secrets(text))
                print(f"FALSE POSITIVE in {name} ({kinds}): {text[:160]!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
