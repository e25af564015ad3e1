"""Reading ``memdir.toml``: TOML, then the settings (``checking.build``), and a bad
manifest's error in memdir's words, naming the file, the line and the key."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from memdir.config.checking import build
from memdir.config.manifest import MANIFEST_NAME, Manifest, _KeyedError, _LayerError
from memdir.errors import ManifestError


def load_manifest(path: Path) -> Manifest:
    """Read and validate a manifest file; ManifestError names the line and key."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ManifestError(path, "file not found") from exc
    except UnicodeDecodeError as exc:
        raise ManifestError(path, f"not UTF-8 text ({exc.reason})") from exc
    return parse_manifest(text, path)


def parse_manifest(text: str, path: Path = Path(MANIFEST_NAME)) -> Manifest:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        line = int(match.group(1)) if match else None
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise ManifestError(path, f"not valid TOML: {message}", line=line) from exc
    try:
        return build(Manifest, data)
    except ValueError as exc:  # pydantic's ValidationError, raised for a bad manifest only
        raise _manifest_error(exc, text, path) from exc


def _manifest_error(exc: ValueError, text: str, path: Path) -> ManifestError | ValueError:
    """Pydantic's first error, in memdir's words, at the line of its key."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return exc
    error = exc.errors()[0]
    loc = tuple(str(part) for part in error["loc"])
    cause = error.get("ctx", {}).get("error")
    if isinstance(cause, _LayerError):
        loc = (*loc, cause.layer)
    elif isinstance(cause, _KeyedError):
        loc = (*loc, *cause.loc)
    key = ".".join(loc)
    # A validator's own sentence, from the exception it raised (pydantic's msg for it
    # reads "Value error, ..."); pydantic's sentence for its own checks.
    message = str(cause) if isinstance(cause, Exception) else error["msg"]
    kind = error["type"]
    if kind in UNKNOWN_KEY:
        message = "unknown key"
    elif kind == "missing":
        message = "required key is missing"
    elif kind == "dataclass_type":  # the sentence memdir gave when its tables were models
        message = f"Input should be a valid dictionary or instance of {error['ctx']['class_name']}"
    if "input" in error and kind != "missing" and kind not in UNKNOWN_KEY:
        got = error["input"]
        if not isinstance(got, dict):
            message = f"{message} (got {got!r})"
    return ManifestError(path, message, line=locate_key(text, loc), key=key)


UNKNOWN_KEY = ("extra_forbidden", "unexpected_keyword_argument")
"""pydantic's error types for a key no setting has (a model's, a dataclass's)"""


def locate_key(text: str, loc: tuple[str, ...]) -> int | None:
    """The 1-based line in TOML ``text`` that defines ``loc`` (or its nearest table)."""
    best: int | None = None
    best_depth = -1
    table: tuple[str, ...] = ()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        header = re.fullmatch(r"\[\[?\s*([^\]]+?)\s*\]\]?(\s*#.*)?", line)
        if header:
            table = _split_dotted(header.group(1))
            candidate = table
        else:
            assignment = re.match(r"([A-Za-z0-9_\-.\"' ]+?)\s*=", line)
            if not assignment:
                continue
            candidate = table + _split_dotted(assignment.group(1))
        depth = _common_prefix(candidate, loc)
        if depth == len(candidate) and depth > best_depth:
            best, best_depth = number, depth
    return best


def _split_dotted(key: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("\"'") for part in key.split("."))


def _common_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    depth = 0
    for left, right in zip(a, b, strict=False):
        if left != right:
            break
        depth += 1
    return depth


def memdir_home() -> Path:
    """The home that holds agents' folders: ``$MEMDIR_HOME``, else ``~/.memdir``."""
    configured = os.environ.get("MEMDIR_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".memdir"


def dump_value(value: Any) -> str:
    """A TOML literal for a simple value (used by ``memdir init --adopt``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    if isinstance(value, list):
        return "[" + ", ".join(dump_value(item) for item in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")
