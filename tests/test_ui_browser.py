"""The page in a real Chromium, as a person uses it (issue 17).

One server and one browser for the whole module, the only one that uses them
(``ui_site``, ``chromium``; a session's browser would keep Playwright's event loop
running on the main thread after this module, and a later test's ``anyio.run`` would
fail); each test opens its own page. The team server's pages (``team_site``: one ``TeamApp`` over
a database of its own in the session's PostgreSQL) are opened the way a person would:
``/agents/ID/ui/?token=`` once, then by the cookie it leaves. With
``MEMDIR_UI_SCREENSHOTS=1`` the tests save what they see to docs/ui/ (shown in
docs/ui.md); otherwise they write nothing outside tmp.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import memdir
from memdir.memory import Memory
from memdir.ui import build_app
from ui_browser import LiveServer, launch_chromium, require_browser
from ui_content import fill, fill_memory

chromium = pytest.fixture(scope="module", name="chromium")(launch_chromium)

DOCS = Path(__file__).resolve().parent.parent / "docs" / "ui"
SHOOT = os.environ.get("MEMDIR_UI_SCREENSHOTS") == "1"


@dataclass
class Site:
    url: str
    root: Path
    memory: Memory


@pytest.fixture(scope="module")
def ui_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    require_browser()
    root = tmp_path_factory.mktemp("ui-site") / "mem"
    clock = fill(root)
    with memdir.open(root, clock=clock, embedder="hashing") as memory:
        memory.backup()  # git: the History view has versions
        memory.notebook.update("next-step", "Ship step 3 of the billing migration.")
        with LiveServer(build_app(memory)) as url:
            yield Site(url, root, memory)


@pytest.fixture
def page(chromium: Any, ui_site: Site) -> Iterator[Any]:
    opened = chromium.new_page()
    errors: list[str] = []
    # a refused edit answers 422 (403 for a read-only token): the browser logs it, as it should
    refusals = ("status of 422", "status of 403")

    def console(message: Any) -> None:
        if message.type == "error" and not any(r in message.text for r in refusals):
            errors.append(message.text)

    opened.on("console", console)
    opened.on("pageerror", lambda e: errors.append(str(e)))
    yield opened
    opened.close()
    assert errors == [], f"the page logged errors: {errors}"


def shot(page: Any, name: str) -> None:
    if SHOOT:
        DOCS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOCS / f"{name}.png"), full_page=True)


def test_each_view_opens_with_its_content(page: Any, ui_site: Site) -> None:
    expected = {
        "": ["Boot context", "Layers against their caps", "Doctor", "knowledge"],
        "/memory": ["current-task", "conventions", "Observations", "deploy"],
        "/search?q=payments+currency": ["hits", "tier"],
        "/vault": ["Cards over tiers", "Alice Moreau", "Orphans"],
        "/vault/card?path=vault/acme-corp.md": ["Forgetting curve", "Backlinks"],
        "/episodes": ["Journal", "migrate billing", "Sessions"],
        "/consolidation": ["offline planner", "Restore"],
        "/history": ["knowledge.md"],
    }
    for path, texts in expected.items():
        response = page.goto(f"{ui_site.url}/ui{path}")
        assert response.status == 200, path
        body = page.inner_text("main")
        for text in texts:
            assert text in body, f"{path or '/'} shows no {text!r}"
        name = {"": "overview", "/vault/card?path=vault/acme-corp.md": "card"}.get(path)
        shot(page, name or path.strip("/").split("?")[0].replace("/", "-"))
    # the overview's budget chart says in words what it draws
    page.goto(f"{ui_site.url}/ui/")
    label = page.get_attribute("svg.stacked", "aria-label") or ""
    assert re.search(r"of a 6,000-token target", label)


def test_search_then_open_a_hit(page: Any, ui_site: Site) -> None:
    page.goto(f"{ui_site.url}/ui/search")
    page.fill("#q", "currency field")
    page.select_option("#mode", "deep")
    page.click("button:has-text('Search')")
    first = page.locator("ol.hits li").first
    assert "currency" in first.inner_text().lower()
    assert first.locator("svg.parts").count() == 1  # the score parts, drawn
    shot(page, "search")
    first.locator("h3 a").click()
    page.wait_for_url(re.compile(r"/ui/file\?path="))
    marked = page.locator("tr.hl")
    assert marked.count() >= 1
    assert "currency" in " ".join(marked.all_inner_texts()).lower()


def test_edit_a_section_and_the_file_changes(page: Any, ui_site: Site) -> None:
    knowledge = ui_site.root / "knowledge.md"
    page.goto(f"{ui_site.url}/ui/memory")
    box = page.locator("#section-billing textarea")
    box.fill("Invoices are sent on the 1st; reminders on the 15th.")
    page.locator("#section-billing button:has-text('Save section')").click()
    page.wait_for_url(re.compile(r"done="))
    assert "Done:" in page.inner_text("main")
    assert "reminders on the 15th" in knowledge.read_text(encoding="utf-8")
    assert "reminders on the 15th" in page.locator("#section-billing textarea").input_value()


def test_an_over_cap_edit_is_refused_and_changes_nothing(page: Any, ui_site: Site) -> None:
    knowledge = ui_site.root / "knowledge.md"
    before = knowledge.read_bytes()
    page.goto(f"{ui_site.url}/ui/memory")
    too_long = "Deploys happen on Tuesdays. " * 200  # 5,600 chars: over the 3,000 cap
    page.locator("#section-conventions textarea").fill(too_long)
    page.locator("#section-conventions button:has-text('Save section')").click()
    alert = page.locator("[role=alert]")
    assert "Refused" in alert.inner_text()
    assert "3,000" in alert.inner_text() or "3000" in alert.inner_text()
    # what was typed is kept for the person to shorten; the file is as it was
    assert page.locator("#section-conventions textarea").input_value() == too_long
    assert knowledge.read_bytes() == before
    shot(page, "refusal")


def test_follow_a_link_in_the_graph(page: Any, ui_site: Site) -> None:
    page.goto(f"{ui_site.url}/ui/vault")
    node = page.locator("#graph a.node[data-path='vault/acme-corp.md']")
    assert node.count() == 1
    node.focus()  # keyboard-usable: each card in the graph is a link
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"focus=vault%2Facme-corp\.md"))
    assert page.locator("#graph a.node.focus").get_attribute("data-path") == "vault/acme-corp.md"
    # its neighbours are drawn around it, one a click away
    page.locator("#graph a.node[data-path='vault/bob-lind.md']").click()
    page.wait_for_url(re.compile(r"focus=vault%2Fbob-lind\.md"))
    shot(page, "vault-graph")
    page.click("text=Bob Lind")  # the focus line links to the card
    page.wait_for_url(re.compile(r"/ui/vault/card\?path=vault%2Fbob-lind\.md"))
    assert "Forgetting curve" in page.inner_text("main")


def test_drag_moves_a_card_in_the_graph(page: Any, ui_site: Site) -> None:
    page.goto(f"{ui_site.url}/ui/vault")
    node = page.locator("#graph a.node[data-path='vault/carla-diaz.md']")
    # let the layout settle (its pace is the machine's: under load it takes seconds),
    # then bring the card into the viewport, where a pointer can reach it
    box, settled = node.bounding_box(), 0
    for _ in range(100):
        page.wait_for_timeout(100)
        now = node.bounding_box()
        settled = settled + 1 if now == box else 0
        box = now
        if settled >= 3:
            break
    node.scroll_into_view_if_needed()
    box = node.bounding_box()
    assert box is not None
    x, y = box["x"] + 8, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 120, y + 60, steps=6)
    page.mouse.up()
    moved = node.bounding_box()
    assert moved is not None and abs(moved["x"] - box["x"]) > 60
    assert "/ui/vault" in page.url and "focus" not in page.url  # a drag is not a click


def test_restore_a_dream_backup(page: Any, ui_site: Site) -> None:
    knowledge = ui_site.root / "knowledge.md"
    page.goto(f"{ui_site.url}/ui/consolidation")
    snapshot = page.locator("form input[name=snapshot]").first.get_attribute("value")
    assert snapshot is not None
    saved = (ui_site.root / snapshot).read_text(encoding="utf-8")
    if knowledge.read_text(encoding="utf-8") == saved:  # another test restored it already
        ui_site.memory.knowledge.save("A note written after the restore.")
        page.reload()
    page.locator("button:has-text('Restore')").first.click()
    page.wait_for_url(re.compile(r"done="))
    assert "restored from" in page.inner_text("main")
    assert knowledge.read_text(encoding="utf-8") == saved


def test_phone_width_and_keyboard(chromium: Any, ui_site: Site) -> None:
    page = chromium.new_page()
    try:
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{ui_site.url}/ui/memory")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the page is {width}px wide at a phone's 390px"
        shot(page, "phone-memory")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    finally:
        page.close()


def test_without_javascript_the_page_is_plain_links_and_forms(chromium: Any, ui_site: Site) -> None:
    """JavaScript off: the graph's cards are still links, search is a plain form, and
    an edit is a plain POST that changes the file."""
    page = chromium.new_page()
    # the session's one (persistent) profile: scripts are switched off for this page
    # through Chromium's own DevTools protocol, kept across its navigations
    chromium.new_cdp_session(page).send("Emulation.setScriptExecutionDisabled", {"value": True})
    try:
        page.goto(f"{ui_site.url}/ui/")
        page.goto(f"{ui_site.url}/ui/vault")
        node = page.locator("#graph a.node[data-path='vault/acme-corp.md'] > g")
        placed = node.get_attribute("transform")
        page.wait_for_timeout(800)  # graph.js would be moving the cards by now
        assert node.get_attribute("transform") == placed  # the server's drawing, as sent
        page.locator("#graph a.node[data-path='vault/acme-corp.md']").click()
        page.wait_for_url(re.compile(r"focus=vault%2Facme-corp\.md"))
        assert page.locator("#graph a.node.focus").get_attribute("data-path") == (
            "vault/acme-corp.md"
        )
        page.goto(f"{ui_site.url}/ui/search")
        page.fill("#q", "currency field")
        page.click("button:has-text('Search')")
        page.wait_for_url(re.compile(r"q=currency"))
        assert "currency" in page.locator("ol.hits li").first.inner_text().lower()
        knowledge = ui_site.root / "knowledge.md"
        page.goto(f"{ui_site.url}/ui/memory")
        page.locator("#section-billing textarea").fill("No script needed to keep this line.")
        page.locator("#section-billing button:has-text('Save section')").click()
        page.wait_for_url(re.compile(r"done="))
        assert "No script needed to keep this line." in knowledge.read_text(encoding="utf-8")
    finally:
        page.close()


@dataclass
class TeamSite:
    url: str
    database: str
    write: str
    read: str


@pytest.fixture(scope="module")
def team_site(pg_url: str) -> Iterator[TeamSite]:
    """``memdir serve --http --database-url``'s app, served for real, over a database of
    its own: agent alice with content in every layer, a write and a read-only token."""
    require_browser()
    import psycopg
    from psycopg.conninfo import make_conninfo

    from memdir.memory import open_agent
    from memdir.server.team import PgAgents, TeamApp
    from memdir.storage.agents import close_databases, init_agent
    from memdir.storage.postgres.tokens import Tokens
    from memdir.testing import FakeClock

    name = f"t_teambrowser_{secrets.token_hex(4)}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = make_conninfo(pg_url, dbname=name)
    try:
        init_agent(url, "alice")
        clock = FakeClock("2026-11-30T10:00:00Z")
        with open_agent(url, "alice", clock=clock, embedder="hashing") as memory:
            fill_memory(memory, clock)
        source = PgAgents(url)
        tokens = Tokens(source.db)
        write, _ = tokens.create(["alice"])
        read, _ = tokens.create(["alice"], read_only=True)
        with LiveServer(TeamApp(source, tokens), lifespan="on") as base:
            yield TeamSite(base, url, write, read)
    finally:
        close_databases()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def knowledge_in(site: TeamSite) -> str:
    import psycopg

    with psycopg.connect(site.database) as conn:
        row = conn.execute(
            "SELECT data FROM memdir.files WHERE agent = 'alice' AND path = 'knowledge.md'"
        ).fetchone()
    assert row is not None
    return bytes(row[0]).decode("utf-8")


def test_team_server_overview_search_and_an_edit(page: Any, team_site: TeamSite) -> None:
    home = f"{team_site.url}/agents/alice/ui"
    page.goto(f"{home}/?token={team_site.write}")
    assert page.url == f"{home}/"  # the token left the address; the cookie carries it
    body = page.inner_text("main")
    for text in ("Boot context", "Layers against their caps", "Doctor"):
        assert text in body
    assert "agent alice" in page.inner_text("header")
    shot(page, "team-overview")
    page.click("nav >> text=Search")
    page.fill("#q", "currency field")
    page.click("button:has-text('Search')")
    first = page.locator("ol.hits li").first
    assert "currency" in first.inner_text().lower()
    first.locator("h3 a").click()
    page.wait_for_url(re.compile(r"/agents/alice/ui/file\?path="))
    assert "currency" in " ".join(page.locator("tr.hl").all_inner_texts()).lower()
    page.goto(f"{home}/memory")
    box = page.locator("#section-billing textarea")
    box.fill("Invoices are sent on the 1st; reminders go out on the 20th.")
    page.locator("#section-billing button:has-text('Save section')").click()
    page.wait_for_url(re.compile(r"done="))
    assert "Done:" in page.inner_text("main")
    assert "reminders go out on the 20th" in knowledge_in(team_site)


def test_team_server_read_only_token_sees_the_refusal(page: Any, team_site: TeamSite) -> None:
    home = f"{team_site.url}/agents/alice/ui"
    page.goto(f"{home}/memory?token={team_site.read}")
    assert page.url == f"{home}/memory"
    assert "Read-only:" in page.inner_text("main")
    before = knowledge_in(team_site)
    page.locator("#section-conventions textarea").fill("- Deploys happen on Fridays.")
    page.locator("#section-conventions button:has-text('Save section')").click()
    alert = page.locator("[role=alert]")
    assert "this token is read-only" in alert.inner_text()
    assert knowledge_in(team_site) == before
    shot(page, "team-read-only")
    page.goto(f"{home}/vault")  # every view is there to see
    assert "Cards over tiers" in page.inner_text("main")
