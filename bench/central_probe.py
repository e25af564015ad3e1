"""Are the sessions a memory keeps coming back to the ones a query needs? (research,
issue 16 phase 10; nothing in ``src`` changes.)

    PYTHONPATH=bench .venv/bin/python bench/central_probe.py --keep /tmp/lead-keep/realmem

RealMem's gold often holds a project's founding session (the one where the plan, the
profile, the tool was set up), which later sessions build on but whose words a chatty
query does not share. A memory can tell such a session without labels: it is *central*,
like many of the sessions after it. This probe gives each session a centrality among
the sessions before the query (the mean of its ``--peers`` best cosines to the other
sessions, each session's vector the mean of its items' vectors, read from the kept
index) and re-ranks memdir's own session ranking by ``1 / (5 + rank) x (1 + g x
centrality')``, centrality' scaled to [0, 1] over the query's candidates, for each
weight ``g`` in turn. Printed: R@10 and All@10 over sessions, as realmem_bench scores.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def session_vectors(db_path: Path) -> dict[str, np.ndarray]:
    """Each file's mean item vector (normalised), by path."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT i.path, v.vector FROM items AS i JOIN vectors AS v "
            "ON v.vector_key = i.vector_key"
        ).fetchall()
    finally:
        db.close()
    sums: dict[str, np.ndarray] = {}
    for path, blob in rows:
        vector = np.frombuffer(blob, dtype=np.float32)
        sums[path] = sums.get(path, 0) + vector
    return {path: v / np.linalg.norm(v) for path, v in sums.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", required=True)
    parser.add_argument("--peers", default="3,5,10")
    parser.add_argument("--weights", default="0.1,0.2,0.3,0.5")
    args = parser.parse_args()
    import realmem

    data, retriever = realmem.kept(args.keep)
    vectors = {
        hid: session_vectors(Path(args.keep) / hid / ".memdir" / "index.db")
        for hid in data["haystacks"]
    }
    path_of: dict[str, str] = {}
    index_of: dict[str, int] = {}
    session_of: dict[str, str] = {}
    for sessions in data["haystacks"].values():
        for s in sessions:
            path_of[s["id"]] = realmem.session_path(s)
            index_of[s["id"]] = s["index"]
            session_of |= {turn["id"]: s["id"] for turn in s["turns"]}
    peers = [int(p) for p in args.peers.split(",")]
    weights = [float(w) for w in args.weights.split(",")]
    ways = ["memdir"] + [f"peers {p}, g {w}" for p in peers for w in weights]
    ways += [f"top {p}, g {w}" for p in peers for w in weights]
    totals = {way: [0.0, 0.0] for way in ways}
    for q in data["questions"]:
        hid = q["haystack"]
        ranked: list[str] = []
        for turn in retriever.search(hid, q, 100):
            if session_of[turn] not in ranked:
                ranked.append(session_of[turn])
        before = [s["id"] for s in data["haystacks"][hid] if s["index"] < q["before_index"]]
        known = [s for s in before if path_of[s] in vectors[hid]]
        matrix = np.stack([vectors[hid][path_of[s]] for s in known])
        sims = matrix @ matrix.T
        np.fill_diagonal(sims, -1.0)
        place = {s: n for n, s in enumerate(known)}
        ordered = -np.sort(-sims, axis=1)
        for way in ways:
            if way == "memdir":
                order = ranked
            else:
                p = int(way.split(",")[0].split()[1])
                w = float(way.split()[-1])
                if way.startswith("peers"):
                    central = {s: float(ordered[place[s], :p].mean()) for s in ranked if s in place}
                else:  # like memdir's first sessions (a second pass at the session level)
                    seeds = [place[s] for s in ranked[:p] if s in place]
                    central = {
                        s: float(
                            np.mean([sims[place[s], t] if t != place[s] else 1.0 for t in seeds])
                        )
                        for s in ranked
                        if s in place
                    }
                low, high = min(central.values()), max(central.values())
                span = max(high - low, 1e-9)
                score = {
                    s: (1 / (5 + n)) * (1 + w * (central.get(s, low) - low) / span)
                    for n, s in enumerate(ranked)
                }
                order = sorted(ranked, key=lambda s: -score[s])
            top = set(order[:10])
            found = sum(g in top for g in q["gold"])
            totals[way][0] += found / len(q["gold"])
            totals[way][1] += found == len(q["gold"])
    n = len(data["questions"])
    print("| ranking | R@10 | All@10 |\n|---|---|---|")
    for way, (r10, all10) in totals.items():
        print(f"| {way} | {r10 / n:.3f} | {all10 / n:.3f} |")


if __name__ == "__main__":
    main()
