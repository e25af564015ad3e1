"""knowledge.md: curated knowledge above a buffer of raw observations.

    # Knowledge

    ## conventions                         <- curated: capped, in the prompt
    <!-- updated: 2026-11-30T10:00:00Z -->
    - File names are snake_case.

    ## _observations                       <- buffer: searched, never injected
    ### obs_1764496800000_a1b2c3
    <!-- type: fact; date: 2026-11-30T10:00:00Z; tags: billing, api -->
    The billing API rate limit is 50 requests per second.

Rules (notebook seed, section 3 and 8.8):
- ``save`` (memory_save) adds one observation: an array, a non-string or empty
  content is refused with a reason. At most ``OBSERVATIONS_MAX`` (500); the
  oldest go to the archive.
- ``update`` (memory_update) writes a named curated section: ``replace``,
  ``patch`` (adds to it; ``append`` is an alias) or ``delete`` (observations by
  id). A section is capped at ``MEMORY_MD_SECTION_MAX_CHARS`` (3000), all
  curated text at ``MEMORY_MD_TOTAL_MAX_CHARS`` (15000); over a cap the text is
  compressed, and if still over the write is refused with ``{ok: false, reason}``.
- Bodies never open a sibling ``##`` section; ``<think>`` blocks are stripped;
  empty observations are dropped when read and pruned by the next write.
- A file over a cap on disk is reported (``check``) and brought under by the
  next write: the full original text of what changes goes to the archive first.

The buffer's records (``Observation``, ids, tags) are in ``stores/observations.py``,
the caps and what keeps the file under them in ``stores/knowledge_caps.py``, an edit
of the whole file (the dream's) in ``stores/knowledge_edit.py``; this module keeps
the store and re-exports their public names.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime

from memdir.files.encoding import encode
from memdir.files.sections import Section, SectionDocument, sanitize_body, strip_think
from memdir.results import Notice, WriteResult
from memdir.safety.provenance import written_by
from memdir.stores.base import (
    ArchivedText,
    Refusal,
    SectionFileStore,
    check_text,
    normalize_key,
)
from memdir.stores.knowledge_caps import KnowledgeUsage as KnowledgeUsage
from memdir.stores.knowledge_caps import (
    cap_notices,
    enforce,
    fit,
    trim_observations,
    usage_of,
    why_over,
)
from memdir.stores.knowledge_edit import KnowledgeEdit
from memdir.stores.observations import MAX_TAGS as MAX_TAGS
from memdir.stores.observations import OBSERVATION_TYPES as OBSERVATION_TYPES
from memdir.stores.observations import OBSERVATIONS_KEY as OBSERVATIONS_KEY
from memdir.stores.observations import KnowledgeParts, observation_of, observations_doc, parse_ids
from memdir.stores.observations import Observation as Observation
from memdir.stores.observations import ObservationType as ObservationType
from memdir.stores.observations import new_observation_id as new_observation_id
from memdir.stores.observations import normalize_tags as normalize_tags
from memdir.stores.observations import observation_meta as observation_meta
from memdir.stores.validate import Flags, blank, flag
from memdir.textutil import drop_comments
from memdir.timeutil import format_ts, parse_ts

UPDATE_MODES = ("replace", "patch", "append", "delete")
ARCHIVE_KIND = "knowledge"


@dataclass(frozen=True)
class KnowledgeSection:
    key: str
    text: str
    updated_at: datetime | None
    by: str = "person"
    """who wrote it (``memdir.safety.provenance``)"""


class KnowledgeStore(SectionFileStore):
    STARTER = "# Knowledge\n\n## _observations\n"
    _parsed: tuple[SectionDocument, list[Observation]] | None = None

    # -- reading ---------------------------------------------------------------

    def sections(self) -> list[KnowledgeSection]:
        """Curated sections in file order (everything but ``## _observations``)."""
        return [
            KnowledgeSection(
                section.key,
                section.body,
                parse_ts(section.meta.get("updated")),
                written_by(section.meta),
            )
            for section in self._read()
            if section.key != OBSERVATIONS_KEY
        ]

    def section(self, name: str) -> KnowledgeSection | None:
        found = find_curated(self._read(), name)
        if found is None:
            return None
        return KnowledgeSection(
            found.key, found.body, parse_ts(found.meta.get("updated")), written_by(found.meta)
        )

    def observations(self) -> list[Observation]:
        """Observations in file order (oldest first); empty ones are left out."""
        doc = self._read()  # cached while the file is unchanged: so is this list
        if self._parsed is not None and self._parsed[0] is doc:
            return list(self._parsed[1])
        _, sub = observations_doc(doc)
        fallback = self.mtime() or self.ctx.clock()
        found = [observation_of(section, fallback) for section in sub if section.body.strip()]
        self._parsed = (doc, found)
        return list(found)

    def get_observation(self, obs_id: str) -> Observation | None:
        for observation in self.observations():
            if observation.id == obs_id:
                return observation
        return None

    def usage(self) -> KnowledgeUsage:
        return usage_of(self._read(), self.ctx.limits)

    def check_text(self, text: str) -> str | None:
        """Why ``text``, written whole, would leave knowledge.md over its caps (None if it
        fits). Writes nothing: a tool that edits the file as plain text asks this first."""
        return why_over(self.store, usage_of(SectionDocument.parse(text), self.ctx.limits))

    def check(self) -> list[Notice]:
        return cap_notices(self.store, self.usage())

    def render(self, max_tokens: int | None = None) -> str:
        """Curated knowledge as a prompt shows it (``## Your Knowledge``), whole sections
        in file order within ``max_tokens`` (default: the manifest's knowledge cap).
        Observations are never included."""
        budget = self.ctx.limits.knowledge_prompt_max_tokens if max_tokens is None else max_tokens
        header = "## Your Knowledge\n"
        blocks: list[str] = []
        used = _tokens(header)
        for section in self.sections():
            if not section.text.strip():
                continue
            block = f"\n### {section.key}\n{prompt_text(section.text)}\n"
            if used + _tokens(block) > budget:
                continue
            blocks.append(block)
            used += _tokens(block)
        return header + "".join(blocks) if blocks else ""

    # -- writing ---------------------------------------------------------------

    def save(
        self,
        content: object,
        type: str = "note",
        tags: object = (),
        *,
        date: datetime | None = None,
    ) -> WriteResult:
        """Add one observation to ``## _observations`` (memory_save)."""
        try:
            if isinstance(content, (list, tuple)):
                raise Refusal(
                    f"memory_save takes one observation, not an array of {len(content)}; "
                    "call it once per observation"
                )
            if not isinstance(content, str):
                raise Refusal(
                    f"content must be the observation's text as a string, not {_kind(content)}"
                )
            text = check_text(
                strip_think(content).strip(),
                "content",
                limit=self.ctx.limits.observation_max_chars,
                hint=(
                    "save the key facts as a few short observations, or keep the full text "
                    "in a file and save where it lives"
                ),
            )
            if blank(text):
                raise Refusal(
                    "content is empty; nothing was saved. Put the observation's text in content"
                )
            if type not in OBSERVATION_TYPES:
                raise Refusal(f"type must be one of {', '.join(OBSERVATION_TYPES)}, not {type!r}")
            tag_list = normalize_tags(tags)
            moment = date or self.ctx.clock()
            obs_id = new_observation_id()
            flags = flag(text, *tag_list)
            with self._edit_parts() as (parts, archived, notes):
                meta = observation_meta(type, moment, tag_list)
                flags.stamp(meta)
                parts.observations.append(Section(obs_id, text, meta, level=3))
                trimmed = trim_observations(
                    parts.observations, obs_id, self.ctx.limits, self.ctx.clock
                )
                if trimmed:
                    archived += trimmed
                    notes.append(
                        f"moved the {len(trimmed)} oldest observations to the archive "
                        f"(cap {self.ctx.limits.observations_max})"
                    )
                archive = self._keep(ARCHIVE_KIND, archived)
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)
        return _ok(self.store, "saved", obs_id, archived, archive, notes, flags.warnings)

    def update(
        self,
        section: object = None,
        content: object = None,
        mode: str = "replace",
        ids: object = None,
    ) -> WriteResult:
        """Write a curated section (memory_update), or delete observations (mode 'delete').
        ``ids`` go with mode 'delete' only, and a section with the other modes: a call
        that gives both is refused, not half done (ids were ignored by a replace)."""
        chosen = mode.strip().lower() if isinstance(mode, str) else ""
        if chosen == "delete":
            if section is not None:
                return WriteResult.refused(
                    self.store,
                    f"mode 'delete' removes observations by ids and takes no section; write "
                    f"section {section!r} with mode 'replace' or 'patch' in a call of its own",
                )
            return self.delete_observations(ids if ids is not None else content)
        if chosen not in UPDATE_MODES:
            return WriteResult.refused(
                self.store, f"mode must be one of {', '.join(UPDATE_MODES)}, not {mode!r}"
            )
        if ids not in (None, "", [], ()):
            return WriteResult.refused(
                self.store,
                f"ids go with mode 'delete' (the observations to remove); mode {chosen!r} "
                "writes a section and takes no ids. Nothing was written: call memory_update "
                "once to write the section and once with mode 'delete' and the ids",
            )
        if chosen == "append":  # the seed's alias
            chosen = "patch"
        try:
            if section is None:  # (a call with neither: say what each mode needs)
                raise Refusal(
                    f"mode {chosen!r} writes a section: give the section's name and its "
                    "content (or mode 'delete' and the ids of observations to remove)"
                )
            key = normalize_key(section, "section", "conventions")
            if key.lower() == OBSERVATIONS_KEY:
                raise Refusal(
                    "_observations is the observation buffer: add to it with memory_save and "
                    "remove from it with mode 'delete'; curated sections have other names"
                )
            if not isinstance(content, str):
                raise Refusal(f"content must be a string, not {_kind(content)}")
            body = check_text(
                sanitize_body(strip_think(content)),
                "content",
                limit=self.ctx.limits.memory_md_total_max_chars,
                hint="a curated section is a short summary; save details as observations",
            )
            if blank(body):
                raise Refusal(
                    "content is empty; nothing was written. To remove a section use remove_section"
                )
            flags = Flags()
            with self._edit_parts() as (parts, archived, notes):
                doc = parts.doc
                target = find_curated(doc, key)
                old = target.body if target is not None else ""
                if chosen == "patch" and f"\n{body}\n" in f"\n{old}\n":  # already there
                    action = "unchanged"
                    notes.append("the section already holds this text")
                else:
                    new = old + "\n" + body if chosen == "patch" and old else body
                    new = fit(self.ctx.limits, self.store, doc, target, key, new, notes)
                    if target is None:
                        target = doc.new_section(key)
                        position = doc.index(OBSERVATIONS_KEY)
                        doc.insert(len(doc) if position is None else position, target)
                        action = "created"
                    else:
                        action = "updated"
                    target.body = new
                    target.meta["updated"] = format_ts(self.ctx.clock())
                    flags = flag(new)
                    flags.stamp(target.meta)
                archive = self._keep(ARCHIVE_KIND, archived)
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)
        key = target.key if target is not None else key
        return _ok(self.store, action, key, archived, archive, notes, flags.warnings)

    def delete_observations(self, ids: object) -> WriteResult:
        """Remove observations by id (memory_update mode 'delete'); they go to the archive."""
        try:
            wanted = parse_ids(ids)
            if not wanted:
                raise Refusal("no observation ids given; pass ids=['obs_...']")
            with self._edit_parts() as (parts, archived, notes):
                sub = parts.observations
                found = [obs for obs in sub if obs.key in wanted]
                if not found:
                    raise Refusal(
                        "none of these observation ids exist: "
                        + ", ".join(wanted)
                        + "; memory_search lists observations with their ids"
                    )
                sub.sections = [obs for obs in sub if obs.key not in wanted]
                archived += [ArchivedText.of(obs, "deleted") for obs in found]
                archive = self._keep(ARCHIVE_KIND, archived)
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)
        removed = tuple(obs.key for obs in found)
        missing = tuple(item for item in wanted if item not in removed)
        result = _ok(self.store, "removed", None, archived, archive, notes)
        return replace(result, removed=removed, missing=missing)

    def remove_section(self, name: str) -> WriteResult:
        """Remove a curated section; its text goes to the archive."""
        try:
            key = normalize_key(name, "section", "conventions")
            with self._edit_parts() as (parts, archived, notes):
                doc = parts.doc
                target = find_curated(doc, key)
                if target is None:
                    raise Refusal(f"no curated section {key!r}; sections are: {_names(doc)}")
                doc.sections = [section for section in doc if section is not target]
                archived.append(ArchivedText.of(target, "removed"))
                archive = self._keep(ARCHIVE_KIND, archived)
        except Refusal as refusal:
            return WriteResult.refused(self.store, refusal.reason)
        result = _ok(self.store, "removed", target.key, archived, archive, notes)
        return replace(result, removed=(target.key,))

    @contextmanager
    def transaction(self) -> Iterator[KnowledgeEdit]:
        """Edit the whole file as one write (the dream cycle): under the lock, caps
        enforced first, everything taken out kept in the archive. Raise ``Refusal``
        inside the block to leave the file as it was."""
        with self._edit_parts() as (parts, archived, notes):
            edit = KnowledgeEdit(self, parts, archived, notes)
            yield edit
            edit.archive = self._keep(ARCHIVE_KIND, archived)

    # -- one edit --------------------------------------------------------------

    @contextmanager
    def _edit_parts(self) -> Iterator[tuple[KnowledgeParts, list[ArchivedText], list[str]]]:
        """``_edit`` with the observations parsed once and the caps enforced first;
        yields the parts, what enforcing archived, and notes on what it did."""
        with self._edit() as doc:
            parts = KnowledgeParts(doc, *self._nested(doc, OBSERVATIONS_KEY))
            archived, notes = enforce(parts, self.ctx.limits, self.ctx.clock)
            yield parts, archived, notes
            parts.commit()
            if parts.section is not None:
                self._nest(OBSERVATIONS_KEY, parts.observations)


def prompt_text(body: str) -> str:
    """A curated body as a prompt shows it: HTML comments (source ids a dream keeps
    beside promoted facts, notes for people) left out; the file keeps them."""
    return drop_comments(body)  # one pass: linear in a section far over the cap


def _tokens(text: str) -> int:
    return (len(encode(text)) + 3) // 4


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    return "null" if value is None else type(value).__name__


def _names(doc: SectionDocument) -> str:
    keys = [section.key for section in doc if section.key != OBSERVATIONS_KEY]
    return ", ".join(keys) or "none"


def find_curated(doc: SectionDocument, name: str) -> Section | None:
    curated = [section for section in doc if section.key != OBSERVATIONS_KEY]
    for section in curated:
        if section.key == name:
            return section
    folded = [section for section in curated if section.key.casefold() == name.casefold()]
    return folded[0] if len(folded) == 1 else None


def _ok(
    store: str,
    action: str,
    key: str | None,
    archived: list[ArchivedText],
    archive: str | None,
    notes: list[str],
    warnings: tuple[str, ...] = (),
) -> WriteResult:
    return WriteResult(
        ok=True,
        store=store,
        action=action,
        key=key,
        archived=tuple(item.key for item in archived),
        archive=archive,
        notes=tuple(notes),
        warnings=warnings,
    )
