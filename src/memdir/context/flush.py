"""The memory flush (notebook seed, section 8.7): save what matters before the context fills.

``should_memory_flush`` is the pure decision the specification tests: it fires
when the previous turn's context usage is at or above the threshold (75%), not
below; at most once per session; never for a ``sys_`` session (a flush runs in
one, so it can never trigger another flush); never without a recorded usage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memdir.memory import Memory

FLUSH_THRESHOLD = 0.75


@dataclass(frozen=True)
class FlushSession:
    """What the decision needs to know about a session."""

    session_id: str
    flushed: bool = False


def should_memory_flush(
    usage: float | None, threshold: float = FLUSH_THRESHOLD, session: FlushSession | None = None
) -> bool:
    """True when a flush is due: see the module docstring for the rules."""
    if usage is None or session is None:
        return False
    if session.session_id.startswith("sys_") or session.flushed:
        return False
    return usage >= threshold


@dataclass(frozen=True)
class FlushRequest:
    """A flush to run: the ``sys_`` session opened for it, and what it must do."""

    session_id: str
    """the independent sys_ session holding the instruction"""
    for_session: str
    usage: float
    instruction: str


def flush_instruction(usage: float) -> str:
    return (
        f"Your context window is {usage:.0%} full, and older turns will soon be dropped. "
        "Before that happens, save what must not be lost: call memory_save once for each "
        "key decision, fact or preference from this conversation (type fact, insight or "
        "note), and call update_notebook with your current state: what you are doing, "
        "what is done, and what comes next. Do not continue the task in this session; "
        "answer DONE when everything is saved."
    )


def open_flush(memory: Memory, session_id: str) -> FlushRequest | None:
    """``Memory.maybe_memory_flush``: if the session's last turn filled its context past
    ``[context] flush_threshold``, claim the flush (once per session, across processes),
    open a ``sys_`` session holding the instruction and return it; else None."""
    usage, flushed = memory.history.usage(session_id)
    threshold = memory.manifest.context.flush_threshold
    if not should_memory_flush(usage, threshold, FlushSession(session_id, flushed)):
        return None
    if usage is None or not memory.history.claim_flush(session_id):
        return None  # another process flushed this session first
    instruction = flush_instruction(usage)
    flush_id = memory.sessions.create("sys")
    memory.sessions.append_message(flush_id, {"role": "system", "content": instruction})
    return FlushRequest(flush_id, session_id, usage, instruction)
