"""The dream cycle: consolidating knowledge.md's observation buffer (notebook seed, section 8).

``run_dream(memory)`` (``Memory.dream()``, ``memdir dream``) snapshots the file,
tidies it, asks a planner (offline by default, an LLM when one is configured)
for a plan, checks the plan, applies it conservatively within the caps, prunes
expired state snapshots, and reports, to the caller and to the history.
"""

from typing import TYPE_CHECKING

from memdir.lazy import lazy_exports

if TYPE_CHECKING:
    from memdir.dream.cycle import DreamReport, choose_planner, dream_due, run_dream, runs_today
    from memdir.dream.offline import OfflinePlanner
    from memdir.dream.plan import PLAN_SCHEMA, Entry, Merge, Plan, PlanError, Promotion, parse_plan

# imported on first use: distillation (dream.distill) needs none of the cycle
__getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "DreamReport": "memdir.dream.cycle",
        "Entry": "memdir.dream.plan",
        "Merge": "memdir.dream.plan",
        "OfflinePlanner": "memdir.dream.offline",
        "PLAN_SCHEMA": "memdir.dream.plan",
        "Plan": "memdir.dream.plan",
        "PlanError": "memdir.dream.plan",
        "Promotion": "memdir.dream.plan",
        "choose_planner": "memdir.dream.cycle",
        "dream_due": "memdir.dream.cycle",
        "parse_plan": "memdir.dream.plan",
        "run_dream": "memdir.dream.cycle",
        "runs_today": "memdir.dream.cycle",
    },
)

__all__ = [
    "PLAN_SCHEMA",
    "DreamReport",
    "Entry",
    "Merge",
    "OfflinePlanner",
    "Plan",
    "PlanError",
    "Promotion",
    "choose_planner",
    "dream_due",
    "parse_plan",
    "run_dream",
    "runs_today",
]
