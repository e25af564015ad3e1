"""Cards: one markdown file per entity, YAML frontmatter over a body.

    ---
    type: person
    tags: [client, berlin]
    last_accessed: 2026-11-30
    ---
    # Alice
    ...

Invariants:
- Lossless: ``Card.parse(text).render() == text`` for every text.
- The body is opaque: kept byte for byte, never re-flowed or re-encoded.
- Changing a frontmatter value rewrites only that key's lines; other keys,
  their order, comments and quoting stay as the person wrote them. If a
  surgical edit cannot be proven to load back to the same values, the whole
  frontmatter is dumped afresh (correct first, pretty second).
- A file without frontmatter is a card with empty metadata; giving it
  metadata prepends a frontmatter block.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from memdir.errors import FileShapeError
from memdir.files.sections import detect_newline, line_content, split_lines

_OPEN_RE = re.compile(r"---[ \t]*")
CARD_TYPES = ("person", "project", "company", "idea", "place", "topic", "other")
"""what a card's ``type`` says it is (the vault specification's kinds)"""
_PLAIN_KEY_RE = re.compile(r"([A-Za-z_][\w-]*)[ \t]*:(?:[ \t]|\r?\n|$)")
_PLAIN_WORD_RE = re.compile(r"[A-Za-z][A-Za-z_-]*")
_KEY_NAME_RE = re.compile(r"[A-Za-z_][\w-]*")
# Words YAML 1.1 reads as something other than a string.
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"})
_CLOSE_RE = re.compile(r"(---|\.\.\.)[ \t]*")


@functools.cache
def _yaml() -> Any:
    """PyYAML, imported the first time a card's frontmatter is read or written."""
    import yaml

    return yaml


def _loader() -> Any:
    """libyaml's loader when PyYAML was built with it (the wheels are): many times faster."""
    yaml = _yaml()
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_yaml(text: str) -> dict[str, Any]:
    from memdir.files.flat_yaml import load_flat  # it needs PyYAML's resolver

    flat = load_flat(text, _parse_yaml)  # one key a line, plain values: no YAML parse
    if flat is not None:
        return flat
    yaml = _yaml()
    try:
        data = _parse_yaml(text) if text.strip() else {}
    except (yaml.YAMLError, ValueError, TypeError) as exc:  # bad dates raise ValueError
        raise FileShapeError(f"frontmatter is not valid YAML: {_one_line(exc)}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FileShapeError("frontmatter must be a mapping of keys to values")
    return {str(key): value for key, value in data.items()}


def _one_line(exc: Exception) -> str:
    """PyYAML's error (several lines, with a caret under the spot) as one line."""
    problem, mark = getattr(exc, "problem", None), getattr(exc, "problem_mark", None)
    if problem and mark is not None:  # its line counts from the frontmatter's first line
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1} of the frontmatter"
    return " ".join(str(exc).split())


def _parse_yaml(text: str) -> Any:
    """libyaml first; the pure-Python loader for what libyaml refuses (lone surrogates)."""
    yaml, loader = _yaml(), _loader()
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError:
        if loader is yaml.SafeLoader:
            raise
        return yaml.load(text, Loader=yaml.SafeLoader)


def _dump(mapping: Mapping[str, Any]) -> str:
    """Block style at the top, flow style for leaf lists (``tags: [a, b]``).

    Each key is dumped with unicode kept readable, unless it would not load
    back the same (YAML reads some code points, like U+0085, as line breaks);
    then that key is dumped with non-ASCII escaped.
    """
    out = []
    yaml = _yaml()
    for key, value in mapping.items():
        scalar = _plain_scalar(value)
        if scalar is not None and _plain_key(key):
            out.append(f"{key}: {scalar}\n")  # no round trip needed for these
            continue
        item = {key: value}
        style = None if isinstance(value, (list, dict)) else False
        for readable in (True, False):
            text = _dump_one(item, readable, style)
            try:
                if _parse_yaml(text) == item:
                    break
            except (yaml.YAMLError, ValueError):
                continue
        out.append(text)
    return "".join(out)


def _flat(key: str | None, text: str) -> bool:
    line = text.rstrip("\r\n")
    if key is None:
        return not line.strip() or line.startswith("#")
    return "\n" not in line and not line.endswith((":", "|", ">", "|-", ">-"))


@functools.lru_cache(maxsize=4096)
def _plain_key(key: str) -> bool:
    """A key YAML reads back as the same string without quotes."""
    return bool(_KEY_NAME_RE.fullmatch(key)) and key.lower() not in _YAML_WORDS


def _plain_scalar(value: Any) -> str | None:
    """``value`` as YAML text when it is a number, boolean, date or plain word, else None."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)  # YAML 1.1 reads 1e-12 as a string: only plain decimals here
        return text if re.fullmatch(r"-?\d+\.\d+", text) else None
    if isinstance(value, date) and not isinstance(value, datetime):
        return value.isoformat()
    if (
        isinstance(value, str)
        and _PLAIN_WORD_RE.fullmatch(value)
        and value.lower() not in _YAML_WORDS
    ):
        return value
    return None


def _dump_one(item: dict[str, Any], readable: bool, style: bool | None) -> str:
    options: dict[str, Any] = {
        "sort_keys": False,
        "allow_unicode": readable,
        "default_flow_style": style,
        "width": 10_000,
    }
    yaml = _yaml()
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    try:
        return str(yaml.dump(item, Dumper=dumper, **options))
    except (UnicodeEncodeError, yaml.YAMLError):  # libyaml refuses lone surrogates
        return str(yaml.dump(item, Dumper=yaml.SafeDumper, **options))


def _blocks(front: str) -> list[tuple[str | None, str]]:
    """Split frontmatter text into (key, text) blocks; key None for comments and blanks.

    A block starts at a line in column 0 that is not blank, not a comment and
    not a ``- item`` of the block before it; it runs until the next one.
    """
    blocks: list[tuple[str | None, list[str]]] = []
    for line in split_lines(front):
        content = line_content(line)
        starts_key = bool(content) and not content[0].isspace() and not content.startswith("#")
        starts_key = starts_key and not (content == "-" or content.startswith("- "))
        if starts_key:
            blocks.append(("?", [line]))
        elif blocks and blocks[-1][0] == "?" and (content[:1].isspace() or content.startswith("-")):
            blocks[-1][1].append(line)
        else:
            blocks.append((None, [line]))
    result: list[tuple[str | None, str]] = []
    for marker, lines in blocks:
        text = "".join(lines)
        result.append((None if marker is None else _block_key(text), text))
    return result


@functools.lru_cache(maxsize=8192)  # the same lines recur card after card
def _block_key(text: str) -> str | None:
    """The key a block of frontmatter lines sets, or None if it is not one key's."""
    plain = _PLAIN_KEY_RE.match(text)
    if plain and _plain_key(plain.group(1)):
        return plain.group(1)  # the common case, without a YAML parse
    try:
        loaded = _parse_yaml(text)
    except (_yaml().YAMLError, ValueError, TypeError):
        loaded = None
    if isinstance(loaded, dict) and len(loaded) == 1:
        return str(next(iter(loaded)))
    return None


def _edit_front(front: str, old: Mapping[str, Any], new: Mapping[str, Any], newline: str) -> str:
    """Rewrite only the keys whose values changed; fall back to a full dump if unsure."""
    out: list[str] = []
    seen: set[str] = set()
    blocks = _blocks(front)
    # One line a key, blanks and comments between: a key's lines are known for sure, so
    # rewriting plain keys with plain scalars needs no verifying parse. Not if a key is
    # seen twice: one of them may be a line inside a flow mapping (``k: {p: 1,`` then
    # ``q: 2}``), or YAML keeps only the last.
    keys = [key for key, _ in blocks if key is not None]
    exact = len(keys) == len(set(keys)) and all(_flat(key, text) for key, text in blocks)
    for key, text in blocks:
        if key is None:
            out.append(text)
            continue
        seen.add(key)
        if key not in new:
            exact = False
            continue
        if key in old and old[key] == new[key]:
            out.append(text)
        else:
            exact = exact and _plain_scalar(new[key]) is not None
            out.append(_dump({key: new[key]}).replace("\n", newline))
    body = "".join(out)
    if body and not body.endswith("\n"):
        body += newline
    for key, value in new.items():
        if key not in seen:
            exact = False
            body += _dump({key: value}).replace("\n", newline)
    if exact and seen == set(old):  # every old key was found as its own block
        return body
    try:
        if _load_yaml(body) == dict(new):
            return body
    except FileShapeError:
        pass
    return _dump(new).replace("\n", newline)


def _frontmatter_end(lines: list[str]) -> int | None:
    """The index of the closing fence if ``lines`` open with frontmatter, else None."""
    if not lines or not _OPEN_RE.fullmatch(line_content(lines[0])):
        return None
    for index in range(1, len(lines)):
        if _CLOSE_RE.fullmatch(line_content(lines[index])):
            return index
    return None


def unclosed_frontmatter(text: str) -> bool:
    """Whether ``text`` opens a frontmatter fence and never closes it (``Card.parse``
    reads such a card as all body, so an edit of its body would drop the fence's lines)."""
    lines = split_lines(text)
    return (
        bool(lines)
        and _OPEN_RE.fullmatch(line_content(lines[0])) is not None
        and _frontmatter_end(lines) is None
    )


class Card:
    """A card's metadata (the frontmatter, as loaded by YAML) and its body."""

    __slots__ = ("meta", "body", "_front", "_fences", "_orig_meta", "_orig_body", "_newline")

    def __init__(self, meta: Mapping[str, Any] | None = None, body: str = "") -> None:
        self.meta: dict[str, Any] = dict(meta or {})
        self.body = body
        self._front: str | None = None
        self._fences: tuple[str, str] | None = None
        self._orig_meta: dict[str, Any] | None = None
        self._orig_body: str | None = None
        self._newline = "\n"

    @classmethod
    def parse(cls, text: str) -> Card:
        newline = detect_newline(text)
        lines = split_lines(text)
        card = cls()
        card._newline = newline
        end = _frontmatter_end(lines)
        if end is not None:
            front = "".join(lines[1:end])
            card.meta = _load_yaml(front)
            card.body = "".join(lines[end + 1 :])
            card._front = front
            card._fences = (lines[0], lines[end])
        if card._front is None:
            card.body = text
        card._orig_meta = _copy(card.meta)
        card._orig_body = card.body
        return card

    @property
    def changed(self) -> bool:
        return self._orig_meta != self.meta or self._orig_body != self.body

    def render(self) -> str:
        newline = self._newline
        if self._front is not None and self._fences is not None:
            opening, closing = self._fences
            if self._orig_meta == self.meta:
                front = self._front
            else:
                front = _edit_front(self._front, self._orig_meta or {}, self.meta, newline)
            if not closing.endswith("\n") and self.body:
                closing += newline
            return opening + front + closing + self.body
        if not self.meta:
            if _frontmatter_end(split_lines(self.body)) is None:
                return self.body
            return f"---{newline}---{newline}{self.body}"  # else its own --- would read as YAML
        front = _dump(self.meta).replace("\n", newline)
        return f"---{newline}{front}---{newline}{self.body}"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Card):
            return NotImplemented
        return (self.meta, self.body) == (other.meta, other.body)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Card(meta={self.meta!r}, body={self.body[:40]!r})"


def _copy(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of the containers, so in-place edits of lists and dicts count as changes."""
    return {key: _copy_value(value) for key, value in meta.items()}


def _copy_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_value(item) for item in value]
    return value
