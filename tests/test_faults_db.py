"""Damaged derived databases: a truncated, overwritten, page-zeroed or schema-broken
``.memdir/index.db`` or ``.memdir/history.db`` is moved aside, rebuilt (the index) or
restarted (the history), reported by a notice and by ``memdir doctor``; ``memdir
doctor --repair`` reads the damaged history's rows back, and a second run changes nothing.

Real SQLite files damaged the way disks damage them, and the real CLI entry point."""

from __future__ import annotations

import gc
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import memdir
from memdir.cli import app
from memdir.maintain.graph import GRAPH_FILE
from memdir.results import Notice
from memdir.sqlite import moved_aside
from memdir.stores.history import History
from memdir.testing import FakeClock

ACTIVITIES = 600
MOVED_NAME = "corrupt-20261130T100000Z"  # the FakeClock's moment


@pytest.fixture(autouse=True)
def hashing_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")


def invoke(folder: Path, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--dir", str(folder)])


def opened(folder: Path, clock: FakeClock) -> memdir.Memory:
    return memdir.open(folder, clock=clock, embedder="hashing")


def settle(path: Path) -> None:
    """Everything in the main file, no WAL beside it: a disk damages what is on it."""
    gc.collect()  # a Memory nobody closed (memdir.init's) lets its connection go
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    for suffix in ("-wal", "-shm"):
        assert not path.with_name(path.name + suffix).exists() or path.stat().st_size


def page_size(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[16:18], "big")


def zero_page(path: Path, page: int) -> None:
    size = page_size(path)
    with path.open("r+b") as handle:
        handle.seek((page - 1) * size)
        handle.write(b"\0" * size)


def root_page(path: Path, table: str) -> int:
    db = sqlite3.connect(path)
    try:
        row = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    finally:
        db.close()
    return int(row[0])


def leaf_pages(path: Path, table: str) -> list[int]:
    """The leaves under a table's root (an interior b-tree page: flag 5, cell count at
    3, right-most child at 8, then the cell pointers, each cell a child page number)."""
    size = page_size(path)
    root = root_page(path, table)
    page = path.read_bytes()[(root - 1) * size : root * size]
    assert page[0] == 5, "the table should span several pages"
    cells = int.from_bytes(page[3:5], "big")
    children = []
    for n in range(cells):
        at = int.from_bytes(page[12 + 2 * n : 14 + 2 * n], "big")
        children.append(int.from_bytes(page[at : at + 4], "big"))
    return [*children, int.from_bytes(page[8:12], "big")]


def truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def garbage(path: Path) -> None:
    path.write_bytes(b"not a database, just bytes " * 4000)


def broken_schema(table: str) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        db = sqlite3.connect(path)
        db.execute("PRAGMA writable_schema = ON")
        db.execute("UPDATE sqlite_master SET sql = 'CREATE TABLE x (' WHERE name = ?", (table,))
        db.commit()
        db.close()

    return damage


def dropped(table: str) -> Callable[[Path], None]:
    """The migrations say the table is there; it is not."""

    def damage(path: Path) -> None:
        db = sqlite3.connect(path)
        db.execute(f"DROP TABLE {table}")
        db.commit()
        db.close()

    return damage


def zeroed_root(table: str) -> Callable[[Path], None]:
    return lambda path: zero_page(path, root_page(path, table))


# -- the index ---------------------------------------------------------------------


@pytest.fixture
def indexed(folder: Path, clock: FakeClock) -> Path:
    with opened(folder, clock) as memory:
        for n in range(60):
            memory.journal.append("context", f"note {n}: the deploy pipeline runs on Fridays")
        memory.knowledge.save("The payment terms with Acme are net 30.")
        assert memory.search("payment terms")
    settle(folder / ".memdir" / "index.db")
    return folder


INDEX_DAMAGE = {
    "garbage": garbage,
    "truncated": truncate,
    "zeroed-page": zeroed_root("items"),
    "broken-schema": broken_schema("items"),
    "missing-table": dropped("items"),
}


@pytest.mark.parametrize("damage", INDEX_DAMAGE.values(), ids=INDEX_DAMAGE.keys())
def test_a_damaged_index_is_moved_aside_and_rebuilt(
    indexed: Path, clock: FakeClock, damage: Callable[[Path], None]
) -> None:
    index = indexed / ".memdir" / "index.db"
    damage(index)
    with opened(indexed, clock) as memory:
        hits = memory.search("payment terms")
        assert hits and hits[0].path == "knowledge.md"
        assert memory.knowledge.save("The invoice for Acme is due on Friday.").ok
        assert any("invoice" in hit.snippet for hit in memory.search("invoice Acme"))
        [notice] = [n for n in memory.notices if n.store == "index"]
        moved = f".memdir/index.db.{MOVED_NAME}"
        assert notice.message.startswith(".memdir/index.db was damaged (")
        assert notice.message.endswith(f"moved aside to {moved} and rebuilt from the files")
    assert (indexed / moved).is_file()
    assert [p.name for p in moved_aside(index)] == [f"index.db.{MOVED_NAME}"]

    found = invoke(indexed, "doctor")
    assert found.exit_code == 1
    assert found.stdout.startswith(
        f"[database] {moved}: a damaged index moved aside on 2026-11-30 10:00 UTC; the index "
        "was rebuilt from the files and nothing in this file is needed"
    )
    repaired = invoke(indexed, "doctor", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert repaired.stdout == (
        "Repaired:\n"
        f"  index: deleted {moved} (a damaged index moved aside on 2026-11-30 10:00 UTC, "
        "rebuilt since; nothing in it was needed)\n"
        "No problems found.\n"
    )
    assert not (indexed / moved).exists()
    again = invoke(indexed, "doctor", "--repair")
    assert (again.exit_code, again.stdout) == (0, "Nothing to repair.\nNo problems found.\n")


def test_doctor_reports_a_damaged_index_without_touching_it(indexed: Path) -> None:
    index = indexed / ".memdir" / "index.db"
    zero_page(index, root_page(index, "items"))
    before = index.read_bytes()
    found = invoke(indexed, "doctor", "--json")
    assert found.exit_code == 1
    [finding] = [f for f in json.loads(found.stdout) if f["check"] == "database"]
    assert finding["path"] == ".memdir/index.db"
    assert finding["message"].startswith("damaged (")
    assert index.read_bytes() == before and moved_aside(index) == []

    repaired = invoke(indexed, "doctor", "--repair", "--json")
    assert repaired.exit_code == 0, repaired.output
    data = json.loads(repaired.stdout)
    assert data["findings"] == []
    [line] = data["repaired"]
    assert line.startswith("index: .memdir/index.db was damaged (") and "rebuilt it" in line
    assert moved_aside(index) == []  # a damaged index holds nothing worth keeping
    assert "payment" in invoke(indexed, "search", "payment terms").stdout


def test_an_error_that_is_not_damage_goes_up_and_moves_nothing(
    memory: memdir.Memory,
) -> None:
    memory.knowledge.save("The payment terms with Acme are net 30.")
    with pytest.raises(sqlite3.OperationalError, match="no such table: nowhere"):
        memory.index.guard(lambda: memory.index.db.execute("SELECT * FROM nowhere"))
    assert moved_aside(memory.index.path) == []
    assert memory.notices == []
    assert memory.search("payment")


# -- the history -------------------------------------------------------------------


def fill_history(folder: Path, clock: FakeClock) -> list[str]:
    with opened(folder, clock) as memory:
        ids = []
        for n in range(ACTIVITIES):
            with memory.history.activity("task", f"Task {n}: reconcile the Acme invoices") as run:
                run.log("text", f"step {n} " + "detail " * 20)
                ids.append(run.id)
        memory.history.receive("bob", "Can you send the report?")
    settle(folder / ".memdir" / "history.db")
    return ids


def rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the history's tables (without rowids), to compare runs."""
    db = sqlite3.connect(path)
    try:
        return {
            table: sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in ("agent_activities", "agent_activity_logs", "mailbox_items")
        }
    finally:
        db.close()


@pytest.fixture
def lived(folder: Path, clock: FakeClock) -> tuple[Path, list[str]]:
    return folder, fill_history(folder, clock)


HISTORY_DAMAGE = {
    "truncated": truncate,
    "garbage": garbage,
    "zeroed-root": zeroed_root("agent_activities"),
    "broken-schema": broken_schema("agent_decisions"),
}


@pytest.mark.parametrize("damage", HISTORY_DAMAGE.values(), ids=HISTORY_DAMAGE.keys())
def test_a_damaged_history_is_set_aside_and_restarted(
    lived: tuple[Path, list[str]], clock: FakeClock, damage: Callable[[Path], None]
) -> None:
    folder, _ = lived
    history = folder / ".memdir" / "history.db"
    damage(history)
    moved = f".memdir/history.db.{MOVED_NAME}"
    with opened(folder, clock) as memory:
        memory.history.recent(ACTIVITIES * 2)  # reads every activity: finds any bad page
        with memory.history.activity("task", "After the damage") as run:
            run.log("text", "the agent keeps working")
        assert [a.label for a in memory.history.recent(5)] == ["After the damage"]
        assert memory.knowledge.save("Acme pays net 30.").ok
        assert memory.search("Acme pays")
        [notice] = [n for n in memory.notices if n.store == "history"]
        assert notice.message.startswith(".memdir/history.db was damaged (")
        assert f"moved aside to {moved} and started a fresh one" in notice.message
        [restart] = memory.history.restarts()
        assert (restart.moved_to, restart.salvaged_at) == (f"history.db.{MOVED_NAME}", None)
    assert (folder / moved).is_file()

    found = invoke(folder, "doctor")
    assert found.exit_code == 1
    [line] = [x for x in found.stdout.splitlines() if x.startswith(f"[database] {moved}: ")]
    assert f"history: moved aside a damaged history.db to {moved} on 2026-11-30" in line

    first = invoke(folder, "doctor", "--repair")
    assert f"  history: read back from {moved}: " in first.stdout
    after_first = rows(history)
    assert [a for a in after_first["agent_activities"] if a[3] == "After the damage"]
    second = invoke(folder, "doctor", "--repair")
    assert second.stdout.startswith("Nothing to repair.\n")
    assert rows(history) == after_first
    assert f"[database] {moved}: a damaged history kept after `memdir doctor --repair`" in (
        second.stdout
    )


def test_repair_reads_back_the_rows_around_one_damaged_page(
    lived: tuple[Path, list[str]], clock: FakeClock
) -> None:
    folder, ids = lived
    history = folder / ".memdir" / "history.db"
    leaves = leaf_pages(history, "agent_activities")
    zero_page(history, leaves[len(leaves) // 2])

    found = invoke(folder, "doctor")  # quick_check sees the page no query has touched yet
    assert found.exit_code == 1
    assert "[database] .memdir/history.db: damaged (quick_check: " in found.stdout

    repaired = invoke(folder, "doctor", "--repair", "--json")
    done = [line for line in json.loads(repaired.stdout)["repaired"] if "history" in line]
    assert done[0].startswith("history: .memdir/history.db was damaged (quick_check: ")
    assert done[1].startswith("history: read back from .memdir/history.db.corrupt-")
    with opened(folder, clock) as memory:
        [restart] = memory.history.restarts()
        assert restart.salvage is not None
        tables = {t["table"]: t for t in restart.salvage["tables"]}
        activities = tables["agent_activities"]
        assert 0 < activities["lost"] < 50
        assert activities["recovered"] + activities["lost"] == ACTIVITIES
        back = {a.id for a in memory.history.recent(ACTIVITIES * 2)}
        assert len(back) == activities["recovered"] and back < set(ids)
        kept = sorted(back)[0]
        detail = memory.history.get(kept)
        assert detail is not None and detail.logs[0].content.startswith("step ")
        assert memory.history.search("reconcile Acme invoices", limit=3)  # FTS rebuilt
        assert tables["mailbox_items"]["recovered"] == 1

    before = rows(history)
    again = invoke(folder, "doctor", "--repair", "--json")
    assert json.loads(again.stdout)["repaired"] == []
    assert rows(history) == before


def test_the_last_backup_fills_in_what_the_damaged_page_lost(
    lived: tuple[Path, list[str]], clock: FakeClock
) -> None:
    folder, ids = lived
    history = folder / ".memdir" / "history.db"
    copy = folder / ".memdir" / "backup" / "history.db"
    copy.parent.mkdir()
    with sqlite3.connect(history) as source, sqlite3.connect(copy) as target:
        source.backup(target)  # what `memdir backup` keeps
    leaves = leaf_pages(history, "agent_activities")
    zero_page(history, leaves[len(leaves) // 2])
    repaired = invoke(folder, "doctor", "--repair")
    assert "  history: filled in from the last backup, .memdir/backup/history.db: " in (
        repaired.stdout
    )
    with opened(folder, clock) as memory:
        assert {a.id for a in memory.history.recent(ACTIVITIES * 2)} == set(ids)


def test_another_process_that_set_the_history_aside_is_followed_not_repeated(
    lived: tuple[Path, list[str]], clock: FakeClock
) -> None:
    folder, _ = lived
    with opened(folder, clock) as first, opened(folder, clock) as second:
        first.history.start_activity("task", "before")
        moved = second.history.mend("found damaged by another process")
        assert moved is not None
        first.history.start_activity("task", "after")  # goes to the fresh file
        assert [a.label for a in second.history.recent(5)] == ["after"]
        assert moved_aside(folder / ".memdir" / "history.db") == [moved]
        assert [n.store for n in first.notices] == []


def test_a_history_opened_alone_keeps_its_api(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "history.db"
    history = History(path, "agent", clock)
    history.start_activity("chat", "Hello")
    history.close()
    garbage(path)
    history = History(path, "agent", clock)  # no lock, no notice: still restarts
    assert history.recent() == []
    assert [r.reason for r in history.restarts()] == ["file is not a database"]
    history.close()


def test_a_damaged_history_in_a_read_only_folder_reads_as_empty(
    lived: tuple[Path, list[str]], clock: FakeClock
) -> None:
    folder, _ = lived
    path = folder / ".memdir" / "history.db"
    zero_page(path, root_page(path, "agent_activities"))
    before = path.read_bytes()
    notices: list[Notice] = []
    history = History(path, "agent", clock, on_notice=notices.append, read_only="read-only here")
    assert history.recent(ACTIVITIES * 2) == []  # not set aside: it cannot be, here
    [notice] = notices
    assert "is damaged (database disk image is malformed) and the folder is read-only" in (
        notice.message
    )
    history.close()
    assert path.read_bytes() == before and moved_aside(path) == []


# -- other state under .memdir --------------------------------------------------------


@pytest.mark.parametrize(("layout", "where"), [("vault", "vault/.graph"), ("default", ".memdir")])
def test_a_folder_where_graph_json_goes_does_not_stop_the_graph(
    tmp_path: Path, clock: FakeClock, layout: str, where: str
) -> None:
    root = tmp_path / "vault-mem"
    memdir.init(root, layout=layout)  # the vault layout keeps its graph in vault/.graph/
    (root / where / GRAPH_FILE).mkdir()
    with opened(root, clock) as memory:
        graph = memory.graph()
        assert graph.cards == {} and "could not be saved" in graph.note
    found = invoke(root, "doctor")
    assert f"[state] {where}/{GRAPH_FILE}: " in found.stdout
    assert invoke(root, "moc").exit_code == 0


@pytest.mark.parametrize(
    ("name", "command"), [("index.db", ("search", "acme")), ("history.db", ("recall", "list"))]
)
def test_a_folder_where_a_database_goes_is_an_error_line(
    folder: Path, name: str, command: tuple[str, ...]
) -> None:
    """SQLite's "unable to open database file" reached the user as a traceback."""
    path = folder / ".memdir" / name
    gc.collect()  # memdir.init's Memory lets its connections go
    for old in [path, *(path.with_name(name + suffix) for suffix in ("-wal", "-shm"))]:
        old.unlink(missing_ok=True)
    path.mkdir()
    result = invoke(folder, *command)
    assert (result.exit_code, result.stdout) == (1, ""), result.output
    assert result.stderr == (
        f"error: {path} is a folder, not a database: move it away (`memdir doctor --repair` "
        "moves it aside, keeping what is in it), and memdir makes a new one\n"
    )
    assert path.is_dir() and list(path.iterdir()) == []


LOOPS = pytest.mark.parametrize(
    ("name", "command"), [("index.db", ("search", "acme")), ("history.db", ("recall", "list"))]
)


def _loop_where(folder: Path, name: str) -> tuple[Path, Path]:
    """A loop of two links (``name`` -> other.db -> ``name``) where ``name`` goes."""
    path = folder / ".memdir" / name
    gc.collect()  # memdir.init's Memory lets its connections go
    for old in [path, *(path.with_name(name + suffix) for suffix in ("-wal", "-shm"))]:
        old.unlink(missing_ok=True)
    other = path.with_name("other.db")
    path.symlink_to(other.name)
    other.symlink_to(path.name)
    return path, other


@LOOPS
def test_a_loop_of_links_where_a_database_goes_is_an_error_line(
    folder: Path, name: str, command: tuple[str, ...]
) -> None:
    """A link that leads to itself was '[Errno 40] Too many levels of symbolic links'."""
    path, other = _loop_where(folder, name)
    result = invoke(folder, *command)
    assert (result.exit_code, result.stdout) == (1, ""), result.output
    assert result.stderr == (
        f"error: {path} is a loop of links, not a database: remove the link "
        "(`memdir doctor --repair` does), and memdir makes a new one\n"
    )
    assert path.is_symlink() and other.is_symlink()  # left as they were


@LOOPS
def test_doctor_finds_a_loop_of_links_where_a_database_goes_and_repair_removes_it(
    folder: Path, name: str, command: tuple[str, ...]
) -> None:
    path, other = _loop_where(folder, name)
    found = invoke(folder, "doctor", "--json")
    assert found.exit_code == 1, found.output
    ours = [p for p in json.loads(found.stdout) if p["path"] == f".memdir/{name}"]
    assert [p["check"] for p in ours] == ["database"]
    assert ours[0]["message"].startswith("a loop of links, not a database: ")
    assert "`memdir doctor --repair` removes it and " in ours[0]["message"]
    repaired = invoke(folder, "doctor", "--repair")
    assert repaired.exit_code == 0, repaired.output
    assert f".memdir/{name} was a loop of links, not a database: removed the link" in (
        repaired.stdout
    )
    assert not path.is_symlink() and other.is_symlink()  # only the loop's own link went
    assert invoke(folder, *command).exit_code == 0
    assert invoke(folder, "doctor").exit_code == 0


@pytest.mark.parametrize("name", ["index.db", "history.db"])
def test_doctor_repair_moves_a_folder_where_a_database_goes_aside_and_keeps_it(
    folder: Path, name: str
) -> None:
    """A folder there was only an error line; --repair moves it aside, whole, and the
    database is made afresh (the index rebuilt from the files, a fresh history)."""
    (folder / "vault" / "acme.md").write_text("# Acme\n\nAcme Corp makes anvils.\n")
    path = folder / ".memdir" / name
    gc.collect()  # memdir.init's Memory lets its connections go
    for old in [path, *(path.with_name(name + suffix) for suffix in ("-wal", "-shm"))]:
        old.unlink(missing_ok=True)
    path.mkdir()
    (path / "notes.txt").write_text("someone put this here\n")
    found = invoke(folder, "doctor", "--json")
    assert found.exit_code == 1, found.output
    ours = [p for p in json.loads(found.stdout) if p["path"] == f".memdir/{name}"]
    assert [p["check"] for p in ours] == ["database"]
    assert ours[0]["message"].startswith("a folder, not a database: ")
    assert (
        f"`memdir doctor --repair` moves it aside to {name}.corrupt-<UTC stamp>"
        in ours[0]["message"]
    )
    assert path.is_dir() and (path / "notes.txt").is_file()  # doctor alone moves nothing

    repaired = invoke(folder, "doctor", "--repair", "--json")
    assert repaired.exit_code == 1, repaired.output  # the kept folder is still reported
    report = json.loads(repaired.stdout)
    (kept,) = [p for p in path.parent.iterdir() if p.name.startswith(f"{name}.corrupt-")]
    assert kept.is_dir() and (kept / "notes.txt").read_text() == "someone put this here\n"
    assert path.is_file()
    (line,) = [line for line in report["repaired"] if f".memdir/{name} " in line]
    assert f".memdir/{name} was a folder, not a database: moved it aside to .memdir/" in line
    assert kept.name in line
    if name == "history.db":
        assert "the folder is kept as it was (a history is not derived" in line
    assert [(p["check"], p["path"]) for p in report["findings"]] == [
        ("database", f".memdir/{kept.name}")
    ]
    assert "memdir deletes no folder: look at what is in it" in report["findings"][0]["message"]

    search = invoke(folder, "search", "anvils")
    assert search.exit_code == 0 and "vault/acme.md" in search.stdout, search.output
    assert invoke(folder, "recall", "list").exit_code == 0
    again = invoke(folder, "doctor", "--repair")
    assert again.stdout.startswith("Nothing to repair.\n"), again.output
    assert (kept / "notes.txt").is_file()
