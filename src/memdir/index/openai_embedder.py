"""An embedder served over HTTP: the OpenAI embeddings API (``POST {base_url}/embeddings``).

Ollama, vLLM, the llama.cpp server, LM Studio, text-embeddings-inference and the
hosted APIs all speak it. Chosen as ``embedder = "openai:MODEL"`` with its settings
in ``[index.embedder_options]`` (``base_url``, ``api_key_env``, ``batch_size``,
``dimensions``, ``timeout_seconds``, ``max_retries``); ``MEMDIR_EMBEDDER_BASE_URL``
wins over ``base_url``, and the key is read from the variable ``api_key_env`` names.

Invariants:
- ``id`` names the model, its dimensions if asked for, and the server
  (``openai:nomic-embed-text@http://127.0.0.1:11434/v1``): the index keeps vectors
  by id, so switching model or server re-embeds and never mixes two models' vectors.
- Texts go ``batch_size`` at a time; a server that refuses a batch as too large
  (413, or a 400 for more than one input) is sent halves, and the smaller size is
  kept for the rest of the process: batches as the server allows.
- Requests go through ``llm.http`` (one client, retries on 429 and 5xx); every
  failure is an ``EmbedderUnavailable`` naming the server, never holding the key.
- An empty text is a zero vector without a request (servers refuse empty input);
  each text is cut at ``MAX_CHARS``; vectors are L2-normalised here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memdir.index.embedders import EmbedderUnavailable, normalise
from memdir.llm.http import RetryPolicy, ServerFailure, post_json

if TYPE_CHECKING:
    from memdir.index.embedders import Vectors

BASE_URL_ENV = "MEMDIR_EMBEDDER_BASE_URL"
API_KEY_ENV = "MEMDIR_EMBEDDER_API_KEY"


class OpenAIEmbedder:
    """``POST {base_url}/embeddings`` with ``{"model", "input": [...]}``; OpenAI's shape."""

    MAX_CHARS = 8_000  # about 2,000 tokens: inside every common embedding model's window

    def __init__(
        self,
        model: str = "",
        *,
        base_url: str | None = None,
        api_key_env: str = API_KEY_ENV,
        batch_size: int = 64,
        dimensions: int | None = None,
        timeout_seconds: float = 60.0,
        max_retries: int = 2,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        base_url = env.get(BASE_URL_ENV) or base_url
        if not model.strip():
            raise EmbedderUnavailable('the openai embedder needs a model: "openai:MODEL"')
        if not base_url:
            raise EmbedderUnavailable(
                "the openai embedder needs a server: base_url in [index.embedder_options] "
                f"(e.g. http://127.0.0.1:11434/v1 for Ollama) or {BASE_URL_ENV}"
            )
        if not base_url.startswith(("http://", "https://")):
            raise EmbedderUnavailable(
                f"the embedder base_url must be an http:// or https:// URL, not {base_url!r}"
            )
        if batch_size < 1 or (dimensions is not None and dimensions < 1) or timeout_seconds <= 0:
            raise EmbedderUnavailable(
                "batch_size and dimensions must be at least 1, timeout_seconds above 0"
            )
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/embeddings"
        self.batch_size = batch_size
        """texts a request; lowered for good when the server refuses a batch as too big"""
        self.dimensions = dimensions
        self.timeout = timeout_seconds
        self.retry = RetryPolicy(retries=max_retries)
        self._api_key = env.get(api_key_env) or None
        self._dim = dimensions

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self.model!r}, base_url={self.base_url!r})"

    @property
    def id(self) -> str:
        shape = f"/{self.dimensions}d" if self.dimensions else ""
        return f"openai:{self.model}{shape}@{self.base_url}"

    @property
    def dim(self) -> int:
        """Asked of the server once (one short text embedded) unless ``dimensions`` says."""
        if self._dim is None:
            self._dim = int(self._request(["dimension"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        cut = [text[: self.MAX_CHARS] for text in texts]
        wanted = [i for i, text in enumerate(cut) if text.strip()]
        if not wanted:
            return np.zeros((len(texts), self.dim), dtype=np.float32)
        parts: list[Vectors] = []
        start = 0
        while start < len(wanted):
            chunk = [cut[i] for i in wanted[start : start + self.batch_size]]
            parts.append(self._request(chunk))
            start += len(chunk)
        found = np.concatenate(parts)
        out = np.zeros((len(texts), found.shape[1]), dtype=np.float32)
        out[wanted] = found
        return out

    def _request(self, texts: list[str]) -> Vectors:
        """One batch's vectors; a batch the server finds too big is sent in halves."""
        body: dict[str, Any] = {"model": self.model, "input": texts}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            data = post_json(
                self.url,
                body,
                headers=headers,
                timeout=self.timeout,
                policy=self.retry,
                what="the embedding server",
                timeout_hint="timeout_seconds in [index.embedder_options]",
            )
        except ServerFailure as exc:
            if len(texts) > 1 and exc.status in (400, 413):
                # the rest goes at the size learnt, as it is lowered further: a size the
                # server refused once is never sent again
                self.batch_size = min(self.batch_size, (len(texts) + 1) // 2)
                parts, start = [], 0
                while start < len(texts):
                    chunk = texts[start : start + self.batch_size]
                    parts.append(self._request(chunk))
                    start += len(chunk)
                return _stack(parts)
            raise EmbedderUnavailable(str(exc)) from None
        vectors = _vectors(data, len(texts), self.url)
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        elif vectors.shape[1] != self._dim:
            raise EmbedderUnavailable(
                f"the embedding server at {self.url} answered {vectors.shape[1]} dimensions, "
                f"not {self._dim}: has the model {self.model!r} changed?"
            )
        return vectors


def _stack(parts: list[Vectors]) -> Vectors:
    import numpy as np

    stacked: Vectors = np.concatenate(parts)
    return stacked


def _vectors(data: Any, count: int, url: str) -> Vectors:
    """The vectors of an embeddings answer, in input order, normalised."""
    import numpy as np

    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) != count:
        got = len(items) if isinstance(items, list) else "no"
        raise EmbedderUnavailable(
            f"the embedding server at {url} answered {got} embeddings for {count} texts"
        )
    rows: list[Any] = [None] * count
    for position, item in enumerate(items):
        index = item.get("index", position) if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(index, int) or not 0 <= index < count or not isinstance(vector, list):
            raise EmbedderUnavailable(
                f"the embedding server at {url} answered an item that is not an embedding"
            )
        rows[index] = vector
    try:
        matrix = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError):
        raise EmbedderUnavailable(
            f"the embedding server at {url} answered embeddings of unequal or non-numeric rows"
        ) from None
    if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
        raise EmbedderUnavailable(f"the embedding server at {url} answered unusable vectors")
    return normalise(matrix)
