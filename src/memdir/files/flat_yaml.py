"""Flat frontmatter read without a YAML parse, exactly as YAML would read it.

Most cards' frontmatter is one ``key: value`` line per key, the values plain
words, numbers, dates or a flow list of them (``tags: [client, berlin]``).
``load_flat`` reads that shape line by line. A plain scalar that none of YAML's
implicit resolvers matches is a string, its text as it stands (YAML's own
resolver decides, with its own patterns); the others (numbers, dates, booleans,
null) are each parsed by YAML once and remembered. Anything else (quotes, block
scalars, nesting, a comment after a value, anchors, tags, a repeated key, a key
YAML would not read as a plain string, a character YAML refuses or reads as a line
break) returns None, and the caller parses the whole text with YAML.

The invariant, tested against YAML itself: whenever ``load_flat(text)`` is not
None, it equals what YAML loads from ``text``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from yaml.resolver import Resolver

_LINE_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: +(.*?))? *")
_KEY_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"})
# No indicator first; nothing after that could end the scalar or open a collection.
_SCALAR_RE = re.compile(r"[^\-?:,\[\]{}#&*!|>'\"%@`\s][^\[\]{}\t]*")
_ITEM_RE = re.compile(r"[^\-?:,\[\]{}#&*!|>'\"%@`\s][^:,\[\]{}\t]*")
# What YAML refuses (non-printable), reads as a line break (NEL, LS, PS, a lone CR),
# or treats apart (a byte order mark): never read here.
_ODD_RE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\ufeff\ufffe\uffff]|\r(?!\n)"
)
_RESOLVERS = Resolver.yaml_implicit_resolvers
_KEEP = 20_000  # lines (and scalars) remembered; past that the memory starts over
_LINE_KEPT = 200  # longer lines are read every time, not remembered

_lines: dict[str, tuple[str, Any, bool] | None] = {}
_known: dict[str, Any] = {}
_NOT_FLAT = object()


def load_flat(text: str, parse: Callable[[str], Any]) -> dict[str, Any] | None:
    """``text`` as YAML reads it, if it is flat frontmatter; else None. ``parse`` is the
    YAML parse to ask about a scalar that is not a string (if it raises: None, and the
    caller's own parse of the whole text gives the error)."""
    if _ODD_RE.search(text):
        return None
    out: dict[str, Any] = {}
    for raw in text.split("\n"):
        line = raw[:-1] if raw.endswith("\r") else raw
        if not line.strip(" ") or line.startswith("#"):
            continue
        if line in _lines:
            read = _lines[line]
        else:
            read = _line(line, parse)
            if len(line) <= _LINE_KEPT:
                if len(_lines) >= _KEEP:
                    _lines.clear()
                _lines[line] = read
        if read is None:
            return None
        key, value, many = read
        if key in out:
            return None
        out[key] = list(value) if many else value
    return out


def _line(line: str, parse: Callable[[str], Any]) -> tuple[str, Any, bool] | None:
    """(key, value, whether the value is a list: kept as a tuple) of one ``key: value``
    line, or None if it is not one this reader takes."""
    match = _LINE_RE.fullmatch(line)
    if match is None:
        return None
    key, value = match.group(1), match.group(2) or ""
    if key.lower() in _KEY_WORDS or not _is_string(key):
        return None
    if not value:
        return (key, None, False)
    if value.startswith("["):
        items = _items(value, parse)
        return None if items is _NOT_FLAT else (key, tuple(items), True)
    if not _plain(value, _SCALAR_RE):
        return None
    found = _scalar(value, parse)
    return None if found is _NOT_FLAT else (key, found, False)


def _plain(value: str, pattern: re.Pattern[str]) -> bool:
    return (
        pattern.fullmatch(value) is not None
        and ": " not in value
        and " #" not in value
        and not value.endswith(":")
    )


def _items(value: str, parse: Callable[[str], Any]) -> Any:
    if not value.endswith("]"):
        return _NOT_FLAT
    inner = value[1:-1].strip(" ")
    if not inner:
        return []
    items = []
    for part in inner.split(","):
        item = part.strip(" ")
        if not _plain(item, _ITEM_RE):
            return _NOT_FLAT
        found = _scalar(item, parse)
        if found is _NOT_FLAT:
            return _NOT_FLAT
        items.append(found)
    return items


def _is_string(text: str) -> bool:
    """Whether no implicit resolver takes the plain scalar ``text`` (so it loads as itself)."""
    resolvers = _RESOLVERS.get(text[0], []) + _RESOLVERS.get(None, [])
    return not any(pattern.match(text) for _, pattern in resolvers)


def _scalar(text: str, parse: Callable[[str], Any]) -> Any:
    """What YAML reads the plain scalar ``text`` as."""
    if _is_string(text):
        return text  # YAML's resolver would say so too
    if text in _known:
        return _known[text]
    try:
        value = parse(f"k: {text}\n")["k"]
    except Exception:  # noqa: BLE001  # YAML refuses it: the whole parse will say why
        return _NOT_FLAT
    if isinstance(value, (list, dict)):  # never for a plain scalar; never shared if it were
        return _NOT_FLAT
    if len(_known) >= _KEEP:
        _known.clear()
    _known[text] = value
    return value
