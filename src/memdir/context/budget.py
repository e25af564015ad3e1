"""``memdir budget``: what every always-loaded file costs each turn, against its target.

The vault specification's context budget calculator: each file loaded every
turn with its bytes and tokens (bytes / 4), the hot working-memory files against
4 KB (and 80 lines), the always-loaded config files together against 15 KB,
curated knowledge against its token cap, and everything against ``max_tokens`` x 4
bytes (24,000 by default; ``[context]`` in the manifest sets each). Over a target,
it says what to move to the vault. Reads only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memdir.config import HOT_MAX_LINES
from memdir.stores.base import decode

if TYPE_CHECKING:
    from memdir.memory import Memory


@dataclass(frozen=True)
class BudgetRow:
    path: str
    layer: str
    kind: str
    """hot | config | knowledge | other"""
    bytes: int
    tokens: int
    lines: int


@dataclass
class BudgetReport:
    rows: list[BudgetRow]
    targets: dict[str, int]
    """bytes: hot (per file), config (together), knowledge, total"""
    advice: list[str] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(row.bytes for row in self.rows)

    @property
    def over(self) -> bool:
        return bool(self.advice)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": [row.__dict__ for row in self.rows],
            "total_bytes": self.total_bytes,
            "total_tokens": (self.total_bytes + 3) // 4,
            "targets": self.targets,
            "advice": self.advice,
        }


def _kind(layer_memory: str | None, store: str) -> str:
    if store == "knowledge":
        return "knowledge"
    if layer_memory == "working" or store in ("notebook", "workstate"):
        return "hot"
    if layer_memory == "procedural":
        return "config"
    return "other"


def budget_report(memory: Memory) -> BudgetReport:
    settings = memory.manifest.context
    targets = {
        "hot": settings.hot_max_bytes,
        "config": settings.config_max_bytes,
        "knowledge": memory.manifest.limits.knowledge_prompt_max_tokens * 4,
        "total": settings.max_tokens * 4,
    }
    rows: list[BudgetRow] = []
    for name, layer in memory.manifest.layers.items():
        if layer.boot != "always" or layer.audit:
            continue
        for relpath in memory.layer_files(name, layer):
            kind = _kind(layer.memory, layer.store)
            if layer.store == "knowledge":
                text = memory.knowledge.render()  # curated only, capped: what is loaded
            elif layer.store == "notebook":
                text = memory.notebook.render()
            else:
                text = decode(memory.files.read(relpath)) or ""
            size = len(text.encode("utf-8", "surrogateescape"))
            rows.append(
                BudgetRow(relpath, name, kind, size, (size + 3) // 4, len(text.splitlines()))
            )
    report = BudgetReport(rows, targets)
    for row in rows:
        if row.kind == "hot" and (row.bytes > targets["hot"] or row.lines > HOT_MAX_LINES):
            report.advice.append(
                f"{row.path} is {row.bytes} bytes, {row.lines} lines (target under "
                f"{targets['hot']} bytes and {HOT_MAX_LINES} lines): keep this week's focus, "
                "blockers and 3-5 pending items; move contacts, history and reference "
                "material into vault cards and link them"
            )
    config = sum(row.bytes for row in rows if row.kind == "config")
    if config > targets["config"]:
        report.advice.append(
            f"always-loaded config files total {config} bytes (target under {targets['config']}): "
            "move tool notes and rarely needed rules to a searched layer (never loaded at boot)"
        )
    knowledge = sum(row.bytes for row in rows if row.kind == "knowledge")
    if knowledge > targets["knowledge"]:
        report.advice.append(
            f"curated knowledge loads {knowledge} bytes (cap {targets['knowledge']}): distil "
            "sections with memory_update; keep detail in observations, which are searched"
        )
    if report.total_bytes > targets["total"]:
        report.advice.append(
            f"everything loaded at boot is {report.total_bytes} bytes (target under "
            f"{targets['total']}, about {targets['total'] // 4} tokens): every turn pays for it"
        )
    return report
