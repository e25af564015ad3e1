"""The four layouts and the scaffold: ``memdir.init`` writes a layout, ``memdir.adopt`` maps one."""

from __future__ import annotations

from pathlib import Path

import pytest

import memdir
from memdir import layouts
from memdir.config import MANIFEST_NAME, STATE_DIR
from memdir.testing import FakeClock

# What `memdir.init` puts in a fresh folder, per layout (besides memdir.toml and .memdir/).
FILES = {
    "default": {
        *(f"identity/{n}.md" for n in ("SOUL", "IDENTITY", "USER", "AGENTS", "TOOLS", "ROLE")),
        "HEARTBEAT.md",
        "lessons.md",
        "NOTEBOOK.md",
        "knowledge.md",
        "state.md",
    },
    "notebook": {"role/ROLE.md", "role/HEARTBEAT.md", "NOTEBOOK.md", "knowledge.md", "state.md"},
    "vault": {
        "IDENTITY.md",
        "CONFIG.md",
        "RULES.md",
        "STATE.md",
        # The vault seed's directory structure: empty folders, kept in git by a placeholder.
        "vault/MOC/.gitkeep",
        "vault/crm/clients/.gitkeep",
        "vault/crm/leads/.gitkeep",
        "vault/crm/personal/.gitkeep",
        "vault/projects/.gitkeep",
        "vault/.graph/.gitkeep",
    },
    "workspace": {
        *(f"{n}.md" for n in ("SOUL", "USER", "IDENTITY", "AGENTS", "TOOLS", "HEARTBEAT")),
        "memory/working-state.md",
        "memory/lessons-learned.md",
    },
}
# The (empty) folders of the layout's globbed layers.
FOLDERS = {
    "default": {"archive", "vault", "intel", "journal", "sessions"},
    "notebook": {"archive", "daily-logs", "sessions"},
    "vault": {"archive", "daily", "vault"},
    "workspace": {"archive", "memory"},
}


def files_under(root: Path) -> dict[str, bytes]:
    """Relative path -> content of every file under ``root``."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def user_files(root: Path) -> set[str]:
    """The files under ``root`` outside memdir's own state folder."""
    return {path for path in files_under(root) if not path.startswith(f"{STATE_DIR}/")}


# -- init ------------------------------------------------------------------------


@pytest.mark.parametrize("layout", layouts.LAYOUTS)
def test_init_writes_the_layout(tmp_path: Path, layout: str) -> None:
    root = tmp_path / "mem"
    report = memdir.init(root, layout=layout)

    assert report.root == root.resolve()
    assert (report.layout, report.adopted) == (layout, False)
    assert user_files(root) == FILES[layout] | {MANIFEST_NAME}
    assert set(report.created) == FILES[layout] | {MANIFEST_NAME}
    assert len(report.created) == len(set(report.created))
    assert (root / MANIFEST_NAME).read_text(encoding="utf-8") == layouts.manifest_text(layout)
    for folder in FOLDERS[layout]:
        assert (root / folder).is_dir(), folder
    assert report.migration is None
    assert report.uncovered == []


def test_default_init_makes_an_empty_archive_folder(folder: Path) -> None:
    assert (folder / "archive").is_dir()
    assert list((folder / "archive").iterdir()) == []


def test_workspace_agents_md_has_crash_recovery(tmp_path: Path) -> None:
    memdir.init(tmp_path, layout="workspace")
    agents = (tmp_path / "AGENTS.md").read_text(encoding="utf-8")
    assert "## Crash Recovery: Working State (MANDATORY)" in agents
    assert "`memory/working-state.md`" in agents
    assert (
        (tmp_path / "memory/working-state.md")
        .read_text(encoding="utf-8")
        .startswith("# Working State\n")
    )


def test_the_vault_layout_has_the_specifications_folders(tmp_path: Path) -> None:
    """vault/crm/{clients,leads,personal}/, projects/, MOC/ and .graph/ (vault seed,
    "Directory structure"), each with a placeholder so git keeps it while it is empty."""
    memdir.init(tmp_path, layout="vault")
    for folder in ("crm/clients", "crm/leads", "crm/personal", "projects", "MOC", ".graph"):
        assert (tmp_path / "vault" / folder).is_dir(), folder
        assert (tmp_path / "vault" / folder / ".gitkeep").read_bytes() == b"", folder
    memory = memdir.open(tmp_path, embedder="none")
    assert memory.vault.cards() == []  # placeholders are not cards
    written = memory.vault.write("alice", "Client.", folder="crm/clients")
    assert written.store == "vault/crm/clients/alice.md"


@pytest.mark.parametrize(("layout", "lessons"), [("workspace", "memory/lessons-learned.md"),
                                                 ("default", "lessons.md")])  # fmt: skip
def test_the_lessons_file_starts_with_categories(tmp_path: Path, layout: str, lessons: str) -> None:
    """The workspace seed's checklist: "Create memory/lessons-learned.md with initial
    categories"; AGENTS.md's Self-Learning block names them (its "Categories" line)."""
    memdir.init(tmp_path, layout=layout)
    text = (tmp_path / lessons).read_text(encoding="utf-8")
    categories = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert categories == ["API", "File Operations", "Sub-agents", "Cron Jobs"]
    agents = tmp_path / ("AGENTS.md" if layout == "workspace" else "identity/AGENTS.md")
    block = agents.read_text(encoding="utf-8").split("## Self-Learning System (MANDATORY)")[1]
    block = block.split("\n## ")[0]
    assert (
        "- **Categories:** use categories relevant to your work (API, File Operations, "
        "Sub-agents, Cron Jobs ...): one `##` heading each; add one when none fits"
    ) in block.splitlines()
    # A category with no lesson yet is searched like any other file (nothing to find in it),
    # and the first lesson in it lands under its heading.
    memory = memdir.open(tmp_path, embedder="none")
    assert memory.lessons_check("cron") == []
    assert memory.lessons.add("Cron Jobs", "Left a test cron", "288 messages", "Expire it").ok
    assert [(x.category, x.rule) for x in memory.lessons.entries()] == [("Cron Jobs", "Expire it")]
    assert [line[3:] for line in memory.lessons.path.read_text().splitlines()
            if line.startswith("## ")] == categories  # fmt: skip


def test_agents_md_names_the_categories_of_a_lessons_file_already_there(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "lessons-learned.md").write_text("# Lessons\n\n## Discord API\n")
    memdir.init(tmp_path, layout="workspace")
    agents = (tmp_path / "AGENTS.md").read_text(encoding="utf-8")
    assert "relevant to your work (Discord API ...)" in agents
    assert (
        tmp_path / "memory" / "lessons-learned.md"
    ).read_text() == "# Lessons\n\n## Discord API\n"


def test_state_dir_gitignore(folder: Path) -> None:
    ignore = (folder / STATE_DIR / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert {"lock", "index.db*"} <= set(ignore)


def test_init_records_the_agent(tmp_path: Path) -> None:
    memdir.init(tmp_path, layout="notebook", agent="bot-1")
    with memdir.open(tmp_path) as memory:
        assert memory.manifest.agent == "bot-1"
        assert memory.manifest.layout == "notebook"
    text = (tmp_path / MANIFEST_NAME).read_text(encoding="utf-8")
    assert text == layouts.manifest_text("notebook").replace('"default"', '"bot-1"', 1)


def test_init_with_a_bad_agent_writes_no_manifest(tmp_path: Path) -> None:
    with pytest.raises(memdir.ManifestError, match="agent"):
        memdir.init(tmp_path, agent="bad agent")
    assert not (tmp_path / MANIFEST_NAME).exists()


def test_init_with_a_backslash_in_the_agent_raises_manifest_error(tmp_path: Path) -> None:
    with pytest.raises(memdir.ManifestError):
        memdir.init(tmp_path, agent="bad\\id")


def test_init_rejects_an_unknown_layout(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown layout 'nope'"):
        memdir.init(tmp_path, layout="nope")
    assert not (tmp_path / MANIFEST_NAME).exists()


def test_init_never_overwrites_an_existing_file(tmp_path: Path) -> None:
    mine = {
        "identity/SOUL.md": b"# My own soul\n",
        "NOTEBOOK.md": b"# Notebook\n\n## mine\nhand-written\n",
        "knowledge.md": b"# Knowledge\n\n## facts\n- water is wet\n",
    }
    for relpath, content in mine.items():
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relpath).write_bytes(content)

    report = memdir.init(tmp_path)

    for relpath, content in mine.items():
        assert (tmp_path / relpath).read_bytes() == content
        assert relpath not in report.created
    assert "identity/USER.md" in report.created  # the rest is still written


def test_init_over_a_manifest_refused_unless_forced(folder: Path) -> None:
    manifest = folder / MANIFEST_NAME
    edited = manifest.read_text(encoding="utf-8") + "# my note\n"
    manifest.write_text(edited, encoding="utf-8")
    (folder / "identity/SOUL.md").write_text("# Edited soul\n", encoding="utf-8")

    with pytest.raises(memdir.FolderExistsError, match="--force"):
        memdir.init(folder, layout="workspace")
    assert manifest.read_text(encoding="utf-8") == edited
    assert not (folder / "SOUL.md").exists()

    report = memdir.init(folder, layout="workspace", force=True)
    assert manifest.read_text(encoding="utf-8") == layouts.manifest_text("workspace")
    assert "SOUL.md" in report.created
    assert (folder / "identity/SOUL.md").read_text(encoding="utf-8") == "# Edited soul\n"


def test_init_migrates_a_legacy_memory_md_and_keeps_it(tmp_path: Path) -> None:
    legacy = "# Memory\n\n## Preferences\n- Likes tea\n\n## Current status\n- 2026-11-29 deploy\n"
    (tmp_path / "MEMORY.md").write_text(legacy, encoding="utf-8")
    report = memdir.init(tmp_path, layout="notebook")
    assert report.migration is not None
    assert (tmp_path / "MEMORY.md").read_text(encoding="utf-8") == legacy
    assert "Likes tea" in (tmp_path / "knowledge.md").read_text(encoding="utf-8")
    assert "deploy" in (tmp_path / "state.md").read_text(encoding="utf-8")


# -- open ----------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["default", "notebook"])
def test_open_a_layout_with_a_notebook(tmp_path: Path, clock: FakeClock, layout: str) -> None:
    memdir.init(tmp_path, layout=layout)
    with memdir.open(tmp_path, clock=clock) as memory:
        assert memory.manifest.layout == layout
        assert memory.notebook.entries() == []
        assert memory.notebook.update("task", "write the tests").ok
        assert memory.knowledge.relpath == "knowledge.md"
        assert memory.state.relpath == "state.md"
        assert memory.check() == []
    assert "## task" in (tmp_path / "NOTEBOOK.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("layout", ["vault", "workspace"])
@pytest.mark.parametrize("store", ["notebook", "knowledge", "state"])
def test_open_a_layout_without_a_notebook(tmp_path: Path, layout: str, store: str) -> None:
    memdir.init(tmp_path, layout=layout)
    with memdir.open(tmp_path) as memory:
        assert memory.manifest.layout == layout
        assert not memory.has(store)
        with pytest.raises(memdir.LayerNotConfigured, match=f"store = '{store}'"):
            getattr(memory, store)
        assert memory.check() == []


def test_open_a_plain_folder_raises(tmp_path: Path) -> None:
    with pytest.raises(memdir.NotAMemoryFolder, match="memdir init"):
        memdir.open(tmp_path)


# -- adopt ----------------------------------------------------------------------------


def make_files(root: Path, relpaths: list[str]) -> dict[str, bytes]:
    for relpath in relpaths:
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(f"# {relpath}\n", encoding="utf-8")
    return files_under(root)


def test_adopt_a_workspace_folder(tmp_path: Path) -> None:
    before = make_files(
        tmp_path,
        [
            "SOUL.md",
            "memory/working-state.md",
            "memory/2026-11-29.md",
            "notes/todo.md",
            "stray.md",
            "README.md",
        ],
    )
    folders_before = {p for p in tmp_path.rglob("*") if p.is_dir()}

    report = memdir.adopt(tmp_path)

    assert (report.layout, report.adopted) == ("workspace", True)
    assert report.created == [MANIFEST_NAME]
    # README.md too: it is searched as a note like the others (it was left out)
    assert report.uncovered == ["README.md", "notes/todo.md", "stray.md"]
    after = files_under(tmp_path)
    new = set(after) - set(before)
    assert {path for path in new if not path.startswith(f"{STATE_DIR}/")} == {MANIFEST_NAME}
    assert {path: after[path] for path in before} == before  # nothing moved or changed
    new_folders = {p for p in tmp_path.rglob("*") if p.is_dir()} - folders_before
    state = tmp_path / STATE_DIR  # memdir's own, derived and transient (lock, writer marks)
    assert state in new_folders and all(p.is_relative_to(state) for p in new_folders)
    assert (tmp_path / STATE_DIR / ".gitignore").is_file()
    with memdir.open(tmp_path) as memory:
        assert memory.manifest.layout == "workspace"


def test_adopt_detects_the_notebook_layout(tmp_path: Path) -> None:
    make_files(tmp_path, ["role/ROLE.md", "NOTEBOOK.md"])
    assert layouts.detect(tmp_path) == ("notebook", 2)
    report = memdir.adopt(tmp_path)
    assert report.layout == "notebook"
    assert user_files(tmp_path) == {"role/ROLE.md", "NOTEBOOK.md", MANIFEST_NAME}
    assert report.uncovered == []


def test_adopt_an_empty_folder_picks_default_and_creates_no_store_files(tmp_path: Path) -> None:
    report = memdir.adopt(tmp_path, agent="bot-1")
    assert report.layout == "default"
    assert user_files(tmp_path) == {MANIFEST_NAME}
    assert memdir.load_manifest(tmp_path / MANIFEST_NAME).agent == "bot-1"


def test_adopt_with_a_named_layout_skips_detection(tmp_path: Path) -> None:
    make_files(tmp_path, ["SOUL.md", "memory/working-state.md"])
    report = memdir.adopt(tmp_path, layout="vault")
    assert report.layout == "vault"
    assert report.uncovered == ["SOUL.md", "memory/working-state.md"]


def test_adopt_refuses_an_existing_manifest_and_a_missing_folder(folder: Path) -> None:
    with pytest.raises(memdir.FolderExistsError):
        memdir.adopt(folder)
    with pytest.raises(memdir.NotAMemoryFolder):
        memdir.adopt(folder / "missing")
