"""Plugins: embedders, LLM clients and token counters, found by entry point.

Three entry point groups, one per seam (``GROUPS``): ``memdir.embedders``,
``memdir.llms``, ``memdir.tokenizers``. An entry point names an object (a class or
a factory) that memdir calls to make one; what it is called with is the seam's
business (``index.embedders``, ``llm.chat``, ``context.tokens``). memdir's own
(``minilm``, ``hashing``, ``openai``; ``openai``; ``bytes``, ``tokenizer-json``)
are entry points too, declared in its ``pyproject.toml``, so a third party adds
one the same way: ``[project.entry-points."memdir.embedders"] mine = "pkg:Mine"``
and ``pip install`` it.

Invariants:
- Nothing is read at import. A name is looked up when it is resolved: first among
  memdir's own entry points, read from its own installed metadata (the
  ``entry_points.txt`` of its dist-info, found on ``sys.path`` as
  ``importlib.metadata`` finds it, without importing that module: importing it
  costs 40-170 ms on a loaded machine, more than a whole ``memdir save``); a name
  that is not memdir's own is looked up the same way in the other distributions'
  ``entry_points.txt`` on ``sys.path`` (``_installed_value``), read only when such a
  name is asked for. ``importlib.metadata`` is imported only to list every plugin
  (``names``, ``installed``: ``memdir plugins``, an unknown name's error) or to find
  one where no dist-info folder holds it (a zipped or custom-found distribution).
- memdir's own names cannot be taken: a third party's entry point of the same
  name is listed (``memdir plugins``) as shadowed, never loaded.
- Every failure is a ``PluginError`` saying which name, which group, and what is
  known; a plugin that raises while loading is reported with its distribution.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdir.errors import MemdirError

GROUPS = {
    "embedders": "memdir.embedders",
    "llms": "memdir.llms",
    "tokenizers": "memdir.tokenizers",
}
"""seam -> entry point group"""

DISTRIBUTION = "memdir"


class PluginError(MemdirError):
    """No plugin of that name, or it could not be loaded."""


@dataclass(frozen=True)
class Plugin:
    """One entry point in one of memdir's groups."""

    group: str
    name: str
    value: str
    """``module:attribute``"""
    distribution: str
    version: str
    builtin: bool
    """declared by memdir itself"""
    shadowed: bool = False
    """a third party's, under a name memdir's own already has: never loaded"""

    def to_dict(self) -> dict[str, object]:
        return {
            "group": self.group,
            "name": self.name,
            "value": self.value,
            "distribution": self.distribution,
            "version": self.version,
            "builtin": self.builtin,
            "shadowed": self.shadowed,
        }


_own: dict[str, dict[str, str]] | None = None


def own_entry_points() -> dict[str, dict[str, str]]:
    """memdir's own entry points, group -> name -> ``module:attr``, from its dist-info
    (read once a process). Raises ``PluginError`` when memdir has no installed
    metadata, or metadata older than its plugin groups (a checkout run without
    ``pip install -e .`` since its pyproject.toml changed)."""
    global _own
    if _own is None:
        path = _own_metadata()
        if path is None:
            raise PluginError(
                "memdir's installed metadata was not found on sys.path: install memdir "
                "(pip install memdir, or pip install -e . in a checkout)"
            )
        groups = parse_entry_points(path.read_text(encoding="utf-8"))
        if not any(group in groups for group in GROUPS.values()):
            raise PluginError(
                f"memdir's installed metadata ({path.parent}) declares none of its plugins: "
                "it is older than this memdir; reinstall (pip install -e . in a checkout)"
            )
        _own = groups
    return _own


def resolve(seam: str, name: str) -> Any:
    """The object the entry point ``name`` of ``seam``'s group names, imported."""
    group = GROUPS[seam]
    value = own_entry_points().get(group, {}).get(name)
    if value is not None:
        return _load_value(value, name, group)
    value = _installed_value(group, name)
    load: Callable[[], Any] | None = None
    if value is not None:
        load = functools.partial(_import_value, value)
    else:  # not in a dist-info folder on sys.path: ask importlib.metadata
        from importlib import metadata

        found = (entry for entry in metadata.entry_points(group=group) if entry.name == name)
        load = next((entry.load for entry in found), None)
    if load is not None:
        try:
            return load()
        except Exception as exc:  # a broken plugin: say which
            raise PluginError(f"the {group} plugin {name!r} could not be loaded: {exc!r}") from exc
    raise PluginError(f"no {seam[:-1]} named {name!r}; known: {', '.join(names(seam))}")


def names(seam: str) -> list[str]:
    """Every name ``seam``'s group knows, memdir's own and installed ones, sorted."""
    group = GROUPS[seam]
    from importlib import metadata

    found = set(own_entry_points().get(group, {}))
    found |= {entry.name for entry in metadata.entry_points(group=group)}
    return sorted(found)


def installed() -> list[Plugin]:
    """Every entry point in memdir's groups, from every installed distribution
    (memdir's own first in each group, then by name)."""
    from importlib import metadata

    own = own_entry_points()
    plugins: list[Plugin] = []
    for group in GROUPS.values():
        for entry in metadata.entry_points(group=group):
            dist = getattr(entry, "dist", None)
            dist_name = str(dist.metadata["Name"]) if dist is not None else "?"
            version = str(dist.version) if dist is not None else "?"
            builtin = dist_name.lower() == DISTRIBUTION and own.get(group, {}).get(entry.name)
            plugins.append(
                Plugin(
                    group,
                    entry.name,
                    entry.value,
                    dist_name,
                    version,
                    builtin=bool(builtin),
                    shadowed=not builtin and entry.name in own.get(group, {}),
                )
            )
    plugins.sort(key=lambda p: (list(GROUPS.values()).index(p.group), not p.builtin, p.name))
    return plugins


def parse_entry_points(text: str) -> dict[str, dict[str, str]]:
    """An ``entry_points.txt`` (an INI file: ``[group]`` then ``name = value`` lines)."""
    groups: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = groups.setdefault(line[1:-1].strip(), {})
        elif current is not None and "=" in line:
            name, _, value = line.partition("=")
            current[name.strip()] = value.strip()
    return groups


def _own_metadata() -> Path | None:
    """memdir's ``entry_points.txt``: in the first folder on ``sys.path`` that holds a
    memdir dist-info, the one ``importlib.metadata`` would read."""
    for entry in sys.path:
        try:
            with os.scandir(entry or os.curdir) as listing:
                names = [e.name for e in listing if e.name.startswith(_PREFIX)]
        except OSError:  # not a folder (a zip), or gone
            continue
        for name in sorted(names):
            if name.endswith(".dist-info"):
                candidate = Path(entry or os.curdir) / name / "entry_points.txt"
                if candidate.is_file():
                    return candidate
    return None


_PREFIX = f"{DISTRIBUTION}-"
_INFO = (".dist-info", ".egg-info")


def _installed_value(group: str, name: str) -> str | None:
    """The ``module:attr`` of entry point ``name`` in ``group``, from the first
    distribution on ``sys.path`` whose ``entry_points.txt`` declares it; each
    distribution counted once, where ``sys.path`` first has it (as
    ``importlib.metadata`` sees them)."""
    seen: set[str] = set()
    for entry in sys.path:
        folder = entry or os.curdir
        try:
            with os.scandir(folder) as listing:
                infos = sorted(e.name for e in listing if e.name.endswith(_INFO))
        except OSError:  # not a folder (a zip), or gone
            continue
        for info in infos:
            distribution = _normalized(info.partition("-")[0].rsplit(".", 1)[0])
            if distribution in seen:
                continue
            seen.add(distribution)
            try:
                text = (Path(folder) / info / "entry_points.txt").read_text(encoding="utf-8")
            except OSError:  # no entry points
                continue
            value = parse_entry_points(text).get(group, {}).get(name)
            if value is not None:
                return value
    return None


def _normalized(distribution: str) -> str:
    """A distribution's name as PEP 503 compares them (``My.Plugin`` is ``my_plugin``)."""
    return "_".join(part for part in _SEPARATORS.split(distribution.lower()) if part)


_SEPARATORS = re.compile(r"[-_.]+")


def _import_value(value: str) -> Any:
    """The object an entry point's ``module:attr.attr [extras]`` names, imported."""
    module_name, _, attribute = value.partition("[")[0].partition(":")
    found: Any = importlib.import_module(module_name.strip())
    for part in attribute.strip().split(".") if attribute.strip() else []:
        found = getattr(found, part)
    return found


def _load_value(value: str, name: str, group: str) -> Any:
    try:
        found: Any = _import_value(value)
    except (ImportError, AttributeError) as exc:
        message = f"memdir's own {group} plugin {name!r} ({value}) is missing: {exc}"
        raise PluginError(message) from None
    return found
