"""Rows by identity: a write keeps the rows of what it did not change, moves the ones
that only moved, and leaves the index as ``memdir reindex`` would build it."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import memdir
from memdir.testing import FakeClock

_COLUMNS = (
    "path, anchor, ordinal, layer, kind, agent, title, heading, body, meta, tags, "
    "line_start, line_end, date, decay_from, tier, relevance, content_hash, vector_key"
)


def _state(memory: memdir.Memory) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """Every row of the index but ids, and every file's row: what a rebuild must match
    (a scan first adds the files no write touched, and skips those the writes did)."""
    memory.scan()
    db = memory.index.db
    db.execute("INSERT INTO items_fts (items_fts) VALUES ('integrity-check')")  # FTS in step
    rows = db.execute(f"SELECT {_COLUMNS} FROM items JOIN places USING (id)").fetchall()
    assert db.execute("SELECT count(*) FROM places").fetchone() == (len(rows),)
    items = sorted(rows, key=repr)
    files = sorted(db.execute("SELECT path, layer, store, mtime_ns, size, hash FROM files"))
    return items, files


def _rebuilt(memory: memdir.Memory) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    memory.reindex()
    return _state(memory)


def _capped(root: Path, observations: int = 5) -> Path:
    memdir.init(root)
    manifest = root / "memdir.toml"
    text = manifest.read_text().replace(
        "observations_max = 500", f"observations_max = {observations}"
    )
    manifest.write_text(text)
    return root


def _ids(memory: memdir.Memory, path: str) -> dict[str, int]:
    rows = memory.index.db.execute("SELECT anchor, id FROM items WHERE path = ?", (path,))
    return dict(rows.fetchall())


def test_saves_that_archive_leave_the_rows_a_reindex_builds(tmp_path: Path) -> None:
    """Saves past the cap (each archives the oldest), deletions, curated sections with
    bullets, notebook evictions (the same keys archived again and again), state and
    journal writes and cards: the incremental rows are the rebuilt rows."""
    clock = FakeClock("2026-11-30T10:00:00Z")
    with memdir.open(_capped(tmp_path / "mem"), clock=clock, embedder="hashing") as memory:
        for n in range(12):
            clock.advance(minutes=5)
            assert memory.knowledge.save(f"Deploys on day {n} go through the blue pool").ok
            memory.notebook.update(f"k{n % 6}", f"working on step {n}")
            if n % 4 == 0:
                memory.knowledge.update("conventions", f"- rule {n}\n- rule {n + 1}", "patch")
                memory.state.set(f"s{n % 3}", f"state {n}")
                memory.journal.append("learning", f"learned thing {n}")
            if n == 7:
                oldest = memory.knowledge.observations()[0].id
                assert memory.knowledge.delete_observations([oldest]).ok
                assert memory.state.remove("s0").ok
                memory.vault.write("blue-pool", f"The blue pool takes deploys ({n})")
        assert len(memory.knowledge.observations()) == 5
        incremental = _state(memory)
        assert incremental == _rebuilt(memory)


def test_archiving_the_oldest_moves_the_others_in_one_statement(tmp_path: Path) -> None:
    """At the cap a save deletes one row and inserts one; the other observations keep
    their rows (ids, FTS entries, vectors) and move together in one UPDATE."""
    clock = FakeClock("2026-11-30T10:00:00Z")
    with memdir.open(_capped(tmp_path / "mem", 40), clock=clock, embedder="hashing") as memory:
        for n in range(41):
            clock.advance(minutes=1)
            memory.knowledge.save(f"observation number {n} about the billing queue")
        memory.index.ensure_vectors()
        before = _ids(memory, "knowledge.md")
        statements: list[str] = []
        memory.index.db.set_trace_callback(statements.append)
        clock.advance(minutes=1)
        saved = memory.knowledge.save("one more about the billing queue")
        memory.index.db.set_trace_callback(None)
        after = _ids(memory, "knowledge.md")
        kept = set(before) & set(after)
        assert len(kept) == 39 and set(after) - kept == {saved.key}
        assert all(after[anchor] == before[anchor] for anchor in kept)
        # (the archived one, new in archive/, takes the key of its window there)
        moves = [
            sql
            for sql in statements
            if sql.startswith(("UPDATE items", "UPDATE places")) and "vector_key" not in sql
        ]
        assert len(moves) == 1
        assert memory.index.ensure_vectors() == 1  # only the new text is embedded
        assert _state(memory) == _rebuilt(memory)


def test_a_hand_edit_between_writes_is_followed(folder: Path, clock: FakeClock) -> None:
    """The file changed under the store (reordered, CRLF, an empty observation): the
    next write parses it again, and the rows still match a rebuild."""
    with memdir.open(folder, clock=clock, embedder="hashing") as memory:
        for n in range(6):
            memory.knowledge.save(f"fact {n} about the ledger")
        memory.knowledge.update("style", "- short names\n- no abbreviations")
        path = folder / "knowledge.md"
        text = path.read_text()
        head, _, observations = text.partition("## _observations\n")
        blocks = observations.split("\n### ")
        edited = head + "## _observations\n" + "\n### ".join([blocks[0], *blocks[:0:-1]])
        edited += "\n### obs_1_aaaaaa\n<!-- type: note -->\n\n"
        path.write_bytes(edited.replace("\n", "\r\n").encode())
        memory.index.scanned_at = None
        memory.search("ledger")  # the scan picks the edit up
        memory.knowledge.save("fact 7 about the ledger")
        memory.notebook.update("plan", "ship the ledger")
        assert _state(memory) == _rebuilt(memory)


def test_two_writers_on_one_folder_keep_the_index_right(folder: Path, clock: FakeClock) -> None:
    """Another process (here another open of the folder) writes between this one's
    writes: what this index remembered of the files no longer holds, and is not used."""
    first = memdir.open(folder, clock=clock, embedder="hashing")
    second = memdir.open(folder, clock=clock, embedder="hashing")
    try:
        for n in range(8):
            writer = first if n % 3 else second
            writer.knowledge.save(f"shared fact {n}")
            writer.notebook.update(f"k{n % 5}", f"step {n}")
        second.reindex()  # another process rebuilds: row ids all change
        for n in range(8, 12):
            first.knowledge.save(f"shared fact {n}")
        assert _state(first) == _rebuilt(first)
    finally:
        first.close()
        second.close()


_OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "save",
                "delete",
                "curate",
                "note",
                "state",
                "unstate",
                "journal",
                "hand",
                "crlf",
                "other",
            ]
        ),  # fmt: skip
        st.integers(0, 9),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=25)
@given(ops=_OPS)
def test_any_sequence_of_writes_leaves_the_rows_a_reindex_builds(
    ops: list[tuple[str, int]],
) -> None:
    """Writes of every store, hand edits (a repeated key, CRLF newlines) and another
    writer in between, in any order: the rows are the ones a rebuild makes."""
    clock = FakeClock("2026-11-30T10:00:00Z")
    with tempfile.TemporaryDirectory() as tmp:
        root = _capped(Path(tmp) / "mem", 4)
        with (
            memdir.open(root, clock=clock, embedder="hashing") as memory,
            memdir.open(root, clock=clock, embedder="hashing") as other,
        ):
            for op, n in ops:
                clock.advance(minutes=n)
                if op == "save":
                    memory.knowledge.save(f"note {n} on the release train", tags=[f"t{n % 3}"])
                elif op == "delete" and memory.knowledge.observations():
                    found = memory.knowledge.observations()
                    memory.knowledge.delete_observations([found[n % len(found)].id])
                elif op == "curate":
                    mode = "patch" if n % 2 else "replace"
                    memory.knowledge.update(f"topic {n % 3}", f"- point {n}\n- point {n + 1}", mode)
                elif op == "note":
                    memory.notebook.update(f"k{n % 6}", f"doing {n}")
                elif op == "state":
                    memory.state.set(f"s{n % 3}", f"value {n}")
                elif op == "unstate":
                    memory.state.remove(f"s{n % 3}")
                elif op == "hand":  # a person adds an entry whose key is already there
                    path = root / "NOTEBOOK.md"
                    path.write_text(path.read_text() + f"\n## k{n % 6}\nby hand {n}\n")
                    memory.scan()
                elif op == "crlf":
                    path = root / "knowledge.md"
                    path.write_bytes(
                        path.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
                    )
                elif op == "other":
                    other.knowledge.save(f"from the other writer {n}")
                else:
                    memory.journal.append("decision", f"chose {n} because it is simpler")
            assert _state(memory) == _rebuilt(memory)
