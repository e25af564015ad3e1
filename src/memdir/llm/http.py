"""HTTP to model servers: one ``httpx2`` client per process, retries with backoff.

The chat client (``llm.chat``) and the OpenAI-compatible embedder
(``index.openai_embedder``) both POST JSON to a server and read JSON back; this
module is the one place that does it. ``httpx2`` is the Pydantic-maintained
continuation of httpx, already installed as a dependency of ``mcp``.

Invariants:
- One ``httpx2.Client`` per process (``shared_client``), made on first use, so
  every request after the first reuses its connection; a forked child makes its
  own (a socket shared across a fork is shared with the parent).
- A 429 or a 5xx, or a connection that broke off mid-answer, is retried up to
  ``RetryPolicy.retries`` times. The wait is the server's ``Retry-After`` (seconds or
  an HTTP date; OpenAI's ``retry-after-ms`` too) when it sends one, else
  ``base_seconds * 2**n`` with jitter, each capped at ``max_wait_seconds``; a
  server that asks for a longer wait than that is not waited for.
- Not retried: any other 4xx (the same request would fail again), a connection
  refused or an unknown host (nothing is listening), a timeout (the caller already
  waited ``timeout`` seconds).
- Every failure is a ``ServerFailure`` whose message names ``what`` and the URL,
  says what went wrong, and never holds the request's headers (the key).
"""

from __future__ import annotations

import atexit
import email.utils
import json
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2

USER_AGENT = "memdir"
_ERROR_SNIPPET_CHARS = 300

_lock = threading.Lock()
_client: httpx2.Client | None = None
_client_pid = 0


class ServerFailure(Exception):
    """A request to a model server failed; ``status`` is the HTTP status, if one came."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before asking again after a 429 or a 5xx."""

    retries: int = 2
    """requests after the first"""
    base_seconds: float = 0.5
    """the first wait when the server names none; doubled for each retry after"""
    max_wait_seconds: float = 30.0
    """no single wait is longer; a Retry-After past it is not waited for"""
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def backoff(self, retry: int) -> float:
        """The wait before retry number ``retry`` (0-based) when the server names none:
        exponential, with up to a quarter taken off at random (clients that failed
        together do not all come back at the same instant)."""
        wait = self.base_seconds * 2.0**retry
        return min(self.max_wait_seconds, wait * random.uniform(0.75, 1.0))


def shared_client() -> httpx2.Client:
    """The process's client (made on first call; per-request timeouts)."""
    global _client, _client_pid
    with _lock:
        if _client is None or _client_pid != os.getpid():
            import httpx2

            _client = httpx2.Client(headers={"User-Agent": USER_AGENT}, follow_redirects=False)
            _client_pid = os.getpid()
            atexit.register(_close, _client)
        return _client


def _close(client: httpx2.Client) -> None:
    client.close()  # its kept connections, closed rather than dropped at exit


def post_json(
    url: str,
    body: object,
    *,
    headers: Mapping[str, str],
    timeout: float,
    policy: RetryPolicy,
    what: str,
    timeout_hint: str,
) -> Any:
    """POST ``body`` as JSON and return the answer's JSON, retrying as the policy says.

    ``what`` names the server in messages ("the LLM"), ``timeout_hint`` the setting
    that raises the timeout. Raises ``ServerFailure``."""
    data = json.dumps(body).encode("utf-8")
    sent = {"Content-Type": "application/json", "Accept": "application/json", **headers}
    first: ServerFailure | None = None
    for attempt in range(policy.retries + 1):
        try:
            return _post_once(url, data, sent, timeout, what, timeout_hint)
        except _Retryable as failure:
            first = first or failure
            last_attempt = attempt == policy.retries
            wait = failure.retry_after
            if wait is None:
                wait = policy.backoff(attempt)
            elif wait > policy.max_wait_seconds:
                raise ServerFailure(
                    f"{failure} (it asks to retry after {wait:g} s, longer than memdir waits)",
                    failure.status,
                ) from None
            if last_attempt:
                raise ServerFailure(_gave_up(failure, first, attempt + 1), failure.status) from None
            policy.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


class _Retryable(ServerFailure):
    def __init__(self, message: str, status: int | None, retry_after: float | None) -> None:
        super().__init__(message, status)
        self.retry_after = retry_after


def _post_once(
    url: str, data: bytes, headers: dict[str, str], timeout: float, what: str, hint: str
) -> Any:
    import httpx2

    try:
        response = shared_client().post(url, content=data, headers=headers, timeout=timeout)
    except httpx2.TimeoutException:
        message = f"{what} at {url} did not answer within {timeout:g} s ({hint})"
        raise ServerFailure(message) from None
    except httpx2.ConnectError as exc:
        raise ServerFailure(_unreachable(what, url, exc)) from None
    except (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError) as exc:
        # reset or cut off mid-answer: a server restarting; worth asking again
        raise _Retryable(f"{what} at {url} broke off: {exc!r}", None, None) from None
    except httpx2.HTTPError as exc:
        raise ServerFailure(f"{what} at {url} failed: {exc!r}") from None
    raw = response.content
    status = response.status_code
    if status == 429 or status >= 500:
        message = f"{what} at {url} answered HTTP {status}: {error_message(raw)}"
        raise _Retryable(message, status, retry_after(response.headers))
    if status >= 400:
        raise ServerFailure(f"{what} at {url} answered HTTP {status}: {error_message(raw)}", status)
    try:
        return json.loads(raw)
    except ValueError:
        text = snippet(" ".join(raw.decode("utf-8", "replace").split()))
        raise ServerFailure(
            f"{what} at {url} answered with something that is not JSON: {text!r}"
        ) from None


def _gave_up(last: ServerFailure, first: ServerFailure, attempts: int) -> str:
    if str(first) == str(last):
        return f"{last} ({attempts} attempts)"
    return f"{last} ({attempts} attempts; the first: {first})"


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a server asks for: ``retry-after-ms``, or ``Retry-After`` in seconds or
    as an HTTP date; None when it names none (or names it badly)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _unreachable(what: str, url: str, exc: Exception) -> str:
    reason: BaseException | None = exc
    while reason is not None:  # the OS error under httpx2's and httpcore2's wrappers
        if isinstance(reason, ConnectionRefusedError):
            return f"cannot reach {what} at {url}: connection refused (is the server running?)"
        if isinstance(reason, socket.gaierror):
            return f"cannot reach {what} at {url}: unknown host ({reason})"
        reason = reason.__cause__ or reason.__context__
    text = str(exc)
    if "refused" in text.lower() or "errno 111" in text.lower():
        return f"cannot reach {what} at {url}: connection refused (is the server running?)"
    if "name or service not known" in text.lower() or "nodename nor servname" in text.lower():
        return f"cannot reach {what} at {url}: unknown host ({text})"
    return f"cannot reach {what} at {url}: {text or type(exc).__name__}"


def error_message(raw: bytes) -> str:
    """The server's own words from an error body: OpenAI's ``{"error": {"message"}}``,
    Ollama's ``{"error": "..."}``, FastAPI's ``{"detail": ...}``, or the text itself."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            text = error if isinstance(error, str) else json.dumps(error)
    text = " ".join(text.split()) or "(no message)"
    return snippet(text)


def snippet(text: str) -> str:
    if len(text) <= _ERROR_SNIPPET_CHARS:
        return text
    return text[: _ERROR_SNIPPET_CHARS - 3] + "..."
