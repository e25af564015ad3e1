"""Agents kept in a real PostgreSQL: created, used, exported, edited by hand, pushed
back (byte for byte), shared (a vault mounted by two agents), read-only, killed
mid-write, and served through the command line and the MCP client."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import backends
import memdir
from memdir import layouts
from memdir.cli import app
from memdir.files.cards import Card
from memdir.storage.agents import init_agent
from memdir.storage.postgres.db import Database, close_shared
from memdir.storage.transfer import EXPORT_FILE, PushConflict, export_agent, push
from memdir.testing import FakeClock
from test_mcp_server import _one_session, _run

backend = backends.backend  # the tests taking ``memory`` run on disk and in PostgreSQL
memory = backends.memory
open_again = backends.open_again


@pytest.fixture
def url(pg_url: str, pg_schema: str) -> Iterator[str]:
    """The test's database, its schema the one ``shared_database`` opens (``schema=``)."""
    yield pg_url
    close_shared()


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file but ``.memdir/``, as bytes."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).parts[0] != ".memdir"
    }


@pytest.mark.parametrize("layout", layouts.LAYOUTS)
def test_a_starter_layout_moves_in_and_out_byte_for_byte(
    tmp_path: Path, url: str, pg_schema: str, layout: str
) -> None:
    folder = tmp_path / "here"
    memdir.init(folder, layout=layout, agent="mover")
    before = _tree(folder)
    pushed = push(url, "mover", folder, schema=pg_schema)
    assert sorted(pushed.written) == sorted(before)
    out = tmp_path / "there"
    exported = export_agent(url, "mover", out, schema=pg_schema)
    assert sorted(exported.written) == sorted(before)
    assert _tree(out) == before
    record = json.loads((out / ".memdir" / EXPORT_FILE).read_text())
    assert record["agent"] == "mover" and set(record["files"]) == set(before)
    assert all(v["version"] == 1 for v in record["files"].values())
    # what `memdir init --agent` writes in the database is what `memdir init` writes on disk
    init_agent(url, "fresh", layout, schema=pg_schema)
    again = tmp_path / "fresh"
    export_agent(url, "fresh", again, schema=pg_schema)
    local = tmp_path / "fresh-local"
    memdir.init(local, layout=layout, agent="fresh")
    assert _tree(again) == _tree(local)


def test_an_export_goes_into_a_fresh_git_repository_but_not_a_folder_of_other_files(
    tmp_path: Path, url: str, pg_schema: str
) -> None:
    init_agent(url, "kept", schema=pg_schema)
    repo = tmp_path / "backup"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)  # a backup repository, first
    head = (repo / ".git" / "HEAD").read_bytes()
    exported = export_agent(url, "kept", repo, schema=pg_schema)
    assert "memdir.toml" in exported.written and (repo / ".memdir" / EXPORT_FILE).is_file()
    assert (repo / ".git" / "HEAD").read_bytes() == head  # git's own files left alone
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    with pytest.raises(memdir.MemdirError, match="is not empty and holds no export"):
        export_agent(url, "kept", other, schema=pg_schema)
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]


HAND_EDITED = {
    "knowledge.md": (
        b"# Knowledge\r\n\r\nstray text before any section\r\n\r\n## People\r\n"
        b"<!-- updated: 2026-11-01T09:00:00Z; mood: sunny; x-custom: 1 -->\r\n"
        b"Caroline paints sunrises.\r\n\r\n## _observations\r\n\r\n"
        b"### obs_1_a\r\n<!-- type: note; date: 2026-11-02T10:00:00Z; colour: blue -->\r\n"
        b"Melanie sails.\r\n"
    ),
    "NOTEBOOK.md": b"# Notebook\n\nno section at all, just text\n\xff\xfe not UTF-8\n",
    "notes/empty.md": b"",
    "notes/odd name (1).md": b"---\nweird: [unclosed\n---\nbody\n",
}


def test_a_hand_edited_folder_moves_in_and_out_byte_for_byte(
    tmp_path: Path, url: str, pg_schema: str
) -> None:
    folder = tmp_path / "edited"
    memdir.init(folder, agent="editor")
    for relpath, data in HAND_EDITED.items():
        (folder / relpath).parent.mkdir(parents=True, exist_ok=True)
        (folder / relpath).write_bytes(data)
    before = _tree(folder)
    push(url, "editor", folder, schema=pg_schema)
    out = tmp_path / "out"
    export_agent(url, "editor", out, schema=pg_schema)
    assert _tree(out) == before
    # the store reads what was pushed, and its next write keeps the hand edits
    db = Database(url, schema=pg_schema)
    with memdir.open_agent(url, "editor", embedder="hashing", db=db) as memory:
        assert [s.key for s in memory.knowledge.sections()] == ["People"]
        assert memory.knowledge.save("Dana keeps the checklist").ok
        text = memory.files.read("knowledge.md")
        assert text is not None and b"stray text before any section\r\n" in text
        assert b"mood: sunny; x-custom: 1" in text and b"colour: blue" in text
        assert [h.path for h in memory.search("sunrises")] == ["knowledge.md"]
    db.close()


def test_push_refuses_a_file_changed_in_the_database_since_the_export(
    tmp_path: Path, url: str, pg_schema: str
) -> None:
    init_agent(url, "alice", schema=pg_schema)
    out = tmp_path / "alice"
    export_agent(url, "alice", out, schema=pg_schema)
    db = Database(url, schema=pg_schema)
    with memdir.open_agent(url, "alice", embedder="hashing", db=db) as memory:
        assert memory.knowledge.save("Written in the database after the export").ok
        in_db = memory.files.read("knowledge.md")
    state = (out / "state.md").read_bytes()
    (out / "state.md").write_bytes(state + b"\nedited by hand\n")  # no conflict: unchanged there
    (out / "knowledge.md").write_bytes((out / "knowledge.md").read_bytes() + b"\nmine\n")
    with pytest.raises(PushConflict) as refused:
        push(url, "alice", out, schema=pg_schema)
    assert refused.value.conflicts == ["knowledge.md"]
    assert str(refused.value).startswith("1 file of agent 'alice' changed in the database")
    with memdir.open_agent(url, "alice", embedder="hashing", db=db) as memory:
        assert memory.files.read("knowledge.md") == in_db  # nothing was pushed
        assert memory.files.read("state.md") == state
    forced = push(url, "alice", out, schema=pg_schema, force=True)
    assert sorted(forced.written) == ["knowledge.md", "state.md"]
    assert forced.conflicts == ["knowledge.md"]
    with memdir.open_agent(url, "alice", embedder="hashing", db=db) as memory:
        assert memory.files.read("knowledge.md") == (out / "knowledge.md").read_bytes()
        assert [h.path for h in memory.search("edited by hand")] == ["state.md"]  # reindexed
    # pushed again unchanged: nothing to do; a file removed here is removed there
    (out / "lessons.md").unlink()
    again = push(url, "alice", out, schema=pg_schema)
    assert again.written == [] and again.removed == ["lessons.md"]
    db.close()


def test_the_cli_creates_uses_exports_and_pushes_an_agent(
    tmp_path: Path, url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")
    monkeypatch.setenv("MEMDIR_DATABASE_SCHEMA", pg_schema)
    run = CliRunner()

    def cli(*args: str) -> str:
        done = run.invoke(app, ["--database-url", url, *args])
        assert done.exit_code == 0, done.output
        return done.stdout

    assert "Initialised agent bob" in cli("init", "--agent", "bob", "--layout", "default")
    cli("save", "--agent", "bob", "Bob deploys on Fridays")
    found = json.loads(cli("search", "--agent", "bob", "deploys", "--json"))
    assert found[0]["path"] == "knowledge.md"
    out = tmp_path / "bob"
    cli("export", "--agent", "bob", str(out))
    assert "Bob deploys on Fridays" in (out / "knowledge.md").read_text()
    (out / "knowledge.md").write_text((out / "knowledge.md").read_text() + "\nTuesdays too\n")
    pushed = json.loads(cli("push", str(out), "--agent", "bob", "--json"))
    assert pushed["written"] == ["knowledge.md"]
    found = json.loads(cli("search", "--agent", "bob", "Tuesdays", "--json"))
    assert found[0]["path"] == "knowledge.md"
    listed = json.loads(cli("agents", "--json"))
    assert listed == [{"id": "bob", "layout": "default"}]
    missing = run.invoke(app, ["--database-url", url, "search", "--agent", "nobody", "x"])
    assert missing.exit_code == 1 and "no agent 'nobody'" in missing.output


def test_a_read_only_agent_reads_and_searches_and_refuses_every_write(
    url: str, pg_schema: str
) -> None:
    init_agent(url, "ro", schema=pg_schema)
    db = Database(url, schema=pg_schema)
    with memdir.open_agent(url, "ro", embedder="hashing", db=db) as memory:
        memory.knowledge.save("Visible to every reader")
    with memdir.open_agent(url, "ro", embedder="hashing", db=db, read_only=True) as memory:
        assert [h.path for h in memory.search("visible reader")] == ["knowledge.md"]
        with pytest.raises(memdir.ReadOnlyFolder):
            memory.knowledge.save("never kept")
        with pytest.raises(memdir.ReadOnlyFolder):
            memory.history.start_activity("task", "never started")
        from memdir.tools import Tools

        refused = Tools(memory).call("memory_save", {"content": "never kept"})
        assert refused["ok"] is False
        assert "read-only" in refused["reason"]
    with memdir.open_agent(url, "ro", embedder="hashing", db=db) as memory:
        assert "never kept" not in (memory.files.read("knowledge.md") or b"").decode()
    db.close()


KILLED_WRITER = """
import sys, time, memdir
from memdir.storage.postgres.db import Database
url, schema = sys.argv[1], sys.argv[2]
memory = memdir.open_agent(url, "victim", embedder="none", db=Database(url, schema=schema))
with memory.lock:
    assert memory.notebook.update("task", "a zebra crossing").ok
    memory.sessions.append_message(sys.argv[3], {"role": "user", "content": "half"})
    print("written", flush=True)
    time.sleep(60)  # killed here: the transaction never commits
"""


def test_a_write_whose_transaction_is_killed_leaves_the_previous_version(
    url: str, pg_schema: str
) -> None:
    init_agent(url, "victim", schema=pg_schema)
    db = Database(url, schema=pg_schema)
    with memdir.open_agent(url, "victim", embedder="hashing", db=db) as memory:
        assert memory.notebook.update("task", "the old version").ok
        sid = memory.sessions.create()
        memory.sessions.append_message(sid, {"role": "user", "content": "whole"})
        before = {p: memory.files.read(p) for p in ("NOTEBOOK.md", memory.sessions.relpath(sid))}
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(KILLED_WRITER), url, pg_schema, sid],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    assert writer.stdout is not None
    line = writer.stdout.readline()
    assert line == b"written\n", writer.stderr.read() if writer.stderr else b""
    os.kill(writer.pid, signal.SIGKILL)
    writer.communicate(timeout=30)  # reaped, its pipes closed
    with memdir.open_agent(url, "victim", embedder="hashing", db=db) as memory:
        assert {p: memory.files.read(p) for p in before} == before
        entry = memory.notebook.get("task")
        assert entry is not None and entry.text == "the old version"
        assert [h.path for h in memory.search("zebra")] == []  # nor its index rows
        assert memory.notebook.update("task", "after the crash").ok  # the lock was let go
    db.close()


SHARED_AGENT = """
import sys, memdir
from memdir.storage.postgres.db import Database
url, schema, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
memory = memdir.open_agent(url, name, embedder="none", db=Database(url, schema=schema))
for n in range(count):
    result = memory.vault.append_history("project-x", f"{name} note {n}")
    assert result.ok, result
memory.vault.write("project-x", tags=[name])
"""


def test_two_agents_share_a_vault_in_the_database(tmp_path: Path, url: str, pg_schema: str) -> None:
    """The vault specification's rules across processes on one database: every append
    lands (history sections are append-only), each agent's touches count, last write
    wins for metadata."""
    for name in ("agent-1", "agent-2"):
        folder = tmp_path / name
        memdir.init(folder, agent=name)
        manifest = (folder / "memdir.toml").read_text()
        manifest = manifest.replace(
            'paths = ["vault/**/*.md"]', 'paths = ["**/*.md"]\nmount = "team-vault"'
        )
        (folder / "memdir.toml").write_text(manifest)
        push(url, name, folder, schema=pg_schema)
    db = Database(url, schema=pg_schema)
    clock = FakeClock("2026-11-30T10:00:00Z")
    first = memdir.open_agent(url, "agent-1", embedder="hashing", db=db, clock=clock)
    assert first.vault.write("project-x", "Shared project.", type="project").store == (
        "vault/project-x.md"
    )
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(SHARED_AGENT), url, pg_schema, name, "30"],
            stderr=subprocess.PIPE,
        )
        for name in ("agent-1", "agent-2")
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=180)
        assert worker.returncode == 0, err.decode()
    raw = first.files.read("vault/project-x.md")
    assert raw is not None
    card = Card.parse(raw.decode())
    history = [line for line in card.body.splitlines() if line.startswith("- 2")]
    assert len(history) == 60
    assert {f"agent-{a} note {n}" for a in (1, 2) for n in range(30)} == {
        line.split(": ", 1)[1] for line in history
    }
    assert card.meta["access_count"] == 60 + 2
    assert card.meta["tags"] in (["agent-1"], ["agent-2"])
    second = memdir.open_agent(url, "agent-2", embedder="hashing", db=db, clock=clock)
    opened = second.get("vault/project-x.md")
    assert opened.ok and "Shared project." in opened.text
    second.scan()
    assert [h.path for h in second.search("shared project", kinds=["card"])] == [
        "vault/project-x.md"
    ]
    # the vault is a folder of its own in the database: neither agent's files hold it
    assert first.files.own.read("vault/project-x.md") is None
    first.close()
    second.close()
    db.close()


def test_the_mcp_client_works_against_either_backend(memory: memdir.Memory) -> None:
    from memdir.server.mcp import MemdirMCP

    _run(_one_session, MemdirMCP(memory))
    [activity] = memory.history.recent(type="chat")
    assert activity.label == "test-host 1.2 (MCP)" and activity.total_tools == 6
    stored = memory.files.read("knowledge.md")
    assert stored is not None and b"Dana keeps the release checklist" in stored


def test_a_second_memory_sees_the_first_ones_writes(memory: memdir.Memory) -> None:
    memory.knowledge.save("Quokka sightings written through the first")
    sid = memory.sessions.create()
    memory.sessions.append_message(sid, {"role": "user", "content": "one"})
    other = open_again(memory)
    try:
        assert [o.content for o in other.knowledge.observations()] == [
            "Quokka sightings written through the first"
        ]
        assert other.sessions.append_message(sid, {"role": "user", "content": "two"}).ok
        assert memory.sessions.append_message(sid, {"role": "user", "content": "three"}).ok
        messages = [m["content"] for m in memory.sessions.load(sid)["messages"]]
        assert messages == ["one", "two", "three"]
        assert [h.path for h in other.search("quokka")][:1] == ["knowledge.md"]
        digest = hashlib.sha256(memory.files.read("knowledge.md") or b"").hexdigest()
        stat = other.files.stat("knowledge.md")
        assert stat is not None and stat.sha256 == digest
    finally:
        other.close()


def test_jobs_about_the_disk_say_they_are_local_only(memory: memdir.Memory) -> None:
    if memory.backend == "local":
        memory.local_only("memdir backup (git)")  # a folder on disk: nothing to say
        return
    with pytest.raises(memdir.LocalOnly, match="folder on disk only"):
        memory.backup()


def test_claudes_memory_tool_on_either_backend(memory: memdir.Memory) -> None:
    from memdir.tools import run_memory_command

    def run(**args: object) -> str:
        return run_memory_command(memory, args)

    assert run(command="create", path="/memories/notes/plan.md", file_text="# Plan\nsail\n") == (
        "File created successfully at: /memories/notes/plan.md"
    )
    assert run(command="create", path="/memories/notes/plan.md", file_text="x") == (
        "Error: File /memories/notes/plan.md already exists"
    )
    run(command="create", path="/memories/notes/deep/more.md", file_text="more\n")
    listing = run(command="view", path="/memories/notes")
    assert listing.splitlines()[1:] == [
        "17B\t/memories/notes",
        "5B\t/memories/notes/deep",
        "5B\t/memories/notes/deep/more.md",
        "12B\t/memories/notes/plan.md",
    ]
    assert "     2\tsail" in run(command="view", path="/memories/notes/plan.md")
    run(command="str_replace", path="/memories/notes/plan.md", old_str="sail", new_str="row")
    run(command="insert", path="/memories/notes/plan.md", insert_line=0, insert_text="top")
    assert memory.files.read("notes/plan.md") == b"top\n# Plan\nrow\n"
    assert [h.path for h in memory.search("row plan")][:1] == ["notes/plan.md"]
    assert run(command="rename", old_path="/memories/notes/deep", new_path="/memories/kept") == (
        "Successfully renamed /memories/notes/deep to /memories/kept"
    )
    assert memory.files.read("kept/more.md") == b"more\n"
    assert memory.files.stamp("notes/deep/more.md") is None
    assert run(command="delete", path="/memories/notes") == "Successfully deleted /memories/notes"
    assert memory.files.stamp("notes/plan.md") is None
    kept = memory.files.read("archive/deleted/2026-11-30/notes/plan.md")
    assert kept == b"top\n# Plan\nrow\n"
    assert run(command="view", path="/memories/notes") == (
        "The path /memories/notes does not exist. Please provide a valid path."
    )
    assert [h.path for h in memory.search("row plan")] == []  # out of normal search


def test_status_counts_an_agent_in_the_database(
    url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_DATABASE_SCHEMA", pg_schema)
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")
    init_agent(url, "counted", schema=pg_schema)
    run = CliRunner()
    saved = run.invoke(app, ["--database-url", url, "save", "--agent", "counted", "one fact"])
    assert saved.exit_code == 0, saved.output
    done = run.invoke(app, ["--database-url", url, "status", "--agent", "counted", "--json"])
    assert done.exit_code == 0, done.output
    status = json.loads(done.stdout)
    assert status["folder"].endswith("agent counted")  # where the database keeps it
    layers = {layer["name"]: layer["files"] for layer in status["layers"]}
    assert layers["knowledge"] == 1 and layers["identity"] >= 1
    assert status["index"]["built"] and status["index"]["items"] > 0
    assert status["knowledge"]["observations"] == 1


def _analyses(url: str, schema: str) -> int:
    db = Database(url, schema=schema)
    try:
        conn = db.connect()
        row = conn.execute(
            "SELECT analyze_count + autoanalyze_count FROM pg_stat_user_tables "
            "WHERE schemaname = %s AND relname = 'items'",
            (schema,),
        ).fetchone()
        return int(row[0]) if row is not None else 0
    finally:
        db.close()


def test_a_push_into_a_new_agent_refreshes_the_planners_statistics(
    tmp_path: Path, url: str, pg_schema: str
) -> None:
    folder = tmp_path / "new"
    memdir.init(folder, agent="counted")
    before = _analyses(url, pg_schema)
    push(url, "counted", folder, schema=pg_schema)
    after_new = _analyses(url, pg_schema)
    assert after_new > before  # a new agent: ANALYZE after the commit


@pytest.mark.parametrize(
    "args", [["init", "--agent", "x"], ["search", "--agent", "x", "hi"], ["agents"]]
)
def test_a_database_that_cannot_be_reached_is_one_line_not_a_traceback(
    tmp_path: Path, args: list[str]
) -> None:
    url = f"postgresql://nobody@/nodb?host={tmp_path}"  # no server listens on that socket
    done = CliRunner().invoke(app, ["--database-url", url, *args])
    assert done.exit_code == 1 and isinstance(done.exception, SystemExit), done.output
    said = done.stderr.strip()
    assert said.startswith("error: cannot reach the database: ") and "\n" not in said
    assert "Traceback" not in done.output


@pytest.mark.parametrize(("command", "path"), [("serve", "/agents/x/mcp"), ("ui", "/agents/x/ui/")])
def test_serve_and_ui_with_a_database_refuse_agent_rather_than_make_a_folder_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, path: str
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("MEMDIR_HOME", str(home))
    url = f"postgresql://nobody@/nodb?host={tmp_path}"  # never reached: refused before
    done = CliRunner().invoke(app, ["--database-url", url, command, "--agent", "x"], input="")
    assert done.exit_code == 1, done.output
    assert "the database's agents are on the team server" in done.stderr and path in done.stderr
    assert not (home / "agents" / "x").exists()  # no empty folder served in its place
