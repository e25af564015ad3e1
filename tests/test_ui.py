"""The page over plain HTTP (Starlette's TestClient, and the real ``memdir ui`` and
``memdir serve --http`` processes): the guard (host, token, CSRF), path confinement,
refusals that change nothing, restores, and every view on every layout."""

from __future__ import annotations

import os
import random
import re
import string
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

import memdir
from memdir.maintain.restore import dream_snapshots
from memdir.ui import build_app
from ui_content import fill

LOCAL = "http://127.0.0.1"
KEY = "sk-proj-" + "".join(random.Random(7).choices(string.ascii_letters + string.digits, k=60))
VIEWS = ["/ui/", "/ui/memory", "/ui/search?q=payments", "/ui/search?mode=creative", "/ui/vault",
         "/ui/episodes", "/ui/consolidation", "/ui/history"]  # fmt: skip


@pytest.fixture
def full(tmp_path: Path) -> Iterator[memdir.Memory]:
    root = tmp_path / "mem"
    clock = fill(root)
    with memdir.open(root, clock=clock, embedder="hashing") as memory:
        yield memory


@pytest.fixture
def client(full: memdir.Memory) -> TestClient:
    return TestClient(build_app(full), base_url=LOCAL, follow_redirects=False)


def csrf(client: TestClient, path: str = "/ui/memory") -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get(path).text)
    assert found is not None
    return found.group(1)


def test_every_view_answers(client: TestClient) -> None:
    for path in VIEWS:
        response = client.get(path)
        assert response.status_code == 200, path
        assert "default-src 'self'" in response.headers["content-security-policy"]
        assert "<script>" not in response.text  # no inline script: the CSP forbids it
    assert client.get("/").headers["location"] == "/ui/"


@pytest.mark.parametrize("layout", ["notebook", "vault", "workspace"])
def test_every_view_answers_on_every_layout(tmp_path: Path, layout: str) -> None:
    root = tmp_path / layout
    memdir.init(root, layout=layout)
    with memdir.open(root, embedder="hashing") as memory:
        client = TestClient(build_app(memory), base_url=LOCAL)
        for path in VIEWS:
            assert client.get(path).status_code == 200, (layout, path)


def test_a_foreign_host_is_refused(client: TestClient) -> None:
    response = client.get("/ui/", headers={"host": "evil.example:8766"})
    assert response.status_code == 403
    assert "answers to 127.0.0.1" in response.text
    assert client.get("/ui/", headers={"host": "localhost:8766"}).status_code == 200


def test_a_write_without_the_csrf_token_is_refused(client: TestClient, full: memdir.Memory) -> None:
    before = (full.root / "knowledge.md").read_bytes()
    form = {"section": "billing", "content": "forged", "action": "save"}
    assert client.post("/ui/memory/section", data=form).status_code == 403
    forged = {**form, "csrf": "0" * 64}
    assert client.post("/ui/memory/section", data=forged).status_code == 403
    foreign = client.post(
        "/ui/memory/section",
        data={**form, "csrf": csrf(client)},
        headers={"origin": "http://evil.example"},
    )
    assert foreign.status_code == 403
    assert (full.root / "knowledge.md").read_bytes() == before


def test_an_edit_goes_through_the_tools_as_a_person(
    client: TestClient, full: memdir.Memory
) -> None:
    form = {"section": "billing", "content": "Invoices go out on the 2nd.", "action": "save"}
    response = client.post("/ui/memory/section", data={**form, "csrf": csrf(client)})
    assert response.status_code == 303
    assert response.headers["location"].startswith("/ui/memory?done=")
    text = (full.root / "knowledge.md").read_text(encoding="utf-8")
    assert "Invoices go out on the 2nd." in text
    assert full.knowledge.section("billing").by == "person"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("path", "form", "said"),
    [
        ("/ui/memory/section", {"section": "billing", "content": "x" * 3500}, "3000-char cap"),
        ("/ui/memory/notebook", {"key": "k", "text": "y" * 7000}, "6,000"),
        (
            "/ui/memory/observation",
            {"content": f"remember: OPENAI_API_KEY={KEY}"},
            "OpenAI API key",
        ),
        ("/ui/memory/state", {"key": "", "text": "z"}, "key"),
    ],
)
def test_a_refused_edit_shows_why_and_changes_nothing(
    client: TestClient, full: memdir.Memory, path: str, form: dict[str, str], said: str
) -> None:
    files = {p: p.read_bytes() for p in full.root.rglob("*.md")}
    response = client.post(path, data={**form, "csrf": csrf(client), "action": "save"})
    assert response.status_code == 422
    alert = re.search(r'role="alert"><strong>Refused:</strong> (.*?)</p>', response.text, re.S)
    assert alert is not None and said in alert.group(1)
    assert {p: p.read_bytes() for p in full.root.rglob("*.md")} == files


def test_files_outside_the_folder_are_never_served(client: TestClient, tmp_path: Path) -> None:
    (tmp_path / "outside.md").write_text("not yours", encoding="utf-8")
    for path in ["../outside.md", "/etc/passwd", ".memdir/index.db", "memdir.toml/../../x"]:
        response = client.get("/ui/file", params={"path": path})
        assert response.status_code in (403, 404), path
        assert "not yours" not in response.text
    for name in ["../app.py", "..%2Fapp.py", "graph.py"]:
        assert client.get(f"/ui/static/{name}").status_code == 404
    assert client.get("/ui/vault/card", params={"path": "../outside"}).status_code == 404
    assert client.get("/ui/history", params={"path": "../outside.md"}).status_code in (200, 403)


def test_restore_a_dream_snapshot(client: TestClient, full: memdir.Memory) -> None:
    [snapshot] = dream_snapshots(full)
    kept = (full.root / snapshot.path).read_text(encoding="utf-8")
    token = csrf(client, "/ui/consolidation")
    response = client.post(
        "/ui/consolidation/restore", data={"snapshot": snapshot.path, "csrf": token}
    )
    assert response.status_code == 303
    assert (full.root / "knowledge.md").read_text(encoding="utf-8") == kept
    [restored] = (full.root / "archive" / "restored").glob("*.knowledge.md.bak")
    assert "Refunds take five business days." in restored.read_text(encoding="utf-8")
    again = client.post(
        "/ui/consolidation/restore", data={"snapshot": snapshot.path, "csrf": token}
    )
    assert again.status_code == 422 and "already holds" in again.text
    bogus = client.post(
        "/ui/consolidation/restore", data={"snapshot": "../memdir.toml", "csrf": token}
    )
    assert bogus.status_code == 422 and "no dream snapshot" in bogus.text


def test_history_shows_versions_and_restores_one(client: TestClient, full: memdir.Memory) -> None:
    full.backup()
    first = (full.root / "NOTEBOOK.md").read_text(encoding="utf-8")
    full.notebook.update("current-task", "Something else entirely.")
    listing = client.get("/ui/history").text
    assert "NOTEBOOK.md" in listing
    page = client.get("/ui/history", params={"path": "NOTEBOOK.md"}).text
    rev = re.search(r"rev=([0-9a-f]{40})", page)
    assert rev is not None
    shown = client.get("/ui/history", params={"path": "NOTEBOOK.md", "rev": rev.group(1)}).text
    assert "Something else entirely." in shown  # the diff to the file now
    token = csrf(client, "/ui/consolidation")
    response = client.post(
        "/ui/history/restore", data={"path": "NOTEBOOK.md", "rev": rev.group(1), "csrf": token}
    )
    assert response.status_code == 303
    assert (full.root / "NOTEBOOK.md").read_text(encoding="utf-8") == first
    bad = client.post(
        "/ui/history/restore", data={"path": "NOTEBOOK.md", "rev": "nope", "csrf": token}
    )
    assert bad.status_code == 422


def test_a_token_guards_the_page(full: memdir.Memory) -> None:
    client = TestClient(build_app(full, token="s3cret"), base_url="http://memory.example")
    assert client.get("/ui/", follow_redirects=False).status_code == 401
    wrong = client.get("/ui/?token=nope", follow_redirects=False)
    assert wrong.status_code == 401
    assert client.get("/ui/", headers={"authorization": "Bearer s3cret"}).status_code == 200
    given = client.get("/ui/search?q=x&token=s3cret", follow_redirects=False)
    assert given.status_code == 303
    assert given.headers["location"] == "/ui/search?q=x"  # the token leaves the address
    cookie = given.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "s3cret" not in cookie
    assert client.get("/ui/search?q=x").status_code == 200  # the cookie lets it in now


def _started(args: list[str], stream: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "memdir", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    source = process.stdout if stream == "stdout" else process.stderr
    assert source is not None
    said = ""
    deadline = time.monotonic() + 60
    while "Ctrl-C stops it" not in said and time.monotonic() < deadline:
        line = source.readline()
        if not line:
            break
        said += line
    if "Ctrl-C stops it" not in said:
        process.kill()
        raise AssertionError(f"it did not start: {said}{process.communicate()}")
    if stream == "stderr":  # serve: the page's line comes after
        said += source.readline()
    return process, said


def _stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.communicate(timeout=30)


def test_memdir_ui_prints_the_url_and_serves_the_page(full: memdir.Memory) -> None:
    process, said = _started(["ui", "--dir", str(full.root), "--port", "0"], "stdout")
    try:
        found = re.search(r"is at (http://127\.0\.0\.1:\d+/ui/)", said)
        assert found is not None, said
        assert f"the page for {full.root} is at" in said
        page = httpx.get(found.group(1), timeout=30)
        assert page.status_code == 200 and "Boot context" in page.text
    finally:
        _stop(process)


def test_serve_http_on_any_free_port_says_which_and_serves_the_page(full: memdir.Memory) -> None:
    args = ["serve", "--http", "--dir", str(full.root), "--port", "0", "--token", "s3cret"]
    process, said = _started([*args, "--maintain-every", "0"], "stderr")
    try:
        found = re.search(r"web page is beside it at (http://127\.0\.0\.1:(\d+)/ui/)", said)
        assert found is not None, said
        url, port = found.group(1), found.group(2)
        assert port != "0" and f"over MCP at http://127.0.0.1:{port}/mcp" in said  # the one bound
        assert httpx.get(url, timeout=30).status_code == 401
        bearer = {"authorization": "Bearer s3cret"}
        assert httpx.get(url + "memory", headers=bearer, timeout=30).status_code == 200
        assert httpx.post(url.replace("/ui/", "/mcp"), timeout=30).status_code == 401
    finally:
        _stop(process)


def test_the_forgetting_curve_ends_where_decay_puts_the_card(full: memdir.Memory) -> None:
    from memdir.ui.vault import forgetting_curve, touches

    read = full.vault.read("acme-corp", touch=False)
    assert read is not None
    marks = touches(read.meta, read.body)
    assert [str(day) for day in marks] == ["2026-09-01", "2026-09-20", "2026-11-12"]
    today = full.clock().date()
    curve = dict(forgetting_curve(marks, today, full.manifest.decay, str(read.meta["tier"])))
    assert curve[today] == pytest.approx(float(read.meta["relevance"]), abs=0.001)
    page = TestClient(build_app(full), base_url=LOCAL).get(
        "/ui/vault/card", params={"path": "vault/acme-corp.md"}
    )
    assert "3 touches; today 0.73" in page.text  # the chart's label says it in words


def test_the_overview_shows_doctors_findings(full: memdir.Memory) -> None:
    full.vault.write("stray", "# Stray\nPoints at [[nowhere-at-all]].", type="idea")
    client = TestClient(build_app(full), base_url=LOCAL)
    page = client.get("/ui/").text
    for _ in range(60):  # doctor runs beside the page: on a loaded machine, a reload later
        if "still checking" not in page:
            break
        time.sleep(0.5)
        page = client.get("/ui/").text
    assert "<strong>[broken-link]</strong> <code>vault/stray.md</code>" in page


def test_a_slow_check_does_not_hold_the_page(full: memdir.Memory) -> None:
    import threading

    ui = build_app(full).state.ui
    release = threading.Event()

    def slow(memory: memdir.Memory) -> int:
        release.wait(30)
        return len(memory.vault.cards())

    later = ui.soon("slow", 1, slow, wait=0.01)
    assert (later.ready, later.value) == (False, None)  # the page says: reload in a moment
    release.set()
    done = ui.soon("slow", 1, slow, wait=30)
    assert (done.ready, done.value) == (True, len(full.vault.cards()))
    release.clear()  # the files changed: computed again, the old value shown meanwhile
    assert ui.soon("slow", 2, slow, wait=0.01) == type(done)(False, done.value)
    release.set()


def test_an_activity_shows_its_logs_and_a_session_its_messages(client: TestClient) -> None:
    episodes = client.get("/ui/episodes", params={"type": "task"}).text
    assert "migrate billing" in episodes and "morning check-in" not in episodes
    activity = re.search(r'href="(/ui/episodes/activity\?id=[^"]+)"', episodes)
    assert activity is not None
    logs = client.get(activity.group(1).replace("&amp;", "&")).text
    assert logs.index("started the migration") < logs.index("memory_search billing")
    session = re.search(r'href="(/ui/episodes/session\?id=[^"]+)"', client.get("/ui/episodes").text)
    assert session is not None
    messages = client.get(session.group(1)).text
    assert "When are invoices sent?" in messages and "On the 1st." in messages
    assert client.get("/ui/episodes/session", params={"id": "../x"}).status_code == 404
    assert client.get("/ui/episodes/activity", params={"id": "nope"}).status_code == 404


def test_restoring_the_manifest_is_refused(full: memdir.Memory) -> None:
    from memdir.maintain.restore import restore_file

    manifest = (full.root / "memdir.toml").read_bytes()
    result = restore_file(full, "memdir.toml", "version = 1\n", source="git 0000000")
    assert not result.ok and "not restored here" in (result.reason or "")
    assert (full.root / "memdir.toml").read_bytes() == manifest
    outside = restore_file(full, "../elsewhere.md", "x", source="git 0000000")
    assert not outside.ok and "leaves the memory folder" in (outside.reason or "")


@pytest.mark.parametrize(
    ("body", "kind", "status"),
    [
        (b"&section=billing&content=%ff%fe", "application/x-www-form-urlencoded", 400),
        (b"&section=billing&content=caf\xe9", "application/x-www-form-urlencoded", 400),
        (b"&section=billing&content=x", "multipart/form-data; boundary=zz", 415),
        (b"&section=billing&content=x", "application/json", 415),
    ],
)
def test_a_form_that_is_not_url_encoded_utf8_is_refused(
    client: TestClient, full: memdir.Memory, body: bytes, kind: str, status: int
) -> None:
    before = (full.root / "knowledge.md").read_bytes()
    token = csrf(client).encode()
    response = client.post(
        "/ui/memory/section", content=b"csrf=" + token + body, headers={"content-type": kind}
    )
    assert response.status_code == status
    assert "role=alert" in response.text
    assert (full.root / "knowledge.md").read_bytes() == before


def test_a_form_over_the_cap_is_refused(client: TestClient, full: memdir.Memory) -> None:
    from memdir.ui.app import FORM_MAX_BYTES

    before = (full.root / "knowledge.md").read_bytes()
    body = f"csrf={csrf(client)}&section=billing&content=".encode() + b"x" * FORM_MAX_BYTES
    response = client.post(
        "/ui/memory/section",
        content=body,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 413
    assert (full.root / "knowledge.md").read_bytes() == before


@pytest.mark.parametrize(
    ("path", "form"),
    [
        ("/ui/memory/section", {"section": "billing", "content": "forged"}),
        ("/ui/memory/notebook", {"key": "k", "text": "forged"}),
        ("/ui/memory/state", {"key": "k", "text": "forged"}),
        ("/ui/memory/observation", {"content": "forged"}),
    ],
)
def test_an_unknown_action_is_refused_not_taken_for_a_save(
    client: TestClient, full: memdir.Memory, path: str, form: dict[str, str]
) -> None:
    before = {p: p.read_bytes() for p in full.root.glob("*.md")}
    response = client.post(path, data={**form, "action": "erase", "csrf": csrf(client)})
    assert response.status_code == 422
    assert "unknown action &#39;erase&#39;" in response.text
    assert {p: p.read_bytes() for p in full.root.glob("*.md")} == before


def test_the_bearer_scheme_is_taken_in_any_case(full: memdir.Memory) -> None:
    """RFC 9110: the scheme is case-insensitive (the team server already took it so);
    a wrong token is refused whatever the case."""
    from memdir.server.mcp import bearer_guard

    page = TestClient(build_app(full, token="s3cret"), base_url="http://memory.example")
    served = TestClient(bearer_guard(build_app(full), "s3cret"), base_url=LOCAL)  # serve --http
    for client in (page, served):
        for scheme in ("Bearer", "bearer", "BEARER"):
            given = {"authorization": f"{scheme} s3cret"}
            assert client.get("/ui/", headers=given).status_code == 200, scheme
        assert client.get("/ui/", headers={"authorization": "bearer nope"}).status_code == 401
        assert client.get("/ui/", headers={"authorization": "Basic s3cret"}).status_code == 401
