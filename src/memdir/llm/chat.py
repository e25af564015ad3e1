"""An optional chat model behind a small protocol; memdir never needs one.

``ChatModel`` is the seam: an ``id`` and ``complete(messages) -> str``. The one
implementation that ships, ``OpenAIChat``, speaks the OpenAI chat completions
API that Ollama, vLLM, the llama.cpp server and the hosted APIs all serve, over
the process's one ``httpx2`` client (``llm.http``: timeouts, retries with backoff
on 429 and 5xx honouring ``Retry-After``). ``load_llm`` builds the client that
``[llm] provider`` names (an entry point in the ``memdir.llms`` group; ``openai``
is this one) from ``[llm]`` in the manifest, the environment winning
(``MEMDIR_LLM_BASE_URL``, ``MEMDIR_LLM_MODEL``, the key in the variable
``api_key_env`` names); it gives None when no endpoint and model are set, and
every caller then takes its offline path.

Invariants:
- Every failure (connection refused, a timeout, an HTTP error after its retries,
  a body that is not the expected JSON, no choices) is an ``LLMError`` whose
  message says what went wrong and where; callers catch it and fall back, never
  crash.
- ``json_mode`` sends ``response_format: {"type": "json_object"}``; a server
  that answers 400 to it is asked once more without the field, and that
  model is not sent it again. The caller validates the JSON either way.
- The key is read from the environment, never from the manifest, and never
  appears in an error message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from memdir.errors import MemdirError
from memdir.llm.http import RetryPolicy, ServerFailure, error_message, post_json

if TYPE_CHECKING:
    from memdir.config import Manifest

BASE_URL_ENV = "MEMDIR_LLM_BASE_URL"
MODEL_ENV = "MEMDIR_LLM_MODEL"

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
        retry: RetryPolicy | None = None,
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
        self.retry = retry or RetryPolicy()
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
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            data = post_json(
                self.url,
                body,
                headers=headers,
                timeout=self.timeout,
                policy=self.retry,
                what="the LLM",
                timeout_hint="timeout_seconds in [llm]",
            )
        except ServerFailure as exc:
            if exc.status is not None:
                raise _HTTPStatusError(exc.status, str(exc)) from None
            raise LLMError(str(exc)) from None
        return _content(data, self.url)


class _HTTPStatusError(LLMError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def half_configured(manifest: Manifest, environ: Mapping[str, str] = os.environ) -> str | None:
    """Why there is no LLM when half of one is set (a base_url and no model, or a model
    and no base_url): ``Memory.llm``'s notice, so the folder is not offline unsaid."""
    base_url = environ.get(BASE_URL_ENV) or manifest.llm.base_url
    model = environ.get(MODEL_ENV) or manifest.llm.model
    if bool(base_url) == bool(model):
        return None
    given, missing = ("base_url", "model") if base_url else ("model", "base_url")
    return (
        f"[llm] has a {given} but no {missing} (set [llm] {missing} or "
        f"{BASE_URL_ENV if missing == 'base_url' else MODEL_ENV})"
    )


def load_llm(manifest: Manifest, environ: Mapping[str, str] = os.environ) -> ChatModel | None:
    """The manifest's ``[llm]`` as a ``ChatModel`` (the client ``provider`` names; its
    retries ``max_retries``), or None if no base_url and model are set.
    ``MEMDIR_LLM_BASE_URL`` and ``MEMDIR_LLM_MODEL`` override the manifest; the key is
    read from the variable ``[llm] api_key_env`` names (``MEMDIR_LLM_API_KEY``).
    Raises ``LLMError`` on a base_url that is not http(s), an unknown provider, or
    a provider that raises while it is made."""
    settings = manifest.llm
    base_url = environ.get(BASE_URL_ENV) or settings.base_url
    model = environ.get(MODEL_ENV) or settings.model
    if not base_url or not model:
        return None
    from memdir.plugins import PluginError, resolve

    try:  # memdir.llms: "openai" is OpenAIChat, memdir's own entry point
        factory = resolve("llms", settings.provider)
    except PluginError as exc:
        raise LLMError(f"[llm] provider: {exc}") from None
    try:
        chat = factory(
            base_url,
            model,
            api_key=environ.get(settings.api_key_env) or None,
            timeout=settings.timeout_seconds,
            temperature=settings.temperature,
            retry=RetryPolicy(retries=settings.max_retries),
        )
    except LLMError:
        raise
    except Exception as exc:  # a plugin's own failure: name it, never a traceback
        raise LLMError(f"the llms plugin {settings.provider!r} could not be made: {exc}") from exc
    if not callable(getattr(chat, "complete", None)):
        raise LLMError(f"the llms plugin {settings.provider!r} did not give a ChatModel")
    if type(chat).__module__.split(".")[0] != "memdir":  # a third party's: checked
        return CheckedChat(chat, settings.provider)
    return chat  # type: ignore[no-any-return]


class CheckedChat:
    """A third party's chat model, its every answer checked: an exception that is not
    an ``LLMError``, or an answer that is not text, is an ``LLMError`` naming the plugin,
    which every job that asks a model takes as "the LLM failed" (the offline result, and
    a note), never a traceback. Its other attributes are the plugin's."""

    def __init__(self, chat: Any, plugin: str) -> None:
        self.chat = chat
        self.plugin = plugin
        self.id = str(getattr(chat, "id", plugin))  # the Protocol asks for one

    def __getattr__(self, name: str) -> Any:
        if name in ("chat", "plugin", "id"):  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.chat, name)

    def complete(
        self, messages: list[Message], *, json_mode: bool = False, max_tokens: int | None = None
    ) -> str:
        try:
            answer = self.chat.complete(messages, json_mode=json_mode, max_tokens=max_tokens)
        except LLMError:
            raise
        except Exception as exc:
            raise LLMError(f"the llms plugin {self.plugin!r} failed: {exc}") from exc
        if not isinstance(answer, str):
            raise LLMError(
                f"the llms plugin {self.plugin!r} answered {type(answer).__name__}, not text"
            )
        return answer


def _content(data: Any, url: str) -> str:
    """The first choice's message text from a chat completion body."""
    if not isinstance(data, dict):
        raise LLMError(f"the LLM at {url} answered with JSON that is not an object")
    if "error" in data:
        raise LLMError(f"the LLM at {url} answered with an error: {_error_text(data)}")
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


def _error_text(data: dict[str, Any]) -> str:
    return error_message(json.dumps(data).encode())
