"""``memdir doctor``: the audits of the vault and workspace specifications.

- hot-context: a working-memory file loaded every turn (NOTEBOOK.md, STATE.md,
  working-state.md) over ``HOT_MAX_LINES`` lines or ``HOT_MAX_BYTES`` bytes:
  something in it belongs in the vault. Always-loaded files together over the
  context budget (``[context] max_tokens`` x 4 bytes: 24,000 by default) too.
- dry: an entity (a card's title) named with substantive detail (a line of at
  least ``DETAIL_WORDS`` words) in ``DRY_FILES`` or more files: keep the detail
  in its card and link to it.
- broken-link: a ``[[wiki link]]`` that names no card.
- cap: a file over its store's caps (notebook, knowledge).
- index: files the search index has not seen in their current form.
- database: the index or the history damaged (or a loop of links or a folder where
  it goes), a damaged index or such a folder moved aside, a history restarted and its
  damaged copy not yet salvaged (or kept after it was); ``memdir doctor --repair``
  mends what needs no judgement (``maintain/databases.py``).
- file, link, name: a folder where a memory file should be, a layer file linking
  outside the folder, a file name that is not UTF-8 (``maintain/integrity.py``).
- folder, encoding, size: a folder opened read-only, a file with bytes that are not
  UTF-8, one memory over its size limit.
- flagged: every memory that reads as instructions to the model (poisoning).
- temp-file: a temp file an interrupted write left (its writer is gone), in any
  folder memdir writes; the file it was to replace is whole.

On a folder kept in PostgreSQL the checks about the disk itself (database, temp-file,
file, link, name) do not apply and are not run; the rest read through ``memory.files``.

Read-only: the doctor reads files and the index, and touches nothing (it does not
even open a damaged index, which would mend it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memdir.files.temps import stale_temp_files
from memdir.maintain.databases import database_problems, index_problem
from memdir.maintain.graph import build_graph
from memdir.maintain.integrity import file_problems, flagged_items, folder_problems
from memdir.sqlite import FOLDER, LOOPED
from memdir.storage.mounts import owned_files
from memdir.stores.base import decode, encode
from memdir.textutil import plural

if TYPE_CHECKING:
    from memdir.memory import Memory

HOT_MAX_LINES = 80
HOT_MAX_BYTES = 4096
DRY_FILES = 3
DETAIL_WORDS = 8


@dataclass(frozen=True)
class Finding:
    check: str
    path: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "path": self.path, "message": self.message}

    def __str__(self) -> str:
        return f"[{self.check}] {self.path}: {self.message}"


def diagnose(memory: Memory) -> list[Finding]:
    index_damage = index_problem(memory)  # first: opening a damaged index would mend it
    findings = _hot_context(memory)
    if memory.has("vault"):
        findings += [
            Finding("card", path, f"unreadable, left as it is: {why}")
            for path, why in memory.vault.unreadable()
        ]
        findings += _links(memory)
        findings += _dry(memory)
    findings += [Finding("cap", notice.store, notice.message) for notice in _cap_notices(memory)]
    findings += _index(memory) if index_damage is None else []
    if memory.backend == "local":  # about the disk itself: SQLite files, temp files, links
        findings += [Finding(*problem) for problem in database_problems(memory, index_damage)]
        findings += _temp_files(memory)
        findings += [Finding(*problem) for problem in file_problems(memory)]
    unopenable = index_damage in (LOOPED, FOLDER)  # a loop of links or a folder there
    findings += [Finding(*problem) for problem in folder_problems(memory, listed=not unopenable)]
    if index_damage is None:  # it reads the index, which the next search rebuilds
        findings += [Finding(*problem) for problem in flagged_items(memory)]
    return findings


def _always_loaded(memory: Memory) -> list[tuple[str, str]]:
    """(layer memory kind, path) of every existing file loaded every turn."""
    found: list[tuple[str, str]] = []
    for name, layer in memory.manifest.layers.items():
        if layer.boot != "always":
            continue
        for relpath in memory.layer_files(name, layer):
            found.append((layer.memory or "", relpath))
    return found


def _hot_context(memory: Memory) -> list[Finding]:
    findings = []
    total = 0
    for kind, relpath in _always_loaded(memory):
        text = decode(memory.files.read(relpath)) or ""
        size = len(text.encode("utf-8", "surrogateescape"))
        total += _loaded_bytes(memory, relpath, size)
        lines = len(text.splitlines())
        if kind == "working" and (lines > HOT_MAX_LINES or size > HOT_MAX_BYTES):
            findings.append(
                Finding(
                    "hot-context",
                    relpath,
                    f"{lines} lines, {size} bytes (target under {HOT_MAX_LINES} lines and "
                    f"{HOT_MAX_BYTES} bytes): move what is searchable into vault cards",
                )
            )
    budget = memory.manifest.context.max_tokens * 4
    if total > budget:
        findings.append(
            Finding(
                "hot-context",
                ".",
                f"always-loaded files total {total} bytes, over the {budget}-byte context "
                "budget: every turn pays for them",
            )
        )
    return findings


def _loaded_bytes(memory: Memory, relpath: str, size: int) -> int:
    """What a file puts in the prompt: knowledge its curated part (capped), the
    notebook its entries; any other file all of it."""
    if memory.has("knowledge") and relpath == memory.knowledge.relpath:
        return len(encode(memory.knowledge.render()))  # bytes not UTF-8 kept as they are
    if memory.has("notebook") and relpath == memory.notebook.relpath:
        return len(encode(memory.notebook.render()))
    return size


def _links(memory: Memory) -> list[Finding]:
    graph = build_graph(memory.vault)
    return [
        Finding("broken-link", path, f"[[{target}]] names no card")
        for path, targets in sorted(graph.broken.items())
        for target in targets
    ]


def _dry(memory: Memory) -> list[Finding]:
    cards = memory.vault.cards()
    names = {info.path: info.title for info in cards if len(info.title) >= 3}
    if not names:
        return []
    layers = memory.manifest.layers
    owner = {  # a file belongs to the first layer that matches it
        relpath: layers[name].store
        for name, paths in owned_files(memory.files, layers).items()
        for relpath in paths
    }
    texts = {
        relpath: decode(memory.files.read(relpath)) or ""
        for relpath, store in owner.items()
        if store not in ("sessions", "history", "archive")
        and relpath.endswith(".md")
        and "/MOC/" not in f"/{relpath}"
    }
    mentioned = _mentions(names, texts)
    findings = []
    for card_path, title in sorted(names.items()):
        maybe = mentioned.get(card_path)
        files = [p for p in (texts if maybe is None else maybe) if p != card_path]
        if len(files) < DRY_FILES:
            continue  # too few files could mention it: no finding, no regex to build
        pattern = re.compile(rf"(?<!\w){re.escape(title)}(?!\w)", re.IGNORECASE)
        detailed = sorted(
            relpath
            for relpath in files
            if any(
                pattern.search(line) and len(line.split()) >= DETAIL_WORDS
                for line in texts[relpath].splitlines()
            )
        )
        if len(detailed) >= DRY_FILES:
            findings.append(
                Finding(
                    "dry",
                    card_path,
                    f"{title} is described in {len(detailed)} files ({', '.join(detailed)}): "
                    f"keep the detail in {card_path} and link to it",
                )
            )
    return findings


def _mentions(names: dict[str, str], texts: dict[str, str]) -> dict[str, set[str]]:
    """For each card whose title is ASCII, the files that may mention it: every file that
    is not ASCII, and each ASCII file whose lowercased text holds the lowercased title
    (one Aho-Corasick pass a file). For ASCII title and text, ``re.IGNORECASE`` is
    exactly ``lower()``, so no file the regex would match is left out; the regex still
    decides. Cards with other titles are checked against every file (absent here). This
    keeps the check near-linear: a title-by-file scan is 10^8 searches at 10k cards."""
    from ahocorasick_rs import AhoCorasick

    ascii_cards = [(path, title.lower()) for path, title in names.items() if title.isascii()]
    if not ascii_cards:
        return {}
    automaton = AhoCorasick([title for _, title in ascii_cards])
    found: dict[str, set[str]] = {path: set() for path, _ in ascii_cards}
    for relpath, text in texts.items():
        if not text.isascii():
            for files in found.values():
                files.add(relpath)
            continue
        for index, _, _ in automaton.find_matches_as_indexes(text.lower(), overlapping=True):
            found[ascii_cards[index][0]].add(relpath)
    return found


def _cap_notices(memory: Memory) -> list[Any]:
    notices = []
    if memory.has("notebook"):
        notices += memory.notebook.check()
    if memory.has("knowledge"):
        notices += memory.knowledge.check()
    return notices


def _index(memory: Memory) -> list[Finding]:
    index = memory.index
    with index.lock:
        known = {path: (mtime, size) for path, (mtime, size, _) in index.rows.file_states().items()}
    if not known:
        return []  # never built yet: not out of date, the first search builds it
    stale = []
    on_disk = index.files_on_disk()
    for relpath in on_disk:
        stat = memory.files.stat(relpath)
        if stat is None:
            continue
        if known.get(relpath) != (stat.mtime_ns, stat.size):
            stale.append(relpath)
    gone = sorted(set(known) - set(on_disk))
    if not stale and not gone:
        return []
    shown = ", ".join((stale + gone)[:5]) + (" ..." if len(stale) + len(gone) > 5 else "")
    return [
        Finding(
            "index",
            ".memdir/index.db",
            f"{plural(len(stale), 'file')} changed and {len(gone)} removed since the index saw "
            f"them ({shown}); the next search catches up, or run `memdir reindex`",
        )
    ]


def _temp_files(memory: Memory) -> list[Finding]:
    mounts = memory.space.mounts
    found = [
        (path, path.relative_to(memory.root).as_posix())
        for path in stale_temp_files(memory._write_folders(), skip=set(mounts.values()))
    ]
    for name, mount in mounts.items():
        found += [
            (path, f"{name}/{path.relative_to(mount).as_posix()}")
            for path in stale_temp_files({mount: True})
        ]
    return [
        Finding(
            "temp-file",
            relpath,
            "left by a write that was interrupted (its process is gone); the file it was "
            "replacing is whole, so deleting it loses nothing (memdir removes such files "
            "when it opens the folder after a crash)",
        )
        for _, relpath in sorted(found, key=lambda pair: pair[1])
    ]
