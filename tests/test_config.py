"""The manifest: the four layouts parse, and every bad manifest fails with file, line and key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import memdir
from memdir import layouts
from memdir.config import (
    MANIFEST_NAME,
    Manifest,
    is_glob,
    load_manifest,
    parse_manifest,
    static_prefix,
)
from memdir.errors import ManifestError

# A small valid manifest; tests break one thing in it at a time.
BASE = """\
version = 1
agent = "default"

[limits]
notebook_max_agent_entries = 4

[layers.knowledge]
store = "knowledge"
paths = ["knowledge.md"]

[layers.notebook]
store = "notebook"
paths = ["NOTEBOOK.md"]
boot = "always"
"""


def line_of(text: str, needle: str) -> int:
    """The 1-based number of the one line of ``text`` containing ``needle``."""
    found = [n for n, line in enumerate(text.splitlines(), start=1) if needle in line]
    assert len(found) == 1, f"{needle!r} is on lines {found}"
    return found[0]


def load_error(tmp_path: Path, text: str) -> tuple[Path, ManifestError]:
    """Write ``text`` as a manifest, load it, and return the path and the error raised."""
    path = tmp_path / MANIFEST_NAME
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ManifestError) as caught:
        load_manifest(path)
    return path, caught.value


def test_base_manifest_is_valid() -> None:
    manifest = parse_manifest(BASE)
    assert list(manifest.layers) == ["knowledge", "notebook"]
    assert manifest.layers["notebook"].boot == "always"
    assert manifest.layers["knowledge"].boot == "never"  # the default


# -- the layouts' manifests ------------------------------------------------------


@pytest.mark.parametrize("layout", layouts.LAYOUTS)
def test_layout_manifest_parses_in_file_order(layout: str) -> None:
    text = layouts.manifest_text(layout)
    manifest = layouts.manifest(layout)
    assert manifest.layout == layout
    assert manifest.agent == "default"
    # Boot order is file order: the layers keep the order of their tables.
    assert list(manifest.layers) == re.findall(r"(?m)^\[layers\.([^\]]+)\]", text)
    assert manifest.archive_dir() == "archive"


def test_layout_manifests_declare_their_own_files() -> None:
    assert layouts.manifest("default").path_of("notebook") == "NOTEBOOK.md"
    assert layouts.manifest("notebook").layers["role"].paths == ["role/ROLE.md"]
    workspace = layouts.manifest("workspace")
    assert workspace.path_of("workstate") == "memory/working-state.md"
    assert workspace.path_of("notebook") is None
    assert layouts.manifest("vault").layers["hot"].paths == ["STATE.md"]


# -- errors name the file, the line and the key ----------------------------------


def test_bad_value_names_file_line_and_key(tmp_path: Path) -> None:
    # The default layout has many `boot` keys; the error must point at the notebook's.
    good = 'store = "notebook"\npaths = ["NOTEBOOK.md"]\nmemory = "working"\nboot = "always"'
    text = layouts.manifest_text("default")
    assert good in text
    text = text.replace(good, good.replace('"always"', '"sometimes"'))
    path, error = load_error(tmp_path, text)
    assert error.line == line_of(text, 'boot = "sometimes"')
    assert error.key == "layers.notebook.boot"
    assert error.path == path
    assert str(error).startswith(f"{path}:{error.line}: layers.notebook.boot: ")
    assert "'sometimes'" in str(error)


@pytest.mark.parametrize(
    ("text", "needle", "key"),
    [
        (BASE.replace('boot = "always"', "indexd = true"), "indexd", "layers.notebook.indexd"),
        (BASE.replace("agent =", "agnet ="), "agnet", "agnet"),
        (BASE + "\n[limitz]\nnotebook_max_agent_entries = 2\n", "[limitz]", "limitz"),
    ],
    ids=["key-in-layer", "top-level-key", "top-level-table"],
)
def test_unknown_key_is_an_error_on_its_line(
    tmp_path: Path, text: str, needle: str, key: str
) -> None:
    _, error = load_error(tmp_path, text)
    assert (error.line, error.key) == (line_of(text, needle), key)
    assert str(error).endswith(f"{key}: unknown key")


def test_missing_required_key_names_the_table_header(tmp_path: Path) -> None:
    text = BASE.replace('store = "notebook"\n', "")
    _, error = load_error(tmp_path, text)
    assert (error.line, error.key) == (line_of(text, "[layers.notebook]"), "layers.notebook.store")
    assert "required key is missing" in str(error)


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    text = BASE.replace('store = "knowledge"', 'store "knowledge"')
    path, error = load_error(tmp_path, text)
    assert error.line == line_of(text, 'store "knowledge"')
    assert str(error).startswith(f"{path}:{error.line}: not valid TOML")


def test_negative_limit_names_its_line(tmp_path: Path) -> None:
    text = BASE.replace("notebook_max_agent_entries = 4", "notebook_max_agent_entries = -1")
    _, error = load_error(tmp_path, text)
    assert error.line == line_of(text, "notebook_max_agent_entries")
    assert error.key == "limits.notebook_max_agent_entries"
    assert "-1" in str(error)


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("observations_max = true", "limits.observations_max"),
        ("state_ttl_days = false", "limits.state_ttl_days"),
        ("[decay]\nrate = true", "decay.rate"),
    ],
)
def test_true_or_false_for_a_number_is_refused(tmp_path: Path, line: str, key: str) -> None:
    """pydantic read ``observations_max = true`` as 1: the next save sent every
    observation but one to the archive."""
    text = BASE.replace("[layers.knowledge]", f"{line}\n\n[layers.knowledge]")
    path, error = load_error(tmp_path, text)
    assert error.key == key and error.line == line_of(text, line.rsplit("\n", 1)[-1])
    assert str(error) == (
        f"{path}:{error.line}: {key}: Input should be a number, not true or false "
        f"(got {line.endswith('true')})"
    )


def test_section_cap_over_total_cap_names_limits_table(tmp_path: Path) -> None:
    text = BASE.replace("[limits]\n", "[limits]\nmemory_md_section_max_chars = 20000\n")
    _, error = load_error(tmp_path, text)
    assert (error.line, error.key) == (line_of(text, "[limits]"), "limits")


def test_tier_days_out_of_order_refused(tmp_path: Path) -> None:
    text = BASE + "\n[decay]\nactive_days = 30\nwarm_days = 21\n"
    _, error = load_error(tmp_path, text)
    assert (error.line, error.key) == (line_of(text, "[decay]"), "decay")
    assert "active_days <= warm_days <= cold_days" in str(error)


@pytest.mark.parametrize("agent", ["-bot", "bot one", "bot/1", ""])
def test_bad_agent_id_refused(tmp_path: Path, agent: str) -> None:
    text = BASE.replace('agent = "default"', f'agent = "{agent}"')
    _, error = load_error(tmp_path, text)
    assert (error.line, error.key) == (2, "agent")


@pytest.mark.parametrize("agent", ["bot-1", "Bot_2.a", "7"])
def test_good_agent_ids_accepted(agent: str) -> None:
    assert parse_manifest(BASE.replace('"default"', f'"{agent}"')).agent == agent


def test_two_notebook_layers_refused() -> None:
    text = BASE + '\n[layers.scratch]\nstore = "notebook"\npaths = ["SCRATCH.md"]\n'
    with pytest.raises(ManifestError, match="'notebook' and 'scratch' both use store 'notebook'"):
        parse_manifest(text)


@pytest.mark.parametrize(
    ("extra", "header"),
    [
        ('\n[layers.scratch]\nstore = "notebook"\npaths = ["SCRATCH.md"]\n', "[layers.scratch]"),
        ('\n[layers.Extra]\nstore = "document"\npaths = ["X.md"]\n', "[layers.Extra]"),
    ],
    ids=["duplicate-store", "bad-layer-name"],
)
def test_layers_table_errors_name_the_offending_layer_line(extra: str, header: str) -> None:
    text = BASE + extra
    with pytest.raises(ManifestError) as caught:
        parse_manifest(text)
    assert caught.value.line == line_of(text, header)


@pytest.mark.parametrize("paths", ['["notes/*.md"]', '["A.md", "B.md"]'])
def test_single_file_store_needs_exactly_one_plain_path(tmp_path: Path, paths: str) -> None:
    text = BASE.replace('paths = ["NOTEBOOK.md"]', f"paths = {paths}")
    _, error = load_error(tmp_path, text)
    assert (error.line, error.key) == (line_of(text, "[layers.notebook]"), "layers.notebook")
    assert "exactly one path and no glob" in str(error)


def test_document_store_may_have_many_paths_and_globs() -> None:
    text = BASE + '\n[layers.docs]\nstore = "document"\npaths = ["A.md", "docs/*.md"]\n'
    assert parse_manifest(text).layers["docs"].paths == ["A.md", "docs/*.md"]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/etc/NOTEBOOK.md", "must be relative"),
        ("C:/NOTEBOOK.md", "must be relative"),
        ("../NOTEBOOK.md", "must not leave the memory folder"),
        ("notes/../../NOTEBOOK.md", "must not leave the memory folder"),
        ("..\\NOTEBOOK.md", "must not leave the memory folder"),
        ("MEMORY.md", "legacy and read-only"),
        ("old/MEMORY.md", "legacy and read-only"),
    ],
)
def test_paths_outside_the_folder_or_to_memory_md_refused(
    tmp_path: Path, path: str, message: str
) -> None:
    # A TOML literal string ('...') keeps backslashes as they are.
    text = BASE.replace('paths = ["NOTEBOOK.md"]', f"paths = ['{path}']")
    _, error = load_error(tmp_path, text)
    assert (error.line, error.key) == (line_of(text, path), "layers.notebook.paths")
    assert message in str(error)


def test_open_on_an_invalid_manifest_raises_manifest_error(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    memdir.init(root)
    manifest = root / MANIFEST_NAME
    text = manifest.read_text(encoding="utf-8").replace("max_tokens = 6000", "max_tokens = -5")
    manifest.write_text(text, encoding="utf-8")
    with pytest.raises(ManifestError) as caught:
        memdir.open(root)
    assert caught.value.key == "context.max_tokens"
    assert caught.value.line == line_of(text, "max_tokens = -5")
    assert str(manifest) in str(caught.value)


def test_open_on_manifest_that_is_not_toml_raises_manifest_error(tmp_path: Path) -> None:
    (tmp_path / MANIFEST_NAME).write_text("version = 1\n[layers\n", encoding="utf-8")
    with pytest.raises(ManifestError, match="not valid TOML") as caught:
        memdir.open(tmp_path)
    assert caught.value.line == 2


def test_load_manifest_missing_or_not_utf8(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="file not found"):
        load_manifest(tmp_path / MANIFEST_NAME)
    (tmp_path / MANIFEST_NAME).write_bytes(b'agent = "\xff"\n')
    with pytest.raises(ManifestError, match="not UTF-8"):
        load_manifest(tmp_path / MANIFEST_NAME)


# -- queries -------------------------------------------------------------------


def test_path_of_and_layer_for() -> None:
    manifest = layouts.manifest("default")
    assert manifest.path_of("knowledge") == "knowledge.md"
    assert manifest.path_of("workstate") is None
    name, layer = manifest.layer_for("document") or ("", None)
    assert name == "identity"  # the first of the two document layers
    assert layer is not None and layer.paths[0] == "identity/SOUL.md"
    assert manifest.layer_for("intel") == ("intel", manifest.layers["intel"])
    assert manifest.layer_for("workstate") is None


@pytest.mark.parametrize(
    ("archive_paths", "expected"),
    [(None, "archive"), ('["kept/**/*.md"]', "kept"), ('["old.md"]', "archive")],
)
def test_archive_dir(archive_paths: str | None, expected: str) -> None:
    text = BASE
    if archive_paths is not None:
        text += f'\n[layers.archive]\nstore = "archive"\npaths = {archive_paths}\n'
    manifest: Manifest = parse_manifest(text)
    assert manifest.archive_dir() == expected


STATIC_PREFIXES = {
    "archive/**/*.md": "archive",
    "memory/[0-9][0-9][0-9][0-9]-*.md": "memory",
    "a/b/*.json": "a/b",
    "*.md": "",
    "memory/working-state.md": "memory",
    "NOTEBOOK.md": "",
}


@pytest.mark.parametrize(("pattern", "prefix"), STATIC_PREFIXES.items())
def test_static_prefix(pattern: str, prefix: str) -> None:
    assert static_prefix(pattern) == prefix


def test_static_prefix_with_backslash_separators() -> None:
    assert static_prefix("archive\\**\\*.md") == "archive"
    assert static_prefix("archive\\old.md") == "archive"


@pytest.mark.parametrize(
    ("path", "globbed"), [("*.md", True), ("a/?.md", True), ("m/[0-9].md", True), ("a/b.md", False)]
)
def test_is_glob(path: str, globbed: bool) -> None:
    assert is_glob(path) is globbed


# -- the home folder -------------------------------------------------------------


def test_memdir_home_honours_env(memdir_home: Path) -> None:
    assert memdir.memdir_home() == memdir_home


def test_memdir_home_expands_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MEMDIR_HOME", "~/agents")
    assert memdir.memdir_home() == tmp_path / "agents"


@pytest.mark.parametrize("unset", [True, False])
def test_memdir_home_falls_back_to_dot_memdir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, unset: bool
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    if unset:
        monkeypatch.delenv("MEMDIR_HOME")
    else:
        monkeypatch.setenv("MEMDIR_HOME", "")
    assert memdir.memdir_home() == tmp_path / ".memdir"


# Each rule memdir's validators check, broken once: the error is the validator's own
# sentence (pydantic words it "Value error, ..."; memdir takes it from the exception).
RULES = [
    ('agent = "default"', 'agent = "-x"', "agent must be letters, digits"),
    ("[layers.knowledge]", "[layers.Knowledge]", "layer name 'Knowledge' must be lowercase"),
    ('paths = ["knowledge.md"]', 'paths = ["/k.md"]', "path '/k.md' must be relative"),
    ('paths = ["knowledge.md"]', 'paths = ["../k.md"]', "path '../k.md' must not leave"),
    ('paths = ["knowledge.md"]', 'paths = ["MEMORY.md"]', "MEMORY.md is legacy and read-only"),
    ('paths = ["knowledge.md"]', 'paths = ["a.md", "b.md"]', "a knowledge layer has exactly"),
    ('boot = "always"', 'boot = "always"\nmount = "x"', "only a vault layer can be mounted"),
    ('boot = "always"', 'boot = "always"\ndays = 3', "days is for a journal layer"),
    ('boot = "always"', 'boot = "always"\naudit = true', "an audit layer is a journal"),
    ("notebook_max_agent_entries = 4", "memory_md_section_max_chars = 20000",
     "memory_md_section_max_chars must not exceed"),
    ("[limits]", "[decay]\nactive_days = 30\n\n[limits]", "tier days must satisfy"),
    ("[layers.notebook]", "[layers.again]\nstore = \"knowledge\"\npaths = [\"k2.md\"]\n\n"
     "[layers.notebook]", "layers 'knowledge' and 'again' both use store 'knowledge'"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "sentence"), RULES)
def test_a_rule_is_reported_in_its_own_words(old: str, new: str, sentence: str) -> None:
    text = BASE.replace(old, new, 1)
    assert text != BASE
    with pytest.raises(ManifestError) as caught:
        parse_manifest(text)
    message = str(caught.value)
    assert "Value error" not in message and "validation error" not in message
    assert re.search(r"^memdir\.toml:\d+: [\w.-]+: " + re.escape(sentence), message), message
