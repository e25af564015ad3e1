"""Oversized files already on disk: every read path must stay linear in the file's size.

    .venv/bin/python bench/big_files.py [--sizes 1,2,5,10] [--shapes a,b] [--embedder hashing]
                                        [--timeout 120] [--profile SHAPE:MB]

Each case is one fresh default folder with one file written straight to disk
(by hand, by an older version, by an import: no size limit on a write stopped
it), timed in a child process of its own:

- ``open``: ``memdir.open``;
- ``read``: the owning store's read (``knowledge.observations()`` and
  ``sections()``, ``notebook.entries()``, ``state.entries()``, the journal
  day's sections, ``vault.read``, ``sessions.load``);
- ``search``: the first search (rescan, extraction, FTS5 rows, vectors, snippets);
- ``context``: ``memory.context()`` (the default profile);
- ``doctor``: ``memory.doctor()``;
- ``dream``: ``memory.dream(force=True, dry_run=True, planner="offline")``, for
  knowledge.md only (a dry run: the file stays as it was for the save);
- ``save``: one small write to the same file (with its index update).

Shapes: ``knowledge-many`` (observations of ~200 chars), ``knowledge-obs``
(one observation of the whole size), ``knowledge-section`` (one curated
section), ``knowledge-fenced`` (observations, every tenth with a code fence),
``knowledge-crlf`` (CRLF newlines), ``knowledge-long-lines`` (one observation
of 100,000-char lines), ``knowledge-one-line`` (no newline at all), and one
file of each other kind: ``notebook``, ``state``, ``journal``, ``vault``,
``session`` (one JSONL message line of the whole size).

Prints a markdown table of seconds per step, then per shape the seconds per MB
at the largest size and the ratio of the largest to the smallest size's total
(every step but the dream, which works on at most the cap of 500 observations
whatever the size) against the ratio of their sizes (linear: the ratio of sizes, 10x for 10 MB
over 1 MB; quadratic: its square, 100x). A case over ``--timeout`` seconds
shows ``>T`` from the step it was in, and the larger sizes of its shape are
skipped. ``--profile knowledge-obs:5`` runs one case under cProfile in this
process and prints the costliest calls.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path

from timing import once

import memdir
from memdir.memory import Memory

MB = 1_000_000
STEPS = ("open", "read", "search", "context", "doctor", "dream", "save")
STAMP = "2026-11-30T10:00:00Z"
DAY = datetime.now(UTC).date().isoformat()  # today: the journal day is in the context
SESSION_ID = "sess_1764496800000_ab12cd34"
WORDS = (
    "payments",
    "api",
    "webhook",
    "retries",
    "idempotency",
    "key",
    "header",
    "client",
    "job",
    "billing",
    "invoice",
    "customer",
    "refund",
    "ledger",
    "deploy",
    "rollout",
    "canary",
    "region",
    "cache",
    "redis",
    "postgres",
    "index",
    "query",
    "latency",
    "budget",
    "review",
    "merge",
    "branch",
    "release",
    "tag",
    "owner",
    "travel",
    "meeting",
    "notes",
    "alice",
    "bob",
    "carol",
    "dave",
    "acme",
    "globex",
    "initech",
    "umbrella",
    "berlin",
    "paris",
    "tokyo",
    "lisbon",
)


def words(rng: random.Random, chars: int, sep: str = " ") -> str:
    """Seeded words, about ``chars`` characters, joined by ``sep``."""
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + len(sep)
    return sep.join(out)


def lines(rng: random.Random, chars: int, width: int = 90, bullet: str = "") -> str:
    """Seeded lines of about ``width`` chars, about ``chars`` in all, no final newline."""
    out: list[str] = []
    size = 0
    while size < chars:
        line = bullet + words(rng, width)
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def _observations(rng: random.Random, chars: int, newline: str = "\n", fence: bool = False) -> str:
    parts = [f"# Knowledge{newline}{newline}## _observations{newline}"]
    size, n = 0, 0
    while size < chars:
        body = words(rng, 200)
        if fence and n % 10 == 0:
            body += f"{newline}```{newline}## not a heading{newline}```"
        block = (
            f"### obs_{1764496800000 + n}_{n % 0xFFFFFF:06x}{newline}"
            f"<!-- type: fact; date: {STAMP}; tags: billing, api -->{newline}"
            f"{body}{newline}{newline}"
        )
        parts.append(block)
        size += len(block)
        n += 1
    return "".join(parts)


def _one_observation(body: str) -> str:
    return (
        "# Knowledge\n\n## _observations\n### obs_1764496800000_a1b2c3\n"
        f"<!-- type: fact; date: {STAMP} -->\n{body}\n"
    )


def build(shape: str, chars: int, folder: Path) -> tuple[str, str]:
    """Write the case's file into ``folder``; return (relative path, its store)."""
    rng = random.Random(12)
    if shape == "knowledge-many":
        return _put(folder, "knowledge.md", _observations(rng, chars)), "knowledge"
    if shape == "knowledge-fenced":
        return _put(folder, "knowledge.md", _observations(rng, chars, fence=True)), "knowledge"
    if shape == "knowledge-crlf":
        text = _observations(rng, chars, newline="\r\n")
        return _put(folder, "knowledge.md", text), "knowledge"
    if shape == "knowledge-obs":
        return _put(folder, "knowledge.md", _one_observation(lines(rng, chars))), "knowledge"
    if shape == "knowledge-long-lines":
        body = lines(rng, chars, width=100_000)
        return _put(folder, "knowledge.md", _one_observation(body)), "knowledge"
    if shape == "knowledge-section":
        text = (
            f"# Knowledge\n\n## payments\n<!-- updated: {STAMP} -->\n{lines(rng, chars)}\n\n"
            "## _observations\n"
        )
        return _put(folder, "knowledge.md", text), "knowledge"
    if shape == "knowledge-one-line":
        return _put(folder, "knowledge.md", "# Knowledge " + words(rng, chars)), "knowledge"
    if shape == "notebook":
        text = (
            f"# Notebook\n\n## current-task\n<!-- managed: agent; updated: {STAMP} -->\n"
            f"{lines(rng, chars)}\n"
        )
        return _put(folder, "NOTEBOOK.md", text), "notebook"
    if shape == "state":
        text = f"# State\n\n## deploy\n<!-- updated: {STAMP} -->\n{lines(rng, chars)}\n"
        return _put(folder, "state.md", text), "state"
    if shape == "journal":
        text = f"# {DAY}\n\n## Context\n{lines(rng, chars, bullet='- ')}\n"
        return _put(folder, f"journal/{DAY}.md", text), "journal"
    if shape == "vault":
        text = (
            "---\ntype: person\ntags: [client]\ncreated: 2026-11-02\nupdated: 2026-11-30\n"
            "---\n# Alice\n" + lines(rng, chars) + "\n\n## History\n- 2026-11-30 (agent): met\n"
        )
        return _put(folder, "vault/people/alice.md", text), "vault"
    if shape == "session":
        header = {
            "id": SESSION_ID,
            "agentId": "default",
            "startedAt": STAMP,
            "kind": "sess",
            "format": "memdir-session-1",
        }
        message = {"role": "user", "content": lines(rng, chars), "timestamp": STAMP}
        text = json.dumps(header) + "\n" + json.dumps(message) + "\n"
        return _put(folder, f"sessions/{SESSION_ID}.jsonl", text), "sessions"
    raise SystemExit(f"unknown shape {shape!r}; shapes: {', '.join(SHAPES)}")


SHAPES = (
    "knowledge-many", "knowledge-obs", "knowledge-section", "knowledge-fenced",
    "knowledge-crlf", "knowledge-long-lines", "knowledge-one-line",
    "notebook", "state", "journal", "vault", "session",
)  # fmt: skip


def _put(folder: Path, relpath: str, text: str) -> str:
    path = folder / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return relpath


def _read(memory: Memory, store: str) -> object:
    if store == "knowledge":
        return (memory.knowledge.observations(), memory.knowledge.sections())
    if store == "notebook":
        return memory.notebook.entries()
    if store == "state":
        return memory.state.entries()
    if store == "journal":
        return memory.journal.sections(date.fromisoformat(DAY))
    if store == "vault":
        return memory.vault.read("alice", touch=False)
    return memory.sessions.load(SESSION_ID)


def _save(memory: Memory, store: str, shape: str) -> bool:
    if store == "knowledge" and shape == "knowledge-section":
        return memory.knowledge.update("payments", "- Webhooks retry for three days.", "patch").ok
    if store == "knowledge":
        return memory.knowledge.save("The webhook retries for three days.").ok
    if store == "notebook":
        return memory.notebook.update("current-task", "Step 3 of 5: retry the webhook.").ok
    if store == "state":
        return memory.state.set("deploy", "60% of hosts done").ok
    if store == "journal":
        return memory.journal.append("context", "The webhook retries for three days.").ok
    if store == "vault":
        return memory.vault.append_history("alice", "Signed the renewal.").ok
    message = {"role": "assistant", "content": "Noted."}
    return memory.sessions.append_message(SESSION_ID, message).ok


def run_case(shape: str, mb: float, embedder: str, emit: Callable[[str, object], None]) -> None:
    """Build and time one case, calling ``emit(step, seconds)`` as each step ends."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "mem"
        memdir.init(folder)
        _, store = build(shape, int(mb * MB), folder)
        emit("bytes", sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()))
        memory: Memory | None = None

        def opened() -> None:
            nonlocal memory
            memory = memdir.open(folder, embedder=embedder)

        actions: dict[str, Callable[[], object]] = {
            "open": opened,
            "read": lambda: _read(_m(memory), store),
            "search": lambda: _m(memory).search("payments webhook retries"),
            "context": lambda: _m(memory).context(),
            "doctor": lambda: _m(memory).doctor(),
            "dream": lambda: _m(memory).dream(force=True, dry_run=True, planner="offline"),
            "save": lambda: _save(_m(memory), store, shape),
        }
        for step in STEPS:
            if step == "dream" and store != "knowledge":
                continue
            emit("step", step)
            took, outcome = once(actions[step])
            emit(step, took)
            if step == "save" and outcome is not True:
                emit("note", "save refused")
        _m(memory).close()


def _m(memory: Memory | None) -> Memory:
    assert memory is not None
    return memory


def child(case: str, embedder: str) -> None:
    shape, mb = case.split(":")

    def emit(key: str, value: object) -> None:
        print(json.dumps([key, value]), flush=True)

    run_case(shape, float(mb), embedder, emit)


def measure_case(shape: str, mb: float, embedder: str, timeout: float) -> dict[str, object]:
    """Run one case in a child process; a step still running at ``timeout`` is ``>T``."""
    command = [sys.executable, __file__, "--case", f"{shape}:{mb}", "--embedder", embedder]
    result: dict[str, object] = {}
    began = time.monotonic()
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        try:
            out, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
            result["timeout"] = True
    for line in out.splitlines():
        key, value = json.loads(line)
        result[key] = value
    if result.get("timeout"):
        result[str(result.get("step"))] = f">{time.monotonic() - began:.0f}"
    return result


def _seconds(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value if value is not None else "")


def _total(result: dict[str, object]) -> float | None:
    """Every step but the dream, whose cost is bounded by the observation cap, not the size."""
    if result.get("timeout"):
        return None
    steps = [step for step in STEPS if step != "dream"]
    return sum(float(result[step]) for step in steps if isinstance(result.get(step), float))


def report(results: list[tuple[str, float, dict[str, object]]]) -> None:
    print("| shape | MB | " + " | ".join(STEPS) + " | total s (no dream) | open + search s |")
    print("|---|---:|" + "---:|" * (len(STEPS) + 2))
    for shape, mb, result in results:
        total = _total(result)
        first = (
            None
            if total is None
            else float(result.get("open", 0.0)) + float(result.get("search", 0.0))  # type: ignore[arg-type]
        )
        cells = [_seconds(result.get(step)) for step in STEPS]
        note = " (save refused)" if result.get("note") else ""
        print(
            f"| {shape}{note} | {mb:g} | " + " | ".join(cells) + f" | {_seconds(total)} | "
            f"{_seconds(first)} |"
        )
    print()
    print("| shape | s per MB (largest done) | total ratio largest / smallest done | size ratio |")
    print("|---|---:|---:|---:|")
    shapes = dict.fromkeys(shape for shape, _, _ in results)
    for shape in shapes:
        done = [
            (mb, total)
            for name, mb, result in results
            if name == shape and (total := _total(result)) is not None
        ]
        if not done:
            print(f"| {shape} | timeout | timeout | |")
            continue
        (small, first), (large, last) = min(done), max(done)
        ratio = f"{last / first:.1f}x" if large > small and first > 0 else ""
        print(f"| {shape} | {last / large:.3f} | {ratio} | {large / small:g}x |")


def profile(case: str, embedder: str) -> None:
    shape, mb = case.split(":")
    profiler = cProfile.Profile()

    def emit(key: str, value: object) -> None:
        if key == "step" and value == "open":
            profiler.enable()
        elif key in STEPS:
            print(f"{key}: {value:.3f} s", file=sys.stderr)

    run_case(shape, float(mb), embedder, emit)
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(25)
    stats.sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,2,5,10", help="MB, comma-separated")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--embedder", default="hashing", help="minilm, hashing or none")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    parser.add_argument("--profile", help="SHAPE:MB, run once under cProfile")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        child(args.case, args.embedder)
        return
    if args.profile:
        profile(args.profile, args.embedder)
        return
    sizes = [float(size) for size in args.sizes.split(",")]
    results = []
    for shape in args.shapes.split(","):
        for mb in sizes:
            if results and results[-1][0] == shape and results[-1][2].get("timeout"):
                results.append((shape, mb, {"timeout": True, "open": "skipped"}))
                continue  # a smaller size already timed out
            result = measure_case(shape, mb, args.embedder, args.timeout)
            results.append((shape, mb, result))
            print(f"{shape} {mb:g} MB: {result}", file=sys.stderr, flush=True)
    print(f"embedder: {args.embedder}; timeout {args.timeout:g} s per case\n")
    report(results)


if __name__ == "__main__":
    main()
