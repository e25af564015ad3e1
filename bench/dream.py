"""The dream's quality check (issue 8): 500 observations in, an offline dream, then what
is left is checked.

    .venv/bin/python bench/dream.py [--seed 7] [--embedder minilm] [--keep DIR]

The generated knowledge.md holds 500 observations:
- 50 facts, each also planted three more times: one exact duplicate (case and
  punctuation changed) and two paraphrases: 150 planted duplicates;
- 30 themes: 3 to 4 distinct facts sharing a tag;
- 10 pairs of facts in the same words with a relation turned round ("prefers email
  over Slack" / "prefers Slack over email");
- distinct single facts to fill the rest, many of them near neighbours that differ
  only in a name or a number (hard negatives for the merge).

After ``memory.dream(force=True, planner="offline")``:
- duplicates merged: planted duplicates that now share a merge group (a merged
  observation's ``merged`` ids, or a promoted line's ids) with their fact;
- false merges: groups holding observations of two different facts;
- recall: every distinct fact still in knowledge.md (not only in the archive), and
  found by ``memory.search`` (normal mode, archive excluded) in the top 5 for its own
  original text: a hit's lines hold the text that now carries it (itself, the merged
  observation, or the promoted line);
- the caps; the run time. Targets: recall 1.0, >= 80% merged, under the caps, <= 10 s.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import memdir
from memdir.dream.plan import normalise
from memdir.testing import FakeClock

PEOPLE = ["Alice", "Bruno", "Chiara", "Dmitri", "Esther", "Farid", "Greta", "Hiro", "Ines",
          "Jonas", "Keiko", "Lars", "Maya", "Nadia", "Omar", "Priya", "Quentin", "Rosa",
          "Sven", "Tomas", "Ulla", "Viktor", "Wanda", "Xavier", "Yara", "Zoe"]  # fmt: skip
CHANNELS = ["email", "Slack", "phone calls", "text messages", "a weekly memo", "video calls"]
SERVICES = ["billing", "search", "auth", "export", "payments", "reporting", "inventory",
            "shipping", "pricing", "notifications"]  # fmt: skip
PROJECTS = ["Atlas", "Borealis", "Cobalt", "Delta", "Ember", "Falcon", "Granite", "Harbor",
            "Iris", "Juniper", "Kestrel", "Lumen"]  # fmt: skip
COMPANIES = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Wonka", "Stark",
             "Tyrell", "Cyberdyne"]  # fmt: skip
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
ENVS = ["staging", "production", "analytics", "archive", "sandbox"]

# Each family: how a fact is said, several ways. The first is the original.
FAMILIES = [
    ("{p} prefers {c} for status updates.",
     ["For status updates, {p} prefers {c}.", "Status updates for {p} should come by {c}.",
      "{p} wants status updates by {c}."]),
    ("The {s} service listens on port {n}.",
     ["Port {n} is where the {s} service listens.", "The {s} service runs on port {n}.",
      "The {s} service is reachable on port {n}."]),
    ("{p} owns the {j} project.",
     ["The {j} project is owned by {p}.", "{p} is the owner of the {j} project.",
      "Ownership of the {j} project sits with {p}."]),
    ("{o} pays its invoices within {n} days.",
     ["Invoices to {o} are paid within {n} days.", "{o} settles invoices within {n} days.",
      "Payment terms for {o}: invoices paid within {n} days."]),
    ("The {e} database is backed up every {d}.",
     ["Every {d} the {e} database gets backed up.", "Backups of the {e} database run every {d}.",
      "The {e} database backup happens every {d}."]),
]  # fmt: skip

THEME_FACTS = [
    "The {t} team holds its standup at {h}:{m:02d}.",
    "{p} joined the {t} team in {y}.",
    "The {t} team tracks its work on the {j} board.",
    "On-call for the {t} team rotates every {n} days.",
]
FILLERS = [
    "Ticket {n} was closed by {p} on {d}.",
    "{p} reviewed pull request {n} for the {s} service.",
    "{o} signed contract {n} for the {j} project.",
    "Release {n}.{k} of the {s} service went out on {d}.",
]

REVERSED = "{p} prefers {a} over {b} for quick questions."
REVERSED_PAIRS = 10


def _values(rng: random.Random, used: set[str]) -> dict[str, object]:
    while True:
        values: dict[str, object] = {
            "p": rng.choice(PEOPLE), "c": rng.choice(CHANNELS), "s": rng.choice(SERVICES),
            "j": rng.choice(PROJECTS), "o": rng.choice(COMPANIES), "d": rng.choice(DAYS),
            "e": rng.choice(ENVS), "n": rng.randint(10, 9999), "k": rng.randint(0, 9),
        }  # fmt: skip
        key = repr(sorted(values.items()))
        if key not in used:
            used.add(key)
            return values


def _exact(text: str, rng: random.Random) -> str:
    """The same text, differently cased and punctuated."""
    variant = text.lower() if rng.random() < 0.5 else text.upper()
    return variant.rstrip(".") + rng.choice(["", "!", " ."])


def generate(rng: random.Random) -> tuple[list[tuple[str, list[str], str]], dict[str, str]]:
    """(text, tags, fact id) in save order, and each fact id's original text."""
    used: set[str] = set()
    rows: list[tuple[str, list[str], str]] = []
    facts: dict[str, str] = {}
    seen_texts: set[str] = set()
    for n in range(50):
        original, paraphrases = FAMILIES[n % len(FAMILIES)]
        while True:
            values = _values(rng, used)
            text = original.format(**values)
            if normalise(text) not in seen_texts:
                break
        seen_texts.add(normalise(text))
        fid = f"fact-{n}"
        facts[fid] = text
        variants = [text, _exact(text, rng)] + [
            p.format(**values) for p in rng.sample(paraphrases, 2)
        ]
        rows += [(v, [], fid) for v in variants]
    for t in range(30):
        tag = f"team-{PROJECTS[t % len(PROJECTS)].lower()}-{t}"
        for f in range(rng.choice([3, 3, 4])):
            values = _values(rng, used)
            text = THEME_FACTS[f].format(t=tag, h=8 + t % 3, m=(t * 5) % 60, y=2015 + t % 10,
                                         **values)  # fmt: skip
            fid = f"theme-{t}-{f}"
            facts[fid] = text
            rows.append((text, [tag], fid))
    r = 0
    while r < REVERSED_PAIRS:  # the same words, the relation turned round
        values = _values(rng, used)
        other = rng.choice([c for c in CHANNELS if c != values["c"]])
        pair = [REVERSED.format(p=values["p"], a=a, b=b)
                for a, b in ((values["c"], other), (other, values["c"]))]  # fmt: skip
        if any(normalise(text) in seen_texts for text in pair):
            continue
        r += 1
        for first, text in zip((values["c"], other), pair, strict=True):
            seen_texts.add(normalise(text))
            fid = f"reversed-{r}-{first}"
            facts[fid] = text
            rows.append((text, [], fid))
    n = 0
    while len(rows) < 500:
        values = _values(rng, used)
        text = FILLERS[n % len(FILLERS)].format(**values)
        n += 1
        if normalise(text) in seen_texts:
            continue
        seen_texts.add(normalise(text))
        fid = f"single-{n}"
        facts[fid] = text
        rows.append((text, [], fid))
    order = list(range(len(rows)))
    rng.shuffle(order)
    return [rows[i] for i in order], facts


_IDS_RE = re.compile(r"<!--\s*((?:obs_\w+\s*)+)-->")


def groups_after(memory: memdir.Memory) -> tuple[list[set[str]], dict[str, str]]:
    """Merge groups (sets of original ids) and, for every id still represented in
    knowledge.md, the text that now carries it."""
    groups: list[set[str]] = []
    carried: dict[str, str] = {}
    text = memory.knowledge.path.read_text(encoding="utf-8")
    for section in memory.knowledge.sections():
        for line in section.text.splitlines():
            found = _IDS_RE.search(line)
            if found:
                ids = set(found.group(1).split())
                groups.append(ids)
                for i in ids:
                    carried[i] = line
    for obs in memory.knowledge.observations():
        meta = re.search(rf"### {obs.id}\n<!--(.*?)-->", text)
        merged = re.search(r"merged: ([^;]+?)\s*(?:;|$)", meta.group(1)) if meta else None
        ids = set(merged.group(1).split()) if merged else {obs.id}
        groups.append(ids)
        for i in ids:
            carried[i] = obs.content
    return groups, carried


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--keep", type=Path, help="write the folder here and keep it")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rows, facts = generate(rng)
    root = args.keep or Path(tempfile.mkdtemp()) / "dream-bench"
    if root.exists():
        shutil.rmtree(root)
    memdir.init(root)
    clock = FakeClock("2026-11-01T09:00:00Z")
    memory = memdir.open(root, clock=clock, embedder=args.embedder)
    fact_of: dict[str, str] = {}
    saved_text: dict[str, str] = {}
    for text, tags, fid in rows:
        clock.advance(minutes=7)
        saved = memory.knowledge.save(text, "fact", tags)
        assert saved.ok, saved
        fact_of[str(saved.key)] = fid
        saved_text[str(saved.key)] = text
    originals = {fid: obs for obs, fid in fact_of.items() if facts[fid] == _text(memory, obs)}
    print(f"saved {len(rows)} observations: {len(facts)} distinct facts", file=sys.stderr)
    memory.index.ensure_vectors()  # as after a day of searches; the dream embeds on its own

    began = time.perf_counter()
    report = memory.dream(force=True, planner="offline")
    seconds = time.perf_counter() - began

    groups, carried = groups_after(memory)
    planted = [obs for obs, fid in fact_of.items() if fid.startswith("fact-")]
    planted_dupes = [obs for obs in planted if originals.get(fact_of[obs]) != obs]
    merged_ok = sum(
        1 for obs in planted_dupes if any(obs in g and originals[fact_of[obs]] in g for g in groups)
    )
    false_merges = [g for g in groups if len({fact_of[i] for i in g if i in fact_of}) > 1]
    present = sum(1 for fid in facts if _present(fid, fact_of, carried))
    found = 0
    missed: list[str] = []
    carriers: dict[str, set[str]] = defaultdict(set)  # fact -> texts that now carry it
    for obs, fid in fact_of.items():
        if obs in carried:
            carriers[fid].add(normalise(_IDS_RE.sub("", carried[obs]).lstrip("- ")))
    for fid, text in facts.items():
        hits = memory.search(text, k=5)
        if any(
            _covers(memory, hit.path, hit.line_start, hit.line_end, carriers[fid]) for hit in hits
        ):
            found += 1
        else:
            missed.append(text)
    usage = memory.knowledge.usage()
    print(f"`memory.dream(force=True, planner='offline')`, embedder {args.embedder}, seed "
          f"{args.seed}: {len(rows)} observations, {len(facts)} distinct facts, "
          f"{len(planted_dupes)} planted duplicates.\n")  # fmt: skip
    print("| measure | value | target |\n|---|---|---|")
    print(f"| planted duplicates merged with their fact | {merged_ok}/{len(planted_dupes)} "
          f"({merged_ok / len(planted_dupes):.0%}) | >= 80% |")  # fmt: skip
    print(f"| merge groups holding two different facts | {len(false_merges)} | 0 |")
    print(f"| distinct facts still in knowledge.md | {present}/{len(facts)} | all |")
    print(f"| distinct facts found by search (top 5, normal mode) | {found}/{len(facts)} "
          f"({found / len(facts):.3f}) | 1.0 |")  # fmt: skip
    print(f"| observations before -> after | {report.observations_before} -> "
          f"{report.observations_after} | |")  # fmt: skip
    print(f"| curated sections / chars | {len(usage.section_chars)} / {usage.total_chars} "
          f"(largest {max(usage.section_chars.values(), default=0)}) | <= 3000 each, "
          f"<= 15000 |")  # fmt: skip
    print(f"| promotions applied / refused (caps) | {len(report.promoted)} / "
          f"{len(report.refused)} | |")  # fmt: skip
    under = not usage.over_sections and not usage.over_total
    print(f"| under the caps | {'yes' if under else 'NO'} | yes |")
    print(f"| run time | {seconds:.2f} s | <= 10 s |")
    for text in missed[:10]:
        print("not found:", text, file=sys.stderr)
    for group in false_merges[:5]:
        print("false merge:", [saved_text[i] for i in group if i in fact_of], file=sys.stderr)
    if args.keep is None:
        shutil.rmtree(root.parent, ignore_errors=True)
    return 0


def _text(memory: memdir.Memory, obs_id: str) -> str:
    found = memory.knowledge.get_observation(obs_id)
    return found.content if found else ""


def _present(fid: str, fact_of: dict[str, str], carried: dict[str, str]) -> bool:
    return any(fact_of.get(obs) == fid and obs in carried for obs in fact_of)


def _covers(memory: memdir.Memory, path: str, start: int, end: int, texts: set[str]) -> bool:
    """Whether the hit's lines hold one of the texts that now carry the fact."""
    got = memory.get(path, start, end)
    return got.ok and any(text and text in normalise(got.text) for text in texts)


if __name__ == "__main__":
    sys.exit(main())
