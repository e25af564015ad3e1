"""The history as JSON Lines (``memdir recall export``, ``History.export_jsonl``).

One writer for both backends (``write_jsonl``): each activity whole, with its logs,
then every mailbox item and decision as its row. The rows come from ``records``:
``history.db``'s own (``sqlite_records``, read from a snapshot) or the database's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memdir.storage.seam import HistoryStore
    from memdir.stores.history import History

_TABLES = {"activities": "agent_activities", "mailbox_items": "mailbox_items",
           "decisions": "agent_decisions"}  # fmt: skip


def sqlite_records(history: History) -> Callable[[str], Iterator[dict[str, Any]]]:
    """``write_jsonl``'s rows from ``history.db``, in the order they were written."""

    def rows(table: str) -> Iterator[dict[str, Any]]:
        cursor = history.db.execute(f"SELECT * FROM {_TABLES[table]} ORDER BY rowid")
        names = [d[0] for d in cursor.description]
        for row in cursor:
            record = dict(zip(names, row, strict=True))
            if "metadata" in record:
                record["metadata"] = json.loads(record["metadata"])
            yield record

    return rows


def write_jsonl(
    history: HistoryStore, out: Path, records: Callable[[str], Iterable[dict[str, Any]]]
) -> int:
    """The export's lines, one copy for both backends: each activity of
    ``records("activities")`` whole (``history.get``), then every mailbox item and
    decision as its row (``records(table)``, metadata a dict); how many lines."""
    count = 0
    with out.open("w", encoding="utf-8") as handle:
        for row in records("activities"):
            detail = history.get(str(row["id"]))
            assert detail is not None
            handle.write(json.dumps({"kind": "activity", **detail.to_dict()}) + "\n")
            count += 1
        for table, kind in (("mailbox_items", "mailbox_item"), ("decisions", "decision")):
            for record in records(table):
                handle.write(json.dumps({"kind": kind, **record}) + "\n")
                count += 1
    return count
