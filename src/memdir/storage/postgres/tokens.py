"""The team server's bearer tokens, kept in PostgreSQL as hashes only.

A token reads ``mdt_<id>_<secret>``: ``id`` (12 hex digits) names its row in
``tokens`` and is safe to show (``memdir token list``, the server's log); ``secret``
is ``secrets.token_urlsafe(32)`` (256 random bits) and is shown once, when the token
is made. The row keeps the sha256 of the secret, never the secret: a copy of the
database (a backup, a replica) lets no one in. Checking a token finds its row by id
and compares the hashes with ``hmac.compare_digest`` (constant time); it is refused
(``TokenRefused``, 401) if malformed, unknown, revoked or expired, and (403) if it does
not name the agent asked for. A read-only token reaches its agents' reads only; the
server refuses its writes.

``last_used_at`` moves at most once a minute per token and process, so checking a
token costs one indexed read, not a write, on nearly every request; and a process that
read a token's row in the last ``CHECK_SECONDS`` answers from what it read, with no
read at all (``remembered``), expiry and the agent still checked each time. So a token
revoked from another process (``memdir token revoke``) stops working on every server
within ``CHECK_SECONDS`` (2 s); revoked in this process, at once.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from memdir.config import AGENT_ID_RE
from memdir.errors import MemdirError
from memdir.storage.postgres.db import Database

PREFIX = "mdt"
TOKEN_RE = re.compile(r"mdt_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")
TOUCH_EVERY_SECONDS = 60.0
"""``last_used_at`` is written at most this often per token and process"""
MAX_EXPIRES_DAYS = 3650
CHECK_SECONDS = 2.0
"""a token's row read this recently is trusted without reading it again: the bound on
how long a token revoked elsewhere keeps working on a server"""
_REMEMBERED_MAX = 4096  # rows kept at most; past it the stale ones go

_COLUMNS = "id, agents, read_only, created_at, expires_at, last_used_at, revoked_at"


class TokenRefused(MemdirError):
    """A request's token does not let it in: ``status`` 401 (no valid token) or 403 (a
    valid token for other agents); ``reason`` says which, without the token."""

    def __init__(self, status: int, reason: str) -> None:
        self.status = status
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class Token:
    """One token as the database keeps it (no secret)."""

    id: str
    agents: tuple[str, ...]
    read_only: bool
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None

    def state(self, now: datetime) -> str:
        """``active``, ``revoked`` or ``expired``."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"

    def as_dict(self, now: datetime) -> dict[str, Any]:
        def when(value: datetime | None) -> str | None:
            return None if value is None else value.astimezone(UTC).isoformat()

        return {
            "id": self.id,
            "agents": list(self.agents),
            "read_only": self.read_only,
            "state": self.state(now),
            "created_at": when(self.created_at),
            "expires_at": when(self.expires_at),
            "last_used_at": when(self.last_used_at),
            "revoked_at": when(self.revoked_at),
        }


def _token(row: Sequence[Any]) -> Token:
    id_, agents, read_only, created, expires, used, revoked = row
    return Token(str(id_), tuple(agents), bool(read_only), created, expires, used, revoked)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def _key(presented: str) -> str:
    """What this process remembers a whole token by (its sha256, never the token)."""
    return hashlib.sha256(presented.encode("utf-8", "surrogateescape")).hexdigest()


def check_agents(agents: Iterable[str]) -> tuple[str, ...]:
    """The agent ids, each checked and once, in order; a ValueError names a bad one."""
    found: list[str] = []
    for agent in agents:
        if not isinstance(agent, str) or not AGENT_ID_RE.fullmatch(agent):
            raise ValueError(
                f"{agent!r} is not an agent id: use letters, digits, '.', '_' and '-', "
                "starting with a letter or digit"
            )
        if agent not in found:
            found.append(agent)
    if not found:
        raise ValueError("a token needs at least one agent (--agent ID)")
    return tuple(found)


class Tokens:
    """The tokens of one database."""

    def __init__(
        self,
        db: Database,
        *,
        check_seconds: float = CHECK_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """``check_seconds``: how long a row read is trusted (0: read at every check)."""
        self.db = db
        self.check_seconds = check_seconds
        self.monotonic = monotonic
        self._touched: dict[str, float] = {}
        self._read: dict[str, tuple[float, Token]] = {}
        """sha256 of a whole token that matched its row -> (when read, the row)"""
        self._guard = threading.Lock()

    def create(
        self,
        agents: Iterable[str],
        *,
        read_only: bool = False,
        expires_days: float | None = None,
        now: datetime | None = None,
    ) -> tuple[str, Token]:
        """A new token for ``agents``: the token itself (shown once, kept nowhere) and its
        row. ``expires_days``: it stops working that many days from ``now``."""
        chosen = check_agents(agents)
        if expires_days is not None and not 0 < expires_days <= MAX_EXPIRES_DAYS:
            raise ValueError(f"--expires takes 1 to {MAX_EXPIRES_DAYS} days, not {expires_days:g}")
        created = now or datetime.now(UTC)
        expires = None if expires_days is None else created + timedelta(days=expires_days)
        secret = secrets.token_urlsafe(32)
        token_id = secrets.token_hex(6)
        row = (
            self.db.reader()
            .execute(
                f"INSERT INTO tokens (id, hash, agents, read_only, created_at, expires_at) "
                f"VALUES (%s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}",
                (token_id, _digest(secret), list(chosen), read_only, created, expires),
            )
            .fetchone()
        )
        assert row is not None
        return f"{PREFIX}_{token_id}_{secret}", _token(row)

    def list(self) -> list[Token]:
        rows = self.db.reader().execute(f"SELECT {_COLUMNS} FROM tokens ORDER BY created_at, id")
        return [_token(row) for row in rows.fetchall()]

    def get(self, token_id: str) -> Token | None:
        row = (
            self.db.reader()
            .execute(f"SELECT {_COLUMNS} FROM tokens WHERE id = %s", (token_id,))
            .fetchone()
        )
        return None if row is None else _token(row)

    def revoke(self, token_id: str, *, now: datetime | None = None) -> Token:
        """Revoke a token by its id (or the whole token); revoking twice keeps the first
        time. A LookupError names an unknown id."""
        matched = TOKEN_RE.fullmatch(token_id)
        wanted = matched.group(1) if matched else token_id
        row = (
            self.db.reader()
            .execute(
                "UPDATE tokens SET revoked_at = coalesce(revoked_at, %s) WHERE id = %s "
                f"RETURNING {_COLUMNS}",
                (now or datetime.now(UTC), wanted),
            )
            .fetchone()
        )
        if row is None:
            raise LookupError(f"no token {wanted!r} in this database (memdir token list)")
        with self._guard:
            for key in [k for k, (_, t) in self._read.items() if t.id == wanted]:
                del self._read[key]
        return _token(row)

    def verify(self, presented: str, agent: str, *, now: datetime | None = None) -> Token:
        """The token ``presented`` if it lets a request act for ``agent``; else
        ``TokenRefused`` with a reason that never repeats the token."""
        found = self.remembered(presented, agent, now=now)
        if found is not None:
            return found
        matched = TOKEN_RE.fullmatch(presented)
        if matched is None:
            raise TokenRefused(401, "that is not a memdir token (memdir token create makes one)")
        token_id, secret = matched.groups()
        row = (
            self.db.reader()
            .execute(f"SELECT hash, {_COLUMNS} FROM tokens WHERE id = %s", (token_id,))
            .fetchone()
        )
        # compare even for an unknown id, so a miss takes the time of a hit
        stored = str(row[0]) if row is not None else "0" * 64
        if not hmac.compare_digest(_digest(secret), stored) or row is None:
            raise TokenRefused(401, f"token {token_id} is not valid here")
        token = _token(row[1:])
        self._remember(presented, token)
        self._check(token, agent, now)
        self._touch(token_id)
        return token

    def remembered(
        self, presented: str, agent: str, *, now: datetime | None = None
    ) -> Token | None:
        """``verify`` from this process's memory, with no read: the token, or
        ``TokenRefused``, when its row was read in the last ``check_seconds``; else None
        (``verify`` reads it)."""
        if self.check_seconds <= 0:
            return None
        key = _key(presented)
        with self._guard:
            found = self._read.get(key)
        if found is None or self.monotonic() - found[0] >= self.check_seconds:
            return None
        self._check(found[1], agent, now)
        return found[1]

    def _remember(self, presented: str, token: Token) -> None:
        if self.check_seconds <= 0:
            return
        moment = self.monotonic()
        with self._guard:
            if len(self._read) >= _REMEMBERED_MAX:
                stale = [k for k, (t, _) in self._read.items() if moment - t >= self.check_seconds]
                for k in stale or list(self._read)[: _REMEMBERED_MAX // 2]:
                    del self._read[k]
            self._read[_key(presented)] = (moment, token)

    @staticmethod
    def _check(token: Token, agent: str, now: datetime | None) -> None:
        state = token.state(now or datetime.now(UTC))
        if state != "active":
            raise TokenRefused(401, f"token {token.id} is {state}")
        if agent not in token.agents:
            raise TokenRefused(403, f"token {token.id} does not reach agent {agent!r}")

    def _touch(self, token_id: str) -> None:
        moment = time.monotonic()
        with self._guard:
            last = self._touched.get(token_id)
            if last is not None and moment - last < TOUCH_EVERY_SECONDS:
                return
            self._touched[token_id] = moment
        self.db.reader().execute(
            "UPDATE tokens SET last_used_at = now() WHERE id = %s", (token_id,)
        )
