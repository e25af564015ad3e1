"""LangGraph's long-term store over a memory folder: ``MemdirStore(memory_or_path)``.

    from memdir.integrations.langgraph import MemdirStore
    graph = builder.compile(store=MemdirStore("~/agent"))

A ``BaseStore`` whose items are memdir items, so what a LangGraph agent keeps is
markdown a person can read and edit, capped, searched and consolidated like the
rest of the folder. The mapping (docs/integrations.md):

- ``("observations",)``: the observations of knowledge.md, what ``memdir dream``
  consolidates. A value is ``{"content": str, "type"?: str, "tags"?: [str]}``;
  the key is kept as the tag ``key:<key>`` (an observation memdir saved itself
  has its id for a key). An update replaces the observation; one the dream
  merged away is gone under its key, its content living on in the merged one.
- any other namespace ``(a, b, ...)``: one vault card per item, in the folder
  ``langgraph/a/b/``, named for the key (plus a short hash of namespace and key,
  so two keys a slug would merge never share a file). The card's body is the
  value for a person (its ``content`` or ``text``, then its other plain fields)
  over a fenced ``json langgraph`` block holding the exact value, its namespace,
  key and times: that block is what ``get`` returns, so edit it to change the
  value. Cards are capped in size, searched, decayed through tiers; a ``get``
  touches its card (``refresh_ttl=False`` does not), a search never does.

``search`` with a ``query`` is memdir's hybrid search (deep mode: archived and
cold items too), scored by it; without one, the items newest first. ``filter``
matches a value's fields as LangGraph's in-memory store does (``$eq``, ``$ne``,
``$gt``, ``$gte``, ``$lt``, ``$lte``). ``delete`` moves a card to the archive
(nothing is lost); per-item ``ttl`` is not supported (memdir ages cards by tier).
The async forms run on the folder's worker thread (``memdir.aio``).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # the framework is an extra, not a dependency
    raise ImportError(
        "memdir.integrations.langgraph needs LangGraph: pip install 'memdir[langgraph]'"
    ) from exc

from memdir.aio import AsyncMemory
from memdir.memory import Memory, open_memory
from memdir.stores.knowledge import OBSERVATION_TYPES, Observation
from memdir.tools.claude_memory import memory_command

OBSERVATIONS = "observations"
CARDS_FOLDER = "langgraph"
KEY_TAG = "key:"
FENCE = "```json langgraph"
_FENCED = re.compile(r"^```json langgraph\n(.*?)\n```", re.DOTALL | re.MULTILINE)
_PLAIN = (str, int, float, bool)


_ASCII_RUN = re.compile(r"[^a-z0-9]+")


def _slug(label: str) -> str:
    """A namespace label or key as a file name, ASCII as it always was here: the store
    finds an item again by the path it computes, so the rule cannot change under cards
    already written (the digest beside the key keeps two keys apart)."""
    return _ASCII_RUN.sub("-", label.lower()).strip("-")


class MemdirStore(BaseStore):
    """A LangGraph ``BaseStore`` over one memory folder (a ``Memory``, an ``AsyncMemory``
    or a folder's path, opened here and closed by ``close``)."""

    def __init__(self, memory_or_path: Memory | AsyncMemory | str | Path) -> None:
        self._owned = isinstance(memory_or_path, str | Path)
        if isinstance(memory_or_path, AsyncMemory):
            self.amemory = memory_or_path
        else:
            memory = (
                open_memory(memory_or_path)
                if isinstance(memory_or_path, str | Path)
                else memory_or_path
            )
            self.amemory = AsyncMemory(memory)
        self.memory: Memory = self.amemory.sync
        self._serial = threading.RLock()  # a sync batch and an async one never overlap

    def close(self) -> None:
        """Close the folder if this store opened it."""
        if self._owned:
            self.memory.close()

    # -- BaseStore ---------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        with self._serial:
            return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        todo = list(ops)
        return await self.amemory.run(lambda: self.batch(todo))

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key, touch=op.refresh_ttl)
        if isinstance(op, PutOp):
            if op.value is None:
                self._delete(op.namespace, op.key)
            else:
                self._put(op.namespace, op.key, op.value)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise ValueError(f"unknown store operation {type(op).__name__}")

    # -- items -------------------------------------------------------------------------

    def _get(self, namespace: tuple[str, ...], key: str, *, touch: bool = True) -> Item | None:
        if _is_observations(namespace):
            found = self._observation(key)
            return None if found is None else _observation_item(found)
        path = self._card_path(namespace, key)
        if path is None or not self.memory.space.real(path).is_file():
            return None
        card = self.memory.vault.read(path, touch=touch)
        return None if card is None or card.path != path else _card_item(card.body)

    def _put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any]) -> None:
        if _is_observations(namespace):
            self._put_observation(key, value)
            return
        try:
            json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a LangGraph value must be JSON: {exc}") from None
        now = datetime.now(UTC)
        before = self._get(namespace, key, touch=False)
        created = before.created_at if before is not None else now
        body = card_body(namespace, key, dict(value), created, now)
        ref = self._card_ref(namespace, key)
        tags = ["langgraph"] if before is None else None  # tags added by hand stay
        result = self.memory.vault.write(ref, body, tags=tags)
        if not result.ok:
            raise ValueError(f"memdir refused {namespace}/{key}: {result.reason}")

    def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        if _is_observations(namespace):
            found = self._observation(key)
            if found is not None:
                result = self.memory.knowledge.delete_observations([found.id])
                if not result.ok:
                    raise ValueError(f"memdir refused to delete {key}: {result.reason}")
            return
        path = self._card_path(namespace, key)
        if path is None or not self.memory.space.real(path).is_file():
            return  # deleting what is not there is a no-op in LangGraph's stores too
        done = memory_command(self.memory, {"command": "delete", "path": f"/memories/{path}"})
        if not done.get("ok"):
            raise ValueError(f"memdir refused to delete {path}: {done.get('reason')}")

    # -- observations ------------------------------------------------------------------

    def _observation(self, key: str) -> Observation | None:
        if not self.memory.has("knowledge"):
            return None
        tagged = KEY_TAG + key
        for obs in self.memory.knowledge.observations():
            if tagged in obs.tags or (obs.id == key and not _key_tag(obs)):
                return obs
        return None

    def _put_observation(self, key: str, value: Mapping[str, Any]) -> None:
        extra = sorted(set(value) - {"content", "type", "tags"})
        content = value.get("content")
        if extra or not isinstance(content, str):
            raise ValueError(
                "an observation's value is {'content': text, 'type'?: one of "
                f"{', '.join(OBSERVATION_TYPES)}, 'tags'?: [text]}}"
                + (f", not fields {extra}" if extra else "")
                + "; keep other values in another namespace, such as ('memories',): a card"
            )
        if "," in key:
            raise ValueError(f"an observation's key cannot hold a comma: {key!r}")
        tags = value.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ValueError("an observation's tags are a list of strings")
        before = self._observation(key)
        kind = str(value.get("type") or (before.type if before is not None else "note"))
        result = self.memory.knowledge.save(content, kind, [KEY_TAG + key, *tags])
        if not result.ok:
            raise ValueError(f"memdir refused the observation {key!r}: {result.reason}")
        if before is not None:  # saved first: a refusal leaves the old one in place
            self.memory.knowledge.delete_observations([before.id])

    # -- search and listing --------------------------------------------------------------

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = op.namespace_prefix
        wanted = op.limit + op.offset
        found: list[tuple[Item, float | None]] = []
        if op.query:
            for item, score in self._query(prefix, op.query, max(wanted * 4, 20)):
                if _matches(item.value, op.filter):
                    found.append((item, score))
        else:
            items = [i for i in self._all_items(prefix) if _matches(i.value, op.filter)]
            items.sort(key=lambda i: i.updated_at, reverse=True)
            found = [(item, None) for item in items]
        return [
            SearchItem(
                namespace=item.namespace,
                key=item.key,
                value=item.value,
                created_at=item.created_at,
                updated_at=item.updated_at,
                score=score,
            )
            for item, score in found[op.offset : wanted]
        ]

    def _query(
        self, prefix: tuple[str, ...], query: str, k: int
    ) -> list[tuple[Item, float | None]]:
        layers = []
        if _under(prefix, (OBSERVATIONS,)) and self.memory.has("knowledge"):
            found = self.memory.manifest.layer_for("knowledge")
            layers += [found[0]] if found else []
        vault = self.memory.manifest.layer_for("vault")
        if vault is not None and (not prefix or prefix[0] != OBSERVATIONS):
            layers.append(vault[0])
        if not layers:
            return []
        hits = self.memory.search(query, k=k, mode="deep", layers=layers)
        knowledge = self.memory.knowledge.store if self.memory.has("knowledge") else None
        observations = None
        seen: set[tuple[tuple[str, ...], str]] = set()
        out: list[tuple[Item, float | None]] = []
        for hit in hits:
            item: Item | None = None
            if hit.path == knowledge:
                if observations is None:
                    observations = {o.id: o for o in self.memory.knowledge.observations()}
                obs = observations.get(hit.anchor)
                item = _observation_item(obs) if obs is not None else None
            elif f"/{CARDS_FOLDER}/" in f"/{hit.path}":
                text = self._card_text(hit.path)
                item = _card_item(text) if text is not None else None
            if item is None or not _under(prefix, item.namespace):
                continue
            if (item.namespace, item.key) in seen:
                continue
            seen.add((item.namespace, item.key))
            out.append((item, hit.score))
        return out

    def _all_items(self, prefix: tuple[str, ...]) -> list[Item]:
        items: list[Item] = []
        if _under(prefix, (OBSERVATIONS,)) and self.memory.has("knowledge"):
            items += [_observation_item(o) for o in self.memory.knowledge.observations()]
        if (not prefix or prefix[0] != OBSERVATIONS) and self.memory.has("vault"):
            for path in self._card_paths(prefix):
                text = self._card_text(path)
                item = _card_item(text) if text is not None else None
                if item is not None and _under(prefix, item.namespace):
                    items.append(item)
        return items

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = {item.namespace for item in self._all_items(())}
        conditions = op.match_conditions or ()
        chosen = [ns for ns in spaces if all(_does_match(c, ns) for c in conditions)]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset : op.offset + op.limit]

    # -- where cards live ----------------------------------------------------------------

    def _card_ref(self, namespace: tuple[str, ...], key: str) -> str:
        if not namespace:
            raise ValueError("a LangGraph namespace has at least one label")
        folders = [CARDS_FOLDER, *(_slug(part) or "_" for part in namespace)]
        digest = hashlib.sha1(json.dumps([list(namespace), key]).encode()).hexdigest()[:8]
        name = (_slug(key)[:60].strip("-") or "item") + "-" + digest
        return "/".join([*folders, name])

    def _card_path(self, namespace: tuple[str, ...], key: str) -> str | None:
        if not self.memory.has("vault"):
            return None
        vault = self.memory.vault
        inner = [vault.folder] if vault.folder else []
        return vault.prefix + "/".join([*inner, self._card_ref(namespace, key)]) + ".md"

    def _card_paths(self, prefix: tuple[str, ...]) -> list[str]:
        vault = self.memory.vault
        inner = [vault.folder] if vault.folder else []
        start = vault.prefix + "/".join([*inner, CARDS_FOLDER]) + "/"
        return [p for p in vault.paths() if p.startswith(start)]

    def _card_text(self, path: str) -> str | None:
        try:
            return self.memory.space.real(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None


# -- the card's body -------------------------------------------------------------------


def card_body(
    namespace: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    created: datetime,
    updated: datetime,
) -> str:
    """What a person reads (the value's text, then its plain fields) over the exact value."""
    lines = [f"# {' '.join(key.split()) or 'item'}", ""]
    text = value.get("content", value.get("text"))
    if isinstance(text, str) and text.strip():
        lines += [text.strip(), ""]
    plain = [
        f"- {name}: {field}"
        for name, field in value.items()
        if name not in ("content", "text") and isinstance(field, _PLAIN)
    ]
    if plain:
        lines += [*plain, ""]
    record = {
        "namespace": list(namespace),
        "key": key,
        "created_at": created.isoformat(),
        "updated_at": updated.isoformat(),
        "value": value,
    }
    lines += [FENCE, json.dumps(record, ensure_ascii=False, indent=1), "```"]
    return "\n".join(lines)


def _card_item(text: str) -> Item | None:
    found = list(_FENCED.finditer(text))
    if not found:
        return None  # a card in langgraph/ that a person wrote: not an item
    try:
        record = json.loads(found[-1].group(1))
        return Item(
            namespace=tuple(record["namespace"]),
            key=str(record["key"]),
            value=dict(record["value"]),
            created_at=datetime.fromisoformat(record["created_at"]),
            updated_at=datetime.fromisoformat(record["updated_at"]),
        )
    except (ValueError, KeyError, TypeError):
        return None  # the block was edited into something else: skipped, never a crash


def _key_tag(obs: Observation) -> str | None:
    return next((t[len(KEY_TAG) :] for t in obs.tags if t.startswith(KEY_TAG)), None)


def _observation_item(obs: Observation) -> Item:
    key = _key_tag(obs) or obs.id
    tags = [t for t in obs.tags if not t.startswith(KEY_TAG)]
    when = obs.date if obs.date.tzinfo else obs.date.replace(tzinfo=UTC)
    return Item(
        namespace=(OBSERVATIONS,),
        key=key,
        value={"content": obs.content, "type": obs.type, "tags": tags},
        created_at=when,
        updated_at=when,
    )


def _is_observations(namespace: tuple[str, ...]) -> bool:
    return tuple(namespace) == (OBSERVATIONS,)


def _under(prefix: tuple[str, ...], namespace: tuple[str, ...]) -> bool:
    return tuple(namespace[: len(prefix)]) == tuple(prefix)


# -- filters and namespace conditions, as LangGraph's InMemoryStore reads them -----------


def _matches(value: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    return not wanted or all(_compare(value.get(k), v) for k, v in wanted.items())


def _compare(have: Any, want: Any) -> bool:
    if isinstance(want, dict):
        if any(k.startswith("$") for k in want):
            return all(_operator(have, k, v) for k, v in want.items())
        return isinstance(have, dict) and all(_compare(have.get(k), v) for k, v in want.items())
    if isinstance(want, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(have) == len(want)
            and all(_compare(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)


def _operator(have: Any, operator: str, want: Any) -> bool:
    if operator == "$eq":
        return bool(have == want)
    if operator == "$ne":
        return bool(have != want)
    if operator in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(have), float(want)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[operator]
    raise ValueError(f"unsupported filter operator {operator!r}")


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)
