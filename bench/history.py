"""The activity history at size: 100,000 activities and 1,000,000 log events.

    .venv/bin/python bench/history.py [--activities 100000] [--logs-per 10]

Fills a history.db through SQL in large transactions (the API's own inserts
would take minutes and measure nothing new), then times, through the API,
recall search (FTS5 over label, summary, keywords), recent list (with and
without filters), get (one activity with its logs), and a write cycle
(start, 5 logs, end with the offline summary). Prints p50 / p95 in ms.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from timing import measure

from memdir.sqlite import transaction
from memdir.stores.history import ACTIVITY_TYPES, History
from memdir.testing import FakeClock

TOOLS = ["read_file", "edit_file", "run_tests", "search_web", "send_email", "query_db", "deploy"]
TOPICS = [
    "billing",
    "login",
    "invoices",
    "search",
    "onboarding",
    "pricing",
    "reports",
    "alerts",
    "payments",
    "exports",
    "dashboard",
    "migration",
    "cache",
    "webhooks",
    "permissions",
]
VERBS = ["Fix", "Refactor", "Review", "Plan", "Document", "Test", "Ship", "Investigate", "Answer"]


def fill(history: History, activities: int, logs_per: int, rng: random.Random) -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    db = history.db
    for batch in range(0, activities, 10_000):
        rows, logs = [], []
        for n in range(batch, min(batch + 10_000, activities)):
            topic, verb = rng.choice(TOPICS), rng.choice(VERBS)
            tools = rng.sample(TOOLS, 2)
            when = start + timedelta(minutes=15 * n)
            activity_id = f"act-bench-{n}"
            summary = f"The task '{verb} {topic}' succeeded. It used {tools[0]} and {tools[1]}."
            ended = (when + timedelta(minutes=5)).isoformat()
            keys = f"{tools[0]}, {tools[1]}, src/{topic}.py"
            label = f"{verb} the {topic} flow"
            kind = rng.choice(ACTIVITY_TYPES)
            rows.append(
                (activity_id, "bench", kind, label, f"T-{n % 500}", summary, keys,
                 when.isoformat(), ended, 500, 2, 1)
            )  # fmt: skip
            for seq in range(1, logs_per + 1):
                logs.append((activity_id, seq, "text", f"step {seq} of {topic}", json.dumps({}),
                             when.isoformat()))  # fmt: skip
        with transaction(db):
            db.executemany(f"INSERT INTO agent_activities VALUES ({','.join('?' * 12)})", rows)
            db.executemany("INSERT INTO agent_activity_logs VALUES (?, ?, ?, ?, ?, ?)", logs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--activities", type=int, default=100_000)
    parser.add_argument("--logs-per", type=int, default=10)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.db"
        history = History(path, "bench", FakeClock("2027-01-01T00:00:00Z"))
        began = time.perf_counter()
        fill(history, args.activities, args.logs_per, rng)
        filled = time.perf_counter() - began
        queries = [f"{rng.choice(VERBS)} {rng.choice(TOPICS)}" for _ in range(args.runs)]
        since = datetime(2025, 6, 1, tzinfo=UTC)
        rows = [
            ("recall search (FTS5)", measure(lambda n: history.search(queries[n], 10), args.runs)),
            ("recall search, since a date", measure(
                lambda n: history.search(queries[n], 10, since=since), args.runs)),
            ("recall list (recent 20)", measure(lambda n: history.recent(20), args.runs)),
            ("recall list by task id", measure(
                lambda n: history.recent(20, task_id=f"T-{n % 500}"), args.runs)),
            ("recall list by type and date", measure(
                lambda n: history.recent(20, type="chat", since=since), args.runs)),
            ("recall get (activity + logs)", measure(
                lambda n: history.get(f"act-bench-{rng.randrange(args.activities)}"), args.runs)),
            ("write: start + 5 logs + end", measure(lambda n: _cycle(history, n), 50)),
        ]  # fmt: skip
        size = path.stat().st_size / 1e6
    print(f"{args.activities:,} activities, {args.activities * args.logs_per:,} log events "
          f"(filled in {filled:.0f} s, {size:.0f} MB)\n")  # fmt: skip
    print("| operation | p50 ms | p95 ms |\n|---|---|---|")
    for name, (p50, p95) in rows:
        print(f"| {name} | {p50:.2f} | {p95:.2f} |")


def _cycle(history: History, n: int) -> None:
    activity_id = history.start_activity("task", f"Benchmark cycle {n}")
    for step in range(5):
        history.log(activity_id, "tool_start" if step % 2 else "text", f"read_file src/m{step}.py")
    history.end_activity(activity_id)


if __name__ == "__main__":
    main()
