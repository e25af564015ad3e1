"""``memdir init``: make a folder a memory folder, or adopt one that has files already.

- ``init_folder`` writes a layout's manifest, runs the legacy migration if
  ``MEMORY.md`` is there, then adds the layout's starter files, skipping every
  file that exists (nothing a person wrote is overwritten).
- ``adopt_folder`` writes a manifest for files already in place (the layout
  whose paths match best, or the one named) and moves or creates nothing; it
  reports the markdown files no layer covers.

Both refuse, before writing anything, a folder that is not a memory folder yet (no
``memdir.toml``) and looks like something else's (``foreign_reason``): every layout
searches each markdown and text file under its folder as notes, so a home folder or a
code project would be taken in whole. The rule: the folder is the home folder or a
filesystem root; or it has a project's marker at its top (``PROJECT_MARKERS``: a
package or build file, a dependency folder), or ``.git`` beside source code; or it
holds more than ``SOURCE_FILES_MAX`` source files, or more than ``FOREIGN_FILES_MAX``
files no layout reads (anything but markdown, text, session logs and the attachments
notes link to), hidden folders not counted.
``anyway=True`` (``memdir init --anyway``) goes ahead all the same.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

from memdir import layouts
from memdir.config import (
    AGENT_ID_RE,
    MANIFEST_NAME,
    STATE_DIR,
    Manifest,
    file_template,
    is_glob,
    parse_manifest,
)
from memdir.errors import (
    FolderExistsError,
    ForeignFolder,
    ManifestError,
    NotAMemoryFolder,
    StorageError,
)
from memdir.files.atomic import atomic_write, folder_lock, storage_error
from memdir.maintain.backup import STATE_IGNORES
from memdir.maintain.migrate import MigrationReport
from memdir.memory import LOCK_FILE, open_memory
from memdir.paths import resolved

STATE_GITIGNORE = "# memdir's derived and transient files\n" + "".join(
    f"{p}\n" for p in STATE_IGNORES
)
_SKIP_DIRS = {".git", STATE_DIR, "node_modules", ".venv"}
# The workspace seed's AGENTS.md block: "Use categories relevant to your work (API, File
# Ops, Discord, Cron, etc.)".
SEED_CATEGORIES = ("API", "File Ops", "Discord", "Cron")

# What marks a folder as a code project's, at its top: package and build files, and
# the folders a package manager fills.
PROJECT_MARKERS = (
    "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile",
    "package.json", "Cargo.toml", "go.mod", "pom.xml", "build.gradle", "build.gradle.kts",
    "Gemfile", "composer.json", "CMakeLists.txt", "mix.exs", "Package.swift",
    "node_modules", ".venv", "venv",
)  # fmt: skip
SOURCE_SUFFIXES = frozenset((
    ".py", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".c", ".h", ".cc",
    ".cpp", ".hpp", ".java", ".kt", ".swift", ".rb", ".php", ".cs", ".scala", ".lua", ".pl",
    ".sh", ".zig", ".vue", ".svelte",
))  # fmt: skip
# What a layout reads (markdown, text, session logs), and what notes link to; any other
# file is one no layout would own.
NOTE_SUFFIXES = frozenset((
    ".md", ".markdown", ".txt", ".jsonl", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg",
    ".bmp", ".tif", ".tiff", ".heic", ".pdf", ".mp3", ".m4a", ".wav", ".ogg", ".mp4", ".mov",
    ".webm", ".canvas", ".excalidraw", ".csv",
))  # fmt: skip
FOREIGN_FILES_MAX = 100
SOURCE_FILES_MAX = 20
_SCAN_ENTRIES_MAX = 20_000  # a bound on what the check reads in a huge folder


@dataclass
class InitReport:
    root: Path
    layout: str
    adopted: bool = False
    created: list[str] = field(default_factory=list)
    migration: MigrationReport | None = None
    uncovered: list[str] = field(default_factory=list)


def _make_root(root: Path) -> None:
    """The folder made (with its parents), or the reason it cannot be, in one sentence."""
    if root.exists() and not root.is_dir():
        raise NotAMemoryFolder(f"{root} is a file, not a folder; give a folder (made if missing)")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a parent that is a file, a path that cannot exist, no permission
        raise storage_error(root, exc) or StorageError(
            f"cannot make the folder {root}: {exc.strerror or exc}; nothing was written"
        ) from exc


def init_folder(
    path: str | Path,
    layout: str = "default",
    *,
    agent: str | None = None,
    force: bool = False,
    anyway: bool = False,
) -> InitReport:
    """Write ``layout`` into ``path`` (created if missing); existing files are kept.
    Raises ``ForeignFolder`` for a folder that looks like something else's (see the
    module docstring) unless ``anyway``."""
    root = resolved(Path(path).expanduser())
    _manifest_text(root, layout, agent)  # validate before touching the disk
    if not anyway:
        _refuse_foreign(root, "")
    _make_root(root)
    manifest = _write_manifest(root, layout, agent, force)
    report = InitReport(root, layout, created=[MANIFEST_NAME])
    with open_memory(root) as memory:  # closed: init leaves no database open
        report.migration = memory.migration
        with memory.lock:
            values = starter_values(manifest, root)
            for relpath, content in layouts.starter_files(layout).items():
                target = root / relpath
                if not target.exists():
                    if relpath.endswith(".md"):
                        text = Template(content.decode("utf-8")).safe_substitute(values)
                        content = text.encode("utf-8")
                    atomic_write(target, content)
                    report.created.append(relpath)
            for name in ("notebook", "knowledge", "state"):
                if memory.has(name):
                    store = getattr(memory, name)
                    if store.ensure_file():
                        report.created.append(store.relpath)
            for folder in layouts.folders(manifest):
                (root / folder).mkdir(parents=True, exist_ok=True)
        # the three files above are indexed as they are written: index the rest, so the
        # index is whole (`memdir doctor` on a new folder found 8 files out of date)
        memory.scan()
    return report


def adopt_folder(
    path: str | Path,
    layout: str | None = None,
    *,
    agent: str | None = None,
    force: bool = False,
    anyway: bool = False,
) -> InitReport:
    """Write a manifest for the files already in ``path``; move and create nothing else.
    Raises ``ForeignFolder`` as ``init_folder`` does, unless ``anyway``."""
    root = resolved(Path(path).expanduser())
    if not root.is_dir():
        raise NotAMemoryFolder(f"{root} is not a folder; nothing to adopt")
    if not anyway:
        _refuse_foreign(root, " --adopt")
    chosen = layout or layouts.detect(root)[0]
    manifest = _write_manifest(root, chosen, agent, force)
    with open_memory(root) as memory:
        report = InitReport(root, chosen, adopted=True, created=[MANIFEST_NAME])
        report.migration = memory.migration
    report.uncovered = uncovered_files(root, manifest)
    return report


def foreign_reason(root: Path) -> str | None:
    """Why ``root`` looks like a folder other than a memory folder (the rule in the
    module docstring), or None: it does not exist, it has a ``memdir.toml`` already,
    or nothing in it says so. Reads at most ``_SCAN_ENTRIES_MAX`` entries."""
    if not root.is_dir() or (root / MANIFEST_NAME).exists():
        return None
    if root == root.parent:
        return "it is the root of the file system"
    try:
        home = resolved(Path.home())
    except (RuntimeError, OSError):
        home = None
    if root == home:
        return "it is your home folder"
    for marker in PROJECT_MARKERS:
        if os.path.lexists(root / marker):
            return f"it holds {marker}, the mark of a code project"
    foreign, source = _foreign_files(root)
    if source and os.path.lexists(root / ".git"):
        return f"it is a git repository with source code in it ({source[0]})"
    if len(source) > SOURCE_FILES_MAX:
        shown = ", ".join(source[:3])
        return f"it holds more than {SOURCE_FILES_MAX} source files ({shown}, ...)"
    if len(foreign) > FOREIGN_FILES_MAX:
        shown = ", ".join(foreign[:3])
        return f"it holds more than {FOREIGN_FILES_MAX} files no layout reads ({shown}, ...)"
    return None


def _foreign_files(root: Path) -> tuple[list[str], list[str]]:
    """Files under ``root`` no layout reads, and the source files among them (read until
    either is past its limit); hidden entries and links to folders are not followed."""
    foreign: list[str] = []
    source: list[str] = []
    pending = [root]
    seen = 0
    while (
        pending
        and seen < _SCAN_ENTRIES_MAX
        and len(foreign) <= FOREIGN_FILES_MAX
        and len(source) <= SOURCE_FILES_MAX
    ):
        folder = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue  # unreadable: nothing can be said of it
        for entry in entries:
            seen += 1
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                    continue
            except OSError:
                continue
            suffix = os.path.splitext(entry.name)[1].lower()
            if suffix in NOTE_SUFFIXES:
                continue
            relpath = Path(entry.path).relative_to(root).as_posix()
            foreign.append(relpath)
            if suffix in SOURCE_SUFFIXES:
                source.append(relpath)
    return foreign, source


def _refuse_foreign(root: Path, flags: str) -> None:
    """Raise ``ForeignFolder`` with what to do, before anything is written."""
    why = foreign_reason(root)
    if why is None:
        return
    raise ForeignFolder(
        f"{root} does not look like a folder meant for memories: {why}. memdir would "
        "search every markdown and text file under it as notes, so nothing was written. "
        f"Make a memory folder of its own instead (`memdir init {root / 'memory'}`, or "
        f"any new folder), or, if this folder is meant to be one, `memdir init {root}"
        f"{flags} --anyway`."
    )


def starter_values(manifest: Manifest, root: Path | None = None) -> dict[str, str]:
    """What the starter files name (``$journal``, ``$lessons`` ...): paths from the
    manifest, and the lesson categories (``lesson_categories``) from ``root``'s lessons
    file if it has one, else the layout's starter."""

    def path(store: str, field: str | None = None, default: str = "") -> str:
        found = manifest.layer_for(store)
        if found is None:
            return default
        pattern = found[1].paths[0]
        return file_template(pattern, field).replace("{date}", "YYYY-MM-DD") if field else pattern

    def identity(name: str) -> str:
        for layer in manifest.layers.values():
            for pattern in layer.paths:
                if pattern.rsplit("/", 1)[-1] == name:
                    return pattern
        return name

    working = path("workstate") or path("notebook") or "NOTEBOOK.md"
    return {
        "soul": identity("SOUL.md"),
        "user": identity("USER.md"),
        "heartbeat": identity("HEARTBEAT.md"),
        "working_state": working,
        "journal": path("journal", "date", "journal/YYYY-MM-DD.md"),
        "lessons": path("lessons", default="lessons.md"),
        "lesson_categories": ", ".join(lesson_categories(manifest, root)),
    }


def lesson_categories(manifest: Manifest, root: Path | None = None) -> list[str]:
    """The categories (``##`` headings) the lessons file starts with: the folder's own
    file when it has one, else the layout's starter; the workspace seed's examples when
    neither names any."""
    text = ""
    found = manifest.layer_for("lessons")
    if found is not None and root is not None and not is_glob(found[1].paths[0]):
        try:
            text = (root / found[1].paths[0]).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
    if not text.strip() and manifest.layout in layouts.LAYOUTS:
        preset = layouts.manifest(manifest.layout).layer_for("lessons")
        if preset is not None:
            starter = layouts.starter_files(manifest.layout).get(preset[1].paths[0], b"")
            text = starter.decode("utf-8")
    headings = [m.group(1).strip() for m in re.finditer(r"(?m)^## +(.+)$", text)]
    return [h for h in headings if not h.startswith("_")] or list(SEED_CATEGORIES)


def uncovered_files(root: Path, manifest: Manifest) -> list[str]:
    """Markdown files under ``root`` that no layer's paths match, a catch-all layer
    (``notes``, which searches them as plain notes) left aside. A README.md is listed
    too: it is searched as a note like any other (it was left out, as if it were not)."""
    covered: set[Path] = set()
    for layer in manifest.layers.values():
        if layouts.catch_all(layer):
            continue
        for pattern in layer.paths:
            if is_glob(pattern):
                covered.update(root.glob(pattern))
            else:
                covered.add(root / pattern)
    found = []
    for candidate in sorted(root.rglob("*.md")):
        relative = candidate.relative_to(root)
        if relative.parts[0] in _SKIP_DIRS or candidate in covered:
            continue
        if relative.name == "MEMORY.md":
            continue  # legacy: migrated on open, then ignored
        found.append(relative.as_posix())
    return found


def _manifest_text(root: Path, layout: str, agent: str | None) -> tuple[str, Manifest]:
    """The layout's manifest with ``agent`` filled in, validated."""
    target = root / MANIFEST_NAME
    text = layouts.manifest_text(layout)
    if agent is not None:
        if not AGENT_ID_RE.fullmatch(agent):
            raise ManifestError(
                target, f"{agent!r} must be letters, digits, '.', '_' or '-'", key="agent"
            )
        text = re.sub(r'(?m)^agent = ".*"$', lambda _: f'agent = "{agent}"', text, count=1)
    return text, parse_manifest(text, target)


def _write_manifest(root: Path, layout: str, agent: str | None, force: bool) -> Manifest:
    target = root / MANIFEST_NAME
    if target.exists() and not force:
        raise FolderExistsError(f"{target} exists; pass --force to replace the manifest")
    text, manifest = _manifest_text(root, layout, agent)
    lock = folder_lock(root / STATE_DIR / LOCK_FILE)
    with lock:
        atomic_write(target, text)
        ignore = root / STATE_DIR / ".gitignore"
        if not ignore.exists():
            atomic_write(ignore, STATE_GITIGNORE)
    return manifest
