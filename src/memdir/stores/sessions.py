"""The current episode: one append-only JSON Lines file per conversation session.

``sessions/{id}.jsonl`` holds a header line ``{"id", "agentId", "startedAt", "kind",
"format": "memdir-session-1"}``, then one JSON message per line. Ids are
``{prefix}{ms}_{rand}``; the prefix names the kind (``SESSION_KINDS``).

Invariants:
- An append takes the folder lock and adds whole lines at the end of the file
  (``Files.append``: ``O_APPEND`` and an fsync on disk, one statement in the lock's
  transaction on postgres); nothing is rewritten. The message count is cached on
  the file's ``Files.stamp``: while this store is the only writer it never reads the
  file again; after another writer's change it reads it once.
- A line without its newline (a crash mid-append) was never acknowledged:
  ``load`` ignores it and the next append truncates it first.
- ``lastActivityAt`` is the last message's ``timestamp`` (the clock's when a
  message has none), else ``startedAt``.
- Text content over ``SESSION_STORAGE_TOOL_SHRINK_CHARS`` goes whole to
  ``tool-outputs/{id}-{n}.txt`` first; the line keeps its head and tail (4% and
  2% of that limit) and a ``contentRef``. ``export`` puts the full text back.
- At ``SESSION_STORAGE_COMPACT_TRIGGER`` messages the oldest go, as the same raw
  lines, to ``archive/sessions/{id}.jsonl`` (fsynced) before the session is
  rewritten atomically with the newest ``KEEP``. Its header then records
  ``archived`` and ``archiveBytes``, so lines a crash left in both places are
  recognised at the next compaction and by ``export``, never doubled.
- ``write_whole`` (imports) writes a session in one atomic replace, its
  tool outputs and archive first: the file appears with every message or not at
  all, and its header records how many (``imported``), so ``held`` tells a
  complete import from a partial one an older memdir left, without reading it.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from memdir.config import AGENT_ID_RE
from memdir.errors import MemdirError, WriteRefused
from memdir.results import WriteResult
from memdir.safety.secrets import secret_refusal
from memdir.stores.base import StoreContext
from memdir.timeutil import format_ts, parse_ts

SESSION_STORAGE_COMPACT_TRIGGER = 2000
SESSION_STORAGE_COMPACT_KEEP = 1000
SESSION_STORAGE_TOOL_SHRINK_CHARS = 100_000
FORMAT = "memdir-session-1"
SESSION_KINDS = {"sess": "sess_", "heartbeat": "hb_", "a2a": "a2a_", "comment": "comment_",
                 "sys": "sys_", "task": "task_"}  # fmt: skip
ROLES = ("user", "assistant", "system", "tool")
SESSION_ID_RE = re.compile(r"(sess|hb|a2a|comment|sys|task)_[0-9A-Za-z_-]{1,180}")
_KIND_OF_PREFIX = {prefix: kind for kind, prefix in SESSION_KINDS.items()}
_NEVER = datetime.min.replace(tzinfo=UTC)
_json = partial(json.dumps, separators=(",", ":"), allow_nan=False)


class UnknownSession(MemdirError, LookupError):
    """No session file has this id (or the id is not a session id at all)."""


@dataclass(frozen=True)
class SessionInfo:
    id: str
    kind: str
    agent_id: str | None
    started_at: str
    last_activity_at: str
    messages: int
    """messages in the session file; ``archived`` more were compacted away"""
    archived: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "agentId": self.agent_id,
                "startedAt": self.started_at, "lastActivityAt": self.last_activity_at,
                "messages": self.messages, "archived": self.archived}  # fmt: skip


@dataclass(frozen=True)
class _Tail:
    stamp: tuple[int, ...]  # the file's Files.stamp when this was true of it
    end: int  # offset just past the last complete line
    count: int  # complete message lines, header excluded
    header: dict[str, Any]
    last: bytes  # the last complete line


def _valid_id(session_id: object) -> bool:
    return isinstance(session_id, str) and SESSION_ID_RE.fullmatch(session_id) is not None


def _kind_name(kind: str) -> str:
    name = kind if kind in SESSION_KINDS else _KIND_OF_PREFIX.get(kind.rstrip("_") + "_")
    if name is None:
        raise ValueError(f"unknown session kind {kind!r}; use one of {', '.join(SESSION_KINDS)}")
    return name


def _dumps(value: Any) -> bytes:
    try:
        return _json(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:  # a lone surrogate: escape it rather than fail
        return _json(value).encode()


def _loads(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line.decode("utf-8", "surrogatepass"))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _strings(item)]


def _lines(data: bytes) -> list[bytes]:
    """The lines of ``data`` that end in a newline; an unfinished last one is left out."""
    return data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]


def _joined(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


class SessionStore:
    """Conversation sessions under ``folder``: create, append, load, export, list."""

    def __init__(
        self,
        ctx: StoreContext,
        folder: str = "sessions",
        *,
        outputs: str = "tool-outputs",
        compact_trigger: int = SESSION_STORAGE_COMPACT_TRIGGER,
        compact_keep: int = SESSION_STORAGE_COMPACT_KEEP,
        shrink_chars: int = SESSION_STORAGE_TOOL_SHRINK_CHARS,
    ) -> None:
        if not 0 < compact_keep < compact_trigger:
            raise ValueError("compact_keep must be positive and below compact_trigger")
        self.ctx = ctx
        self.folder, self.outputs = folder.strip("/"), outputs.strip("/")
        self.archive_folder = f"{ctx.manifest.archive_dir()}/sessions"
        self.compact_trigger, self.compact_keep = compact_trigger, compact_keep
        self.shrink_chars = shrink_chars
        self._tails: dict[str, _Tail] = {}
        self._files = ctx.files

    def relpath(self, session_id: str) -> str:
        return f"{self.folder}/{session_id}.jsonl"

    def _path(self, session_id: str) -> str:
        return self.relpath(session_id)

    def _archive_path(self, session_id: str) -> str:
        return f"{self.archive_folder}/{session_id}.jsonl"

    def kind_of(self, session_id: str) -> str:
        if not _valid_id(session_id):
            raise ValueError(f"{session_id!r} is not a session id (e.g. sess_1764496800000_ab12)")
        return _KIND_OF_PREFIX[session_id.split("_", 1)[0] + "_"]

    def create(
        self,
        kind: str = "sess",
        *,
        agent_id: str | None = None,
        session_id: str | None = None,
        started_at: datetime | None = None,
    ) -> str:
        """Start a session; return its id. Raises ``WriteRefused`` for a bad or taken id."""
        name = _kind_name(kind)
        started = started_at or self.ctx.clock()
        agent = self.ctx.manifest.agent if agent_id is None else agent_id
        if not AGENT_ID_RE.fullmatch(agent):
            raise WriteRefused(self.folder, f"agent id {agent!r} must be letters, digits, . _ -")
        if session_id is not None and not _valid_id(session_id):
            raise WriteRefused(self.folder, f"{session_id!r} is not a valid session id")
        if session_id is not None and kind != "sess" and self.kind_of(session_id) != name:
            raise WriteRefused(self.folder, f"{session_id!r} is not a {name} session id")
        with self.ctx.lock:
            sid = session_id
            stamp = f"{SESSION_KINDS[name]}{int(started.timestamp() * 1000)}_"
            while sid is None:  # a generated id: draw again on a clash
                sid = stamp + secrets.token_hex(4)
                sid = None if self._exists(sid) else sid
            if self._exists(sid):
                raise WriteRefused(self.relpath(sid), f"session {sid} already exists")
            header = {"id": sid, "agentId": agent, "startedAt": format_ts(started),
                      "kind": self.kind_of(sid), "format": FORMAT}  # fmt: skip
            self._files.write_all([(self._path(sid), _dumps(header) + b"\n")])
        return sid

    def _exists(self, session_id: str) -> bool:
        exists = self.ctx.exists
        return exists(self._path(session_id)) or exists(self._archive_path(session_id))

    def exists(self, session_id: str) -> bool:
        """True if the session (or its archived part) is on disk."""
        return _valid_id(session_id) and self._exists(session_id)

    def held(self, session_id: str) -> int | None:
        """How many messages the session holds, archived ones included (one written
        whole: how many it was written with); None if there is no session file, 0 if
        the file has no header line."""
        if not _valid_id(session_id):
            return None
        data = self._files.read(self._path(session_id))
        if data is None:
            return None
        first, newline, rest = data.partition(b"\n")
        header = _loads(first) if newline else None
        if header is None:
            return 0
        if isinstance(header.get("imported"), int):  # written whole: no need to count
            return int(header["imported"])
        lines = _lines(rest)
        return int(header.get("archived", 0)) + sum(_loads(line) is not None for line in lines)

    def check_messages(self, session_id: str, messages: list[dict[str, Any]]) -> str | None:
        """Why ``write_whole`` or ``append_messages`` would refuse these messages, or None:
        callers that write elsewhere first (an import's journal) ask before they do."""
        try:
            for message in messages:
                self._check(session_id, message)
        except ValueError as exc:
            return str(exc)
        return None

    def write_whole(
        self,
        session_id: str,
        messages: list[dict[str, Any]],
        *,
        started_at: datetime | None = None,
        agent_id: str | None = None,
    ) -> WriteResult:
        """Write a whole session at once (an import), replacing any file of that id (a
        partial one an interrupted import left): every message is checked first; big
        contents go to tool-outputs and, past the compaction trigger, the oldest to the
        archive, and then the session file in one atomic replace, so it appears
        complete or not at all. A refusal writes nothing."""
        store = self.relpath(session_id) if _valid_id(session_id) else self.folder
        agent = self.ctx.manifest.agent if agent_id is None else agent_id
        if not AGENT_ID_RE.fullmatch(agent):
            return WriteResult.refused(store, f"agent id {agent!r} must be letters, digits, . _ -")
        try:
            records = [self._check(session_id, message) for message in messages]
        except ValueError as exc:
            return WriteResult.refused(store, str(exc))
        started = started_at or self.ctx.clock()
        header: dict[str, Any] = {"id": session_id, "agentId": agent,
                                  "startedAt": format_ts(started),
                                  "kind": self.kind_of(session_id), "format": FORMAT}  # fmt: skip
        path, notes, archive = self._path(session_id), [], None
        with self.ctx.lock:
            for n, record in enumerate(records):
                content = record["content"]
                if isinstance(content, str) and len(content) > self.shrink_chars:
                    notes.append(self._shrink(session_id, n, record, content, overwrite=True))
            lines = [_dumps(record) for record in records]
            if len(lines) >= self.compact_trigger:
                old, lines = lines[: -self.compact_keep], lines[-self.compact_keep :]
                archived = _joined([_dumps(header), *old])
                self._files.write_all([(self._archive_path(session_id), archived)])
                header.update(archived=len(old), archiveBytes=len(archived))
                archive = self._archive_path(session_id)
            header["imported"] = len(records)
            whole = _joined([_dumps(header), *lines])
            self._files.write_all([(path, whole)])  # last: the import is done
            self._tails.pop(path, None)
        return WriteResult(
            True, store, "saved", key=session_id, archive=archive, notes=tuple(notes)
        )

    def session_files(self, session_id: str) -> list[str]:
        """Every file of a session (memory-folder paths): itself, its archive, its kept
        tool outputs."""
        if not _valid_id(session_id):
            return []
        own = (self._path(session_id), self._archive_path(session_id))
        found = [p for p in own if self.ctx.exists(p)]
        mine = f"{self.outputs}/{session_id}-"
        return found + [
            p for p in self._files.paths(self.outputs)
            if p.startswith(mine) and p.endswith(".txt") and "/" not in p[len(mine) :]
        ]  # fmt: skip

    def files(self, session_id: str) -> list[Path]:
        """``session_files`` on disk (a local folder's)."""
        return [self.ctx.root / p for p in self.session_files(session_id)]

    def append_message(self, session_id: str, message: dict[str, Any]) -> WriteResult:
        """Append one message, O(1) in the session's length; a refusal writes nothing."""
        return self.append_messages(session_id, [message])

    def append_messages(self, session_id: str, messages: list[dict[str, Any]]) -> WriteResult:
        """Append messages in one write and one fsync (imports); all or none."""
        store = self.relpath(session_id) if _valid_id(session_id) else self.folder
        try:
            records = [self._check(session_id, message) for message in messages]
        except ValueError as exc:
            return WriteResult.refused(store, str(exc))
        path, notes = self._path(session_id), []
        with self.ctx.lock:
            try:
                tail, size = self._refresh(path)
            except UnknownSession as exc:
                return WriteResult.refused(store, str(exc))
            if tail is None:
                return WriteResult.refused(store, f"no session {session_id}; create it first")
            if size > tail.end:
                data = self._files.read(path) or b""
                self._files.write_all([(path, data[: tail.end])])
                notes.append(f"dropped an unfinished line ({size - tail.end} bytes) left "
                             "by an interrupted append")  # fmt: skip
            first = int(tail.header.get("archived", 0)) + tail.count
            for n, record in enumerate(records, start=first):
                content = record["content"]
                if isinstance(content, str) and len(content) > self.shrink_chars:
                    notes.append(self._shrink(session_id, n, record, content))
            lines = [_dumps(record) for record in records]
            if lines:
                data = b"".join(line + b"\n" for line in lines)
                self._files.append(path, data)
                stamp = self._files.stamp(path)
                assert stamp is not None
                tail = replace(
                    tail,
                    stamp=stamp,
                    end=tail.end + len(data),
                    count=tail.count + len(lines),
                    last=lines[-1],
                )
                self._tails[path] = tail
            compacted = tail.count >= self.compact_trigger
            if compacted:
                notes.append(self._compact(session_id, path))
        archive = f"{self.archive_folder}/{session_id}.jsonl" if compacted else None
        return WriteResult(
            True, store, "saved", key=session_id, archive=archive, notes=tuple(notes)
        )

    def _check(self, session_id: str, message: Any) -> dict[str, Any]:
        """A copy of ``message`` ready to store, or ValueError saying what to fix."""
        if not _valid_id(session_id):
            raise ValueError(f"{session_id!r} is not a session id (e.g. sess_1764496800000_ab12)")
        if not isinstance(message, dict):
            raise ValueError(f"a message must be an object, not {type(message).__name__}")
        if message.get("role") not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {message.get('role')!r}")
        if not isinstance(message.get("content"), str | list):
            raise ValueError("message content must be a string or a list of parts")
        record = dict(message)
        stamp = record.setdefault("timestamp", format_ts(self.ctx.clock()))
        if not isinstance(stamp, str) or parse_ts(stamp) is None:
            raise ValueError(f"timestamp {stamp!r} is not an ISO time like 2026-11-30T10:00:00Z")
        texts = _strings({k: v for k, v in record.items() if k not in ("role", "timestamp")})
        reason = secret_refusal("\n".join(texts))
        if reason is not None:
            raise ValueError(reason)
        try:
            _dumps(record)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"message is not JSON: {exc}") from None
        return record

    def _refresh(self, path: str) -> tuple[_Tail | None, int]:
        """Header, message count and last line of the session file (None: no file), and
        its size; read only when it changed since this store last knew it."""
        stamp = self._files.stamp(path)
        if stamp is None:
            self._tails.pop(path, None)
            return None, 0
        known = self._tails.get(path)
        if known is not None and known.stamp == stamp:
            return known, known.end
        data = self._files.read(path)
        if data is None:
            return None, 0
        lines = _lines(data)
        header = _loads(lines[0]) if lines else None
        if header is None:
            raise UnknownSession(f"{PurePosixPath(path).name} has no session header line")
        end = sum(len(line) + 1 for line in lines)
        known = _Tail(stamp, end, len(lines) - 1, header, lines[-1])
        self._tails[path] = known
        return known, len(data)

    def _shrink(
        self, session_id: str, n: int, record: dict[str, Any], content: str, overwrite: bool = False
    ) -> str:
        """Write ``content`` whole to tool-outputs, keep its head and tail in ``record``
        (``overwrite``: the session is written whole, so message ``n``'s output is its own)."""
        ref, extra = f"{self.outputs}/{session_id}-{n}.txt", 1
        while not overwrite and self.ctx.exists(ref):  # never overwrite a kept output
            extra += 1
            ref = f"{self.outputs}/{session_id}-{n}-{extra}.txt"
        self._files.write_all([(ref, content.encode("utf-8", "surrogatepass"))])
        keep = self.shrink_chars // 50
        head, tail = content[: 2 * keep], content[len(content) - keep :]
        moved = len(content) - len(head) - len(tail)
        record["content"] = f"{head}\n[... {moved} chars moved to {ref} ...]\n{tail}"
        record["contentRef"] = ref
        return f"content of {len(content)} chars saved whole to {ref}; the session keeps its ends"

    def _compact(self, session_id: str, path: str) -> str:
        """Archive the oldest messages, then rewrite the session with the newest KEEP."""
        header_line, *messages = _lines(self._files.read(path) or b"")
        header = _loads(header_line) or {}
        old, kept = messages[: -self.compact_keep], messages[-self.compact_keep :]
        archive = self._archive_path(session_id)
        existing = self._files.read(archive)
        if existing is None:
            archived = _joined([header_line, *old])
            self._files.write_all([(archive, archived)])
            archive_bytes = len(archived)
        else:  # bytes past archiveBytes: a compaction that crashed before the rewrite
            start = int(header.get("archiveBytes", 0)) or existing[:65536].find(b"\n") + 1
            leftover = existing[start:]
            whole = leftover[: leftover.rfind(b"\n") + 1] if leftover else leftover
            done = _lines(whole)
            new = old[len(done) :] if done == old[: len(done)] else old
            if len(whole) != len(leftover):  # an unfinished line: cut it off first
                self._files.write_all([(archive, existing[: start + len(whole)])])
            self._files.append(archive, _joined(new))
            archive_bytes = start + len(whole) + len(_joined(new))
        header.update(archived=int(header.get("archived", 0)) + len(old),
                      archiveBytes=archive_bytes)  # fmt: skip
        self._files.write_all([(path, _joined([_dumps(header), *kept]))])
        self._tails.pop(path, None)
        return f"compacted: the oldest {len(old)} messages moved to {archive}; {len(kept)} kept"

    def _read(self, session_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        if not _valid_id(session_id):
            raise UnknownSession(f"{session_id!r} is not a session id")
        data = self._files.read(self._path(session_id))
        if data is None:
            raise UnknownSession(f"no session {session_id}")
        lines = _lines(data)
        header = _loads(lines[0]) if lines else None
        if header is None:
            raise UnknownSession(f"{self.relpath(session_id)} has no session header line")
        return header, [m for m in map(_loads, lines[1:]) if m is not None]

    @staticmethod
    def _shape(header: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
        started = header.get("startedAt")
        last = messages[-1].get("timestamp", started) if messages else started
        return {"id": header.get("id"), "agentId": header.get("agentId"), "messages": messages,
                "startedAt": started, "lastActivityAt": last}  # fmt: skip

    def load(self, session_id: str) -> dict[str, Any]:
        """``{id, agentId, messages, startedAt, lastActivityAt}`` as on disk."""
        return self._shape(*self._read(session_id))

    def export(self, session_id: str, *, include_archived: bool = False) -> dict[str, Any]:
        """As ``load`` with shrunk contents restored and, optionally, archived messages first."""
        header, messages = self._read(session_id)
        done = int(header.get("archiveBytes", 0))  # later bytes: a crashed compaction's
        if include_archived and done:
            kept = self._files.read(self._archive_path(session_id))
            archived = _lines(kept[:done])[1:] if kept is not None else []
            messages = [m for m in map(_loads, archived) if m is not None] + messages
        return self._shape(header, [self._restore(message) for message in messages])

    def _restore(self, message: dict[str, Any]) -> dict[str, Any]:
        ref = message.get("contentRef")
        if not isinstance(ref, str) or not ref.startswith(f"{self.outputs}/") or ".." in ref:
            return message
        data = self._files.read(ref)
        try:
            content = data.decode("utf-8", "surrogatepass") if data is not None else None
        except UnicodeDecodeError:
            return message
        if content is None:
            return message
        return {**{k: v for k, v in message.items() if k != "contentRef"}, "content": content}

    def list(self, kind: str | None = None) -> list[SessionInfo]:
        """Sessions, newest activity first (optionally of one kind)."""
        prefix = None if kind is None else SESSION_KINDS[_kind_name(kind)]
        found: list[SessionInfo] = []
        for rel in self._files.paths(self.folder):
            name = rel[len(self.folder) + 1 :] if self.folder else rel
            if "/" in name or not name.endswith(".jsonl"):
                continue
            sid = name[: -len(".jsonl")]
            if not _valid_id(sid) or (prefix is not None and not sid.startswith(prefix)):
                continue
            try:
                tail, _ = self._refresh(rel)
            except UnknownSession:
                continue
            if tail is None:
                continue
            started = str(tail.header.get("startedAt", ""))
            last = (_loads(tail.last) or {}).get("timestamp", started) if tail.count else started
            archived = int(tail.header.get("archived", 0))
            agent = tail.header.get("agentId")
            found.append(
                SessionInfo(sid, self.kind_of(sid), agent, started, last, tail.count, archived)
            )
        found.sort(key=lambda s: (parse_ts(s.last_activity_at) or _NEVER, s.started_at, s.id))
        return found[::-1]
