"""The web page on the team server (``/agents/ID/ui``) over a real PostgreSQL: the
database's tokens decide who sees which agent (401, 403 before any work), a token
given once in the address becomes a cookie for that agent's pages only, a revoked one
stops working, writes need the CSRF token, a read-only token sees every view and
every edit is refused with nothing changed; and the page, on disk and in the
database, shows a card another process wrote at its next load.

One database and one in-process ``TeamApp`` (Starlette's TestClient runs its
lifespan) for the module; each test its own client (its own cookies).
"""

from __future__ import annotations

import logging
import re
import secrets
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from starlette.testclient import TestClient

import memdir
from memdir.maintain.restore import dream_snapshots
from memdir.memory import open_agent
from memdir.server.team import PgAgents, TeamApp
from memdir.storage.agents import close_databases, init_agent
from memdir.storage.postgres.tokens import Tokens
from memdir.testing import FakeClock
from memdir.ui import build_app
from ui_content import fill, fill_memory

BASE = "http://127.0.0.1"
PAGE = "/agents/alice/ui"


@dataclass
class Site:
    url: str
    app: TeamApp
    portal: TestClient
    write: str
    read: str
    bob: str
    tokens: Tokens

    def client(self) -> TestClient:
        """A client of its own (its own cookies) over the running app."""
        return TestClient(self.app, base_url=BASE, follow_redirects=False)


@pytest.fixture(scope="module")
def site(pg_url: str) -> Iterator[Site]:
    name = f"t_teamui_{secrets.token_hex(4)}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = make_conninfo(pg_url, dbname=name)
    try:
        for agent in ("alice", "bob"):
            init_agent(url, agent)
        clock = FakeClock("2026-11-30T10:00:00Z")
        with open_agent(url, "alice", clock=clock, embedder="hashing") as memory:
            fill_memory(memory, clock)
        source = PgAgents(url)
        tokens = Tokens(source.db)
        write, _ = tokens.create(["alice"])
        read, _ = tokens.create(["alice"], read_only=True)
        bob, _ = tokens.create(["bob"])
        app = TeamApp(source, tokens)
        with TestClient(app, base_url=BASE) as portal:  # runs the lifespan
            yield Site(url, app, portal, write, read, bob, tokens)
    finally:
        close_databases()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def files(site: Site, agent: str = "alice") -> dict[str, bytes]:
    with psycopg.connect(site.url) as conn:
        rows = conn.execute(
            "SELECT path, data FROM memdir.files WHERE agent = %s", (agent,)
        ).fetchall()
    return {str(path): bytes(data) for path, data in rows}


def entered(site: Site, token: str, agent: str = "alice") -> TestClient:
    """A client that opened the agent's page with ``?token=`` once (its cookie set)."""
    client = site.client()
    response = client.get(f"/agents/{agent}/ui/?token={token}")
    assert response.status_code == 303, response.text
    return client


def csrf(client: TestClient, path: str = f"{PAGE}/memory") -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get(path).text)
    assert found is not None
    return found.group(1)


def test_no_token_or_a_bad_one_is_refused_before_any_work(site: Site) -> None:
    client = site.client()
    opened = set(site.app._open)
    bare = client.get(f"{PAGE}/")
    assert bare.status_code == 401 and bare.headers["www-authenticate"] == "Bearer"
    assert f"open {PAGE}/?token=" in bare.text
    revoked, row = site.tokens.create(["alice"])
    site.tokens.revoke(row.id)
    expired, _ = site.tokens.create(
        ["alice"], expires_days=1, now=datetime.now(UTC) - timedelta(days=2)
    )
    malformed, unknown = "nope", "mdt_000000000000_" + "A" * 43
    for token in (malformed, unknown, revoked, expired):
        for response in (
            client.get(f"{PAGE}/memory?token={token}"),
            client.get(f"{PAGE}/memory", headers={"authorization": f"Bearer {token}"}),
        ):
            assert response.status_code == 401, (token, response.text)
            assert "set-cookie" not in response.headers
    assert "is revoked" in client.get(f"{PAGE}/?token={revoked}").text
    assert "is expired" in client.get(f"{PAGE}/?token={expired}").text
    other = client.get(f"{PAGE}/?token={site.bob}")  # a valid token, for another agent
    assert other.status_code == 403 and "does not reach agent 'alice'" in other.text
    form = {"section": "billing", "content": "forged", "action": "save", "csrf": "0" * 64}
    assert client.post(f"{PAGE}/memory/section", data=form).status_code == 401
    assert set(site.app._open) == opened  # nothing was opened for any of them


def test_the_token_becomes_a_cookie_for_that_agents_pages_only(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    client = site.client()
    with caplog.at_level(logging.INFO, logger="memdir.team"):
        given = client.get(f"{PAGE}/search?q=payments&token={site.write}")
    [line] = [r.getMessage() for r in caplog.records if "tool=ui" in r.getMessage()]
    token_id = site.write.split("_")[1]
    assert re.fullmatch(rf"agent=alice token={token_id} tool=ui outcome=ok status=303 ms=\S+", line)
    assert site.write not in caplog.text
    assert given.status_code == 303
    assert given.headers["location"] == f"{PAGE}/search?q=payments"  # the token leaves
    cookie = given.headers["set-cookie"]
    assert site.write in cookie  # checked against the database's hash at each load
    for part in ("HttpOnly", "SameSite=strict", f"Path={PAGE}"):
        assert part in cookie
    assert "Secure" not in cookie  # plain http on loopback; over https it is Secure
    page = client.get(f"{PAGE}/search?q=payments")
    assert page.status_code == 200 and "currency" in page.text
    assert client.get("/agents/bob/ui/").status_code == 401  # the cookie is alice's only
    assert client.get(PAGE).headers["location"] == f"{PAGE}/"
    https = site.client().get(f"{PAGE}/?token={site.write}", headers={"x-forwarded-proto": "https"})
    assert "Secure" in https.headers["set-cookie"]


def test_a_revoked_token_stops_the_page_at_the_next_load(site: Site) -> None:
    token, row = site.tokens.create(["alice"])
    client = entered(site, token)
    assert client.get(f"{PAGE}/vault").status_code == 200
    site.tokens.revoke(row.id)
    after = client.get(f"{PAGE}/vault")
    assert after.status_code == 401 and "is revoked" in after.text
    assert 'memdir_team_ui=""' in after.headers["set-cookie"]  # the browser forgets it


VIEWS = {
    "/": ["Boot context", "Layers against their caps", "Doctor", "knowledge"],
    "/memory": ["current-task", "conventions", "Observations", "deploy"],
    "/search?q=payments+currency": ["hits", "tier", "currency"],
    "/search?mode=creative": ["random sample"],
    "/vault": ["Cards over tiers", "Alice Moreau", "Orphans", "lonely-idea"],
    "/vault/card?path=vault/acme-corp.md": ["Forgetting curve", "Backlinks", "Berlin"],
    "/file?path=knowledge.md": ["Invoices are sent on the 1st."],
    "/episodes": ["Journal", "migrate billing", "Sessions", "payments API over a patch"],
    "/consolidation": ["offline planner", "Restore"],
    "/history": ["kept in postgres", "memdir export"],
}


@pytest.mark.parametrize("token", ["write", "read"])
def test_every_view_shows_the_agents_memory_from_postgres(site: Site, token: str) -> None:
    client = entered(site, getattr(site, token))
    for path, texts in VIEWS.items():
        response = client.get(f"{PAGE}{path}")
        assert response.status_code == 200, (path, response.text[:500])
        for text in texts:
            assert text in response.text, f"{path} shows no {text!r}"
        assert ("Read-only:" in response.text) is (token == "read")
        assert "agent alice</code>" in response.text  # where it is kept: the database
        assert "memdir-pg-alice" not in response.text  # not the process's scratch folder
    overview = client.get(f"{PAGE}/").text
    for _ in range(120):  # doctor runs beside the page, on the agent opened anew
        if "still checking" not in overview:
            break
        time.sleep(0.5)
        overview = client.get(f"{PAGE}/").text
    assert "still checking" not in overview and "could not" not in overview


def test_an_edit_with_a_write_token_changes_the_agent_in_the_database(site: Site) -> None:
    client = entered(site, site.write)
    form = {"section": "billing", "content": "Invoices go out on the 2nd.", "action": "save"}
    without = client.post(f"{PAGE}/memory/section", data=form)
    assert without.status_code == 403 and "CSRF" in without.text
    other = entered(site, site.tokens.create(["alice"])[0])  # another token's CSRF token
    forged = client.post(f"{PAGE}/memory/section", data={**form, "csrf": csrf(other)})
    assert forged.status_code == 403
    assert b"2nd" not in files(site)["knowledge.md"]
    response = client.post(f"{PAGE}/memory/section", data={**form, "csrf": csrf(client)})
    assert response.status_code == 303
    assert response.headers["location"].startswith(f"{PAGE}/memory?done=")
    assert b"Invoices go out on the 2nd." in files(site)["knowledge.md"]
    assert "Invoices go out on the 2nd." in client.get(f"{PAGE}/memory").text
    too_long = client.post(
        f"{PAGE}/memory/section",
        data={"section": "billing", "content": "x" * 3500, "action": "save", "csrf": csrf(client)},
    )
    assert too_long.status_code == 422 and "3000-char cap" in too_long.text


def test_a_read_only_token_sees_but_every_write_is_refused(site: Site) -> None:
    client = entered(site, site.read)
    token = csrf(client)
    [snapshot] = dream_snapshots_of(site)
    writes = {
        "/memory/section": {"section": "billing", "content": "changed", "action": "save"},
        "/memory/notebook": {"key": "current-task", "text": "changed"},
        "/memory/state": {"key": "deploy", "text": "changed"},
        "/memory/observation": {"content": "A new observation."},
        "/consolidation/restore": {"snapshot": snapshot},
        "/history/restore": {"path": "knowledge.md", "rev": "0" * 40},
    }
    before = files(site)
    for path, form in writes.items():
        response = client.post(f"{PAGE}{path}", data={**form, "csrf": token})
        assert response.status_code == 403, (path, response.text[:300])
        alert = re.search(r'role="alert"><strong>Refused:</strong> (.*?)</p>', response.text)
        assert alert is not None and "this token is read-only" in alert.group(1), path
    assert files(site) == before


def dream_snapshots_of(site: Site) -> list[str]:
    with open_agent(site.url, "alice", read_only=True) as memory:
        return [s.path for s in dream_snapshots(memory)]


WRITER = textwrap.dedent(
    """
    import sys
    import memdir
    from memdir.memory import open_agent
    kind, where, title = sys.argv[1:]
    if kind == "postgres":
        memory = open_agent(where, "alice", embedder="hashing")
    else:
        memory = memdir.open(where, embedder="hashing")
    with memory:
        memory.vault.write(title, f"# {title}\\nWritten by another process.", type="idea")
    """
)


def write_elsewhere(kind: str, where: str, title: str) -> None:
    """A card written by another process, through memdir (``kind``: postgres or disk)."""
    done = subprocess.run(
        [sys.executable, "-c", WRITER, kind, where, title],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_a_card_another_process_writes_shows_at_the_next_load(site: Site) -> None:
    client = entered(site, site.write)
    assert "fresh-from-elsewhere" not in client.get(f"{PAGE}/vault").text  # graph cached
    write_elsewhere("postgres", site.url, "fresh-from-elsewhere")
    shown = client.get(f"{PAGE}/vault?type=idea").text
    assert "fresh-from-elsewhere" in shown


def test_a_card_another_process_writes_shows_at_the_next_load_on_disk(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    clock = fill(root)
    with memdir.open(root, clock=clock, embedder="hashing") as memory:
        client = TestClient(build_app(memory), base_url=BASE)
        before = client.get("/ui/vault").text
        assert "fresh-from-elsewhere" not in before
        overview = client.get("/ui/").text
        write_elsewhere("disk", str(root), "fresh-from-elsewhere")
        assert "fresh-from-elsewhere" in client.get("/ui/vault?type=idea").text
        card = client.get("/ui/vault/card", params={"path": "vault/fresh-from-elsewhere.md"})
        assert card.status_code == 200 and "Written by another process." in card.text
        assert client.get("/ui/").text != overview  # the vault's row counts one more file
        by_hand = root / "vault" / "made-by-hand.md"  # no memdir: the folder's mtime tells
        by_hand.write_text("---\ntype: idea\n---\n# Made by hand\nIn an editor.\n")
        assert "made-by-hand" in client.get("/ui/vault?type=idea").text
        by_hand.unlink()
        assert "made-by-hand" not in client.get("/ui/vault?type=idea").text
