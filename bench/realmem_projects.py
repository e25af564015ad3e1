"""How much would knowing a query's project buy on RealMem? Ceilings for a
"thread" part of the ranking, measured before anyone builds one.

    .venv/bin/python bench/realmem_projects.py --keep /tmp/bench-keep/realmem

A RealMem persona's history is a few running projects (``Travel_Planning_2``,
``Fitness_3``...) among unrelated chats (``Enhanced``), and a query continues one
project (rarely two or three): its gold sessions are that project's. Each session's
project is in its ``name``, which memdir never reads; this script reads it to
answer what a perfect thread finder would be worth, so that a thread part is only
tried if its ceiling clears the target. It runs memdir's own search (bench/realmem.py's
retriever, on the folders kept under ``--keep``) once per query and re-ranks the
sessions it returns in several ways, printing recall@10 over sessions for each:

- ``memdir``: as it ranks;
- ``only the gold project's sessions``: memdir's order, every other project's
  session and every chat dropped (the project known perfectly);
- ``the gold project's sessions, newest first``: recency within the right project
  alone, memdir's ranking not used at all;
- ``top hit's project first``: the project of memdir's best project session
  (a finder that trusts the first hit), its sessions first in memdir's order;
- ``fused with recency in ...``: memdir's rank and the session's place among its
  thread's sessions newest first, fused by reciprocal rank (the form a thread part
  in the ranking would take), with the thread the gold project (a perfect finder)
  or the best hit's project (a perfect clustering, a realistic choice).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CHATS = "Enhanced"
"""the name's prefix of a session that belongs to no project"""

Query = dict[str, Any]


def recall(ranked: list[str], gold: list[str], k: int = 10) -> float:
    top = set(ranked[:k])
    return sum(g in top for g in gold) / len(gold)


def fused(ranked: list[str], thread: set[str], order: dict[str, int], weight: float) -> list[str]:
    """``ranked`` re-ranked by 1/(5 + rank) + weight/(5 + place in the thread, newest first)."""
    members = sorted((s for s in ranked if s in thread), key=lambda s: -order[s])
    place = {s: n for n, s in enumerate(members)}
    score = {
        s: 1 / (5 + n) + (weight / (5 + place[s]) if s in place else 0.0)
        for n, s in enumerate(ranked)
    }
    return sorted(ranked, key=lambda s: -score[s])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--keep", required=True, help="the realmem folders (bench/realmem.py --keep)"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    import realmem

    data, retriever = realmem.kept(args.keep)
    project: dict[str, str] = {}
    order: dict[str, int] = {}
    session_of: dict[str, str] = {}
    for sessions in data["haystacks"].values():
        for s in sessions:
            project[s["id"]] = s["name"].split(":")[0]
            order[s["id"]] = s["index"]
            session_of |= {turn["id"]: s["id"] for turn in s["turns"]}

    def sessions_of(q: Query) -> list[str]:
        out: list[str] = []
        for turn in retriever.search(q["haystack"], q, 100):
            if session_of[turn] not in out:
                out.append(session_of[turn])
        return out

    def gold_projects(q: Query) -> set[str]:
        return {project[g] for g in q["gold"]}

    def top_project(ranked: list[str]) -> str | None:
        return next((project[s] for s in ranked if project[s] != CHATS), None)

    def latest_project(q: Query) -> str | None:
        """The project of the newest project session before the query (what a person
        was last working on)."""
        before = [
            s for s in data["haystacks"][q["haystack"]]
            if s["index"] < q["before_index"] and project[s["id"]] != CHATS
        ]  # fmt: skip
        return project[max(before, key=lambda s: s["index"])["id"]] if before else None

    ways: dict[str, Callable[[Query, list[str]], list[str]]] = {
        "memdir": lambda q, r: r,
        "only the gold project's sessions": lambda q, r: [
            s for s in r if project[s] in gold_projects(q)
        ],
        "the gold project's sessions, newest first": lambda q, r: sorted(
            (
                s["id"]
                for s in data["haystacks"][q["haystack"]]
                if s["index"] < q["before_index"] and project[s["id"]] in gold_projects(q)
            ),
            key=lambda s: -order[s],
        ),
        "top hit's project first": lambda q, r: sorted(
            r, key=lambda s: project[s] != top_project(r)
        ),
    }
    for weight in (0.25, 0.5, 1.0):
        ways[f"fused with recency in the gold project, {weight}"] = lambda q, r, w=weight: fused(
            r, {s for s in r if project[s] in gold_projects(q)}, order, w
        )
        ways[f"fused with recency in the top hit's project, {weight}"] = lambda q, r, w=weight: (
            fused(r, {s for s in r if project[s] == top_project(r)}, order, w)
        )
        ways[f"fused with recency in the latest session's project, {weight}"] = (
            lambda q, r, w=weight: fused(
                r, {s for s in r if project[s] == latest_project(q)}, order, w
            )
        )
    totals = dict.fromkeys(ways, 0.0)
    right = latest_right = 0
    missed = elsewhere = 0
    questions = data["questions"]
    for q in questions:
        ranked = sessions_of(q)
        right += top_project(ranked) in gold_projects(q)
        latest_right += latest_project(q) in gold_projects(q)
        lost = [g for g in q["gold"] if g not in ranked[:10]]
        missed += len(lost)
        elsewhere += sum(project[g] != top_project(ranked) for g in lost)
        for name, way in ways.items():
            totals[name] += recall(way(q, ranked), q["gold"])
    print(f"RealMem dev, {len(questions)} queries: recall@10 over sessions\n")
    print("| ranking | R@10 |\n|---|---|")
    for name, total in totals.items():
        print(f"| {name} | {total / len(questions):.3f} |")
    print(f"\nthe top hit's project is a gold session's project for {right / len(questions):.0%}")
    print(
        f"the latest project session's project is a gold session's project for "
        f"{latest_right / len(questions):.0%}"
    )
    print(
        f"memdir's missed gold sessions: {missed}, of another project than the top hit's: "
        f"{elsewhere}"
    )


if __name__ == "__main__":
    main()
