"""The package's layers (ARCHITECTURE.md): no module imports a layer above its own.

Every import counts, at the top of a module or inside a function (a lazy import is
still a dependency), except those under ``if TYPE_CHECKING:``, which never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import memdir

SRC = Path(memdir.__file__).parent

# The layers, lowest first. A module belongs to the longest prefix it starts with.
LAYERS: dict[str, int] = {
    # 0-1: the ground every other module stands on
    "memdir.errors": 0,
    "memdir.timeutil": 0,
    "memdir.lazy": 0,
    "memdir.sqlite": 1,
    "memdir.results": 1,
    "memdir.config": 1,
    "memdir.readonly": 1,
    "memdir.plugins": 1,
    # 2-3: where things are on disk, and reading and writing markdown files
    "memdir.paths": 2,
    "memdir.tiers": 2,
    "memdir.layouts": 2,
    "memdir.files": 3,
    "memdir.textutil": 3,
    # the storage seam's Protocols, and today's files behind it
    "memdir.storage": 3,
    # 4: checks on text before it is kept, and the optional model client
    "memdir.safety": 4,
    "memdir.llm": 4,
    "memdir.llm.chat": 4,
    "memdir.llm.checks": 4,
    "memdir.llm.http": 4,
    # 5: the stores, working, semantic and episodic
    "memdir.stores": 5,
    # 6: what is derived from the stores
    "memdir.index": 6,
    "memdir.llm.summaries": 6,
    # 7: the jobs and features over stores and index
    "memdir.context": 7,
    "memdir.dream": 7,
    "memdir.maintain": 7,
    "memdir.ingest": 7,
    # the PostgreSQL backend: its index and history stand on index/ and stores/
    "memdir.storage.postgres": 7,
    # 8: the facade
    "memdir.memory": 8,
    "memdir.opening": 8,
    "memdir.folder_index": 8,
    # 9: what is built on a Memory
    "memdir.tools": 9,
    "memdir.scaffold": 9,
    "memdir.home": 9,
    # agents in a database opened as a Memory, and folders moved in and out of it
    "memdir.storage.agents": 9,
    "memdir.storage.transfer": 9,
    "memdir.aio": 9,
    # 10: the ways in: servers, the command line, the package's own exports
    "memdir.server": 10,
    "memdir.ui": 10,
    "memdir.integrations": 10,
    "memdir.cli": 10,
    "memdir.demo": 10,
    "memdir.testing": 10,
    "memdir.__main__": 10,
    "memdir": 10,
}

# Upward imports that are allowed, each with its reason.
ALLOWED = {
    ("memdir.config.manifest", "memdir.tools.catalog"): (
        "the manifest's [tools] include/exclude name tools; checked inside the validator, "
        "only when they are set"
    ),
}


def module_name(path: Path) -> str:
    parts = ["memdir", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    best = max(
        (prefix for prefix in LAYERS if module == prefix or module.startswith(prefix + ".")),
        key=len,
    )
    return LAYERS[best]


def is_module(dotted: str) -> bool:
    rel = Path(*dotted.split(".")[1:])
    return (SRC / rel).with_suffix(".py").is_file() or (SRC / rel / "__init__.py").is_file()


def runtime_imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            type_only.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, alias.name) for alias in node.names if alias.name.startswith("memdir")
            ]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memdir"):
            assert node.level == 0, f"{path}:{node.lineno}: memdir imports are absolute"
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.append((node.lineno, sub if is_module(sub) else node.module))
    return found


def test_every_module_has_a_layer() -> None:
    for path in SRC.rglob("*.py"):
        name = module_name(path)
        placed = [p for p in LAYERS if p != "memdir" and (name == p or name.startswith(p + "."))]
        assert placed or name == "memdir", (
            f"{name} is in no layer: add it to LAYERS and ARCHITECTURE.md"
        )


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = []
    for path in sorted(SRC.rglob("*.py")):
        name = module_name(path)
        for line, target in runtime_imports(path):
            if layer(target) > layer(name) and (name, target) not in ALLOWED:
                upward.append(
                    f"{name}:{line} (layer {layer(name)}) imports {target} (layer {layer(target)})"
                )
    assert not upward, "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    # The checker itself: a store importing the facade is caught, a type-only one is not.
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from memdir.memory import Memory\n"
        "if TYPE_CHECKING:\n"
        "    from memdir.cli import main\n"
        "def f():\n"
        "    import memdir.server.mcp\n"
    )
    targets = [target for _, target in runtime_imports(source)]
    assert targets == ["memdir.memory", "memdir.server.mcp"]
    assert layer("memdir.stores.knowledge") < layer("memdir.memory") < layer("memdir.server.mcp")
