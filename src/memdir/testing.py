"""Fakes for tests, shipped with the library so users can test their agents too.

- ``FakeClock``: a clock that stands still until moved.
- ``HashingEmbedder``, ``ConceptEmbedder``: embedders with no model to load.
- ``FakeChat``: a ``ChatModel`` answering from a script, in process
  (``memory.llm = FakeChat([...])``).
- ``ChatServer``: a real HTTP server on 127.0.0.1 playing an OpenAI-compatible
  model server (chat completions, and embeddings with deterministic vectors), for
  testing what goes over the wire (``OpenAIChat``, ``[llm]`` config,
  ``OpenAIEmbedder``).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import numpy as np

from memdir.index.embedders import HashingEmbedder, Vectors
from memdir.llm.chat import LLMError, Message

__all__ = [
    "ChatCall",
    "ChatReply",
    "ChatRequest",
    "ChatServer",
    "ConceptEmbedder",
    "FakeChat",
    "FakeClock",
    "HashingEmbedder",
]


class FakeClock:
    """A clock that stands still until moved: pass it as ``memdir.open(path, clock=...)``."""

    def __init__(self, start: datetime | str = "2026-11-30T10:00:00Z") -> None:
        if isinstance(start, str):
            start = datetime.fromisoformat(start.replace("Z", "+00:00"))
        self.now = start if start.tzinfo else start.replace(tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        """Move forward by ``timedelta(**delta)``, e.g. ``clock.advance(days=8)``."""
        self.now += timedelta(**delta)
        return self.now


class ConceptEmbedder:
    """An embedder whose meaning you write down: each concept is a list of words.

    A text's vector has weight 1 on each concept one of whose words it contains
    (case-insensitive, whole words), then is scaled to unit length; a text with
    none is the zero vector. ``ConceptEmbedder({"cat": ["cat", "feline"]})``
    makes "feline" and "cat" the same to semantic search and unlike anything else,
    so tests can tell semantic hits from keyword hits.
    """

    def __init__(self, concepts: dict[str, list[str]], *, version: str = "1") -> None:
        self.concepts = {name: {word.lower() for word in words} for name, words in concepts.items()}
        self.names = list(self.concepts)
        self.version = version
        self.similarity_floor = 0.5

    @property
    def id(self) -> str:
        return f"concepts-{self.version}-{len(self.names)}"

    @property
    def dim(self) -> int:
        return len(self.names)

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = set(re.findall(r"\w+", text.lower()))
            for column, name in enumerate(self.names):
                if words & self.concepts[name]:
                    out[row, column] = 1.0
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
        return out


# -- chat models -----------------------------------------------------------------

FakeReply = str | BaseException | Callable[[list[Message]], str]


@dataclass(frozen=True)
class ChatCall:
    """One ``FakeChat.complete`` call, as the fake received it."""

    messages: list[Message]
    json_mode: bool
    max_tokens: int | None

    @property
    def prompt(self) -> str:
        """The last user message's text."""
        return next((m["content"] for m in reversed(self.messages) if m["role"] == "user"), "")


class FakeChat:
    """A ``ChatModel`` that answers from a script, offline and in process.

    Each reply is the answer's text, an exception to raise (``LLMError("down")``
    plays an unreachable server), or a function of the messages. Give one
    function instead of a list to answer every call with it. A call past the
    end of the script raises ``LLMError``, as a model that stopped answering.
    ``calls`` records what each call got. Use it on a memory with
    ``memory.llm = FakeChat([...])`` (an instance attribute replaces the
    configured model).
    """

    def __init__(
        self,
        replies: Sequence[FakeReply] | Callable[[list[Message]], str] = (),
        *,
        id: str = "fake-chat",
    ) -> None:
        self.id = id
        self._every = replies if callable(replies) else None
        self._script: list[FakeReply] = [] if callable(replies) else list(replies)
        self.calls: list[ChatCall] = []

    def __repr__(self) -> str:
        return f"FakeChat({self.id!r}, {len(self.calls)} calls)"

    @property
    def remaining(self) -> int:
        """Scripted replies not used yet."""
        return len(self._script)

    def complete(
        self, messages: list[Message], *, json_mode: bool = False, max_tokens: int | None = None
    ) -> str:
        copied = [dict(message) for message in messages]
        self.calls.append(ChatCall(copied, json_mode, max_tokens))
        if self._every is not None:
            return self._every(copied)
        if not self._script:
            raise LLMError(f"{self.id} has no scripted reply left (call {len(self.calls)})")
        reply = self._script.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply(copied) if callable(reply) else reply


@dataclass(frozen=True)
class ChatRequest:
    """One request ``ChatServer`` received."""

    method: str
    path: str
    headers: dict[str, str]
    """lower-cased names"""
    raw: bytes
    body: Any
    """the JSON body, or None if it was not JSON"""
    peer: tuple[str, int] | None = None
    """the client's address and port: one port for two requests, one kept connection"""

    @property
    def messages(self) -> list[Message]:
        found = self.body.get("messages") if isinstance(self.body, dict) else None
        return found if isinstance(found, list) else []

    @property
    def json_mode(self) -> bool:
        return isinstance(self.body, dict) and "response_format" in self.body


@dataclass(frozen=True)
class ChatReply:
    """What ``ChatServer`` answers: ``content`` wrapped in a chat completion, or
    ``body`` sent as is (a dict or list as JSON, text or bytes raw) with ``status``."""

    content: str | None = None
    status: int = 200
    body: dict[str, Any] | list[Any] | str | bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def error(cls, status: int, message: str, *, retry_after: str | None = None) -> ChatReply:
        """An HTTP error with OpenAI's error body, ``{"error": {"message": ...}}``
        (and a ``Retry-After`` header if given: seconds, or an HTTP date)."""
        error = {"message": message, "type": "invalid_request_error", "code": None}
        headers = {} if retry_after is None else {"Retry-After": retry_after}
        return cls(status=status, body={"error": error}, headers=headers)

    @classmethod
    def malformed(cls, text: str = "this is not JSON") -> ChatReply:
        """A 200 whose body is not JSON."""
        return cls(body=text, headers={"Content-Type": "text/plain"})


ServerReply = str | ChatReply
ServerScript = Sequence[ServerReply] | Callable[[ChatRequest], ServerReply]


class ChatServer:
    """A real HTTP server on 127.0.0.1 (a free port, a background thread, HTTP/1.1 with
    kept connections) playing an OpenAI-compatible model server. ``POST
    /v1/chat/completions`` is answered from ``replies`` in order, or by a function of
    the ``ChatRequest``; each reply is the assistant's text or a ``ChatReply``
    (``ChatReply.error(400, "...")``, ``ChatReply.malformed()``, a raw body). ``GET
    /v1/models`` lists ``model``. ``requests`` records every request. A request past
    the end of the script, or a function that raises, gets a 500 naming the problem.

    ``POST /v1/embeddings`` answers every input with a deterministic unit vector of
    ``embedding_dim`` floats (``HashingEmbedder``'s, so related texts are near), in
    order, unless ``embedding_failures`` queued a reply for it first; a request of
    more than ``max_inputs`` inputs gets a 413, as a server with a batch limit.

        with ChatServer(["Hello."]) as server:
            OpenAIChat(server.base_url, "m").complete([{"role": "user", "content": "hi"}])
            assert server.requests[0].body["model"] == "m"
    """

    def __init__(
        self,
        replies: ServerScript = (),
        *,
        model: str = "fake-model",
        embedding_dim: int = 64,
        max_inputs: int | None = None,
    ) -> None:
        self.model = model
        self.embedding_dim = embedding_dim
        self.max_inputs = max_inputs
        self.embedding_failures: list[ChatReply] = []
        """replies given to the next embeddings requests, before any is answered"""
        self._every = replies if callable(replies) else None
        self._script: list[ServerReply] = [] if callable(replies) else list(replies)
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, the value for ``[llm] base_url`` (still known
        after the server stops: nothing listens there then)."""
        if self._port is None:
            raise RuntimeError("the ChatServer has not started: use it in a with block")
        return f"http://127.0.0.1:{self._port}/v1"

    def add(self, *replies: ServerReply) -> None:
        """Script more replies."""
        with self._lock:
            self._script.extend(replies)

    def start(self) -> ChatServer:
        if self._server is None:
            self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
            self._server.daemon_threads = True
            self._port = int(self._server.server_address[1])
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join()
            self._server = self._thread = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _answer(self, request: ChatRequest) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
        if request.method == "GET" and request.path.rstrip("/") == "/v1/models":
            return _json(200, {"object": "list", "data": [{"id": self.model, "object": "model"}]})
        if request.method == "POST" and request.path.rstrip("/") == "/v1/embeddings":
            return self._embeddings(request)
        if request.method != "POST" or request.path.rstrip("/") != "/v1/chat/completions":
            return _error(404, f"no route {request.method} {request.path}")
        # only a chat completion takes the script's next reply: a model listing, an
        # embeddings request or a wrong route leaves it for the completion it was for
        reply: ServerReply | None = None
        with self._lock:
            if self._every is None and self._script:
                reply = self._script.pop(0)
        if self._every is not None:
            try:
                reply = self._every(request)
            except Exception as exc:  # the test's function failed: say so to the client
                return _error(500, f"{type(exc).__name__}: {exc}")
        if reply is None:
            return _error(500, f"no scripted reply left (request {number})")
        if isinstance(reply, str):
            reply = ChatReply(content=reply)
        if reply.body is None:
            model = request.body.get("model") if isinstance(request.body, dict) else None
            completion = _completion(reply.content or "", model or self.model, number)
            return _json(reply.status, completion)
        return _reply(reply)

    def _embeddings(self, request: ChatRequest) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            failure = self.embedding_failures.pop(0) if self.embedding_failures else None
        if failure is not None:
            return _reply(failure)
        body = request.body if isinstance(request.body, dict) else {}
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            return _error(400, "input must be a string or an array of strings")
        if self.max_inputs is not None and len(inputs) > self.max_inputs:
            return _error(413, f"too many inputs: {len(inputs)} > {self.max_inputs}")
        vectors = HashingEmbedder(self.embedding_dim).embed(inputs)
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in vector]}
            for i, vector in enumerate(vectors)
        ]
        model = body.get("model") or self.model
        usage = {"prompt_tokens": 0, "total_tokens": 0}
        return _json(200, {"object": "list", "data": data, "model": model, "usage": usage})


def _reply(reply: ChatReply) -> tuple[int, dict[str, str], bytes]:
    if isinstance(reply.body, (dict, list)):
        status, headers, data = _json(reply.status, reply.body)
    else:
        raw = reply.body.encode() if isinstance(reply.body, str) else (reply.body or b"")
        status, headers, data = reply.status, {"Content-Type": "text/plain"}, raw
    return status, {**headers, **reply.headers}, data


def _completion(content: str, model: str, number: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _json(status: int, body: object) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


def _error(status: int, message: str) -> tuple[int, dict[str, str], bytes]:
    return _json(status, ChatReply.error(status, message).body)


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # connections kept, as real servers keep them

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            headers = {name.lower(): value for name, value in self.headers.items()}
            peer = (str(self.client_address[0]), int(self.client_address[1]))
            request = ChatRequest(self.command, self.path, headers, raw, body, peer)
            status, out_headers, data = server._answer(request)
            self.send_response(status)
            for name, value in out_headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: tests read server.requests instead

    return Handler
