"""The manifest's settings: one frozen dataclass per table of ``memdir.toml``.

Each field's type carries its constraints and rules (``Bound``, ``Check``), read by
``checking``; the rules across fields are each class's ``check``. The queries a
memory folder asks of its manifest (``layer_for``, ``path_of``, ...) live here too.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Annotated, Literal

from memdir.config.checking import Bound, Check, Settings

MANIFEST_NAME = "memdir.toml"
STATE_DIR = ".memdir"
LEGACY_MEMORY_MD = "MEMORY.md"
LEGACY_MEMORIES_JSON = "memories.json"

# The specifications' constants (notebook seed unless noted). Names kept as the seeds spell them.
NOTEBOOK_MAX_AGENT_ENTRIES = 4
NOTEBOOK_ENTRY_MAX_CHARS = 6000
MEMORY_MD_SECTION_MAX_CHARS = 3000
MEMORY_MD_TOTAL_MAX_CHARS = 15000
OBSERVATIONS_MAX = 500
# One memory written at a time (memdir's own limits, not the seeds'): past them a write
# is refused with what to do instead, so one call never makes every later write slow.
OBSERVATION_MAX_CHARS = 4000
JOURNAL_ENTRY_MAX_CHARS = 8000
CARD_MAX_CHARS = 20000
STATE_TTL_DAYS = 7
# The seeds name these two without a value; these are memdir's defaults.
STATE_PROMPT_MAX_LINES_REFLEX = 5
KNOWLEDGE_PROMPT_MAX_TOKENS = 2000
# Vault seed: relevance = max(floor, 1 - days * rate); tiers by days since access.
DECAY_RATE = 0.015
DECAY_FLOOR = 0.1
# Vault seed's context budget: always-loaded context under 25 KB (6,000 tokens); at 4 bytes
# a token, memdir's budget is 24,000 bytes.
CONTEXT_MAX_TOKENS = 6000
QUERY_SLOT_TOKENS = 1000
HOT_MAX_BYTES = 4096
HOT_MAX_LINES = 80
CONFIG_MAX_BYTES = 15 * 1024
# Journal days loaded at boot by a ``recent`` layer, today included: the workspace seed's
# "today + yesterday" unless the layer's ``days`` says otherwise; the deep profile, a week.
RECENT_DAYS = 2
DEEP_DAYS = 7

StoreKind = Literal[
    "document",  # a whole markdown file loaded as is (identity files, HEARTBEAT.md, STATE.md)
    "notebook",
    "knowledge",
    "state",
    "workstate",
    "vault",
    "journal",
    "lessons",
    "intel",
    "sessions",
    "history",
    "archive",
]
SINGLE_FILE_STORES: frozenset[str] = frozenset({"notebook", "knowledge", "state", "workstate"})
MemoryKind = Literal["procedural", "working", "semantic", "episodic", "archive"]
BootPolicy = Literal["always", "reflex", "recent", "heartbeat", "core", "never"]
DecayPolicy = Literal["none", "access", "date"]

_LAYER_NAME_RE = re.compile(r"[a-z][a-z0-9_-]*")
AGENT_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_GLOB_CHARS = frozenset("*?[")


class _LayerError(ValueError):
    """A rule about one layer that only the whole ``layers`` table can check."""

    def __init__(self, layer: str, message: str) -> None:
        super().__init__(message)
        self.layer = layer


class _KeyedError(ValueError):
    """A rule whose key is not where pydantic would place it (``tools.include``)."""

    def __init__(self, loc: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc


def _relative_paths(paths: list[str]) -> list[str]:
    for raw in paths:
        path = raw.replace("\\", "/")
        if not path or path.startswith("/") or re.match(r"^[A-Za-z]:", path):
            raise ValueError(f"path {raw!r} must be relative to the memory folder")
        if ".." in path.split("/"):
            raise ValueError(f"path {raw!r} must not leave the memory folder")
        if path.split("/")[-1] == LEGACY_MEMORY_MD:
            raise ValueError(f"{LEGACY_MEMORY_MD} is legacy and read-only; use knowledge.md")
    return paths


def _known_tools(names: list[str]) -> list[str]:
    if not names:  # the usual case: no need to load every tool's definition
        return names
    from memdir.tools.catalog import TOOLS  # config is read before the tools exist

    known = [tool.name for tool in TOOLS]
    for name in names:
        if name not in known:
            raise ValueError(f"no tool is named {name!r}; the tools are {', '.join(known)}")
    return names


def _agent_id(agent: str) -> str:
    if not AGENT_ID_RE.fullmatch(agent):
        raise ValueError("agent must be letters, digits, '.', '_' or '-', starting alnum")
    return agent


def _layers(layers: dict[str, Layer]) -> dict[str, Layer]:
    if not layers:
        raise ValueError("declare at least one layer")
    seen: dict[str, str] = {}
    for name, layer in layers.items():
        if not _LAYER_NAME_RE.fullmatch(name):
            raise _LayerError(
                name, f"layer name {name!r} must be lowercase letters, digits, _ or -"
            )
        if layer.store in SINGLE_FILE_STORES:
            if layer.store in seen:
                raise _LayerError(
                    name,
                    f"layers {seen[layer.store]!r} and {name!r} both use store "
                    f"{layer.store!r}; it may back one layer only",
                )
            seen[layer.store] = name
    return layers


_settings = dataclasses.dataclass(frozen=True)


@_settings
class Limits(Settings):
    notebook_max_agent_entries: Annotated[int, Bound(ge=1)] = NOTEBOOK_MAX_AGENT_ENTRIES
    notebook_entry_max_chars: Annotated[int, Bound(ge=100)] = NOTEBOOK_ENTRY_MAX_CHARS
    memory_md_section_max_chars: Annotated[int, Bound(ge=100)] = MEMORY_MD_SECTION_MAX_CHARS
    memory_md_total_max_chars: Annotated[int, Bound(ge=100)] = MEMORY_MD_TOTAL_MAX_CHARS
    observations_max: Annotated[int, Bound(ge=1)] = OBSERVATIONS_MAX
    observation_max_chars: Annotated[int, Bound(ge=100)] = OBSERVATION_MAX_CHARS
    """one observation (memory_save), state entry, lesson or intel line"""
    journal_entry_max_chars: Annotated[int, Bound(ge=100)] = JOURNAL_ENTRY_MAX_CHARS
    """one journal append"""
    card_max_chars: Annotated[int, Bound(ge=100)] = CARD_MAX_CHARS
    """one vault card's body"""
    state_ttl_days: Annotated[int, Bound(ge=1)] = STATE_TTL_DAYS
    state_prompt_max_lines_reflex: Annotated[int, Bound(ge=0)] = STATE_PROMPT_MAX_LINES_REFLEX
    knowledge_prompt_max_tokens: Annotated[int, Bound(ge=0)] = KNOWLEDGE_PROMPT_MAX_TOKENS

    def check(self) -> Limits:
        if self.memory_md_section_max_chars > self.memory_md_total_max_chars:
            raise ValueError(
                "memory_md_section_max_chars must not exceed memory_md_total_max_chars"
            )
        return self


@_settings
class Decay(Settings):
    rate: Annotated[float, Bound(gt=0, le=1)] = DECAY_RATE
    floor: Annotated[float, Bound(ge=0, le=1)] = DECAY_FLOOR
    active_days: Annotated[int, Bound(ge=0)] = 7
    warm_days: Annotated[int, Bound(ge=0)] = 21
    cold_days: Annotated[int, Bound(ge=0)] = 60

    def check(self) -> Decay:
        if not self.active_days <= self.warm_days <= self.cold_days:
            raise ValueError("tier days must satisfy active_days <= warm_days <= cold_days")
        return self


@_settings
class Context(Settings):
    max_tokens: Annotated[int, Bound(ge=0)] = CONTEXT_MAX_TOKENS
    """all context loaded at boot, in tokens (x 4: 24,000 bytes by default; the vault seed's
    target is under 25 KB)"""
    query_tokens: Annotated[int, Bound(ge=0)] = QUERY_SLOT_TOKENS
    """the retrieval slot: search hits for the turn's query"""
    hot_max_bytes: Annotated[int, Bound(ge=0)] = HOT_MAX_BYTES
    """the hot state file's target (vault seed: under 4 KB)"""
    config_max_bytes: Annotated[int, Bound(ge=0)] = CONFIG_MAX_BYTES
    """always-loaded config files together (vault seed: under 15 KB)"""
    flush_threshold: Annotated[float, Bound(gt=0, le=1)] = 0.75
    """context usage at which the memory flush fires (notebook seed, section 8.7)"""
    tokenizer: str = "bytes"
    """``bytes`` (bytes / 4, the specifications' rule) or the path of a tokenizer.json"""


@_settings
class IndexSettings(Settings):
    embedder: str = "minilm"
    """``minilm`` (default, offline), ``hashing``, ``none`` (keyword only),
    ``openai:MODEL`` (an OpenAI-compatible server) or another entry point's
    ``NAME[:ARG]`` (``memdir plugins`` lists them)"""
    embedder_options: dict[str, str | int | float | bool] = dataclasses.field(default_factory=dict)
    """keyword arguments for the embedder: for ``openai``, ``base_url``, ``api_key_env``,
    ``batch_size``, ``dimensions``, ``timeout_seconds``, ``max_retries``"""
    rescan_seconds: Annotated[float, Bound(ge=0)] = 10.0
    """how stale the view of hand edits may get before a search rescans the files"""


@_settings
class Layer(Settings):
    store: StoreKind
    paths: Annotated[list[str], Bound(min_length=1), Check(_relative_paths)]
    memory: MemoryKind | None = None
    boot: BootPolicy = "never"
    decay: DecayPolicy = "none"
    indexed: bool = True
    budget: Annotated[int, Bound(ge=0)] | None = None
    description: str = ""
    mount: str | None = None
    """a folder outside this one that the layer's paths are relative to (a vault
    shared by several agents); its files appear under the layer's name"""
    audit: bool = False
    """a journal written for humans only (one line per ended activity): never
    indexed, never loaded into a prompt"""
    days: Annotated[int, Bound(ge=1)] | None = None
    """a ``recent`` layer: how many days it loads at boot, today included (unset:
    ``RECENT_DAYS``, today and yesterday; the deep profile loads at least ``DEEP_DAYS``)"""

    def check(self) -> Layer:
        if self.store in SINGLE_FILE_STORES and (len(self.paths) != 1 or is_glob(self.paths[0])):
            raise ValueError(f"a {self.store} layer has exactly one path and no glob")
        if self.mount is not None and self.store != "vault":
            raise ValueError("only a vault layer can be mounted from another folder")
        if self.mount is not None and not self.mount.strip():
            raise ValueError("mount must name a folder")
        if self.audit and (self.store != "journal" or self.indexed or self.boot != "never"):
            raise ValueError('an audit layer is a journal with indexed = false and boot = "never"')
        if self.days is not None and (self.store != "journal" or self.boot != "recent"):
            raise ValueError('days is for a journal layer with boot = "recent"')
        return self

    @property
    def recent_days(self) -> int:
        """The days a ``recent`` layer loads at boot, today included."""
        return RECENT_DAYS if self.days is None else self.days


@_settings
class LLMSettings(Settings):
    """An optional OpenAI-compatible chat endpoint (Ollama, vLLM, llama.cpp server, hosted
    APIs). Unset, memdir stays offline. ``MEMDIR_LLM_BASE_URL``, ``MEMDIR_LLM_MODEL`` and
    the key's variable override these for one process."""

    provider: str = "openai"
    """the client: ``openai`` (the chat completions API), or an entry point of the
    ``memdir.llms`` group, called as ``Client(base_url, model, api_key=, timeout=,
    temperature=, retry=)``"""
    base_url: str | None = None
    """e.g. ``http://127.0.0.1:11434/v1`` (Ollama); the ``/chat/completions`` path is added"""
    model: str | None = None
    api_key_env: str = "MEMDIR_LLM_API_KEY"
    """the environment variable holding the key (never the key itself in the manifest)"""
    timeout_seconds: Annotated[float, Bound(gt=0)] = 60.0
    max_retries: Annotated[int, Bound(ge=0, le=10)] = 2
    """asks after the first when the server answers 429 or 5xx (waiting as its
    ``Retry-After`` says, else 0.5 s, 1 s, 2 s, ...)"""
    temperature: Annotated[float, Bound(ge=0, le=2)] = 0.0
    context_tokens: Annotated[int, Bound(ge=512)] = 8192
    """the model's context window: a dream asks in batches of half of it (Ollama's
    default is smaller: set its ``num_ctx``, or this, to what the model runs with)"""


@_settings
class DreamSettings(Settings):
    """The dream cycle (notebook seed, section 8): when it runs and how boldly."""

    min_observations: Annotated[int, Bound(ge=1)] = 50
    """a dream is due at this many observations, once a day"""
    bloated_observations: Annotated[int, Bound(ge=1)] = 500
    """at this many, up to ``max_runs_bloated`` dreams a day"""
    max_runs_bloated: Annotated[int, Bound(ge=1)] = 4
    max_entries: Annotated[int, Bound(ge=1)] = 500
    """entries handed to the planner per dream"""
    planner: Literal["auto", "offline", "llm"] = "auto"
    """``auto``: the LLM when ``[llm]`` is configured, else offline"""
    near_duplicate: Annotated[float, Bound(gt=0, le=1)] | None = None
    """cosine above which two observations are the same fact (default: the embedder's own)"""
    theme_min: Annotated[int, Bound(ge=2)] = 3
    """observations a theme needs before it is promoted"""
    max_curated_drop: Annotated[float, Bound(ge=0, le=1)] = 0.25
    """a plan that would drop more of the curated text is rejected whole"""
    distill: bool = False
    """after an activity ends, turn its summary into observations (post-task distillation)"""


@_settings
class ToolSettings(Settings):
    """Which agent tools the folder offers a model (``memdir.tools``). Every tool the
    layers serve can still be called by name; this is what is offered, in schemas sent
    with every turn."""

    offer: Literal["compact", "all"] = "compact"
    """``compact``: the tools a model needs, with their common arguments; ``all``: every
    tool the layers serve, every argument"""
    include: Annotated[list[str], Check(_known_tools)] = dataclasses.field(default_factory=list)
    """tools to offer besides that set (a legacy alias such as ``memory_list`` too)"""
    exclude: Annotated[list[str], Check(_known_tools)] = dataclasses.field(default_factory=list)
    """tools never to offer"""

    def check(self) -> ToolSettings:
        both = sorted(set(self.include) & set(self.exclude))
        if both:
            raise _KeyedError(("include",), f"{', '.join(both)} is both included and excluded")
        return self


@dataclasses.dataclass(frozen=True, kw_only=True)  # layers, required, is last: boot order
class Manifest(Settings):
    version: Literal[1] = 1
    agent: Annotated[str, Check(_agent_id)] = "default"
    layout: str = "custom"
    limits: Limits = dataclasses.field(default_factory=Limits)
    decay: Decay = dataclasses.field(default_factory=Decay)
    context: Context = dataclasses.field(default_factory=Context)
    index: IndexSettings = dataclasses.field(default_factory=IndexSettings)
    llm: LLMSettings = dataclasses.field(default_factory=LLMSettings)
    dream: DreamSettings = dataclasses.field(default_factory=DreamSettings)
    tools: ToolSettings = dataclasses.field(default_factory=ToolSettings)
    layers: Annotated[dict[str, Layer], Check(_layers)]

    def check(self) -> Manifest:
        if not self.tools.include:
            return self
        from memdir.tools.catalog import TOOLS

        for tool in TOOLS:
            wanted = tool.name in self.tools.include and tool.requires
            if wanted and not any(self.serves(kind) for kind in tool.requires):
                needs = " or ".join(repr(kind) for kind in tool.requires)
                raise _KeyedError(
                    ("tools", "include"),
                    f"{tool.name} needs a layer with store = {needs}, and this "
                    "manifest declares none",
                )
        return self

    # -- queries ---------------------------------------------------------------

    def layer_for(self, store: str) -> tuple[str, Layer] | None:
        """The first layer backed by ``store``, with its name."""
        for name, layer in self.layers.items():
            if layer.store == store:
                return name, layer
        return None

    def serves(self, store: str) -> bool:
        """True if a layer an agent works with is backed by ``store``: an audit journal,
        written for people only, is not one (no agent tool writes it)."""
        return any(layer.store == store and not layer.audit for layer in self.layers.values())

    def path_of(self, store: str) -> str | None:
        """The single path of a single-file store's layer, or None if not declared."""
        found = self.layer_for(store)
        return None if found is None else found[1].paths[0]

    def mounts(self, root: Path) -> dict[str, Path]:
        """Layer name -> the folder it is mounted from (relative mounts start at ``root``),
        links not followed yet (``FileSpace`` resolves them, a loop of links an error)."""
        found = {}
        for name, layer in self.layers.items():
            if layer.mount is not None:
                found[name] = root / Path(layer.mount).expanduser()
        return found

    def archive_dir(self) -> str:
        """Where evicted and overflowing text is kept: the archive layer's folder."""
        found = self.layer_for("archive")
        return "archive" if found is None else static_prefix(found[1].paths[0]) or "archive"


def is_glob(path: str) -> bool:
    return any(char in _GLOB_CHARS for char in path)


def static_prefix(pattern: str) -> str:
    """The folder part of a glob before its first wildcard: ``archive/**/*.md`` -> ``archive``."""
    all_parts = pattern.replace("\\", "/").split("/")
    parts = []
    for part in all_parts:
        if is_glob(part):
            break
        parts.append(part)
    if len(parts) == len(all_parts):  # no wildcard: a file, take its folder
        parts = parts[:-1]
    return "/".join(parts)


def file_template(pattern: str, field: str) -> str:
    """A path template from a layer's glob: ``intel/*.md`` -> ``intel/{project}.md``,
    ``memory/[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9].md`` -> ``memory/{date}.md``."""
    folder, _, name = pattern.replace("\\", "/").rpartition("/")
    if "*" in name:
        name = name.replace("*", "{" + field + "}", 1)
    elif "[" in name:
        name = "{" + field + "}" + name[name.rindex("]") + 1 :]
    return f"{folder}/{name}" if folder else name
