"""``memdir init``: make a folder a memory folder, or adopt one that has files already.

- ``init_folder`` writes a layout's manifest, runs the legacy migration if
  ``MEMORY.md`` is there, then adds the layout's starter files, skipping every
  file that exists (nothing a person wrote is overwritten).
- ``adopt_folder`` writes a manifest for files already in place (the layout
  whose paths match best, or the one named) and moves or creates nothing; it
  reports the markdown files no layer covers.
"""

from __future__ import annotations

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
from memdir.errors import FolderExistsError, ManifestError, NotAMemoryFolder
from memdir.files.atomic import atomic_write, folder_lock
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


@dataclass
class InitReport:
    root: Path
    layout: str
    adopted: bool = False
    created: list[str] = field(default_factory=list)
    migration: MigrationReport | None = None
    uncovered: list[str] = field(default_factory=list)


def init_folder(
    path: str | Path, layout: str = "default", *, agent: str | None = None, force: bool = False
) -> InitReport:
    """Write ``layout`` into ``path`` (created if missing); existing files are kept."""
    root = resolved(Path(path).expanduser())
    _manifest_text(root, layout, agent)  # validate before touching the disk
    root.mkdir(parents=True, exist_ok=True)
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
    return report


def adopt_folder(
    path: str | Path, layout: str | None = None, *, agent: str | None = None, force: bool = False
) -> InitReport:
    """Write a manifest for the files already in ``path``; move and create nothing else."""
    root = resolved(Path(path).expanduser())
    if not root.is_dir():
        raise NotAMemoryFolder(f"{root} is not a folder; nothing to adopt")
    chosen = layout or layouts.detect(root)[0]
    manifest = _write_manifest(root, chosen, agent, force)
    with open_memory(root) as memory:
        report = InitReport(root, chosen, adopted=True, created=[MANIFEST_NAME])
        report.migration = memory.migration
    report.uncovered = uncovered_files(root, manifest)
    return report


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
    (``notes``, which searches them as plain notes) left aside."""
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
        if relative.name in ("MEMORY.md", "README.md"):
            continue  # legacy (migrated, ignored) or the folder's own readme
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
