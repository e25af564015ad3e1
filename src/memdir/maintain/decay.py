"""``memdir decay``: the forgetting curve applied to every card.

For each card: relevance = max(floor, 1 - days since last access x rate),
rounded to three places; tier = the colder of its current tier and the tier
its age gives (decay only cools: warming is touch's job, one tier at a time,
so a recalled card climbs back gradually). ``core`` cards never change.
Only cards whose values changed are rewritten, frontmatter only, body byte for
byte. Reading a card here is not a touch. Running it twice changes nothing.
Every rewrite is atomic (a temp file, fsynced, renamed over the card) under the
vault's lock, so a decay killed at any point leaves each card whole, old or new;
the index follows each batch, and a scan catches up with any it missed.
"""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from memdir.config import Decay
from memdir.errors import FileShapeError
from memdir.files.atomic import fsync_dirs
from memdir.files.cards import Card
from memdir.results import Progress
from memdir.storage.local import LocalFiles
from memdir.stores.base import encode, write_text
from memdir.stores.vault import VaultStore, as_date
from memdir.tiers import TIERS, relevance, tier_for

WRITERS = 4
BATCH = 500  # cards rewritten, then indexed, at a time
_ORDER: dict[str, int] = {tier: rank for rank, tier in enumerate(TIERS)}  # core 0 .. archive 4


@dataclass
class DecayReport:
    cards: int = 0
    changed: list[str] = field(default_factory=list)
    tiers: Counter[str] = field(default_factory=Counter)
    dry_run: bool = False
    unreadable: list[str] = field(default_factory=list)
    """cards whose frontmatter is not valid YAML: skipped, left as they are"""

    def to_dict(self) -> dict[str, Any]:
        return {
            "cards": self.cards,
            "changed": len(self.changed),
            "tiers": {tier: self.tiers.get(tier, 0) for tier in TIERS},
            "dry_run": self.dry_run,
            "unreadable": self.unreadable,
        }


def decayed(meta: dict[str, Any], today: date, settings: Decay) -> tuple[str, float]:
    """The tier and relevance a card's metadata should have today."""
    tier = meta.get("tier")
    if tier == "core":
        current = meta.get("relevance")
        return "core", float(current) if isinstance(current, (int, float)) else 1.0
    moment = as_date(meta.get("last_accessed")) or as_date(meta.get("updated"))
    moment = moment or as_date(meta.get("created")) or today
    days = max((today - moment).days, 0)
    by_age: str = tier_for(days, settings)
    if tier in _ORDER and _ORDER[str(tier)] > _ORDER[by_age]:
        by_age = str(tier)  # colder already: decay never warms a card
    return by_age, round(relevance(days, settings), 3)


def run_decay(
    vault: VaultStore, *, dry_run: bool = False, progress: Progress | None = None
) -> DecayReport:
    report = DecayReport(dry_run=dry_run)
    today = vault.ctx.clock().date()
    settings = vault.ctx.manifest.decay
    folders: set[Path] = set()
    batch: list[tuple[str, str]] = []
    # Each file is still written atomically and fsynced. The waits overlap in a few
    # threads, with reading and rendering the next batch, and with indexing the one
    # before; each folder is synced once at the end.
    # a dry run writes nothing: it takes no lock (a read-only folder can be asked too)
    held = contextlib.nullcontext() if dry_run else vault.lock
    with held, ThreadPoolExecutor(max_workers=WRITERS) as pool:
        writing = _Writing(vault, pool)
        paths = vault.paths()
        for n, path in enumerate(paths, 1):
            if progress is not None and (n % 200 == 0 or n == len(paths)):
                progress(n, len(paths))
            text = vault.ctx.read(path)
            if text is None:
                continue
            try:
                card = Card.parse(text)
            except FileShapeError as exc:
                report.unreadable.append(f"{path}: {exc}")
                continue
            tier, rel = decayed(card.meta, today, settings)
            report.cards += 1
            report.tiers[tier] += 1
            if card.meta.get("tier") == tier and card.meta.get("relevance") == rel:
                continue
            report.changed.append(path)
            if dry_run:
                continue
            card.meta["tier"] = tier
            card.meta["relevance"] = rel
            batch.append((path, card.render()))
            if writing.on_disk:
                folders.add(vault.real_path(path).parent)
            if len(batch) == BATCH:
                writing.start(batch)
                batch = []
        writing.start(batch)
        writing.finish()
        fsync_dirs(folders)
    return report


class _Writing:
    """Batches of rewritten cards in flight: a batch's files are written in the pool
    while the next is read and rendered; once they are all on disk, the index takes
    the batch in one update."""

    def __init__(self, vault: VaultStore, pool: ThreadPoolExecutor) -> None:
        self.vault = vault
        self.pool = pool
        self.flying: tuple[list[tuple[str, str]], list[Future[None]]] | None = None
        holder = vault.ctx.files.route(f"{vault.prefix}x")[0]
        self.on_disk = isinstance(holder, LocalFiles)
        """cards on disk are written a few at a time in the pool, each folder synced
        once at the end; elsewhere (postgres) a batch is one ``write_all``"""

    def start(self, batch: list[tuple[str, str]]) -> None:
        if not self.on_disk:
            self.vault.ctx.files.write_all([(path, encode(text)) for path, text in batch])
            if batch:
                self.vault.ctx.on_writes(batch)
            return
        jobs = [
            self.pool.submit(write_text, self.vault.real_path(path), text, sync_dir=False)
            for path, text in _across_folders(batch)
        ]
        self.finish()
        self.flying = (batch, jobs)

    def finish(self) -> None:
        if self.flying is None:
            return
        batch, jobs = self.flying
        self.flying = None
        for job in jobs:
            job.result()
        if batch:
            self.vault.ctx.on_writes(batch)


def _across_folders(batch: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The batch in an order that takes turns between folders: writers in one folder
    wait for each other (its entries change one rename at a time)."""
    by_folder: dict[str, list[tuple[str, str]]] = {}
    for item in batch:
        by_folder.setdefault(item[0].rpartition("/")[0], []).append(item)
    turns = itertools.zip_longest(*by_folder.values())
    return [item for turn in turns for item in turn if item is not None]
