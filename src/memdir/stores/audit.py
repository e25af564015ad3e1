"""The audit trail: one human-readable line per ended activity.

The notebook layout's ``daily-logs/YYYY-MM-DD.md`` (a journal layer marked
``audit = true``) is for humans only: never indexed, never read back into a
prompt. Written under the folder lock, atomically.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.config import file_template
from memdir.stores.base import decode, encode
from memdir.stores.history import Activity

if TYPE_CHECKING:
    from memdir.memory import Memory

OUTCOMES = {True: "ok", False: "FAILED", None: "ended"}


def audit_line(activity: Activity) -> str:
    moment = activity.ended_at or activity.started_at
    head = f'- {moment:%H:%M} {activity.type} "{activity.label}" ({activity.id})'
    tail = f"{activity.total_tools} tools, {activity.total_tokens} tokens"
    return f"{head}: {OUTCOMES[activity.success]}; {tail}. {activity.summary or ''}".rstrip()


def write_audit_line(memory: Memory, activity: Activity) -> str | None:
    """Append the activity's line to the audit journal; its path, or None without one."""
    layer = next((layer for layer in memory.manifest.layers.values() if layer.audit), None)
    if layer is None:
        return None
    moment = activity.ended_at or memory.clock()
    day = moment.date().isoformat()
    relpath = file_template(layer.paths[0], "date").format(date=day)
    with memory.lock:
        text = decode(memory.files.read(relpath)) or f"# {day}\n\n"
        text = text if text.endswith("\n") else text + "\n"
        memory.files.write_all([(relpath, encode(text + audit_line(activity) + "\n"))])
    return relpath
