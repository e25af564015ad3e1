"""The four preset layouts, as data: ``<name>/memdir.toml`` and ``<name>/files/``.

- ``default``: memdir's own (DESIGN.md's layer table).
- ``notebook``: the notebook seed's paths (role/ROLE.md, daily-logs/ ...).
- ``vault``: the vault seed's (STATE.md, vault/ cards, daily/, archive/).
- ``workspace``: the workspace seed's (SOUL.md ..., memory/working-state.md).

Files a store owns (NOTEBOOK.md, knowledge.md, state.md) are not here: their
store writes its own starter, so there is one source for each file's shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from memdir.config import Layer, Manifest, is_glob, parse_manifest, static_prefix

LAYOUTS: tuple[str, ...] = ("default", "notebook", "vault", "workspace")


def _root(layout: str) -> Traversable:
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    return resources.files(__name__).joinpath(layout)


def manifest_text(layout: str) -> str:
    return _root(layout).joinpath("memdir.toml").read_text(encoding="utf-8")


def manifest(layout: str) -> Manifest:
    return parse_manifest(manifest_text(layout), Path(f"<layout {layout}>/memdir.toml"))


def starter_files(layout: str) -> dict[str, bytes]:
    """Relative path -> content of the layout's starter files."""
    files: dict[str, bytes] = {}

    def walk(node: Traversable, prefix: str) -> Iterator[tuple[str, Traversable]]:
        for child in node.iterdir():
            path = f"{prefix}{child.name}"
            if child.is_dir():
                yield from walk(child, path + "/")
            else:
                yield path, child

    base = _root(layout).joinpath("files")
    if base.is_dir():
        for relpath, node in walk(base, ""):
            files[relpath] = node.read_bytes()
    return files


def folders(manifest: Manifest) -> list[str]:
    """Folders the manifest's globbed layers live in (made by ``memdir init``)."""
    found: list[str] = []
    for layer in manifest.layers.values():
        for path in layer.paths:
            folder = static_prefix(path) if is_glob(path) else ""
            if folder and not folder.startswith(".") and folder not in found:
                found.append(folder)
    return found


def catch_all(layer: Layer) -> bool:
    """Whether the layer only gathers what no other layer claims (every path ``**/...``,
    such as the ``notes`` layer every preset lists last)."""
    return layer.mount is None and all(path.startswith("**/") for path in layer.paths)


def detect(root: Path) -> tuple[str, int]:
    """The layout whose paths best match the files already in ``root``, and how many match."""
    best, best_score = "default", 0
    for layout in LAYOUTS:
        score = 0
        for layer in manifest(layout).layers.values():
            if layer.store in ("archive", "history") or catch_all(layer):
                continue  # every layout has these; they say nothing about the shape
            for path in layer.paths:
                if any(root.glob(path)) if is_glob(path) else (root / path).exists():
                    score += 1
        if score > best_score:
            best, best_score = layout, score
    return best, best_score
