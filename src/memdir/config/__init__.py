"""The manifest, ``memdir.toml``: which layers a memory folder has and their rules.

    version = 1
    agent = "default"

    [limits]                     # the specifications' constants, overridable
    notebook_max_agent_entries = 4

    [layers.knowledge]           # one table per layer; file order is boot order
    store = "knowledge"          # the store that owns these files
    paths = ["knowledge.md"]     # paths or globs, relative to the folder
    memory = "semantic"          # procedural | working | semantic | episodic | archive
    boot = "always"              # always | reflex | recent | heartbeat | core | never
    decay = "none"               # none | access | date
    indexed = true
    budget = 2000                # tokens this layer may spend in a prompt
    days = 2                     # a ``recent`` layer: the days it loads, today included

Invariants:
- Validated on load; every error names the file, the line and the key.
- Unknown keys are errors (a typo is never silently ignored).
- The single-file stores (notebook, knowledge, state, workstate) have one path
  each and at most one layer each; no path leaves the folder; ``MEMORY.md`` is
  legacy and read-only, so no layer may own it.

The package: ``manifest`` (the settings, one frozen dataclass per table, and the queries
on them), ``checking`` (validation: strict and without pydantic for a valid manifest,
through pydantic for a bad one, so its errors are pydantic's) and ``loading`` (the file
to a ``Manifest``, or a ``ManifestError``).
"""

from memdir.config.loading import dump_value, load_manifest, locate_key, memdir_home, parse_manifest
from memdir.config.manifest import (
    AGENT_ID_RE,
    CARD_MAX_CHARS,
    CONFIG_MAX_BYTES,
    CONTEXT_MAX_TOKENS,
    DECAY_FLOOR,
    DECAY_RATE,
    DEEP_DAYS,
    HOT_MAX_BYTES,
    HOT_MAX_LINES,
    JOURNAL_ENTRY_MAX_CHARS,
    KNOWLEDGE_PROMPT_MAX_TOKENS,
    LEGACY_MEMORIES_JSON,
    LEGACY_MEMORY_MD,
    MANIFEST_NAME,
    MEMORY_MD_SECTION_MAX_CHARS,
    MEMORY_MD_TOTAL_MAX_CHARS,
    NOTEBOOK_ENTRY_MAX_CHARS,
    NOTEBOOK_MAX_AGENT_ENTRIES,
    OBSERVATION_MAX_CHARS,
    OBSERVATIONS_MAX,
    QUERY_SLOT_TOKENS,
    RECENT_DAYS,
    SINGLE_FILE_STORES,
    STATE_DIR,
    STATE_PROMPT_MAX_LINES_REFLEX,
    STATE_TTL_DAYS,
    BootPolicy,
    Context,
    Decay,
    DecayPolicy,
    DreamSettings,
    IndexSettings,
    Layer,
    Limits,
    LLMSettings,
    Manifest,
    MemoryKind,
    StoreKind,
    ToolSettings,
    file_template,
    is_glob,
    static_prefix,
)

__all__ = [
    "AGENT_ID_RE",
    "BootPolicy",
    "CARD_MAX_CHARS",
    "CONFIG_MAX_BYTES",
    "CONTEXT_MAX_TOKENS",
    "Context",
    "DECAY_FLOOR",
    "DECAY_RATE",
    "DEEP_DAYS",
    "Decay",
    "DecayPolicy",
    "DreamSettings",
    "HOT_MAX_BYTES",
    "HOT_MAX_LINES",
    "IndexSettings",
    "JOURNAL_ENTRY_MAX_CHARS",
    "KNOWLEDGE_PROMPT_MAX_TOKENS",
    "LEGACY_MEMORIES_JSON",
    "LEGACY_MEMORY_MD",
    "LLMSettings",
    "Layer",
    "Limits",
    "MANIFEST_NAME",
    "MEMORY_MD_SECTION_MAX_CHARS",
    "MEMORY_MD_TOTAL_MAX_CHARS",
    "Manifest",
    "MemoryKind",
    "NOTEBOOK_ENTRY_MAX_CHARS",
    "NOTEBOOK_MAX_AGENT_ENTRIES",
    "OBSERVATIONS_MAX",
    "OBSERVATION_MAX_CHARS",
    "QUERY_SLOT_TOKENS",
    "RECENT_DAYS",
    "SINGLE_FILE_STORES",
    "STATE_DIR",
    "STATE_PROMPT_MAX_LINES_REFLEX",
    "STATE_TTL_DAYS",
    "StoreKind",
    "ToolSettings",
    "dump_value",
    "file_template",
    "is_glob",
    "load_manifest",
    "locate_key",
    "memdir_home",
    "parse_manifest",
    "static_prefix",
]
