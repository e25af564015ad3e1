"""The vector matrix on disk: a derived copy that a new process reads in one go.

``index.db.vectors-<model digest>`` beside the index holds what one process's
``VectorCache`` held at one position of ``item_log``: a 4 KiB header (JSON: the
database's id, the model, the dimension, the row count, that log position and
the entry there, and a checksum of each array), then the item ids (int64) and
the rows (float32), raw. It is never the truth and always rebuildable:

- read, it must name this database (its ``database_id`` in ``meta``: a fresh or
  mended file has another), this model and dimension, a log position the log still
  holds with the same entry there, a size that fits the header, and checksums that
  match; anything else (stale, damaged, truncated, foreign) reads as no file, and
  the caller loads from SQLite and writes a fresh one;
- written, it goes to a temp file renamed over the old one (a reader sees the old
  file or the new, never a mix), without an fsync: a file cut short by a crash fails
  its checks. A folder that cannot take it (read-only, full) simply has none.

The checksums are sums of the arrays' 64-bit words, modulo 2**64: one pass at
memory speed (a CRC of 150 MB costs four times as long), and any damaged word,
zeroed page or cut file changes them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memdir.files.temps import temp_path

HEADER_BYTES = 4096
MAGIC = b"memdir vectors 1\n"
_CHUNK = 8192  # rows written at a time (dead rows left out): no second copy of the matrix

Ids = npt.NDArray[np.int64]
Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Stamp:
    """What a matrix file must name to be this index's, at one position of its log."""

    database: str
    model: str
    dim: int
    seq: int
    entry: tuple[int, str]
    """(item id, op) of the log entry at ``seq``: an older copy of the database with the
    same id but another history has another entry there"""


def matrix_path(index_path: Path, model: str) -> Path:
    digest = hashlib.sha1(model.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return index_path.with_name(f"{index_path.name}.vectors-{digest}")


def checksum(array: npt.NDArray[Any]) -> int:
    """The sum of ``array``'s bytes read as little-endian 64-bit words, modulo 2**64
    (a last partial word padded with zeros)."""
    data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    whole = data.size - data.size % 8
    total = int(data[:whole].view("<u8").sum(dtype=np.uint64)) if whole else 0
    if whole < data.size:
        tail = bytes(data[whole:]) + b"\0" * (8 - (data.size - whole))
        total += int.from_bytes(tail, "little")
    return total % 2**64


def read(path: Path, database: str, model: str, dim: int, spare: float) -> Loaded | None:
    """The matrix in ``path`` if it is this database's and sound, else None. The rows
    land in an array with ``spare`` times their count of room to grow (zero pages,
    which cost no memory until written)."""
    try:
        with open(path, "rb", buffering=0) as handle:
            head = _header(handle.read(HEADER_BYTES))
            if head is None or (head["database"], head["model"], head["dim"]) != (
                database,
                model,
                dim,
            ):
                return None
            rows = head["rows"]
            if os.fstat(handle.fileno()).st_size != HEADER_BYTES + rows * (8 + 4 * dim):
                return None
            ids = np.empty(rows, dtype="<i8")
            matrix = np.zeros((max(int(rows * spare), rows, 16), dim), dtype="<f4")
            if not (_fill(handle, ids) and _fill(handle, matrix[:rows])):
                return None
    except (OSError, ValueError):
        return None
    if checksum(ids) != head["ids_sum"] or checksum(matrix[:rows]) != head["rows_sum"]:
        return None
    stamp = Stamp(database, model, dim, head["seq"], (head["entry"][0], head["entry"][1]))
    return Loaded(stamp, ids, matrix, rows)


@dataclass(frozen=True)
class Loaded:
    stamp: Stamp
    ids: Ids
    matrix: Matrix
    """``rows`` rows read, then room to grow"""
    rows: int


def _header(data: bytes) -> dict[str, Any] | None:
    if len(data) != HEADER_BYTES or not data.startswith(MAGIC):
        return None
    try:
        head = json.loads(data[len(MAGIC) :].rstrip(b" \n"))
    except ValueError:
        return None
    kinds = {"database": str, "model": str, "dim": int, "rows": int, "seq": int,
             "entry": list, "ids_sum": int, "rows_sum": int}  # fmt: skip
    if not isinstance(head, dict) or any(not isinstance(head.get(k), t) for k, t in kinds.items()):
        return None
    entry = head["entry"]
    if len(entry) != 2 or not isinstance(entry[0], int) or not isinstance(entry[1], str):
        return None
    return head if head["rows"] >= 0 and head["dim"] > 0 else None


def _fill(handle: Any, array: npt.NDArray[Any]) -> bool:
    """Read exactly ``array``'s bytes into it; False at an early end of file."""
    view = array.reshape(-1).view(np.uint8).data
    done = 0
    while done < len(view):
        got = handle.readinto(view[done:])
        if not got:
            return False
        done += got
    return True


def write(path: Path, stamp: Stamp, ids: Ids, matrix: Matrix, alive: npt.NDArray[np.bool_]) -> None:
    """Save the live rows (``alive``) of ``ids`` / ``matrix``, in their order, as of
    ``stamp``; a folder that refuses the file is left without one."""
    keep = ids[alive]
    rows_sum = 0
    tmp = temp_path(path)
    try:
        with open(tmp, "wb") as handle:
            handle.write(b"\0" * HEADER_BYTES)
            handle.write(keep.astype("<i8", copy=False).tobytes())
            for start in range(0, len(alive), _CHUNK):
                mask = alive[start : start + _CHUNK]
                chunk = matrix[start : start + _CHUNK]
                chunk = chunk if mask.all() else chunk[mask]
                chunk = np.ascontiguousarray(chunk, dtype="<f4")
                rows_sum += checksum(chunk)
                handle.write(chunk.reshape(-1).view(np.uint8).data)
            head = {
                "database": stamp.database, "model": stamp.model, "dim": stamp.dim,
                "rows": int(keep.size), "seq": stamp.seq, "entry": list(stamp.entry),
                "ids_sum": checksum(keep), "rows_sum": rows_sum % 2**64,
            }  # fmt: skip
            text = MAGIC + json.dumps(head).encode("utf-8")
            if len(text) >= HEADER_BYTES:
                raise ValueError("the model id is too long for the header")
            handle.seek(0)
            handle.write(text.ljust(HEADER_BYTES - 1, b" ") + b"\n")
        os.replace(tmp, path)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            tmp.unlink()
