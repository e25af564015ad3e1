"""An optional chat model behind a small protocol; memdir never needs one.

``ChatModel`` is the seam: an ``id`` and ``complete(messages) -> str``. The one
implementation that ships, ``OpenAIChat``, speaks the OpenAI chat completions
API that Ollama, vLLM, the llama.cpp server and the hosted APIs all serve,
with nothing but the standard library (``urllib.request``), so memdir gains no
dependency. ``load_llm`` builds it from ``[llm]`` in the manifest, the
environment winning (``MEMDIR_LLM_BASE_URL``, ``MEMDIR_LLM_MODEL``, the key in
the variable ``api_key_env`` names); it gives None when no endpoint and model
are set, and every caller then takes its offline path.

Invariants:
- Every failure (connection refused, a timeout, an HTTP error, a body that is
  not the expected JSON, no choices) is an ``LLMError`` whose message says what
  went wrong and where; callers catch it and fall back, never crash.
- ``json_mode`` sends ``response_format: {"type": "json_object"}``; a server
  that answers 400 to it is asked once more without the field, and that
  model is not sent it again. The caller validates the JSON either way.
- The key is read from the environment, never from the manifest, and never
  appears in an error message.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from memdir.errors import MemdirError

if TYPE_CHECKING:
    from memdir.config import Manifest

BASE_URL_ENV = "MEMDIR_LLM_BASE_URL"
MODEL_ENV = "MEMDIR_LLM_MODEL"
_ERROR_SNIPPET_CHARS = 300

Message = dict[str, str]
"""``{"role": "system" | "user" | "assistant", "content": "..."}``"""


class LLMError(MemdirError):
    """The configured LLM could not be reached, or its answer could not be read."""


class ChatModel(Protocol):
    """A chat model: the messages in, the assistant's text out (raises ``LLMError``)."""

    id: str
    """names the model and where it runs, e.g. ``llama3.1:8b@http://127.0.0.1:11434/v1``"""

    def complete(
        self, messages: list[Message], *, json_mode: bool = False, max_tokens: int | None = None
    ) -> str: ...


class OpenAIChat:
    """POST ``{base_url}/chat/completions``, OpenAI's request and response shape.

    ``base_url`` is the API root including its version, e.g. ``http://127.0.0.1:11434/v1``
    (Ollama), ``http://127.0.0.1:8000/v1`` (vLLM), ``https://api.openai.com/v1``.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        temperature: float = 0.0,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise LLMError(f"the LLM base_url must be an http:// or https:// URL, not {base_url!r}")
        if not model.strip():
            raise LLMError("the LLM model name is empty")
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self.id = f"{model}@{self.base_url}"
        self.timeout = timeout
        self.temperature = temperature
        self._api_key = api_key or None
        self.json_mode_supported = True
        """False once the server has refused ``response_format`` with a 400"""

    def __repr__(self) -> str:
        return f"OpenAIChat({self.base_url!r}, {self.model!r})"

    def complete(
        self, messages: list[Message], *, json_mode: bool = False, max_tokens: int | None = None
    ) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "stream": False,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if not (json_mode and self.json_mode_supported):
            return self._post(body)
        try:
            return self._post({**body, "response_format": {"type": "json_object"}})
        except _HTTPStatusError as exc:
            if exc.status != 400:
                raise
        answer = self._post(body)  # a server without JSON mode: ask plainly, once
        self.json_mode_supported = False
        return answer

    def _post(self, body: dict[str, Any]) -> str:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        headers["User-Agent"] = "memdir"
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            try:
                detail = _error_message(exc.read())
            finally:
                exc.close()
            raise _HTTPStatusError(
                exc.code, f"the LLM at {self.url} answered HTTP {exc.code}: {detail}"
            ) from None
        except urllib.error.URLError as exc:
            raise LLMError(_unreachable(self.url, exc.reason, self.timeout)) from None
        except TimeoutError as exc:
            raise LLMError(_unreachable(self.url, exc, self.timeout)) from None
        except (OSError, http.client.HTTPException) as exc:  # reset or cut off mid-answer
            raise LLMError(f"the LLM at {self.url} broke off: {exc!r}") from None
        return _content(raw, self.url)


class _HTTPStatusError(LLMError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def load_llm(manifest: Manifest, environ: Mapping[str, str] = os.environ) -> ChatModel | None:
    """The manifest's ``[llm]`` as a ``ChatModel``, or None if no base_url and model are
    set. ``MEMDIR_LLM_BASE_URL`` and ``MEMDIR_LLM_MODEL`` override the manifest; the
    key is read from the variable ``[llm] api_key_env`` names (``MEMDIR_LLM_API_KEY``).
    Raises ``LLMError`` on a base_url that is not http(s)."""
    settings = manifest.llm
    base_url = environ.get(BASE_URL_ENV) or settings.base_url
    model = environ.get(MODEL_ENV) or settings.model
    if not base_url or not model:
        return None
    return OpenAIChat(
        base_url,
        model,
        api_key=environ.get(settings.api_key_env) or None,
        timeout=settings.timeout_seconds,
        temperature=settings.temperature,
    )


def _unreachable(url: str, reason: object, timeout: float) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return f"cannot reach the LLM at {url}: connection refused (is the server running?)"
    if isinstance(reason, TimeoutError):
        return f"the LLM at {url} did not answer within {timeout:g} s (timeout_seconds in [llm])"
    if isinstance(reason, socket.gaierror):
        return f"cannot reach the LLM at {url}: unknown host ({reason})"
    return f"cannot reach the LLM at {url}: {reason}"


def _error_message(raw: bytes) -> str:
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
    return _snippet(text)


def _content(raw: bytes, url: str) -> str:
    """The first choice's message text from a chat completion body."""
    try:
        data = json.loads(raw)
    except ValueError:
        text = _snippet(" ".join(raw.decode("utf-8", "replace").split()))
        raise LLMError(
            f"the LLM at {url} answered with something that is not JSON: {text!r}"
        ) from None
    if not isinstance(data, dict):
        raise LLMError(f"the LLM at {url} answered with JSON that is not an object")
    if "error" in data:
        raise LLMError(f"the LLM at {url} answered with an error: {_error_message(raw)}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise LLMError(f"the LLM at {url} answered with no choices")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):  # content parts: keep the text ones
        parts = [part.get("text") for part in content if isinstance(part, dict)]
        content = "".join(part for part in parts if isinstance(part, str))
    if not isinstance(content, str):
        raise LLMError(f"the LLM at {url} answered with a choice that has no message text")
    return content


def _snippet(text: str) -> str:
    if len(text) <= _ERROR_SNIPPET_CHARS:
        return text
    return text[: _ERROR_SNIPPET_CHARS - 3] + "..."
