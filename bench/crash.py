"""A bounded kill -9 campaign: every acknowledged write survives SIGKILL at any moment.

    .venv/bin/python bench/crash.py [--kills 210] [--seed 12] [--scenario NAME]... [--jobs 2]

Scenarios: save (memory_save through the tools dispatcher), notebook (update_notebook
past the 4-entry cap: evictions), history (activities, their logs, the audit lines),
dream (``dream(force=True)`` over ~200 observations with duplicates), decay (a vault
of 200 cards, a pass every 20 days), reindex (saves with rebuilds between), ingest (a
generic JSON file of several conversations, one past the compaction trigger, two
without timestamps).

Each trial copies the scenario's prepared folder and starts a child, ``bench/crash.py
--child SCENARIO DIR``, which writes and appends one fsynced line to ``ledger.jsonl``
beside DIR per write the API acknowledged (after it returned ok). The parent kills it
with SIGKILL after a delay drawn (seeded): a fifth of them uniformly over the child's
start up (the interpreter, imports, the open: about a second), the others uniformly
over the rest of its run, mid-write (the medians of the start ups and whole runs seen:
runs left alone first, as many at once as trials, then the trials'), then checks:
- the lock is free: a fresh ``FolderLock`` is taken within a second, and a fresh open
  and a write to the store the child wrote (a new notebook key evicts again) succeed
  within a second;
- no temp file is left after that open and write, nor the child's writer marker;
- every acknowledged write is there exactly once (observations by content; notebook
  entries current or in ``archive/notebook/``, archived once; activities, log events and audit lines
  by id; cards whole, their bodies byte for byte; imported conversations complete,
  session and journal, or not marked imported and imported whole by the next run);
- every file parses: section files strictly as UTF-8, cards' frontmatter, session
  lines as JSON, ``PRAGMA integrity_check`` of index.db and history.db;
- ``memory.reindex()`` rebuilds the index and then finds a sample of the writes.
Prints tried (kills) / survived / lost per scenario with what was lost, and totals;
exits 1 if anything was lost. Runs with the hashing embedder (no model).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import memdir
from memdir.files.atomic import TMP_SUFFIX, FolderLock
from memdir.files.cards import Card
from memdir.ingest.detect import parse_file
from memdir.ingest.importer import session_id
from memdir.maintain.decay import decayed
from memdir.testing import FakeClock
from memdir.tools import Tools

SCENARIOS = ("save", "notebook", "history", "dream", "decay", "reindex", "ingest")
LAYOUTS = {"history": "notebook", "decay": "vault"}
LEDGER, CHAT_FILE = "ledger.jsonl", "chats.json"
FILLER = ("the deploy pipeline for the billing service waits on the schema migration; "
          "retry budgets and latency targets were agreed with the platform team. ")  # fmt: skip
WORDS = ["renewal", "budget", "pipeline", "migration", "contract", "invoice", "roadmap",
         "launch", "review", "pricing", "onboarding", "forecast", "vendor", "latency"]  # fmt: skip
DECAY_START, DECAY_STEP_DAYS, DECAY_PASSES = datetime(2026, 1, 1, 9), 20, 10
SAVES, NOTES, ACTIVITIES = 100, 100, 100  # per child: a run of a few seconds
CARDS = 200
SAMPLE = 3  # acknowledged writes looked up after the rebuild, per trial
SECOND = 1.0
STARTUP_SHARE = 0.2  # of the kills, drawn over the start up (imports, the open)


def token(kind: str, n: int) -> str:
    """A word the index keeps whole, unique to one write."""
    return f"crash{kind}{n:04d}"


# -- the child: writes, and a ledger of what was acknowledged -------------------------


class Ledger:
    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def ack(self, **entry: Any) -> None:
        os.write(self.fd, (json.dumps(entry) + "\n").encode())
        os.fsync(self.fd)


def child(scenario: str, folder: Path) -> None:
    ledger = Ledger(folder.parent / LEDGER)
    clock = FakeClock(DECAY_START) if scenario == "decay" else None
    memory = memdir.open(folder, clock=clock, embedder="hashing")
    ledger.ack(opened=time.time())  # not a write: when the start up (imports, open) ended
    CHILDREN[scenario](memory, ledger, clock)


def _save_text(n: int) -> str:
    filler = FILLER * (12 if n % 5 == 0 else 1)  # every fifth about 2 KB: longer writes
    return f"Observation {n}: {token('save', n)} {WORDS[n % len(WORDS)]}. {filler}".strip()


def child_save(memory: memdir.Memory, ledger: Ledger, _: FakeClock | None) -> None:
    tools = Tools(memory)
    for n in range(SAVES):
        result = tools.call("memory_save", {"content": _save_text(n), "tags": ["crash"]})
        if result["ok"]:
            ledger.ack(n=n)


def _note_text(n: int) -> str:
    return f"Step {n} of the rollout: {token('note', n)}; next the {WORDS[n % len(WORDS)]}."


def child_notebook(memory: memdir.Memory, ledger: Ledger, _: FakeClock | None) -> None:
    tools = Tools(memory)
    for n in range(NOTES):
        result = tools.call("update_notebook", {"key": f"task-{n}", "text": _note_text(n)})
        if result["ok"]:
            ledger.ack(n=n)


def child_history(memory: memdir.Memory, ledger: Ledger, _: FakeClock | None) -> None:
    history = memory.history
    for n in range(ACTIVITIES):
        activity = history.start_activity("task", f"Crash task {n} {token('act', n)}")
        ledger.ack(activity=activity, n=n)
        for step in range(3):
            seq = history.log(activity, "text", f"step {step} of {token('act', n)}")
            ledger.ack(activity=activity, seq=seq)
        history.end_activity(activity, summary=f"Finished {token('act', n)}.")
        ledger.ack(activity=activity, ended=True)


def child_dream(memory: memdir.Memory, ledger: Ledger, _: FakeClock | None) -> None:
    report = memory.dream(force=True)
    ledger.ack(dream=report.ran, after=report.observations_after)


def child_decay(memory: memdir.Memory, ledger: Ledger, clock: FakeClock | None) -> None:
    assert clock is not None
    for n in range(DECAY_PASSES):
        report = memory.decay()
        ledger.ack(decay=n, day=clock().date().isoformat(), changed=len(report.changed))
        clock.advance(days=DECAY_STEP_DAYS)


def child_reindex(memory: memdir.Memory, ledger: Ledger, _: FakeClock | None) -> None:
    for n in range(SAVES):
        if memory.knowledge.save(_save_text(n), tags=["crash"]).ok:
            ledger.ack(n=n)
        if n % 20 == 0:
            memory.reindex()
            ledger.ack(reindex=n)


def child_ingest(memory: memdir.Memory, ledger: Ledger, _: FakeClock | None) -> None:
    report = memory.ingest(memory.root.parent / CHAT_FILE)
    ledger.ack(sessions=report.sessions, imported=report.imported)


CHILDREN: dict[str, Callable[[memdir.Memory, Ledger, FakeClock | None], None]] = {
    "save": child_save,
    "notebook": child_notebook,
    "history": child_history,
    "dream": child_dream,
    "decay": child_decay,
    "reindex": child_reindex,
    "ingest": child_ingest,
}


# -- the prepared folders -------------------------------------------------------------


def prepare(scenario: str, where: Path) -> Path:
    """The folder every trial of ``scenario`` starts from (copied per trial)."""
    root = where / scenario / "mem"
    memdir.init(root, layout=LAYOUTS.get(scenario, "default"))
    if scenario in ("dream", "reindex"):
        clock = FakeClock("2026-11-20T09:00:00Z")
        with memdir.open(root, clock=clock, embedder="hashing") as memory:
            for n in range(200 if scenario == "dream" else 120):
                memory.knowledge.save(_seed_text(n), tags=["seed"])
                clock.advance(minutes=7)
    if scenario == "decay":
        for n in range(CARDS):
            folder = root / "vault" / ("crm", "projects", "ideas", "companies")[n % 4]
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"card-{n:03d}.md").write_text(_card_text(n))
    if scenario == "ingest":
        (root.parent / CHAT_FILE).write_text(json.dumps(_chats()))
    with memdir.open(root, embedder="hashing") as memory:
        memory.reindex()
    return root


def _seed_text(n: int) -> str:
    """~200 observations: every third repeats an earlier one word for word, every
    seventh restates one with a different ending (near duplicates), the rest distinct."""
    if n % 3 == 2:
        return _seed_text(n - 2)
    base = n - n % 7 if n % 7 == 6 else n
    word = WORDS[base % len(WORDS)]
    text = f"The {word} owner for team {base} is {token('seed', base)}, agreed in review"
    return text + (" last week." if n % 7 == 6 else ".")


def _card_text(n: int) -> str:
    accessed = DECAY_START.date() - timedelta(days=(n * 7) % 150)
    return (
        f"---\ntype: note\ntags: [crash, {WORDS[n % len(WORDS)]}]\ntier: active\n"
        f"relevance: 1.0\ncreated: 2025-06-01\nlast_accessed: {accessed.isoformat()}\n---\n"
        f"# Card {n}\n\nAbout {token('card', n)}: {FILLER * (1 + n % 3)}\n"
    )


def _chats() -> list[dict[str, Any]]:
    chats = []
    for c, size in enumerate([300, 300, 2100, 300, 300, 300, 300, 300]):
        start = 1764496800 + c * 86400 * 3
        timed = c not in (3, 6)  # two conversations carry no time at all
        messages = []
        for m in range(size):
            message: dict[str, Any] = {
                "role": "user" if m % 2 == 0 else "assistant",
                "content": f"Chat {c} line {m}: {token('chat', c * 10000 + m)} {FILLER[:60]}",
            }
            if timed:
                message["timestamp"] = start + m * 30
            messages.append(message)
        chats.append({"title": f"Planning chat {c}", "id": f"chat-{c}", "messages": messages})
    return chats


# -- one trial --------------------------------------------------------------------------


@dataclass
class Trial:
    scenario: str
    delay: float | None
    """seconds before the SIGKILL; None: leave the child alone (the calibration run)"""
    killed: bool = False
    opened: bool = False
    """the child had opened the folder when it was killed"""
    startup: float = 0.0
    """seconds from the start to the folder opened (imports included)"""
    seconds: float = 0.0
    checking: float = 0.0
    acks: int = 0
    lost: list[str] = field(default_factory=list)


def run_trial(scenario: str, template: Path, workdir: Path, delay: float | None) -> Trial:
    trial = Trial(scenario, delay)
    workdir.mkdir(parents=True)
    folder = workdir / "mem"
    shutil.copytree(template, folder, ignore=shutil.ignore_patterns("writers", "lock"))
    if (template.parent / CHAT_FILE).exists():
        shutil.copy(template.parent / CHAT_FILE, workdir / CHAT_FILE)
    env = {**os.environ, "MEMDIR_EMBEDDER": "hashing", "MEMDIR_HOME": str(workdir / "home")}
    started, wall = time.perf_counter(), time.time()
    with (workdir / "child.err").open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, __file__, "--child", scenario, str(folder)],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
        try:
            process.wait(timeout=delay if delay is not None else 120)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
            process.wait()
    trial.seconds = time.perf_counter() - started
    trial.killed = process.returncode == -signal.SIGKILL
    if not trial.killed and process.returncode != 0:
        tail = (workdir / "child.err").read_text(errors="replace").strip().splitlines()[-3:]
        trial.lost.append(f"child failed ({process.returncode}): {' | '.join(tail)}")
        return trial
    acks = read_ledger(workdir / LEDGER)
    opened = [ack["opened"] for ack in acks if "opened" in ack]
    trial.opened, trial.startup = bool(opened), opened[0] - wall if opened else trial.seconds
    acks = [ack for ack in acks if "opened" not in ack]
    trial.acks = len(acks)
    began = time.perf_counter()
    try:
        check(scenario, folder, acks, trial.lost)
    except Exception as exc:  # a check that cannot even run is a failure to report
        trial.lost.append(f"check failed: {type(exc).__name__}: {exc}")
    trial.checking = time.perf_counter() - began
    shutil.rmtree(workdir, ignore_errors=True)
    return trial


def read_ledger(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data[: data.rfind(b"\n") + 1].splitlines()  # an unfinished line was not acked
    return [json.loads(line) for line in lines]


# -- the checks ---------------------------------------------------------------------------


def check(scenario: str, folder: Path, acks: list[dict[str, Any]], lost: list[str]) -> None:
    lock = FolderLock(folder / ".memdir" / "lock", timeout=SECOND)
    try:
        lock.acquire()
        lock.release()
    except memdir.MemdirError as exc:
        lost.append(f"lock not free: {exc}")
        return
    began = time.perf_counter()
    memory = memdir.open(folder, embedder="hashing")
    try:
        _check_write(scenario, memory, lost)
        took = time.perf_counter() - began
        if took > SECOND:
            lost.append(f"a fresh open and a write took {took:.2f}s")
        _check_no_temp_files(folder, lost)
        _check_files_parse(memory, lost)
        samples = CHECKS[scenario](memory, acks, lost)
        memory.reindex()
        _check_databases(folder, lost)
        for query, paths in samples[:SAMPLE]:
            hits = memory.search(query, k=5, mode="deep")
            if not any(hit.path.startswith(paths) for hit in hits):
                lost.append(f"after reindex, {query!r} not found in {paths}")
    finally:
        memory.close()


def _check_write(scenario: str, memory: memdir.Memory, lost: list[str]) -> None:
    """A write to the store the child was writing, as its next write would have been
    (a new notebook key evicts again; an activity goes to the history and the audit)."""
    text = "A write after the crash: checkwrite0001."
    if scenario == "notebook":
        result = Tools(memory).call("update_notebook", {"key": "after-crash", "text": text})
        ok, reason = result["ok"], result.get("reason")
    elif scenario == "history":
        activity = memory.history.start_activity("task", "After the crash")
        memory.history.end_activity(activity, summary=text)
        ok, reason = True, None
    else:
        written = (memory.vault.write("after-crash", text) if scenario == "decay"
                   else memory.knowledge.save(text))  # fmt: skip
        ok, reason = written.ok, written.reason
    if not ok:
        lost.append(f"a write after the crash was refused: {reason}")


def _check_no_temp_files(folder: Path, lost: list[str]) -> None:
    left = [p for p in folder.rglob(f".*{TMP_SUFFIX}")]
    markers = [p.name for p in (folder / ".memdir" / "writers").glob("*")]
    if left:
        names = ", ".join(p.relative_to(folder).as_posix() for p in left[:3])
        lost.append(f"{len(left)} temp files left after a fresh open and write: {names}")
    if len(markers) > 1:  # this process's own marker only
        lost.append(f"writer markers left: {', '.join(sorted(markers))}")


def _check_files_parse(memory: memdir.Memory, lost: list[str]) -> None:
    root = memory.root
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or rel.startswith(".memdir/"):
            continue
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            lost.append(f"{rel} is not UTF-8: {exc}")
            continue
        if path.suffix == ".jsonl":
            for number, line in enumerate(text.split("\n")[:-1], 1):
                try:
                    json.loads(line)
                except ValueError:
                    lost.append(f"{rel} line {number} is not JSON")
                    break
        elif rel.startswith("vault/") and path.suffix == ".md":
            try:
                Card.parse(text)
            except memdir.MemdirError as exc:
                lost.append(f"{rel} does not parse as a card: {exc}")
    if memory.has("knowledge"):
        ids = [o.id for o in memory.knowledge.observations()]
        if len(ids) != len(set(ids)):
            lost.append("knowledge.md holds an observation id twice")


def _check_databases(folder: Path, lost: list[str]) -> None:
    for name in ("index.db", "history.db"):
        path = folder / ".memdir" / name
        if not path.exists():
            continue
        with sqlite3.connect(path) as db:
            verdict = db.execute("PRAGMA integrity_check").fetchone()[0]
        db.close()
        if verdict != "ok":
            lost.append(f".memdir/{name}: integrity_check says {verdict}")


Samples = list[tuple[str, str]]
"""(query, path prefix a hit must have) for the search after the rebuild"""


def _archive_text(memory: memdir.Memory, kind: str) -> str:
    folder = memory.root / "archive" / kind
    return "".join(p.read_text() for p in sorted(folder.glob("*.md"))) if folder.is_dir() else ""


def check_save(memory: memdir.Memory, acks: list[dict[str, Any]], lost: list[str]) -> Samples:
    counts = Counter(o.content for o in memory.knowledge.observations())
    archived = _archive_text(memory, "knowledge")
    for n in range(SAVES):
        held = counts.get(_save_text(n), 0)
        if held > 1 or (held and token("save", n) in archived):
            lost.append(f"observation {n} is there twice")
    for ack in acks:
        if "n" in ack and counts.get(_save_text(ack["n"]), 0) != 1:
            lost.append(f"acknowledged observation {ack['n']} is missing")
    return [(token("save", ack["n"]), "knowledge.md") for ack in acks[-SAMPLE:] if "n" in ack]


def check_notebook(memory: memdir.Memory, acks: list[dict[str, Any]], lost: list[str]) -> Samples:
    current = {e.key: e.text for e in memory.notebook.entries()}
    agent = [e for e in memory.notebook.entries() if e.managed == "agent"]
    if len(agent) > 4:
        lost.append(f"the notebook holds {len(agent)} agent entries, over its cap of 4")
    notebook_text = (memory.root / "NOTEBOOK.md").read_text()
    archived = _archive_text(memory, "notebook")
    samples: Samples = []
    for ack in acks:
        n = ack["n"]
        word = token("note", n)
        if notebook_text.count(word) > 1:
            lost.append(f"notebook entry {n} is in NOTEBOOK.md twice")
        if current.get(f"task-{n}") != _note_text(n) and word not in archived:
            lost.append(f"acknowledged notebook entry {n} is neither current nor archived")
        if archived.count(word) > 1:
            lost.append(f"notebook entry {n} was archived twice")
        samples.append((word, "NOTEBOOK.md" if f"task-{n}" in current else "archive/notebook"))
    return samples[-SAMPLE:]


def check_history(memory: memdir.Memory, acks: list[dict[str, Any]], lost: list[str]) -> Samples:
    db = memory.history.db  # opened through memdir: a database a kill cut short is migrated
    activities = dict(db.execute("SELECT id, ended_at FROM agent_activities"))
    logs = Counter(db.execute("SELECT activity_id, seq FROM agent_activity_logs"))
    if any(count > 1 for count in logs.values()):
        lost.append("a log event is recorded twice")
    audit = "".join(p.read_text() for p in (memory.root / "daily-logs").glob("*.md"))
    for ack in acks:
        activity = ack["activity"]
        if activity not in activities:
            lost.append(f"acknowledged activity {activity} is missing")
        elif "seq" in ack and logs.get((activity, ack["seq"]), 0) != 1:
            lost.append(f"acknowledged log event {ack['seq']} of {activity} is missing")
        elif ack.get("ended") and activities[activity] is None:
            lost.append(f"acknowledged end of {activity} is missing")
        elif ack.get("ended") and audit.count(f"({activity})") != 1:
            lost.append(f"the audit line of {activity} is there {audit.count(activity)} times")
    for activity in activities:
        if audit.count(f"({activity})") > 1:
            lost.append(f"the audit line of {activity} is there twice")
    ended = [ack for ack in acks if ack.get("ended")]
    for ack in ended[-SAMPLE:]:  # the history is not in the index: its own search finds it
        n = next(a["n"] for a in acks if a["activity"] == ack["activity"] and "n" in a)
        if ack["activity"] not in [a.id for a in memory.history.search(token("act", n))]:
            lost.append(f"the history's search does not find {ack['activity']}")
    return []


def check_dream(memory: memdir.Memory, acks: list[dict[str, Any]], lost: list[str]) -> Samples:
    kept = " ".join((memory.root / "knowledge.md").read_text().split())
    archived = " ".join(_archive_text(memory, "knowledge").split())
    texts = {_seed_text(n) for n in range(200)}
    for text in sorted(texts):
        if text not in kept and text not in archived:
            lost.append(f"seeded observation lost: {text!r}")
    if acks and acks[-1].get("dream") and len(memory.knowledge.observations()) >= 200:
        lost.append("the dream was acknowledged but knowledge.md is as before it")
    return [(token("seed", n), "") for n in (0, 49, 98)]


def check_decay(memory: memdir.Memory, acks: list[dict[str, Any]], lost: list[str]) -> Samples:
    settings = memory.manifest.decay
    day = date.fromisoformat(acks[-1]["day"]) if acks else None
    found = 0
    for n in range(CARDS):
        path = memory.root / "vault" / ("crm", "projects", "ideas", "companies")[n % 4]
        try:
            card = Card.parse((path / f"card-{n:03d}.md").read_text())
        except (FileNotFoundError, memdir.MemdirError) as exc:
            lost.append(f"card {n}: {type(exc).__name__}: {exc}")
            continue
        found += 1
        if card.body != Card.parse(_card_text(n)).body:
            lost.append(f"card {n}'s body changed")
        if day is not None:  # the last acknowledged pass holds: decay only lowers relevance
            _, floor = decayed(Card.parse(_card_text(n)).meta, day, settings)
            if float(card.meta.get("relevance", 1.0)) > floor + 1e-9:
                lost.append(f"card {n} lost the acknowledged decay pass of {day}")
    if memory.vault.unreadable():
        lost.append(f"unreadable cards: {memory.vault.unreadable()[:3]}")
    return [(token("card", n), "vault/") for n in (0, 77, 199)] if found == CARDS else []


def check_reindex(memory: memdir.Memory, acks: list[dict[str, Any]], lost: list[str]) -> Samples:
    return check_save(memory, [ack for ack in acks if "n" in ack], lost)


def check_ingest(memory: memdir.Memory, acks: list[dict[str, Any]], lost: list[str]) -> Samples:
    chats = memory.root.parent / CHAT_FILE
    conversations = parse_file(chats).conversations
    acked = {sid for ack in acks for sid in ack.get("sessions", ())}
    marked = set()
    for conversation in conversations:
        sid = session_id(conversation)
        if _marked(memory, sid, len(conversation.messages)):
            marked.add(sid)
            _complete(memory, conversation, sid, "imported before the kill", lost)
        elif sid in acked:
            lost.append(f"acknowledged conversation {sid} is not there whole")
    report = memory.ingest(chats)  # the next run picks up what the kill cut short
    if report.imported != len(conversations) - len(marked):
        lost.append(
            f"the next run imported {report.imported}, not {len(conversations) - len(marked)}"
        )
    for conversation in conversations:
        _complete(memory, conversation, session_id(conversation), "after the next run", lost)
    return [(token("chat", 20000 + 5), "journal/"), (token("chat", 30000 + 7), "journal/")]


def _marked(memory: memdir.Memory, sid: str, size: int) -> bool:
    """Whether the importer counts the conversation as imported (and skips it)."""
    held = getattr(memory.sessions, "held", None)
    if held is None:  # a memdir before issue 12: a session that exists was imported
        return memory.sessions.exists(sid)
    count = held(sid)
    return count is not None and count >= size


def _complete(
    memory: memdir.Memory, conversation: Any, sid: str, when: str, lost: list[str]
) -> None:
    exported = memory.sessions.export(sid, include_archived=True)["messages"]
    if [m["content"] for m in exported] != [m.content for m in conversation.messages]:
        lost.append(
            f"{sid} {when}: the session holds {len(exported)} of {len(conversation.messages)}"
        )
    sections = sum(
        meta.get("session") == sid
        for day in memory.journal.days()
        for _, meta in memory.journal.sections(day)
    )
    if sections != 1:
        lost.append(f"{sid} {when}: {sections} journal sections, not 1")


CHECKS: dict[str, Callable[[memdir.Memory, list[dict[str, Any]], list[str]], Samples]] = {
    "save": check_save,
    "notebook": check_notebook,
    "history": check_history,
    "dream": check_dream,
    "decay": check_decay,
    "reindex": check_reindex,
    "ingest": check_ingest,
}


# -- the campaign -----------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=210, help="kills in total (default 210)")
    parser.add_argument("--seed", type=int, default=12, help="of the kill delays (default 12)")
    parser.add_argument(
        "--scenario", choices=SCENARIOS, action="append", help="only this one (repeatable)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="trials at once (default 2)")
    parser.add_argument("--trials", action="store_true", help="print every trial too")
    parser.add_argument("--child", nargs=2, metavar=("SCENARIO", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return 0
    scenarios = list(dict.fromkeys(args.scenario)) if args.scenario else list(SCENARIOS)
    rng = random.Random(args.seed)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memdir-crash-") as tmp:
        work = Path(tmp)
        templates = {name: prepare(name, work / "templates") for name in scenarios}
        pool = ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn"))
        with pool:
            counter = iter(range(10**9))

            def submit(name: str, delay: float | None) -> Any:
                place = work / "trials" / f"{name}-{next(counter)}"
                return pool.submit(run_trial, name, templates[name], place, delay)

            # Runs left alone, as many at once as trials will be: how long a run takes
            # and how long its start up, with the machine as busy as in the campaign.
            calibration = {
                name: [submit(name, None) for _ in range(args.jobs)] for name in scenarios
            }
            lengths: dict[str, Trial] = {}
            trials: dict[str, list[Trial]] = {name: [] for name in scenarios}
            calibration_runs = {
                name: [job.result() for job in jobs] for name, jobs in calibration.items()
            }
            for name, runs in calibration_runs.items():
                lengths[name] = max(runs, key=lambda run: run.seconds)
                for run in runs:
                    if run.lost:
                        print(f"{name}: the run left alone already fails: {run.lost[:3]}")
                        trials[name].append(run)
            per = -(-args.kills // len(scenarios))
            for name in scenarios:
                # Start ups and whole runs seen so far (the runs left alone, then every
                # child that opened the folder, or finished before its kill): the kill
                # delays follow their medians as the machine gets busier or quieter.
                starts = [run.startup for run in calibration_runs[name]]
                whole = [run.seconds for run in calibration_runs[name]]
                wanted, tries = per, 0
                while wanted > 0 and tries < 3 * per:
                    startup = statistics.median(starts)
                    span = max(statistics.median(whole), startup + 0.2)
                    batch = min(wanted, 4 * args.jobs)  # small batches: the spread adapts
                    delays = [
                        rng.uniform(0.02, startup)
                        if rng.random() < STARTUP_SHARE
                        else rng.uniform(startup, span)
                        for _ in range(batch)
                    ]
                    jobs = [submit(name, delay) for delay in delays]
                    tries += batch
                    done = [job.result() for job in jobs]
                    trials[name] += done
                    wanted -= sum(trial.killed for trial in done)
                    starts += [t.startup for t in done if t.opened]
                    whole += [t.seconds for t in done if not t.killed and not t.lost]
    seconds = time.perf_counter() - began
    return summarise(trials, lengths, seconds, args)


def summarise(
    trials: dict[str, list[Trial]], lengths: dict[str, Trial], seconds: float, args: Any
) -> int:
    """The table: per scenario the length of a run left alone, kills (tried), those
    after which every check held (survived) and the others (lost), acknowledged
    writes checked, and the mean seconds a trial's checks took. "after open": kills that
    came after the child had opened the folder (the others hit the interpreter's start)."""
    kills = sum(t.killed for runs in trials.values() for t in runs)
    print(f"Crash campaign: {kills} kills, seed {args.seed}, {args.jobs} at once, {seconds:.0f} s")
    row = "{:10} {:>6} {:>6} {:>11} {:>9} {:>5} {:>13} {:>8}"
    heads = ("run", "tried", "after open", "survived", "lost", "acks checked", "check")
    print(row.format("scenario", *heads))
    total = Counter[str]()
    failures = []
    for name, runs in trials.items():
        killed = [t for t in runs if t.killed]
        bad = sum(bool(t.lost) for t in killed)
        acks = sum(t.acks for t in killed)
        check = sum(t.checking for t in killed) / max(len(killed), 1)
        run = f"{lengths[name].seconds:.1f}s"
        opened = sum(t.opened for t in killed)
        cells = (len(killed), opened, len(killed) - bad, bad, acks, f"{check:.2f}s")
        print(row.format(name, run, *cells))
        total.update(tried=len(killed), opened=opened, lost=bad, acks=acks)
        failures += [(name, t) for t in runs if t.lost]
    if args.trials:
        for name, runs in trials.items():
            for t in runs:
                delay = "none" if t.delay is None else f"{t.delay:.2f}s"
                print(f"  {name}: kill after {delay}, ran {t.seconds:.2f}s, killed {t.killed}, "
                      f"opened {t.opened}, {t.acks} acks, {len(t.lost)} problems")  # fmt: skip
    tried, lost = total["tried"], total["lost"]
    print(row.format("total", "", tried, total["opened"], tried - lost, lost, total["acks"], ""))
    for name, trial in failures:
        when = f"killed after {trial.delay:.2f}s" if trial.killed else "not killed"
        print(f"  {name} ({when}): {'; '.join(trial.lost[:4])}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
