"""What a card's frontmatter may hold, checked before a write touches the card (the
vault specification's ranges and names): ``check_fields`` for the values of the fields
memdir manages, ``check_names`` for a type, tags, links and field keys,
``check_card_text`` for a whole card's text given as plain text. Each raises a
``Refusal`` saying what to give instead (``check_card_text`` returns it), so nothing is
written."""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from typing import Any

from memdir.errors import FileShapeError
from memdir.files.cards import CARD_TYPES, Card
from memdir.safety.provenance import BY_KEY, FLAG_KEY
from memdir.stores.validate import Refusal
from memdir.textutil import shorten
from memdir.tiers import TIERS

CARD_TYPE_MAX_CHARS = 40
FIELD_KEY_MAX_CHARS = 64
_TYPE_RE = re.compile(r"[^\W_](?:[\w -]*\w)?")  # a kind, as the spec's: person, project...
_FIELD_KEY_RE = re.compile(r"[A-Za-z_][\w-]*")  # a frontmatter key, as the spec's: last_accessed


def as_date(value: object) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip()[:10])
        except ValueError:
            return None
    return None


def check_card_text(text: str, before: str | None = None) -> str | None:
    """Why ``text`` cannot replace a card whose text was ``before`` (None if it can): its
    frontmatter must load as a YAML mapping, and a card that had frontmatter keeps it.
    Writes nothing: a tool that edits cards as plain text asks this first."""
    try:
        card = Card.parse(text)
    except FileShapeError as exc:
        return "the card's " + " ".join(str(exc).split())
    if before is not None and not card.meta:
        try:
            had = bool(Card.parse(before).meta)
        except FileShapeError:
            had = False
        if had:
            return (
                "the card would lose its frontmatter (the --- block of type, tags, tier and "
                "dates at its top); keep the block and edit the lines inside it"
            )
    return None


MANAGED_DATES = ("created", "last_accessed")
"""card fields that hold a day, which decay and the tiers read (``updated`` is set by
every write)"""
WRITTEN_BY_MEMDIR = (BY_KEY, FLAG_KEY, "updated")
"""frontmatter no ``fields`` may set: the provenance and the poisoning flag of a write,
and the day of the last write (each write sets it: a value given would be lost)"""


FIELD_INT_MAX = 2**63 - 1
"""the largest whole number a field may hold (what other YAML and SQLite readers take)"""


def check_number(key: object, value: object) -> None:
    """Refusal if ``value`` (or a number in a list or object in it) is no number a reader
    can use: a float that is NaN or infinite, a whole number past 64 bits."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            bad = repr(item)
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) > FIELD_INT_MAX:
            bad = f"a number of {item.bit_length()} bits"
        else:
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, (list, tuple)):
                stack.extend(item)
            continue
        raise Refusal(
            f"field {shorten(repr(key), 60)} holds {bad}: a number in fields must be finite "
            f"and within +/-{FIELD_INT_MAX:,}; nothing was written"
        )


def check_fields(fields: dict[str, Any] | None) -> None:
    """Refuse a value of a field memdir manages that its readers could not use (the
    vault specification's ranges): a tier not one of the tiers, a relevance outside
    0.0-1.0, a count below zero, a day that is no date, a type that is no string, tags or
    links that are no list of strings. Other fields are the writer's."""
    if fields is None:
        return
    if not isinstance(fields, dict):
        raise Refusal(f"fields must be an object of field: value, not {type_name(fields)}")
    for key, value in fields.items():
        check_number(key, value)
    tier = fields.get("tier")
    if "tier" in fields and tier not in TIERS:
        raise Refusal(f"tier must be one of {', '.join(TIERS)}, not {tier!r}")
    relevance = fields.get("relevance")
    if "relevance" in fields and (
        isinstance(relevance, bool)
        or not isinstance(relevance, (int, float))
        or not 0.0 <= relevance <= 1.0
    ):
        raise Refusal(f"relevance must be a number from 0.0 to 1.0, not {relevance!r}")
    count = fields.get("access_count")
    if "access_count" in fields and (
        isinstance(count, bool) or not isinstance(count, int) or count < 0
    ):
        raise Refusal(f"access_count must be a whole number from 0, not {count!r}")
    if "type" in fields and not isinstance(fields["type"], str):
        raise Refusal(f"type must be a string such as 'person', not {fields['type']!r}")
    for key in ("tags", "links"):  # what the tags and links arguments take
        value = fields.get(key)
        if key in fields and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            raise Refusal(f"{key} must be a list of strings such as ['crm'], not {value!r}")
    for key in MANAGED_DATES:
        if key in fields and as_date(fields[key]) is None:
            raise Refusal(f"{key} must be a day such as 2026-11-30, not {fields[key]!r}")


def check_names(
    type: str | None,
    tags: list[str] | None,
    links: list[str] | None,
    fields: dict[str, Any] | None,
) -> None:
    """Refuse a type, tag, link or field key a card's frontmatter could not hold as the
    vault specification writes them: a type is a short name (person, project, company,
    idea...), a field key a word (last_accessed), a tag or link one line."""
    fields = fields or {}
    for kind in (type, fields.get("type")):
        if kind is not None and (len(kind) > CARD_TYPE_MAX_CHARS or not _TYPE_RE.fullmatch(kind)):
            raise Refusal(
                f"type must be a short name such as {', '.join(CARD_TYPES)} (letters, digits, "
                f"spaces, - and _, at most {CARD_TYPE_MAX_CHARS} characters), not "
                f"{shorten(repr(kind), 60)}; nothing was written"
            )
    for key in fields:
        if key in WRITTEN_BY_MEMDIR:
            records = {
                BY_KEY: "who wrote the card",
                FLAG_KEY: "that its text reads as instructions",
                "updated": "the day of the card's last write",
            }[key]
            raise Refusal(
                f"field {key!r} is memdir's own: it records {records} and is set by the "
                "write itself; leave it out of fields, nothing was written"
            )
        if (
            not isinstance(key, str)
            or len(key) > FIELD_KEY_MAX_CHARS
            or not _FIELD_KEY_RE.fullmatch(key)
        ):
            raise Refusal(
                f"field name {shorten(repr(key), 60)} is not a frontmatter key: use a letter "
                f"or _ then letters, digits, - or _ (at most {FIELD_KEY_MAX_CHARS} "
                "characters), such as 'last_met'; nothing was written"
            )
    for what, given in (("tags", tags), ("links", links)):
        if given is not None and not isinstance(given, list):
            raise Refusal(f"{what} must be a list of strings such as ['crm'], not {given!r}")
        for value in [*(given or []), *(fields.get(what) or [])]:
            if not isinstance(value, str) or not value.strip() or "\n" in value or "\r" in value:
                raise Refusal(
                    f"each of {what} must be a name on one line, such as 'crm', not "
                    f"{shorten(repr(value), 60)}; nothing was written"
                )


def type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__
