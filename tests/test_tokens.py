"""The team server's tokens: kept as hashes, checked per agent, expiry and revocation,
and ``memdir token create|list|revoke`` through the real command line, against a real
PostgreSQL (tests/pg_fixture.py)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from typer.testing import CliRunner

from memdir.cli import app
from memdir.storage.postgres.db import Database
from memdir.storage.postgres.tokens import CHECK_SECONDS, TOKEN_RE, TokenRefused, Tokens


@pytest.fixture
def tokens(pg_db: Database) -> Tokens:
    return Tokens(pg_db)


def _refused(tokens: Tokens, presented: str, agent: str) -> TokenRefused:
    with pytest.raises(TokenRefused) as refused:
        tokens.verify(presented, agent)
    secret = presented.split("_", 2)[-1]
    assert len(secret) < 8 or secret not in refused.value.reason  # never the secret
    return refused.value


def test_a_token_reaches_its_agents_only(tokens: Tokens) -> None:
    secret, token = tokens.create(["alice", "bob", "alice"])
    assert TOKEN_RE.fullmatch(secret) and token.id in secret
    assert token.agents == ("alice", "bob") and not token.read_only
    assert tokens.verify(secret, "alice").id == token.id
    assert tokens.verify(secret, "bob").id == token.id
    other = _refused(tokens, secret, "carol")
    assert other.status == 403 and "does not reach agent 'carol'" in other.reason


def test_only_the_hash_is_kept(tokens: Tokens, pg_db: Database) -> None:
    secret, token = tokens.create(["alice"])
    row = pg_db.reader().execute("SELECT * FROM tokens WHERE id = %s", (token.id,)).fetchone()
    assert row is not None
    assert not any(secret.split("_", 2)[2] in str(value) for value in row)
    assert not any(secret in str(value) for value in row)


def test_bad_tokens_are_refused(tokens: Tokens) -> None:
    secret, token = tokens.create(["alice"])
    wrong_secret = secret[:-6] + ("A" * 6 if not secret.endswith("A" * 6) else "B" * 6)
    unknown_id = f"mdt_{secrets.token_hex(6)}_{secret.split('_', 2)[2]}"
    for presented in (wrong_secret, unknown_id, "s3cret", secret + "x", ""):
        assert _refused(tokens, presented, "alice").status == 401


def test_expired_and_revoked_tokens_are_refused(tokens: Tokens) -> None:
    past = datetime.now(UTC) - timedelta(days=3)
    expired, _ = tokens.create(["alice"], expires_days=2, now=past)
    assert "is expired" in _refused(tokens, expired, "alice").reason
    lasting, kept = tokens.create(["alice"], expires_days=2)
    assert tokens.verify(lasting, "alice").expires_at == kept.expires_at
    revoked = tokens.revoke(kept.id)
    assert revoked.revoked_at is not None
    refusal = _refused(tokens, lasting, "alice")
    assert refusal.status == 401 and "is revoked" in refusal.reason
    assert tokens.revoke(lasting).revoked_at == revoked.revoked_at  # by the whole token too
    with pytest.raises(LookupError, match="no token 'nope'"):
        tokens.revoke("nope")


def test_bad_input_is_refused_before_anything_is_kept(tokens: Tokens) -> None:
    for agents in ([], ["../x"], ["ok", "a b"]):
        with pytest.raises(ValueError):
            tokens.create(agents)
    with pytest.raises(ValueError, match="--expires takes 1 to 3650 days"):
        tokens.create(["alice"], expires_days=0)
    assert tokens.list() == []


def test_last_use_is_kept(tokens: Tokens) -> None:
    secret, token = tokens.create(["alice"], read_only=True)
    assert token.last_used_at is None and token.read_only
    tokens.verify(secret, "alice")
    used = tokens.get(token.id)
    assert used is not None and used.last_used_at is not None


# -- the command line ----------------------------------------------------------------------


@pytest.fixture
def database(pg_url: str) -> Iterator[str]:
    """A database of this test's own (the command line uses the default schema)."""
    name = f"t_tokens_{secrets.token_hex(4)}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield make_conninfo(pg_url, dbname=name)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    done = CliRunner().invoke(app, ["token", *args], env=env)
    return done.exit_code, done.stdout, done.stderr


def test_token_commands(database: str) -> None:
    code, out, err = _cli(
        "create", "--agent", "alice", "--agent", "bob", "--database-url", database
    )
    assert code == 0, err
    secret = out.strip()
    assert TOKEN_RE.fullmatch(secret)
    token_id = secret.split("_")[1]
    assert f"token {token_id}: read and write for alice, bob." in err
    assert "It is shown only now" in err

    env = {"MEMDIR_DATABASE_URL": database}
    code, out, err = _cli("create", "--agent", "carol", "--read-only", "--expires", "7", "--json",
                          env=env)  # fmt: skip
    assert code == 0, err
    assert list(json.loads(out)) == ["token"] and TOKEN_RE.fullmatch(json.loads(out)["token"])

    code, out, _ = _cli("list", env=env)
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{token_id}  active   read-write")
    assert lines[0].endswith("agents alice,bob") and "expires -  used -" in lines[0]
    assert "read-only" in lines[1] and "agents carol" in lines[1]
    assert secret.split("_", 2)[2] not in out

    by_memdir = CliRunner().invoke(app, ["--database-url", database, "token", "list"])
    assert by_memdir.exit_code == 0 and by_memdir.stdout == out  # memdir's own option too

    code, out, _ = _cli("revoke", token_id, env=env)
    assert code == 0 and out == f"revoked token {token_id} (alice, bob)\n"
    code, out, _ = _cli("list", "--json", env=env)
    listed = json.loads(out)
    assert [t["state"] for t in listed] == ["revoked", "active"]
    assert listed[1]["read_only"] is True and listed[1]["expires_at"] is not None
    assert set(listed[0]) == {
        "id", "agents", "read_only", "state", "created_at", "expires_at", "last_used_at",
        "revoked_at",
    }  # fmt: skip

    code, _, err = _cli("revoke", "0123456789ab", env=env)
    assert code == 1 and "error: no token '0123456789ab' in this database" in err


def test_a_database_that_cannot_be_reached_is_one_line() -> None:
    """It was the error psycopg gives, on two lines (its hint on the second), where the
    other commands say it on one (``_common.database_error``)."""
    nowhere = "postgresql://nobody@127.0.0.1:9/none?connect_timeout=2"
    code, out, err = _cli("list", "--database-url", nowhere)
    assert (code, out) == (1, "") and err.startswith("error: cannot reach the database: ")
    assert err.count("\n") == 1 and "Is the server running" in err, err


def test_token_commands_refuse_bad_input(database: str) -> None:
    nowhere = "postgresql://nobody@127.0.0.1:9/none?connect_timeout=2"
    code, _, err = _cli("create", "--agent", "../x", "--database-url", nowhere)
    assert code == 1 and "'../x' is not an agent id" in err  # before any connection
    code, _, err = _cli("create", "--agent", "alice")
    assert code == 2 and "--database-url" in err
    code, _, err = _cli("create", "--agent", "alice", "--expires", "0", "--database-url", database)
    assert code == 2


# -- what a process remembers of a token ---------------------------------------------------


def test_a_token_revoked_elsewhere_stops_working_within_the_bound(pg_db: Database) -> None:
    clock = [100.0]
    server = Tokens(pg_db, monotonic=lambda: clock[0])  # a server's view
    elsewhere = Tokens(pg_db)  # memdir token revoke, in another process
    secret, token = server.create(["alice", "bob"])
    assert server.verify(secret, "alice").id == token.id  # read: remembered from now
    elsewhere.revoke(token.id)
    clock[0] += CHECK_SECONDS / 2
    assert server.remembered(secret, "bob") is not None  # no read within the bound
    assert server.verify(secret, "alice").id == token.id
    other = _refused(server, secret, "carol")  # the agent is still checked each time
    assert other.status == 403
    clock[0] += CHECK_SECONDS / 2  # the bound passed: read again, refused
    assert server.remembered(secret, "alice") is None
    refusal = _refused(server, secret, "alice")
    assert refusal.status == 401 and "is revoked" in refusal.reason
    clock[0] += 3600  # and stays refused
    assert "is revoked" in _refused(server, secret, "alice").reason


def test_a_token_revoked_here_or_expiring_stops_at_once(pg_db: Database) -> None:
    tokens = Tokens(pg_db, monotonic=lambda: 0.0)  # nothing remembered ever goes stale
    secret, token = tokens.create(["alice"])
    tokens.verify(secret, "alice")
    tokens.revoke(token.id)
    assert "is revoked" in _refused(tokens, secret, "alice").reason
    created = datetime.now(UTC)
    lasting, kept = tokens.create(["alice"], expires_days=1, now=created)
    assert tokens.verify(lasting, "alice", now=created).id == kept.id
    with pytest.raises(TokenRefused, match="is expired"):
        tokens.verify(lasting, "alice", now=created + timedelta(days=1, seconds=1))
    wrong = lasting[:-1] + ("A" if not lasting.endswith("A") else "B")
    assert _refused(tokens, wrong, "alice").status == 401  # not the one remembered


def test_no_memory_when_told(pg_db: Database) -> None:
    tokens = Tokens(pg_db, check_seconds=0)
    elsewhere = Tokens(pg_db)
    secret, token = tokens.create(["alice"])
    tokens.verify(secret, "alice")
    assert tokens.remembered(secret, "alice") is None
    elsewhere.revoke(token.id)
    assert "is revoked" in _refused(tokens, secret, "alice").reason
