"""Plugins by entry point (``memdir.plugins``): memdir's own are entry points declared in
pyproject.toml, and a real tiny plugin distribution (a dist-info and a module in a
folder on ``sys.path``, as ``pip install`` leaves them; ``importlib.metadata`` finds
it) adds an embedder, an LLM client and a token counter that a folder then uses,
through the real CLI in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

import memdir
from memdir.plugins import GROUPS, PluginError, own_entry_points, parse_entry_points, resolve

ROOT = Path(__file__).resolve().parent.parent

PLUGIN_MODULE = '''
"""memdir-tiny: a third party's embedder, chat client and token counter."""
import numpy as np


class TinyEmbedder:
    id = "tiny-v1"
    dim = 4

    def __init__(self, scale="1"):
        self.scale = float(scale)

    def embed(self, texts):
        rows = [[len(t), t.count("e"), t.count(" "), self.scale] for t in texts]
        out = np.asarray(rows, dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


class EchoChat:
    def __init__(self, base_url, model, *, api_key=None, timeout=60.0, temperature=0.0,
                 retry=None):
        self.id = f"echo:{model}@{base_url}"

    def complete(self, messages, *, json_mode=False, max_tokens=None):
        return messages[-1]["content"].upper()


class WordCounter:
    name = "words"

    def count(self, text):
        return len(text.split())


class NotMiniLM:  # tries to take memdir's own name: must never load
    def __init__(self):
        raise RuntimeError("a shadowed plugin was loaded")
'''

ENTRY_POINTS = """\
[memdir.embedders]
tiny = memdir_tiny:TinyEmbedder
minilm = memdir_tiny:NotMiniLM

[memdir.llms]
echo = memdir_tiny:EchoChat

[memdir.tokenizers]
words = memdir_tiny:WordCounter
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A folder holding the plugin as an installed distribution: the module and its
    ``memdir_tiny-0.3.0.dist-info`` (METADATA, entry_points.txt, RECORD)."""
    folder = tmp_path / "site"
    info = folder / "memdir_tiny-0.3.0.dist-info"
    info.mkdir(parents=True)
    (folder / "memdir_tiny.py").write_text(PLUGIN_MODULE)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: memdir-tiny\nVersion: 0.3.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (info / "RECORD").write_text("")
    return folder


CLI = "import sys\nfrom memdir.cli import main\nsys.argv = ['memdir', {args}]\nmain()"


def run(site: Path, code: str, cwd: Path) -> str:
    """``code`` in a fresh interpreter with the plugin installed (its folder on the path)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_memdirs_own_are_entry_points_declared_in_pyproject() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    own = own_entry_points()
    for group in GROUPS.values():
        assert own[group] == declared[group], group
    from importlib import metadata

    for group in GROUPS.values():  # what importlib.metadata reads agrees
        seen = {e.name: e.value for e in metadata.entry_points(group=group)
                if e.dist is not None and e.dist.metadata["Name"] == "memdir"}  # fmt: skip
        assert seen == own[group]
    assert resolve("embedders", "hashing") is memdir.HashingEmbedder


def test_an_unknown_name_says_what_is_known() -> None:
    with pytest.raises(PluginError, match="no tokenizer named 'nope'; known: bytes, tok"):
        resolve("tokenizers", "nope")


def test_a_plugin_package_adds_an_embedder_an_llm_and_a_token_counter(
    site: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "mem"
    memdir.init(folder)
    manifest = folder / "memdir.toml"
    text = manifest.read_text().replace("[context]\n", '[context]\ntokenizer = "words"\n')
    manifest.write_text(
        text + '\n[index]\nembedder = "tiny:2"\n'
        '\n[llm]\nprovider = "echo"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    out = run(
        site,
        f"""
        import json, memdir
        with memdir.open({str(folder)!r}) as m:
            m.knowledge.save("Deploys happen on Tuesdays.")
            hits = m.search("Deploys happen on Tuesdays.", mode="deep")
            print(json.dumps({{
                "embedder": m.index.embedder.id,
                "scale": m.index.embedder.scale,
                "hit": hits[0].snippet if hits else None,
                "tokens": m.tokens.count("three words here"),
                "llm": m.llm.id,
                "answer": m.llm.complete([{{"role": "user", "content": "hi"}}]),
                "notices": [n.message for n in m.check()],
            }}))
        """,
        tmp_path,
    )
    used = json.loads(out.splitlines()[-1])
    assert used["embedder"] == "tiny-v1" and used["scale"] == 2.0
    assert "Tuesdays" in used["hit"]
    assert used["tokens"] == 3
    assert (used["llm"], used["answer"]) == ("echo:m@http://127.0.0.1:9/v1", "HI")


def test_memdir_plugins_lists_them_and_a_shadowed_name_is_not_loaded(
    site: Path, tmp_path: Path
) -> None:
    listed = run(site, CLI.format(args="'plugins', '--json'"), tmp_path)
    found = {(p["group"], p["name"], p["distribution"]): p for p in json.loads(listed)}
    tiny = found[("memdir.embedders", "tiny", "memdir-tiny")]
    assert (tiny["value"], tiny["version"], tiny["builtin"]) == (
        "memdir_tiny:TinyEmbedder", "0.3.0", False,
    )  # fmt: skip
    assert found[("memdir.llms", "echo", "memdir-tiny")]["shadowed"] is False
    assert found[("memdir.tokenizers", "words", "memdir-tiny")]["builtin"] is False
    assert found[("memdir.embedders", "minilm", "memdir-tiny")]["shadowed"] is True
    assert found[("memdir.embedders", "minilm", "memdir")]["builtin"] is True
    assert found[("memdir.embedders", "openai", "memdir")]["builtin"] is True

    text = run(site, CLI.format(args="'plugins'"), tmp_path)
    assert (
        "memdir.embedders" in text and "tiny memdir_tiny:TinyEmbedder (memdir-tiny 0.3.0)" in text
    )
    assert "shadowed" in text
    chosen = run(
        site,
        "from memdir.index.embedders import load_embedder\n"
        "print(type(load_embedder('minilm')).__name__)",
        tmp_path,
    )
    assert chosen.strip() == "MiniLMEmbedder"  # memdir's own, never the shadowing one


def test_entry_points_txt_is_read_as_ini() -> None:
    text = "# c\n[a.b]\nx = m:f\n y=m.n:C.d \n\n[empty]\n; c\n"
    assert parse_entry_points(text) == {"a.b": {"x": "m:f", "y": "m.n:C.d"}, "empty": {}}
    assert parse_entry_points(ENTRY_POINTS)["memdir.llms"] == {"echo": "memdir_tiny:EchoChat"}


def test_a_third_partys_name_is_found_without_importing_importlib_metadata(
    site: Path, tmp_path: Path
) -> None:
    # memdir save with a third party's embedder: its entry point is read from its
    # dist-info, as memdir's own are; importlib.metadata (every distribution scanned)
    # is left for listing them all.
    folder = tmp_path / "mem"
    memdir.init(folder)
    manifest = folder / "memdir.toml"
    manifest.write_text(manifest.read_text() + '\n[index]\nembedder = "tiny:2"\n')
    out = run(
        site,
        f"""
        import json, sys, memdir
        from memdir.plugins import resolve
        with memdir.open({str(folder)!r}) as m:
            m.knowledge.save("Deploys happen on Tuesdays.")
            print(json.dumps({{
                "embedder": m.index.embedder.id,
                "echo": resolve("llms", "echo").__name__,
                "metadata": "importlib.metadata" in sys.modules,
            }}))
        """,
        tmp_path,
    )
    assert json.loads(out.splitlines()[-1]) == {
        "embedder": "tiny-v1",
        "echo": "EchoChat",
        "metadata": False,
    }


def test_a_name_no_dist_info_holds_is_still_asked_of_importlib_metadata(
    site: Path, tmp_path: Path
) -> None:
    out = run(
        site,
        """
        import sys
        from memdir.plugins import PluginError, resolve
        try:
            resolve("embedders", "nowhere")
        except PluginError as exc:
            print("importlib.metadata" in sys.modules, exc)
        """,
        tmp_path,
    )
    assert out.startswith("True no embedder named 'nowhere'; known: ")
    assert "tiny" in out


# -- a plugin that misbehaves: a clear error or a notice, never a traceback -------------

BROKEN_MODULE = '''
"""memdir-broken: plugins that raise or answer with garbage."""


class Raises:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("the plugin is broken")


class Garbage:
    """Made fine; answers with the wrong kind of thing."""

    id = name = "garbage"
    dim = 4

    def __init__(self, *args, **kwargs):
        pass

    def count(self, text):
        return "many"

    def embed(self, texts):
        return [[0.5, 0.5] for _ in texts]  # two numbers a text, not dim (4)


class Explodes:
    """A chat client made fine, whose answers raise or are not text."""

    def __init__(self, base_url, model, **options):
        self.id = f"explodes:{model}"
        self.answers = [RuntimeError("the socket melted"), None]

    def complete(self, messages, *, json_mode=False, max_tokens=None):
        answer = self.answers.pop(0) if self.answers else None
        if isinstance(answer, Exception):
            raise answer
        return answer


class Lists:
    """An embedder that answers with plain lists of floats, as many clients do."""

    id = "lists-v1"
    dim = 3

    def embed(self, texts):
        return [[float(len(t)), float(t.count("e")) + 1.0, 1.0] for t in texts]
'''

BROKEN_ENTRY_POINTS = """\
[memdir.llms]
raises = memdir_broken:Raises
explodes = memdir_broken:Explodes

[memdir.tokenizers]
raises = memdir_broken:Raises
garbage = memdir_broken:Garbage

[memdir.embedders]
garbage = memdir_broken:Garbage
lists = memdir_broken:Lists
"""


@pytest.fixture
def broken(site: Path) -> Path:
    """``site`` with a second distribution whose plugins misbehave."""
    info = site / "memdir_broken-0.1.0.dist-info"
    info.mkdir()
    (site / "memdir_broken.py").write_text(BROKEN_MODULE)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: memdir-broken\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(BROKEN_ENTRY_POINTS)
    return site


def cli(site: Path, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m memdir ARGS --dir FOLDER`` with the plugins installed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "memdir", *args, "--dir", str(folder)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


PAST_WEEK = """# Alpha Research Intel

## Current Week (Nov 16-22, 2026)
### Competitors
- Globex cut its prices to $49.

---
"""


def test_an_llm_plugin_that_raises_leaves_the_folder_offline(broken: Path, tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    memdir.init(folder)
    manifest = folder / "memdir.toml"
    manifest.write_text(
        manifest.read_text()
        + '\n[llm]\nprovider = "raises"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    (folder / "intel" / "alpha.md").write_text(PAST_WEEK)
    done = cli(broken, folder, "rotate")
    assert (done.returncode, "Traceback" in done.stderr) == (0, False), done.stderr
    assert "Globex cut its prices to $49." in (folder / "intel" / "alpha.md").read_text()
    out = run(
        broken,
        f"""
        import memdir
        with memdir.open({str(folder)!r}) as m:
            print(m.llm, [n.message for n in m.check()])
        """,
        tmp_path,
    )
    assert out.strip() == (
        "None [\"working offline: the llms plugin 'raises' could not be made: "
        'the plugin is broken"]'
    )


@pytest.mark.parametrize(
    ("tokenizer", "error"),
    [
        ("raises", "the tokenizers plugin 'raises' could not be made: the plugin is broken"),
        ("garbage", "the tokenizers plugin 'garbage' counted 'many' tokens; a count is a whole "
         "number of at least 0"),
    ],
)  # fmt: skip
def test_a_token_counter_plugin_that_misbehaves_is_one_line(
    broken: Path, tmp_path: Path, tokenizer: str, error: str
) -> None:
    folder = tmp_path / "mem"
    memdir.init(folder)
    manifest = folder / "memdir.toml"
    manifest.write_text(
        manifest.read_text().replace("[context]\n", f'[context]\ntokenizer = "{tokenizer}"\n')
    )
    done = cli(broken, folder, "context")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"error: {error}\n")


def with_embedder(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / "mem"
    memdir.init(folder)
    manifest = folder / "memdir.toml"
    manifest.write_text(manifest.read_text() + f'\n[index]\nembedder = "{name}"\n')
    return folder


def test_an_embedder_that_answers_with_lists_of_floats_is_used(
    broken: Path, tmp_path: Path
) -> None:
    folder = with_embedder(tmp_path, "lists")
    assert cli(broken, folder, "save", "Deploys happen on Tuesdays.").returncode == 0
    done = cli(broken, folder, "reindex")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    out = run(
        broken,
        f"""
        import memdir
        with memdir.open({str(folder)!r}) as m:
            hits = m.search("Deploys happen on Tuesdays.")
            print(m.index.embedder.id, hits[0].semantic > 0.99, [n.message for n in m.check()])
        """,
        tmp_path,
    )
    assert out.strip() == "lists-v1 True []"


def test_an_embedder_that_answers_with_garbage_is_named_never_a_traceback(
    broken: Path, tmp_path: Path
) -> None:
    folder = with_embedder(tmp_path, "garbage")
    assert cli(broken, folder, "save", "Deploys happen on Tuesdays.").returncode == 0
    said = "the embedder 'garbage' gave list of shape ("
    done = cli(broken, folder, "reindex")
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert done.stderr.startswith(f"error: {said}") and done.stderr.count("\n") == 1
    assert done.stderr.endswith(", 2) for 14 texts; expected 14 vectors of 4 numbers\n")
    out = run(
        broken,
        f"""
        import memdir
        with memdir.open({str(folder)!r}) as m:
            hits = m.search("Deploys happen on Tuesdays.")
            print(hits[0].snippet, [n.message for n in m.check()])
        """,
        tmp_path,
    )
    assert "Tuesdays" in out and f"keyword search only: {said}" in out


def test_an_llm_plugin_whose_answers_raise_or_are_not_text_is_a_failed_llm(
    broken: Path, tmp_path: Path
) -> None:
    """A RuntimeError from complete(), or None for an answer, was a traceback from
    memdir rotate and memdir dream."""
    folder = tmp_path / "mem"
    memdir.init(folder)
    manifest = folder / "memdir.toml"
    manifest.write_text(
        manifest.read_text()
        + '\n[llm]\nprovider = "explodes"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    (folder / "intel" / "alpha.md").write_text(PAST_WEEK)
    done = cli(broken, folder, "rotate")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert "note: LLM summary failed: the llms plugin 'explodes' failed: the socket melted" in (
        done.stdout
    )
    assert "Globex cut its prices to $49." in (folder / "intel" / "alpha.md").read_text()
    out = run(
        broken,
        f"""
        from memdir.llm.chat import LLMError
        import memdir
        with memdir.open({str(folder)!r}) as m:
            try:
                m.llm.complete([{{"role": "user", "content": "hi"}}])
            except LLMError:
                pass
            try:
                m.llm.complete([{{"role": "user", "content": "hi"}}])
            except LLMError as exc:
                print(m.llm.id, exc)
        """,
        tmp_path,
    )
    assert out.strip() == "explodes:m the llms plugin 'explodes' answered NoneType, not text"
