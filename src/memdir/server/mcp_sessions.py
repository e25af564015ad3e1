"""What an MCP host did, kept in the activity history: one ``chat`` activity per client session.

Claude Desktop and Claude Code call memdir's tools but never ``start_activity``, so
the server records for them. A session's activity starts at its first tool call (a
session that only lists tools leaves nothing), labelled with the client's name and
version as its ``initialize`` request gives them (on the 2026 protocol, each
request's envelope). Each call is logged as ``tool_start`` (the tool and its
arguments, summarised: long text cut, credentials redacted) and ``tool_end`` (ok or
refused, the file, the reason), both written in one transaction once the call has
run (so a server killed mid-call leaves no row for that call). The activity ends, with
a summary and keywords from those logs (``memdir.stores.history_digest``), when the
session does: stdio's end of input, an HTTP session its client deletes or leaves idle
past ``IDLE_SECONDS``, the server stopping.

A session is the transport's: over stdio the one client of the process; over HTTP
the ``Mcp-Session-Id`` of the 2025 protocol, or, for the 2026 protocol's
self-contained requests, the client's name and version.

A server killed mid-session cannot end its activities. Each server holds a lock
file, ``.memdir/mcp/<server>.lock``, while it runs and names it in the first log of
each activity; a server starting on the folder ends every open activity whose
server's lock is free (its process is gone) as ended, not failed, with what it had,
and removes the lock files of servers gone with no session open (``STALE_SECONDS``).
A server is alive while it holds its lock, never judged by its pid (which a dead
server's may now name another process by).
Recording never stands in the way of a call: a history that cannot be written (none
declared, a read-only folder, a full disk) leaves the calls unrecorded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import filelock

from memdir.config import STATE_DIR
from memdir.safety.secrets import find_secrets
from memdir.stores.history_digest import summarise
from memdir.tools.schema import INDEX_STORE

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.storage.seam import HistoryStore

log = logging.getLogger("memdir.mcp")

IDLE_SECONDS = 30 * 60.0
"""an HTTP session with no call for this long has ended (the SDK forgets it then too)"""
SERVERS_DIR = "mcp"
"""under ``.memdir``: one lock file per running server"""
STALE_SECONDS = 60.0
"""a free lock file younger than this is left: it may be a starting server's, not yet held"""
TEXT_CHARS = 120
"""an argument's text is cut to this in the log"""
LINE_CHARS = 400
"""a log line's length at most"""
_SCAN_CHARS = 4000  # how much of an argument is searched for credentials (before the cut)


@dataclass
class _Session:
    activity: str
    label: str
    last_call: float
    calls: int = 0
    refused: int = 0


class SessionRecorder:
    """Records the tool calls of each client session of one server as a ``chat`` activity."""

    def __init__(
        self,
        memory: Memory,
        transport: str,
        *,
        idle_seconds: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """``idle_seconds``: end a session after this long without a call (HTTP); None
        never does (stdio: the session is the process)."""
        self.memory = memory
        self.transport = transport
        self.idle_seconds = idle_seconds
        self.monotonic = monotonic
        self.server_id = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._held: filelock.BaseFileLock | None = None
        self.history: HistoryStore | None = self._open()
        if self.history is not None and idle_seconds is not None:
            self._thread = threading.Thread(
                target=self._watch, name="memdir-mcp-sessions", daemon=True
            )
            self._thread.start()

    # -- start and stop ----------------------------------------------------------

    def _open(self) -> HistoryStore | None:
        """The history to record in, once this server's lock is held and the sessions of
        servers that died are ended; None where nothing can be recorded."""
        memory = self.memory
        if memory.read_only is not None or not memory.has("history"):
            return None
        try:
            folder = self._servers_dir()
            folder.mkdir(parents=True, exist_ok=True)
            held = filelock.FileLock(str(folder / f"{self.server_id}.lock"), timeout=0)
            held.acquire()
            self._held = held
            history = memory.history
            self._end_orphans(history)
            self._remove_stale_locks()
        except Exception as exc:  # recording must never stop the server
            log.warning("MCP sessions will not be recorded in the history: %s", exc)
            return None
        return history

    def _servers_dir(self) -> Path:
        return self.memory.root / STATE_DIR / SERVERS_DIR

    def _end_orphans(self, history: HistoryStore) -> None:
        """End the open sessions of servers whose lock is free: killed mid-session."""
        for activity in history.unended(type="chat"):
            detail = history.get(activity.id)
            if detail is None or not detail.logs:
                continue
            server = detail.logs[0].metadata.get("mcp_server")
            if not isinstance(server, str) or server == self.server_id or self._alive(server):
                continue
            history.log(
                activity.id,
                "status",
                "the server stopped before the session ended; ended when the next one started",
                {"mcp_server": server},
            )
            self._end(history, activity.id, activity.label, stopped=True)
            with contextlib.suppress(OSError):
                (self._servers_dir() / f"{server}.lock").unlink()

    def _remove_stale_locks(self) -> None:
        """Remove the lock files of servers gone with no session open (no orphan to end
        removed theirs): free, and older than ``STALE_SECONDS``. Removed while this probe
        holds the lock, so no server can take it meanwhile."""
        now = time.time()
        for path in self._servers_dir().glob("*.lock"):
            if path.name == f"{self.server_id}.lock":
                continue
            try:
                if now - path.stat().st_mtime < STALE_SECONDS:
                    continue
                probe = filelock.FileLock(str(path), timeout=0)
                probe.acquire()
            except (filelock.Timeout, OSError):  # held: its server runs (or gone already)
                continue
            try:
                with contextlib.suppress(OSError):
                    path.unlink()
            finally:
                probe.release()

    def _alive(self, server: str) -> bool:
        path = self._servers_dir() / f"{server}.lock"
        if not path.exists():
            return False
        probe = filelock.FileLock(str(path), timeout=0)
        try:
            probe.acquire()
        except filelock.Timeout:
            return True
        probe.release()
        return False

    def close(self) -> None:
        """End every session (the server is stopping) and let go of the lock."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        with self._lock:
            for key in list(self._sessions):
                self.end(key)
        if self._held is not None:
            self._held.release()
            with contextlib.suppress(OSError):
                Path(self._held.lock_file).unlink()
            self._held = None

    def _watch(self) -> None:
        assert self.idle_seconds is not None
        tick = max(0.05, min(30.0, self.idle_seconds / 4))
        while not self._stop.wait(tick):
            self.end_idle()

    # -- recording ---------------------------------------------------------------

    def call(
        self,
        key: str,
        client: tuple[str, str] | None,
        tool: str,
        arguments: Mapping[str, Any],
        run: Callable[[], dict[str, Any]],
    ) -> dict[str, Any]:
        """Run one tool call (``run``) for the session ``key`` and log it; ``client`` is
        the client's (name, version). The call's result, whatever the history does.

        The call's two rows (``tool_start``, ``tool_end``) are written together once it
        has run, one transaction (a round trip on PostgreSQL) rather than one before and
        one after; a call that raises leaves its ``tool_start`` alone."""
        if self.history is None:
            return run()
        shown = summarise_arguments(arguments)
        try:
            result = run()
        except BaseException:
            self._log(key, client, tool, shown, None)
            raise
        self._log(key, client, tool, shown, result)
        return result

    def _log(
        self,
        key: str,
        client: tuple[str, str] | None,
        tool: str,
        shown: dict[str, Any],
        result: Mapping[str, Any] | None,
    ) -> None:
        history = self.history
        assert history is not None
        events: list[tuple[str, str, dict[str, Any] | None]] = [
            ("tool_start", _line(f"{tool} {_render(shown)}"), {"tool": tool, "arguments": shown})
        ]
        ok = result is not None and bool(result.get("ok"))
        if result is not None:
            meta: dict[str, Any] = {"tool": tool, "ok": ok}
            store = result.get("store")
            if isinstance(store, str) and store != INDEX_STORE:  # the index: no file to name
                meta["store"] = store
            said = "ok" if ok else "refused: " + _cut(str(result.get("reason") or ""), LINE_CHARS)
            events.append(("tool_end", _line(f"{tool} {said}"), meta))
        try:
            with self._lock:
                session = self._sessions.get(key)
                if session is None:
                    session = self._start(history, key, client)
                session.last_call = self.monotonic()
                session.calls += 1
                if result is not None and not ok:
                    session.refused += 1
                history.log_many(session.activity, events)
        except Exception as exc:
            log.warning("could not record the %s call in the history: %s", tool, exc)

    def _start(self, history: HistoryStore, key: str, client: tuple[str, str] | None) -> _Session:
        name, version = client or ("an MCP client", "")
        label = " ".join(f"{name} {version}".split()) + " (MCP)"
        activity = history.start_activity("chat", label)
        history.log(
            activity,
            "status",
            f"{label} connected over {self.transport}",
            {
                "mcp_server": self.server_id,
                "transport": self.transport,
                "client": {"name": name, "version": version},
            },
        )
        session = _Session(activity, label, self.monotonic())
        self._sessions[key] = session
        return session

    def end(self, key: str) -> None:
        """The session ``key`` is over: end its activity (nothing if it made no call)."""
        with self._lock:
            session = self._sessions.pop(key, None)
        if session is None or self.history is None:
            return
        try:
            self._end(self.history, session.activity, session.label, stopped=False)
        except Exception as exc:
            log.warning("could not end the session's activity %s: %s", session.activity, exc)

    def end_idle(self) -> None:
        """End each session with no call for ``idle_seconds``."""
        if self.idle_seconds is None:
            return
        now = self.monotonic()
        with self._lock:
            idle = [k for k, s in self._sessions.items() if now - s.last_call >= self.idle_seconds]
        for key in idle:
            self.end(key)

    def _end(self, history: HistoryStore, activity: str, label: str, *, stopped: bool) -> None:
        detail = history.get(activity)
        logs = detail.logs if detail is not None else ()
        calls = [e for e in logs if e.type == "tool_end"]
        refused = [e for e in calls if e.metadata.get("ok") is False]
        summary = summarise("chat", label, logs, None)
        if refused:
            were = "was" if len(refused) == 1 else "were"
            summary += f" {len(refused)} of its {len(calls)} calls {were} refused."
        if stopped:
            summary += " The server stopped before the session ended."
        history.end_activity(activity, summary=summary, success=True)

    def sessions(self) -> list[str]:
        """The sessions with an open activity (their keys)."""
        with self._lock:
            return list(self._sessions)


# -- what the log shows of a call's arguments ------------------------------------------


def summarise_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as the log keeps them: each text cut to ``TEXT_CHARS`` (with its
    length) and any credential in it replaced by its kind; lists and objects shortened.
    Never the whole of a long text, never a secret."""
    return {str(k)[:40]: _value(v, 0) for k, v in list(arguments.items())[:12]}


def _value(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return value
    if depth >= 2:
        return f"<{type(value).__name__}>"
    if isinstance(value, Mapping):
        return {str(k)[:40]: _value(v, depth + 1) for k, v in list(value.items())[:8]}
    if isinstance(value, (list, tuple)):
        shown = [_value(v, depth + 1) for v in value[:5]]
        if len(value) > 5:
            shown.append(f"... {len(value) - 5} more")
        return shown
    return f"<{type(value).__name__}>"


def _text(value: str) -> str:
    head = value[:_SCAN_CHARS]
    for found in sorted(find_secrets(head), key=lambda f: f.start, reverse=True):
        head = head[: found.start] + f"[{found.kind} redacted]" + head[found.end :]
    if len(value) <= TEXT_CHARS and head == value:
        return value
    if len(head) > TEXT_CHARS or len(value) > _SCAN_CHARS:
        return head[:TEXT_CHARS].rstrip() + f"... ({len(value):,} characters)"
    return head


def _render(arguments: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _line(text: str) -> str:
    return _cut(text, LINE_CHARS)
