"""The vault: one card per entity (person, project, company, idea), YAML frontmatter
over a markdown body, in domain folders (vault seed, "Layer 2: Searchable Vault").

    ---
    type: person
    tags: [client, berlin]
    created: 2026-11-02
    updated: 2026-11-30
    last_accessed: 2026-11-30
    access_count: 4
    relevance: 1.0
    tier: active
    links: [acme-corp]
    ---
    # Alice Moreau
    Head of data at [[acme-corp]].

    ## History
    - 2026-11-30 (agent-1): Signed the renewal.

Rules:
- Touch (reading a card's content through memdir, or updating it) promotes the
  card one tier (archive -> cold -> warm -> active; core never moves), sets
  ``last_accessed`` to today, counts ``access_count`` and resets relevance.
  Listing, search results, decay and bulk jobs never touch.
- ``## History`` is append-only: a body rewrite keeps every history line.
- Metadata is last-write-wins per field: every write re-reads the card under
  the vault's lock and changes only the fields it was given, so two agents
  sharing a vault never lose each other's changes.
- Hand-written fields are kept; the body is never reflowed.
- ``links`` follows the body: every write through memdir (write, history, touch)
  leaves in it the links given explicitly (a ``links=`` argument, or names a
  person put there) and every ``[[wiki link]]`` of the body, explicit ones first,
  each target once (by slug). A wiki link the body loses leaves ``links`` too;
  one given explicitly stays until ``links=`` is given again.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path, PurePosixPath
from typing import Any

from memdir.config import Layer
from memdir.errors import FileShapeError
from memdir.files.cards import CARD_TYPES as CARD_TYPES  # re-exported: the card kinds
from memdir.files.cards import Card, unclosed_frontmatter
from memdir.paths import FileSpace
from memdir.results import WriteResult
from memdir.storage.mounts import layer_files
from memdir.storage.seam import WriteLock
from memdir.stores.base import Refusal, StoreContext, confine_in
from memdir.stores.card_body import HISTORY as HISTORY  # re-exported: the section's name
from memdir.stores.card_body import add_history as add_history
from memdir.stores.card_body import clean, keep_history, title_of, with_title
from memdir.stores.card_body import history_lines as history_lines
from memdir.stores.card_fields import MANAGED_DATES, check_fields, check_names, type_name
from memdir.stores.card_fields import as_date as as_date  # re-exported: decay, the page
from memdir.stores.card_fields import check_card_text as check_card_text
from memdir.stores.validate import check_text, flag, one_line
from memdir.tiers import TIERS, tier_for

WINDOWS_DEVICES = frozenset(
    ["con", "prn", "aux", "nul"] + [f"{port}{n}" for port in ("com", "lpt") for n in range(1, 10)]
)
"""file names Windows refuses, with any extension (``con.md`` too)"""
CARD_NAME_MAX_CHARS = 120
"""a card's file name (a file system holds 255 bytes a name)"""
_LONG_CARD = "keep a card to what matters about its subject; put a long document in a file"
MOC_FOLDER = "MOC"
_DRIVE_RE = re.compile(r"[A-Za-z]:[/\\]")
_LINK_RE = re.compile(r"\[\[([^\]|#\n]+)(?:#[^\]|\n]*)?(?:\|[^\]\n]*)?\]\]")
_SLUG_RE = re.compile(r"[\W_]+")  # letters and digits of any script: "Zoë" is not "Zo"
PROMOTION = {
    "archive": "cold",
    "cold": "warm",
    "warm": "active",
    "active": "active",
    "core": "core",
}


def slug(name: str) -> str:
    """``name`` as a card's file name: lower case, each run of what is not a letter or
    a digit (in any script, composed as NFC) one ``-``."""
    return _SLUG_RE.sub("-", unicodedata.normalize("NFC", name).lower()).strip("-")


def ref_problem(ref: str, what: str = "the card") -> str | None:
    """Why ``ref`` cannot name a card (or, ``what`` "folder", a card's folder); None if
    it can. A card is named inside the vault, its folders separated by ``/``: a path on
    the disk (``/tmp/x``, ``C:\\x``), a backslash or a ``..`` would mean a file
    elsewhere, and was written under the vault as if that were what was asked."""
    bare = ref.strip().removeprefix("[[").removesuffix("]]").strip()
    such = "such as 'crm'" if what == "folder" else "such as 'alice-moreau' or 'crm/alice-moreau'"
    if bare.startswith("/") or _DRIVE_RE.match(bare):
        return f"{what} {ref!r} is a path on the disk; name it inside the vault, {such}"
    if "\\" in bare:
        return f"{what} {ref!r} holds a backslash; separate folders with /, {such}"
    if ".." in bare.split("/"):
        return f"{what} {ref!r} climbs out of the vault with '..'; name it inside, {such}"
    return None


def card_links(meta: dict[str, Any], body: str) -> list[str]:
    """Link targets named in the ``links`` field and as ``[[wiki links]]`` in the body."""
    raw = meta.get("links") or []
    named = [str(item) for item in raw] if isinstance(raw, list) else [str(raw)]
    named += [match.group(1) for match in _LINK_RE.finditer(body)]
    seen: list[str] = []
    for target in named:
        target = target.strip().removeprefix("[[").removesuffix("]]").strip()
        if target and target not in seen:
            seen.append(target)
    return seen


def body_links(body: str) -> list[str]:
    """The ``[[wiki link]]`` targets of a body, each once, in order."""
    return _once(match.group(1) for match in _LINK_RE.finditer(body))


def linked(meta: dict[str, Any], before: str, after: str, explicit: list[str] | None) -> list[str]:
    """The ``links`` field for a card whose body went from ``before`` to ``after``:
    the explicit links (``explicit``, else those in the field that did not come from
    ``before``'s wiki links, or still appear in ``after``), then ``after``'s wiki links."""
    after_links = body_links(after)
    if explicit is None:
        raw = meta.get("links") or []
        named = [str(item) for item in raw] if isinstance(raw, list) else [str(raw)]
        gone = {slug(t) for t in body_links(before)} - {slug(t) for t in after_links}
        explicit = [target for target in named if slug(_bare(target)) not in gone]
    return _once([*explicit, *after_links])


def _bare(target: str) -> str:
    return target.strip().removeprefix("[[").removesuffix("]]").strip()


def _once(targets: Iterable[str]) -> list[str]:
    seen: list[str] = []
    slugs: set[str] = set()
    for target in targets:
        bare = _bare(target)
        key = slug(bare) or bare
        if bare and key not in slugs:
            seen.append(bare)
            slugs.add(key)
    return seen


@dataclass(frozen=True)
class CardInfo:
    path: str
    name: str
    title: str
    type: str
    tags: tuple[str, ...]
    tier: str
    relevance: float
    last_accessed: date | None
    access_count: int
    links: tuple[str, ...]


@dataclass(frozen=True)
class CardRead:
    path: str
    meta: dict[str, Any]
    body: str
    text: str
    touched: bool


class VaultStore:
    """Cards of one vault layer (inside the memory folder, or mounted from another)."""

    def __init__(
        self, ctx: StoreContext, space: FileSpace, name: str, layer: Layer, lock: WriteLock
    ) -> None:
        self.ctx = ctx
        self.space = space
        self.name = name
        self.layer = layer
        self.lock = lock
        self.base, self.prefix = space.base(name)
        # Where new cards go: the static folder of the layer's first pattern.
        first = layer.paths[0].split("*", 1)[0].rstrip("/")
        self.folder = first.rsplit("/", 1)[0] if first.endswith(".md") else first

    # -- finding cards ---------------------------------------------------------

    def paths(self) -> list[str]:
        """Every card's path (memory-folder relative), Maps of Content left out."""
        moc = f"{self.prefix}{self.folder + '/' if self.folder else ''}{MOC_FOLDER}/"
        found = layer_files(self.ctx.files, self.name, self.layer)
        return sorted(p for p in found if not p.startswith(moc))

    def resolve(self, ref: str) -> str | None:
        """A card path from a path, a path inside the vault, a file name or a title."""
        ref = ref.strip().removeprefix("[[").removesuffix("]]").strip()
        if not ref or ref_problem(ref) is not None:  # never the card of a look-alike name
            return None
        cards = self.paths()
        direct = [ref, ref + ".md", f"{self.prefix}{ref}", f"{self.prefix}{ref}.md"]
        inside = f"{self.prefix}{self.folder}/" if self.folder else self.prefix
        direct += [f"{inside}{ref}", f"{inside}{ref}.md"]
        for candidate in direct:
            if candidate in cards:
                return candidate
        wanted = slug(PurePosixPath(ref).stem)
        for path in cards:
            if slug(PurePosixPath(path).stem) == wanted:
                return path
        for info in self.cards():
            if slug(info.title) == wanted:
                return info.path
        return None

    def cards(self) -> list[CardInfo]:
        """Every readable card, read without touching (see ``unreadable``)."""
        return self._scan()[0]

    def unreadable(self) -> list[tuple[str, str]]:
        """(path, why) of cards whose frontmatter cannot be read; they are left alone."""
        return self._scan()[1]

    def _scan(self) -> tuple[list[CardInfo], list[tuple[str, str]]]:
        infos: list[CardInfo] = []
        problems: list[tuple[str, str]] = []
        for path in self.paths():
            text = self.ctx.read(path)
            if text is None:
                continue
            try:
                infos.append(self._info(path, Card.parse(text)))
            except FileShapeError as exc:
                problems.append((path, str(exc)))
        return infos, problems

    def _info(self, path: str, card: Card) -> CardInfo:
        meta = card.meta
        title = str(meta.get("title") or "") or title_of(card.body) or PurePosixPath(path).stem
        tier = str(meta.get("tier", "")) if meta.get("tier") in TIERS else self._tier_now(meta)
        raw_relevance = meta.get("relevance")
        rel = float(raw_relevance) if isinstance(raw_relevance, (int, float)) else 1.0
        tags = meta.get("tags") or []
        return CardInfo(
            path=path,
            name=PurePosixPath(path).stem,
            title=title,
            type=str(meta.get("type", "other")),
            tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (str(tags),),
            tier=tier,
            relevance=rel,
            last_accessed=as_date(meta.get("last_accessed")),
            access_count=int(meta.get("access_count") or 0),
            links=tuple(card_links(meta, card.body)),
        )

    def _tier_now(self, meta: dict[str, Any]) -> str:
        moment = as_date(meta.get("last_accessed")) or as_date(meta.get("updated"))
        if moment is None:
            return "active"
        return tier_for((self.ctx.clock().date() - moment).days, self.ctx.manifest.decay)

    # -- reading and touching --------------------------------------------------

    def read(self, ref: str, *, touch: bool = True) -> CardRead | None:
        """A card's content; reading it through memdir touches it (unless ``touch=False``)."""
        path = self.resolve(ref)
        if path is None:
            return None
        text = self.ctx.read(path) or ""
        if not touch or unclosed_frontmatter(text):  # (such a card is read, not edited)
            card = Card.parse(text)
            return CardRead(path, card.meta, card.body, text, touched=False)
        with self._edit(path) as card:
            self._touch(card)
        text = self.ctx.read(path) or ""
        card = Card.parse(text)
        return CardRead(path, card.meta, card.body, text, touched=True)

    def touch(self, ref: str) -> WriteResult:
        """Promote a card one tier and mark it accessed today (``memdir touch``)."""
        problem = ref_problem(ref) if isinstance(ref, str) else None
        if problem is not None:
            return WriteResult.refused(self._store(), problem)
        path = self.resolve(ref)
        if path is None:
            return WriteResult.refused(self._store(), f"no card {ref!r} in the vault")
        with self._edit(path) as card:
            before = str(card.meta.get("tier", ""))
            self._touch(card)
        after = str(card.meta.get("tier"))
        note = f"tier {before or 'unset'} -> {after}"
        return WriteResult(ok=True, store=path, action="touched", key=path, notes=(note,))

    def _touch(self, card: Card) -> None:
        meta = card.meta
        today = self.ctx.clock().date()
        current = str(meta.get("tier")) if meta.get("tier") in TIERS else self._tier_now(meta)
        meta["tier"] = PROMOTION[current]
        meta["last_accessed"] = today
        meta["access_count"] = int(meta.get("access_count") or 0) + 1
        meta["relevance"] = 1.0 if meta["tier"] != "core" else meta.get("relevance", 1.0)

    # -- writing ---------------------------------------------------------------

    def write(
        self,
        ref: str,
        body: str | None = None,
        *,
        type: str | None = None,
        tags: list[str] | None = None,
        links: list[str] | None = None,
        folder: str | None = None,
        fields: dict[str, Any] | None = None,
    ) -> WriteResult:
        """Create a card, or update the fields and body given (an update touches it)."""
        try:
            if not isinstance(ref, str) or not ref.strip():
                raise Refusal("name the card, such as 'alice-moreau' or 'crm/alice-moreau'")
            problem = ref_problem(ref) or (
                ref_problem(folder, "folder") if isinstance(folder, str) else None
            )
            if problem is not None:
                raise Refusal(problem)
            if body is not None and not isinstance(body, str):
                raise Refusal(f"body must be a string, not {type_name(body)}")
            if type is not None and not isinstance(type, str):
                raise Refusal("type must be a string such as 'person'")
            if body is not None:
                check_text(body, "body", limit=self.ctx.limits.card_max_chars, hint=_LONG_CARD)
            check_fields(fields)
            check_names(type, tags, links, fields)
            check_text(ref, "the card's name")
            values = [type or "", *(tags or []), *(links or [])]
            check_text(" ".join([*map(str, values), *map(str, (fields or {}).values())]), "fields")
            path = self.resolve(ref)
            created = path is None
            named = self._inside(ref)
            if path is None:
                path = self._new_path(named, folder)
            elif folder is not None:
                self._same_folder(path, named, folder)
            with self._edit(path, links) as card:
                today = self.ctx.clock().date()
                if created:
                    title = named.rsplit("/", 1)[-1]
                    card.meta.update(
                        {
                            "type": type or "other",
                            "tags": list(tags or []),
                            "created": today,
                            "updated": today,
                            "last_accessed": today,
                            "access_count": 0,
                            "relevance": 1.0,
                            "tier": "active",
                            "links": list(links or []),
                        }
                    )
                    card.body = with_title(title, clean(body or ""))
                else:
                    if body is not None:
                        card.body = keep_history(card.body, clean(body))
                    self._touch(card)
                if type is not None:
                    card.meta["type"] = type
                if tags is not None:
                    card.meta["tags"] = list(tags)
                for key, value in (fields or {}).items():
                    # a day given as text is kept as a day, as memdir writes its own
                    card.meta[key] = as_date(value) if key in MANAGED_DATES else value
                card.meta["updated"] = today
                flags = flag(card.body, " ".join(map(str, (fields or {}).values())))
                if created or body is not None:
                    flags.stamp(card.meta)
                else:
                    flags.add_to(card.meta)
        except Refusal as refusal:
            return WriteResult.refused(self._store(), refusal.reason)
        return WriteResult(
            ok=True,
            store=path,
            action="created" if created else "updated",
            key=path,
            warnings=flags.warnings,
        )

    def append_history(self, ref: str, text: str) -> WriteResult:
        """Add a dated line to the card's ``## History`` (append-only; touches the card)."""
        try:
            problem = ref_problem(ref) if isinstance(ref, str) else None
            if problem is not None:
                raise Refusal(problem)
            path = self.resolve(ref)
            if path is None:
                raise Refusal(f"no card {ref!r} in the vault; create it with a card write first")
            line = one_line(
                text,
                "text",
                empty="the history entry is empty; nothing was written",
                limit=self.ctx.limits.journal_entry_max_chars,
            )
            with self._edit(path) as card:
                stamp = self.ctx.clock().date().isoformat()
                card.body = add_history(card.body, f"- {stamp} ({self.ctx.manifest.agent}): {line}")
                self._touch(card)
                card.meta["updated"] = self.ctx.clock().date()
                flags = flag(line)
                flags.add_to(card.meta)
        except Refusal as refusal:
            return WriteResult.refused(self._store(), refusal.reason)
        return WriteResult(ok=True, store=path, action="updated", key=path, warnings=flags.warnings)

    def _store(self) -> str:
        return f"{self.prefix}{self.folder}/".replace("//", "/") if self.folder else self.prefix

    def _inside(self, ref: str) -> str:
        """``ref`` as a name inside the vault: a card's own path (``vault/crm/alice.md``)
        loses the vault's folder and ``.md``, so that a new card named by the path it is
        to have gets that path (it got vault/vault/crm/alice-md.md)."""
        name = ref.strip()
        inside = f"{self.prefix}{self.folder}/" if self.folder else self.prefix
        if inside and name.startswith(inside):
            name = name[len(inside) :]
        return name.removesuffix(".md")

    def _same_folder(self, path: str, named: str, folder: str) -> None:
        """Refusal if ``folder`` is not the one the card at ``path`` is in: a write places
        a new card, it does not move one (the folder was dropped, as if it held)."""
        wanted = self._new_path(named, folder).rpartition("/")[0]
        if wanted != path.rpartition("/")[0]:
            raise Refusal(
                f"the card {named!r} is {path}, not in folder {folder!r}: folder places a new "
                "card and a write does not move one; leave folder out to update it where it "
                "is, nothing was written"
            )

    def _new_path(self, ref: str, folder: str | None) -> str:
        name = slug(ref.strip().rsplit("/", 1)[-1])
        if not name:
            raise Refusal(f"{ref!r} has no letters or digits to name a file after")
        if len(name) > CARD_NAME_MAX_CHARS:
            raise Refusal(
                f"the card's name is {len(name)} characters; name it in at most "
                f"{CARD_NAME_MAX_CHARS} (such as 'alice-moreau') and put the rest in its body"
            )
        if name in WINDOWS_DEVICES:
            raise Refusal(
                f"{name}.md is a name Windows keeps for a device ({name.upper()}, whatever "
                "follows the dot): a vault kept in git could not be checked out there. Add a "
                f"word, such as '{name}-project'; nothing was written"
            )
        inner = folder if folder is not None else ref.strip().rpartition("/")[0]
        inner_parts = [p.strip() for p in inner.strip("/").split("/") if p.strip()]
        parts = [p for p in (self.folder,) if p] + inner_parts
        if any(part in ("..", ".") or part.startswith(".") for part in parts):
            raise Refusal(f"folder {inner!r} must stay inside the vault")
        if any(not part.isprintable() for part in inner_parts):
            raise Refusal(
                f"folder {inner!r} holds a line break or control character; name it on one "
                "line, such as 'crm/clients'"
            )
        if inner_parts and inner_parts[0].lower() == MOC_FOLDER.lower():
            raise Refusal(
                f"folder {inner!r} is in {MOC_FOLDER}/, where memdir moc writes the Maps of "
                "Content: a card there would not be listed and would be written over; put it "
                "in another folder, such as 'crm'"
            )
        return self.prefix + "/".join([*parts, f"{name}.md"])

    @contextmanager
    def _edit(self, path: str, links: list[str] | None = None) -> Iterator[Card]:
        """Lock the vault, re-read the card, yield it, bring ``links`` in step with the
        body (``links``: the explicit ones, if the write gives them), write it back if
        it changed."""
        with self.lock:
            confine_in(self.ctx.files, path)
            text = self.ctx.read(path)
            if text is not None and unclosed_frontmatter(text):
                raise FileShapeError(
                    f"{path}: its frontmatter opens with --- on line 1 and never closes; "
                    "add the closing --- line after its fields (or remove the first line) "
                    "before editing the card"
                )
            card = Card.parse(text) if text is not None else Card()
            before = card.body
            yield card
            wanted = linked(card.meta, before, card.body, links)
            if wanted or "links" in card.meta:
                current = card.meta.get("links")
                if not isinstance(current, list) or [str(t) for t in current] != wanted:
                    card.meta["links"] = wanted
            rendered = card.render()
            if rendered != text:
                self.ctx.write(path, rendered)
                self.ctx.on_write(path, rendered)

    def real_path(self, path: str) -> Path:
        """The card on disk (a local folder's; on postgres read through ``ctx.files``)."""
        return self.space.real(path)
