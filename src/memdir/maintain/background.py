"""Housekeeping while a server runs: ``memdir maintain`` every few minutes, by itself.

An agent host (Claude Desktop, an IDE) starts ``memdir serve`` and keeps it
running; nobody sets up cron for it. ``Housekeeper`` runs ``memdir maintain`` for
the served folder on a timer, each time in a child process: the child opens its
own ``Memory`` (no SQLite handle crosses a thread), takes the same locks as any
other writer, and its output never reaches the server's stdout, which is the
protocol channel over stdio. Nothing due costs a child a few lookups. What a run
changed (a dream, a journal compressed, an intel week rotated) and any failure
are logged to stderr, where MCP hosts keep a server's log.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

FIRST_RUN_AFTER = 60.0
"""seconds after the start before the first run (or the interval, if shorter)"""
LOGGED_JOBS = ("dream", "journals", "intel")
"""jobs worth a log line when they run; decay and the state prune run every day"""


class Housekeeper:
    def __init__(self, root: Path, interval: float, log: IO[str] | None = None) -> None:
        if interval <= 0:
            raise ValueError("the interval must be positive")
        self.root = root
        self.interval = interval
        self.log = log or sys.stderr
        self.runs = 0
        self._stop = threading.Event()
        self._child: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="memdir-maintain", daemon=True)

    def start(self) -> Housekeeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the timer, and a maintain still running (its writes are atomic)."""
        self._stop.set()
        with self._lock:
            if self._child is not None and self._child.poll() is None:
                self._child.terminate()
        self._thread.join(timeout=10)

    def __enter__(self) -> Housekeeper:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _loop(self) -> None:
        wait = min(FIRST_RUN_AFTER, self.interval)
        while not self._stop.wait(wait):
            self.run_once()
            wait = self.interval

    def run_once(self) -> dict[str, Any] | None:
        """One ``memdir maintain --json`` for the folder; its report, or None if it failed."""
        command = [sys.executable, "-m", "memdir", "maintain", "--dir", str(self.root), "--json"]
        with self._lock:
            if self._stop.is_set():
                return None
            self._child = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        out, err = self._child.communicate()
        self.runs += 1
        if self._child.returncode != 0:
            if not self._stop.is_set():
                last = (err.strip().splitlines() or ["no message"])[-1]
                self._say(f"maintain failed (exit {self._child.returncode}): {last}")
            return None
        try:
            report: dict[str, Any] = json.loads(out)
        except json.JSONDecodeError:
            self._say("maintain printed no report")
            return None
        for job in report.get("jobs", []):
            if job.get("ran") and job.get("job") in LOGGED_JOBS:
                self._say(f"{job['job']}: {job.get('summary', '')}")
        return report

    def _say(self, line: str) -> None:
        print(f"memdir serve: {line}", file=self.log, flush=True)
