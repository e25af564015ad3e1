"""What a fresh process imports (issue 14): opening a folder, saving and searching load
only what they use, so a later change cannot make every command slow again unnoticed.

Each check runs in a new interpreter and looks at ``sys.modules``; the timings are
bench/cold_start.py's. The last test keeps the lazy imports honest: a name imported
under ``if TYPE_CHECKING:`` is used in annotations only.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import memdir

SRC = Path(memdir.__file__).parent

# Never needed to open a folder, save to it or search it.
FEATURES = [
    "memdir.dream.cycle",
    "memdir.dream.plan",
    "memdir.ingest.importer",
    "memdir.ingest.detect",
    "memdir.maintain.backup",
    "memdir.maintain.jobs",
    "memdir.maintain.doctor",
    "memdir.maintain.decay",
    "memdir.llm.summaries",
    "memdir.llm.chat",
    "memdir.context.assemble",
    "memdir.stores.history",
    "memdir.stores.sessions",
    "memdir.stores.vault",
    "memdir.tools.registry",
    "memdir.server.mcp",
]
HEAVY = ["pydantic", "jsonschema", "yaml", "rich", "typer", "mcp", "importlib.metadata"]
MODEL = ["numpy", "onnxruntime", "tokenizers"]


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def unwanted(modules: set[str], names: list[str]) -> list[str]:
    return [name for name in names if name in modules]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder with an index, and the int8 query model made in the session's cache: a
    search converts it once per model cache (``index.quantised_model``), and that one-off
    step imports onnx (and onnx ``importlib.metadata``), which no later search does."""
    from memdir.index.embedders import MiniLMEmbedder

    assert MiniLMEmbedder().prepare_queries() is None  # made, or found made by a test before
    path = tmp_path / "mem"
    memdir.init(path)
    with memdir.open(path, embedder="hashing") as memory:  # an index with vectors
        memory.knowledge.save("Dana keeps the release checklist.")
        memory.search("release checklist")
    return path


def test_import_memdir_loads_nothing_but_its_errors() -> None:
    modules = loaded_after("import memdir")
    ours = sorted(name for name in modules if name.startswith("memdir"))
    assert ours == ["memdir", "memdir.errors", "memdir.lazy"]
    assert not unwanted(modules, HEAVY + MODEL)


def test_open_and_save_load_no_feature_no_model(folder: Path) -> None:
    modules = loaded_after(
        "import memdir\n"
        f"m = memdir.open({str(folder)!r})\n"
        "assert m.knowledge.save('The deploy needs a rollback plan.').ok\n"
        "m.close()"
    )
    assert not unwanted(modules, FEATURES + HEAVY + MODEL)


def test_a_search_loads_the_model_and_no_feature(folder: Path) -> None:
    modules = loaded_after(
        "import memdir\n"
        f"m = memdir.open({str(folder)!r})\n"  # the manifest's embedder: MiniLM
        "assert m.search('release checklist')\n"
    )
    assert not unwanted(modules, FEATURES + HEAVY)
    assert "onnxruntime" in modules  # a semantic search: the model was loaded for it
    assert "memdir.stores.knowledge" not in modules or "memdir.index.extract" in modules


@pytest.mark.parametrize(
    "argv",
    [
        ["save", "The deploy needs a rollback plan."],
        ["search", "release checklist"],
        ["get", "knowledge.md"],
    ],
)
def test_a_command_imports_only_its_own_module(folder: Path, argv: list[str]) -> None:
    modules = loaded_after(
        "import sys\n"
        "from memdir.cli import main\n"
        f"sys.argv = ['memdir', *{argv!r}, '--dir', {str(folder)!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
    )
    commands = sorted(name for name in modules if name.startswith("memdir.cli."))
    assert commands == [
        "memdir.cli._common",
        "memdir.cli.helpfmt",
        "memdir.cli.listing",
        "memdir.cli.memories",
        "memdir.cli.params",
    ]
    assert not unwanted(modules, FEATURES + ["pydantic", "jsonschema", "yaml", "mcp"])
    if argv[0] != "search":
        assert not unwanted(modules, MODEL)


def test_help_lists_every_command_without_running_any(folder: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memdir", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    from memdir.cli import COMMANDS

    for names in COMMANDS.values():
        for name in names:
            assert f" {name} " in done.stdout, name
    modules = loaded_after(
        "import sys\n"
        "from memdir.cli import main\n"
        "sys.argv = ['memdir', '--help']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    # the help names the jobs (maintain --only): that module, no other feature
    named = [name for name in FEATURES if name != "memdir.maintain.jobs"]
    heavy = ["pydantic", "jsonschema", "yaml", "mcp", "filelock"]
    assert not unwanted(modules, named + MODEL + heavy)


def type_only_names_used_at_run_time(path: Path) -> list[str]:
    """Names a module imports under ``if TYPE_CHECKING:`` and uses outside annotations
    (a NameError waiting for the line to run), unless a function imports them itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    type_only |= {a.asname or a.name.split(".")[0] for a in stmt.names}
    if not type_only:
        return []
    annotations: set[int] = set()
    local: dict[int, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in [*args.args, *args.kwonlyargs, *args.posonlyargs, args.vararg, args.kwarg]:
                if arg is not None and arg.annotation is not None:
                    annotations |= {id(n) for n in ast.walk(arg.annotation)}
            if node.returns is not None:
                annotations |= {id(n) for n in ast.walk(node.returns)}
            bound = {  # names the function binds itself: imports, assignments, arguments
                alias.asname or alias.name.split(".")[0]
                for stmt in ast.walk(node)
                if isinstance(stmt, (ast.Import, ast.ImportFrom))
                for alias in stmt.names
            }
            bound |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                      and isinstance(n.ctx, ast.Store)}  # fmt: skip
            bound |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
            for inner in ast.walk(node):
                local.setdefault(id(inner), set()).update(bound)
        elif isinstance(node, ast.AnnAssign):
            annotations |= {id(n) for n in ast.walk(node.annotation)}
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            annotations |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return [
        f"{path.relative_to(SRC)}:{node.lineno}: {node.id}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Name)
        and isinstance(node.ctx, ast.Load)
        and node.id in type_only
        and id(node) not in annotations
        and node.id not in local.get(id(node), set())
    ]


def test_names_imported_for_type_checkers_only_are_used_in_annotations_only() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        found += type_only_names_used_at_run_time(path)
    assert not found, "\n".join(found)
