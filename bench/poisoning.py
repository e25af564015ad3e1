"""The poisoning flagger (``memdir.safety.poisoning``) on labelled memories: recall per kind
on instruction-like texts, false positives on ordinary memories, on every LoCoMo
and RealMem dev turn, and the cost of one call.

    .venv/bin/python bench/poisoning.py [--data FILE] [--external FILE] [--show]
                                        [--runs 2000] [--no-timing]

``bench/data/poisoning.json`` holds {"instruction": [{"kind", "text"}],
"ordinary": [text]}: 249 instruction-like texts in five kinds (override,
exfiltration, role-play, fake tag, hidden text; templated and hand-written,
some embedded in ordinary notes, some in other languages) and 430 ordinary
memories, most of which use the trigger words innocently. The rules were
tuned on it. ``poisoning_fresh.json`` (62 + 60, other phrasings and domains)
was written before the flagger and measured once before any change: its first
figure is the held-out one. ``--external`` reads a corpus written by others in
bastioncorpus's ``injections.jsonl`` form (``label`` malicious or benign,
``category``, ``text``; MIT, on PyPI: ``pip download bastioncorpus`` and unzip
the wheel; not vendored); its first figure was measured once before the rules
were changed for it. A text counts as flagged when any finding is returned,
whatever its kind. The dev turns are read from ``$MEMDIR_SHARED_BENCH``
(default ``../shared/bench``); a missing file skips its line. Timings are p50 /
p95 of one call, with ``memdir.safety.secrets.find_secrets`` on the same text (which
also runs on every write) as the baseline of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

from timing import measure

from memdir.safety.poisoning import find_instructions
from memdir.safety.secrets import find_secrets

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "poisoning.json"
SHARED = Path(os.environ.get("MEMDIR_SHARED_BENCH", HERE.parent.parent / "shared" / "bench"))
KINDS = ("override", "exfiltration", "role-play", "fake tag", "hidden text")


def locomo_turns() -> list[str]:
    path = SHARED / "locomo10-dev.json"
    if not path.exists():
        return []
    turns = []
    for conversation in json.loads(path.read_text(encoding="utf-8")):
        for key, value in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                turns.extend(turn["text"] for turn in value)
    return turns


def realmem_turns() -> list[str]:
    path = SHARED / "realmem-dev.json"
    if not path.exists():
        return []
    haystacks = json.loads(path.read_text(encoding="utf-8"))["haystacks"]
    sessions = [session for hay in haystacks.values() for session in hay]
    return [turn["text"] for session in sessions for turn in session["turns"]]


def external(path: Path) -> tuple[list[dict[str, str]], list[str]]:
    """An ``injections.jsonl``: (malicious rows as {kind, text}, benign texts)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    bad = [{"kind": r["category"], "text": r["text"]} for r in rows if r["label"] == "malicious"]
    return bad, [r["text"] for r in rows if r["label"] != "malicious"]


def two_kb(texts: list[str], size: int = 2048) -> str:
    out, length = [], 0
    for text in texts:
        out.append(text)
        length += len(text) + 1
        if length >= size:
            break
    return "\n".join(out)[:size]


def show(label: str, text: str) -> None:
    found = "; ".join(f"{f.kind}: {f.excerpt}" for f in find_instructions(text)) or "-"
    print(f"  {label}: {json.dumps(text, ensure_ascii=True)[:110]}\n      -> {found}")


def recall(name: str, items: list[dict[str, str]], kinds: tuple[str, ...], detail: bool) -> None:
    total, flagged = Counter[str](), Counter[str]()
    for item in items:
        total[item["kind"]] += 1
        flagged[item["kind"]] += bool(find_instructions(item["text"]))
    print("| kind | flagged |\n|---|---|")
    for kind in kinds or tuple(sorted(total)):
        if total[kind]:
            print(f"| {kind} | {flagged[kind]}/{total[kind]} ({flagged[kind] / total[kind]:.0%}) |")
    hits, count = sum(flagged.values()), len(items)
    print(f"{name}: recall {hits}/{count} ({hits / count:.1%}); missed {count - hits}")
    if detail:
        for item in items:
            if not find_instructions(item["text"]):
                show(f"missed {item['kind']}", item["text"])


def false_positives(name: str, texts: list[str], detail: bool) -> None:
    if not texts:
        print(f"{name}: not found under {SHARED}", file=sys.stderr)
        return
    wrong = [text for text in texts if find_instructions(text)]
    print(f"{name}: false positives {len(wrong)}/{len(texts)} ({len(wrong) / len(texts):.2%})")
    if detail:
        for text in wrong:
            show("flagged", text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the labelled file")
    parser.add_argument("--external", type=Path, help="an injections.jsonl written by others")
    parser.add_argument("--show", action="store_true", help="print every miss and false positive")
    parser.add_argument("--runs", type=int, default=2000, help="calls per timing")
    parser.add_argument("--no-timing", action="store_true", help="skip the timings")
    args = parser.parse_args()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    instructions, ordinary = data["instruction"], data["ordinary"]

    print(f"{args.data.name}: {len(instructions)} instruction-like, {len(ordinary)} ordinary")
    recall("instruction-like texts", instructions, KINDS, args.show)
    false_positives("ordinary memories", ordinary, args.show)
    if args.external:
        bad, benign = external(args.external)
        print(f"\n{args.external.name}: {len(bad)} malicious, {len(benign)} benign")
        recall("malicious texts", bad, (), args.show)
        false_positives("benign texts", benign, args.show)
    print()
    turns = locomo_turns()
    false_positives("LoCoMo dev turns", turns, args.show)
    false_positives("RealMem dev turns", realmem_turns(), args.show)
    if args.no_timing:
        return 0

    source = turns or ordinary
    samples = {
        "2 KB of LoCoMo turns": two_kb(source),
        "2 KB of ordinary notes (trigger words)": two_kb(ordinary),
        "2 KB of ordinary notes, accented and emoji": two_kb(
            [t.replace("e", "é").replace(" ", " 🙂 ", 1) for t in ordinary]
        ),
        "2 KB of instruction-like texts": two_kb([i["text"] for i in instructions]),
        "one LoCoMo-sized turn (~120 chars)": source[0][:120],
        "200 KB of LoCoMo turns": two_kb(source * 2, 200_000),
    }
    print("\n| text | flagger p50 / p95 ms | secrets scan p50 ms | ratio |\n|---|---|---|---|")
    for label, text in samples.items():
        runs = args.runs if len(text) < 10_000 else max(args.runs // 100, 5)
        flag50, flag95 = measure(lambda _n, t=text: find_instructions(t), runs)
        base50, _ = measure(lambda _n, t=text: find_secrets(t), runs)
        print(f"| {label} | {flag50:.3f} / {flag95:.3f} | {base50:.3f} | {flag50 / base50:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
