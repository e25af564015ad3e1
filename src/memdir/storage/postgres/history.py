"""The activity history in PostgreSQL: ``HistoryStore`` over ``activities`` and friends.

The same calls, checks and answers as ``memdir.stores.history.History`` (ids
``act-{agent}-{ms}-{rand}``, summaries and keywords made from the logs when not given,
times to the second), one agent's rows per ``agent``. A write inside the folder lock
joins its transaction (a file, its index rows and the history row commit together);
outside it, each call is a transaction of its own. Recall by words ranks with
``ts_rank`` over label (A), keywords (B) and summary (C), FTS5's weights 2.0, 1.5 and
1.0 scaled to ``ts_rank``'s range: not BM25 (``bench/pg_search.py`` measures the
index's keyword ranking; the history's is left for the next phase). A damaged file
has no counterpart here (PostgreSQL's own recovery stands in for
``History.guard``), so there are no restarts to list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from psycopg.types.json import Jsonb

from memdir.errors import ReadOnlyFolder
from memdir.storage.postgres.db import Connection, Database, Folder
from memdir.stores.history import (
    Activity,
    ActivityDetail,
    ActivityRun,
    HistoryError,
    LogEntry,
    activity_ending,
    activity_filters,
    announce_end,
    check_activity,
    check_log_entries,
    check_usage,
    log_totals,
    recall_words,
    row_limit,
    run_activity,
    stamped_id,
    usage_of,
    write_jsonl,
)
from memdir.stores.history_digest import LogEvent
from memdir.timeutil import Clock, format_ts, utc_now

_COLUMNS = (
    "id, agent, type, label, task_id, summary, keywords, started_at, ended_at, "
    "total_tokens, total_tools, success"
)
_RANK_WEIGHTS = "{0, 0.5, 0.75, 1.0}"  # D (unused), C summary, B keywords, A label


def _second(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(microsecond=0)


def _activity(row: tuple[Any, ...]) -> Activity:
    keys = tuple(k.strip() for k in (row[6] or "").split(",") if k.strip())
    ended = row[8].astimezone(UTC) if row[8] is not None else None
    return Activity(
        row[0], row[1], row[2], row[3], row[4], row[5], keys, row[7].astimezone(UTC), ended,
        int(row[9]), int(row[10]), row[11],
    )  # fmt: skip


class PgHistory:
    """One agent's activity history in the database."""

    def __init__(
        self,
        db: Database,
        agent: str,
        *,
        clock: Clock = utc_now,
        folder: Folder | None = None,
        on_end: Callable[[Activity], None] | None = None,
        read_only: str | None = None,
    ) -> None:
        """``on_end`` hears every activity that ends (``Memory``'s audit line and
        distillation), after its transaction; ``read_only`` (why the folder may not be
        written) makes every write raise ``ReadOnlyFolder``, as ``History``'s does."""
        self.folder = folder or Folder(db, agent)
        self.agent = agent
        self.agent_id = agent
        self.clock = clock
        self.on_end = on_end
        self.read_only = read_only

    def close(self) -> None:
        """Nothing is held open per history (the database's connections are shared)."""

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        if self.read_only is not None:
            raise ReadOnlyFolder(self.read_only)
        conn = self.folder.conn()
        with conn.transaction():
            yield conn

    def _now(self) -> datetime:
        return _second(self.clock())

    # -- writing ---------------------------------------------------------------

    def start_activity(self, type: str, label: str, task_id: str | None = None) -> str:
        label = check_activity(type, label)
        now, stamp = self._now(), self.clock()
        with self._writing() as conn:
            for _ in range(8):  # many in one millisecond: draw the suffix again
                activity_id = stamped_id(f"act-{self.agent}", stamp)
                row = conn.execute(
                    "INSERT INTO activities (agent, id, type, label, task_id, started_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
                    (self.agent, activity_id, type, label, task_id, now),
                ).fetchone()
                if row is not None:
                    return activity_id
        raise HistoryError("could not draw a free activity id in 8 tries")

    def log(
        self, activity_id: str, type: str, content: str, metadata: dict[str, Any] | None = None
    ) -> int:
        return self.log_many(activity_id, [(type, content, metadata)])[0]

    def log_many(self, activity_id: str, events: Sequence[LogEntry]) -> list[int]:
        """``History.log_many``: the events in one transaction, sent in one round trip
        (a pipeline: the activity's row locked, then the rows numbered after the last)."""
        checked = check_log_entries(events)
        tokens, tools = log_totals(checked)
        values = ", ".join("(%s::int, %s::text, %s::text, %s::jsonb)" for _ in checked)
        params: list[object] = [self.agent, activity_id, self._now()]
        for n, (type, content, meta, _) in enumerate(checked, start=1):
            params += [n, type, content, Jsonb(meta)]
        params += [self.agent, activity_id, self.agent, activity_id]
        if self.read_only is not None:
            raise ReadOnlyFolder(self.read_only)
        conn = self.folder.conn()
        with conn.pipeline(), conn.transaction():
            found = conn.execute(
                "UPDATE activities SET total_tokens = total_tokens + %s, "
                "total_tools = total_tools + %s WHERE agent = %s AND id = %s RETURNING id",
                (tokens, tools, self.agent, activity_id),
            )  # the row stays locked: two logs to one activity take turns
            # a statement of its own (a snapshot taken after the lock): the last seq is
            # the one the previous writer committed
            seqs = conn.execute(
                "INSERT INTO activity_logs (agent, activity_id, seq, type, content, metadata, "
                "created_at) SELECT %s, %s, m.last + v.n, v.type, v.content, v.metadata, %s "
                f"FROM (VALUES {values}) AS v(n, type, content, metadata), "
                "(SELECT coalesce(max(seq), 0) AS last FROM activity_logs WHERE agent = %s "
                "AND activity_id = %s) AS m WHERE EXISTS (SELECT 1 FROM activities WHERE "
                "agent = %s AND id = %s) RETURNING seq",
                params,
            )
        if found.fetchone() is None:
            raise HistoryError(f"no activity {activity_id!r}")
        return sorted(int(row[0]) for row in seqs.fetchall())

    def end_activity(
        self,
        activity_id: str,
        summary: str | None = None,
        keywords: list[str] | None = None,
        success: bool = True,
    ) -> Activity:
        with self._writing() as conn:
            text, found = activity_ending(
                self.get(activity_id), activity_id, summary, keywords, success
            )
            conn.execute(
                "UPDATE activities SET summary = %s, keywords = %s, ended_at = %s, success = %s "
                "WHERE agent = %s AND id = %s",
                (text, found, self._now(), success, self.agent, activity_id),
            )
            ended = self.get(activity_id)
        return announce_end(ended, self.on_end)

    def activity(
        self, type: str, label: str, task_id: str | None = None
    ) -> AbstractContextManager[ActivityRun]:
        """``History.activity``: the block's activity, ended when it leaves."""
        return run_activity(self, type, label, task_id)

    def receive(
        self,
        source: str,
        content: str,
        kind: str = "message",
        metadata: dict[str, Any] | None = None,
        activity_id: str | None = None,
    ) -> str:
        item_id = stamped_id("mail", self.clock())
        with self._writing() as conn:
            conn.execute(
                "INSERT INTO mailbox_items (agent, id, source, kind, content, metadata, "
                "received_at, activity_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (self.agent, item_id, source, kind, content, Jsonb(metadata or {}), self._now(),
                 activity_id),
            )  # fmt: skip
        return item_id

    def decide(
        self,
        decision: str,
        reason: str | None = None,
        *,
        mailbox_item_id: str | None = None,
        activity_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        decision_id = stamped_id("dec", self.clock())
        with self._writing() as conn:
            conn.execute(
                "INSERT INTO decisions (agent, id, mailbox_item_id, activity_id, decision, "
                "reason, metadata, decided_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (self.agent, decision_id, mailbox_item_id, activity_id, decision, reason,
                 Jsonb(metadata or {}), self._now()),
            )  # fmt: skip
        return decision_id

    def record_usage(self, session_id: str, used_tokens: int, window_tokens: int) -> None:
        check_usage(used_tokens, window_tokens)
        with self._writing() as conn:
            conn.execute(
                "INSERT INTO context_usage (agent, session_id, used_tokens, window_tokens, "
                "recorded_at) VALUES (%s, %s, %s, %s, %s) ON CONFLICT (agent, session_id) DO "
                "UPDATE SET used_tokens = excluded.used_tokens, "
                "window_tokens = excluded.window_tokens, recorded_at = excluded.recorded_at",
                (self.agent, session_id, used_tokens, window_tokens, self._now()),
            )

    def usage(self, session_id: str) -> tuple[float | None, bool]:
        row = (
            self.folder.conn()
            .execute(
                "SELECT used_tokens, window_tokens, flushed_at FROM context_usage "
                "WHERE agent = %s AND session_id = %s",
                (self.agent, session_id),
            )
            .fetchone()
        )
        return usage_of(row)

    def claim_flush(self, session_id: str) -> bool:
        with self._writing() as conn:
            cursor = conn.execute(
                "UPDATE context_usage SET flushed_at = %s WHERE agent = %s AND session_id = %s "
                "AND flushed_at IS NULL",
                (self._now(), self.agent, session_id),
            )
        return cursor.rowcount == 1

    # -- recall ----------------------------------------------------------------

    def _filters(
        self,
        type: str | None,
        task_id: str | None,
        since: datetime | None,
        until: datetime | None,
    ) -> tuple[str, list[object]]:
        clauses, params = activity_filters(
            type, task_id, since, until, prefix="a.", mark="%s", moment=_second
        )
        return " AND ".join(["a.agent = %s", *clauses]), [self.agent, *params]

    def recent(
        self,
        limit: int = 20,
        *,
        type: str | None = None,
        task_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[Activity]:
        where, params = self._filters(type, task_id, since, until)
        rows = self.folder.conn().execute(
            f"SELECT {_COLUMNS} FROM activities AS a WHERE {where} "
            "ORDER BY a.started_at DESC, a.seq DESC LIMIT %s",
            [*params, row_limit(limit)],
        )
        return [_activity(row) for row in rows]

    def search(
        self, query: str, limit: int = 10, *, type: str | None = None, since: datetime | None = None
    ) -> list[Activity]:
        words = recall_words(query)
        if not words:
            return self.recent(limit, type=type, since=since)
        where, params = self._filters(type, None, since, None)
        rows = self.folder.conn().execute(
            "WITH q AS (SELECT (SELECT string_agg(quote_literal(u.lexeme), ' | ')::tsquery "
            "FROM unnest(to_tsvector('memdir', %s)) AS u) AS query) "
            f"SELECT {_COLUMNS} FROM activities AS a, q WHERE {where} AND a.tsv @@ q.query "
            f"ORDER BY ts_rank('{_RANK_WEIGHTS}', a.tsv, q.query) DESC, a.started_at DESC "
            "LIMIT %s",
            [" ".join(words), *params, row_limit(limit)],
        )
        return [_activity(row) for row in rows]

    def unended(self, type: str | None = None) -> list[Activity]:
        where, params = self._filters(type, None, None, None)
        rows = self.folder.conn().execute(
            f"SELECT {_COLUMNS} FROM activities AS a WHERE a.ended_at IS NULL AND {where} "
            "ORDER BY a.started_at, a.seq",
            params,
        )
        return [_activity(row) for row in rows]

    def get(self, activity_id: str) -> ActivityDetail | None:
        conn = self.folder.conn()
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM activities AS a WHERE a.agent = %s AND a.id = %s",
            (self.agent, activity_id),
        ).fetchone()
        if row is None:
            return None
        logs = conn.execute(
            "SELECT seq, type, content, metadata FROM activity_logs WHERE agent = %s "
            "AND activity_id = %s ORDER BY seq",
            (self.agent, activity_id),
        ).fetchall()
        events = tuple(LogEvent(int(seq), t, content, dict(meta)) for seq, t, content, meta in logs)
        return ActivityDetail(_activity(row), events)

    # -- export ----------------------------------------------------------------

    def export_jsonl(self, out: Path) -> int:
        """``History.export_jsonl``: every activity (with its logs), mailbox item and
        decision as JSON Lines, read in one repeatable-read snapshot."""
        with self.folder.db.connect() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            reader = PgHistory(self.folder.db, self.agent, clock=self.clock)
            reader.folder = _Pinned(self.folder, conn)
            return write_jsonl(reader, out, reader._records)

    def _records(self, table: str) -> Iterator[dict[str, Any]]:
        """The rows of ``mailbox_items`` or ``decisions`` as ``history.db`` names them."""
        conn = self.folder.conn()
        if table == "activities":
            rows = conn.execute(
                "SELECT id FROM activities WHERE agent = %s ORDER BY seq", (self.agent,)
            )
            for (activity_id,) in rows.fetchall():
                yield {"id": activity_id}
            return
        columns, order = _EXPORTED[table]
        cursor = conn.execute(
            f"SELECT {', '.join(c for c, _ in columns)} FROM {table} WHERE agent = %s "
            f"ORDER BY {order}, id",
            (self.agent,),
        )
        for row in cursor:
            record = {name: value for (_, name), value in zip(columns, row, strict=True)}
            for key, value in record.items():
                if isinstance(value, datetime):
                    record[key] = format_ts(value)
            yield record


class _Pinned(Folder):
    """A folder whose every read goes to one connection (an export's snapshot)."""

    def __init__(self, folder: Folder, conn: Connection) -> None:
        super().__init__(folder.db, folder.agent)
        self._conn = conn

    def conn(self) -> Connection:
        return self._conn


_EXPORTED = {
    "mailbox_items": (
        [("id", "id"), ("agent", "agent_id"), ("source", "source"), ("kind", "kind"),
         ("content", "content"), ("metadata", "metadata"), ("received_at", "received_at"),
         ("activity_id", "activity_id")],
        "received_at",
    ),
    "decisions": (
        [("id", "id"), ("agent", "agent_id"), ("mailbox_item_id", "mailbox_item_id"),
         ("activity_id", "activity_id"), ("decision", "decision"), ("reason", "reason"),
         ("metadata", "metadata"), ("decided_at", "decided_at")],
        "decided_at",
    ),
}  # fmt: skip
