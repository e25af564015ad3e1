"""The derived index: updated by every write, catches hand edits, rebuilds to the same state."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import memdir
from memdir.index.embedders import HashingEmbedder
from memdir.testing import FakeClock
from pg_fixture import index_backend  # noqa: F401  (some tests on SQLite and PostgreSQL)

on_both = pytest.mark.usefixtures("index_backend")


def _rows(memory: memdir.Memory) -> dict[tuple[str, str], int]:
    rows = memory.index.db.execute("SELECT path, anchor, id FROM items").fetchall()
    return {(path, anchor): item_id for path, anchor, item_id in rows}


def _journal(folder: Path, name: str, sections: dict[str, str]) -> Path:
    path = folder / "journal" / name
    body = "".join(f"\n## {key}\n{text}\n" for key, text in sections.items())
    path.write_text(f"# {name[:10]}\n{body}")
    return path


@on_both
def test_a_write_updates_the_index_in_the_same_call(memory: memdir.Memory) -> None:
    assert memory.search("zanzibar") == []  # the first search scans once
    scanned_at = memory.index.scanned_at
    saved = memory.knowledge.save("The offsite is in Zanzibar this year", type="fact")
    memory.notebook.update("trip", "Book flights to Zanzibar")
    memory.state.set("zanzibar-visa", "visa application sent")
    hits = memory.search("zanzibar")
    assert memory.index.scanned_at == scanned_at  # found without a rescan
    found = {(hit.path, hit.anchor) for hit in hits}
    assert found == {
        ("knowledge.md", saved.key),
        ("NOTEBOOK.md", "trip"),
        ("state.md", "zanzibar-visa"),
    }


def test_appending_an_observation_touches_only_its_row(memory: memdir.Memory) -> None:
    for n in range(30):
        memory.knowledge.save(f"observation number {n}")
    before = _rows(memory)
    new = memory.knowledge.save("one more observation")
    after = _rows(memory)
    assert set(after) - set(before) == {("knowledge.md", new.key)}
    assert all(after[key] == item_id for key, item_id in before.items())


@on_both
def test_a_removed_observation_leaves_the_index(memory: memdir.Memory) -> None:
    gone = memory.knowledge.save("the password rotation happens on Mondays").key
    assert memory.search("password rotation")
    memory.knowledge.update(mode="delete", ids=[gone])
    assert all(hit.anchor != gone for hit in memory.search("password rotation"))


@on_both
def test_hand_edits_are_picked_up_by_the_next_search(folder: Path, clock: FakeClock) -> None:
    memory = memdir.open(folder, clock=clock, embedder="hashing")
    assert memory.search("ostrich") == []
    journal = _journal(folder, "2026-11-29.md", {"Morning": "Saw an ostrich at the zoo"})
    memory.index.scanned_at = None  # as if rescan_seconds had passed
    [hit] = memory.search("ostrich")
    assert (hit.path, hit.anchor, hit.kind) == ("journal/2026-11-29.md", "Morning", "journal")
    assert memory.get(hit.path, hit.line_start, hit.line_end).text == (
        "## Morning\nSaw an ostrich at the zoo"
    )
    journal.unlink()
    memory.index.scanned_at = None
    assert memory.search("ostrich") == []


def test_scan_skips_unchanged_files_and_rehashes_touched_ones(memory: memdir.Memory) -> None:
    first = memory.scan()
    assert first.changed or first.unchanged  # the folder's starter files
    again = memory.scan()
    assert not again.changed and again.unchanged == first.unchanged + len(first.added)
    rows = _rows(memory)
    os.utime(memory.root / "knowledge.md", ns=(1, 1))  # new mtime, same bytes
    touched = memory.scan()
    assert not touched.changed and _rows(memory) == rows


def test_a_rescan_sees_new_files_and_rows_another_process_changed(
    folder: Path, clock: FakeClock, tmp_path: Path
) -> None:
    first = memdir.open(folder, clock=clock, embedder="hashing")
    (folder / "vault" / "crm").mkdir(parents=True)
    _journal(folder, "2026-11-28.md", {"Note": "the walrus was fed"})
    first.scan()
    assert [hit.anchor for hit in first.search("walrus")] == ["Note"]
    card = folder / "vault" / "crm" / "wanda.md"
    card.write_text("# Wanda\n\nKeeps the walrus enclosure.\n")
    (folder / "notes.txt").write_text("walrus feeding times are posted\n")
    report = first.scan()  # the same folders, new names in them
    assert sorted(report.added) == ["notes.txt", "vault/crm/wanda.md"]
    assert not first.scan().changed
    journal = folder / "journal" / "2026-11-28.md"
    journal.rename(tmp_path / "away.md")
    second = memdir.open(folder, clock=clock, embedder="hashing")
    assert second.scan().removed == ["journal/2026-11-28.md"]  # its rows are gone
    (tmp_path / "away.md").rename(journal)  # back, with the same mtime and size
    assert first.scan().added == ["journal/2026-11-28.md"]
    assert sorted(hit.path for hit in first.search("walrus")) == [
        "journal/2026-11-28.md", "notes.txt", "vault/crm/wanda.md",
    ]  # fmt: skip


def test_a_rescan_sees_names_added_to_folders_it_listed_long_ago(
    folder: Path, clock: FakeClock
) -> None:
    vault = folder / "vault" / "crm"
    vault.mkdir(parents=True)
    (vault / "otto.md").write_text("# Otto\n\nFeeds the okapi.\n")
    old = 1_700_000_000_000_000_000  # the folders' mtimes long before this scan
    for path in (vault, vault.parent, folder / "journal", folder):
        os.utime(path, ns=(old, old))
    memory = memdir.open(folder, clock=clock, embedder="hashing")
    assert memory.scan().added  # listed once, mtimes old enough to keep the listing
    assert not memory.scan().changed  # kept: nothing listed again, nothing new
    (vault / "olga.md").write_text("# Olga\n\nWalks the okapi.\n")  # the folder moves on
    (vault / "deep").mkdir()
    (vault / "deep" / "oleg.md").write_text("# Oleg\n\nBrushes the okapi.\n")
    (vault / "otto.md").unlink()
    report = memory.scan()
    assert sorted(report.added) == ["vault/crm/deep/oleg.md", "vault/crm/olga.md"]
    assert report.removed == ["vault/crm/otto.md"]
    (vault / "olga.md").write_text("# Olga\n\nWalks the okapi twice a day.\n")
    assert memory.scan().updated == ["vault/crm/olga.md"]  # an edit: its own stat moved


def test_a_name_added_in_the_same_tick_as_the_last_listing_is_seen(
    folder: Path, clock: FakeClock
) -> None:
    """A coarse clock (FAT: two seconds) leaves a folder's mtime as it was when a name is
    added in the same tick: a folder modified just before it was listed is listed again."""
    vault = folder / "vault" / "crm"
    vault.mkdir(parents=True)
    (vault / "otto.md").write_text("# Otto\n\nFeeds the okapi.\n")
    memory = memdir.open(folder, clock=clock, embedder="hashing")
    memory.scan()
    tick = vault.stat().st_mtime_ns
    (vault / "olga.md").write_text("# Olga\n\nWalks the okapi.\n")
    os.utime(vault, ns=(tick, tick))  # the same tick: the mtime did not move
    assert memory.scan().added == ["vault/crm/olga.md"]


def test_a_layer_path_through_a_linked_folder_is_indexed_only_inside(
    folder: Path, clock: FakeClock, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "SOUL.md").write_text("# Soul\n\nThe narwhal is a secret kept elsewhere.\n")
    shutil.rmtree(folder / "identity")
    (folder / "identity").symlink_to(outside)  # identity/SOUL.md is a layer's own path
    memory = memdir.open(folder, clock=clock, embedder="hashing")
    assert memory.search("narwhal") == []
    (folder / "identity").unlink()
    (folder / "kept" / "identity").mkdir(parents=True)
    (folder / "kept" / "identity" / "SOUL.md").write_text("# Soul\n\nThe narwhal stays home.\n")
    (folder / "identity").symlink_to(Path("kept") / "identity")  # a link inside the folder
    memory.index.scanned_at = None
    assert "identity/SOUL.md" in {hit.path for hit in memory.search("narwhal")}


def test_rescan_interval_comes_from_the_manifest(folder: Path, clock: FakeClock) -> None:
    text = (folder / "memdir.toml").read_text() + "\n[index]\nrescan_seconds = 3600\n"
    (folder / "memdir.toml").write_text(text)
    memory = memdir.open(folder, clock=clock, embedder="hashing")
    memory.search("anything")
    _journal(folder, "2026-11-29.md", {"Note": "a quokka smiled"})
    assert memory.search("quokka") == []  # within the interval: not yet seen
    memory.scan()
    assert [hit.anchor for hit in memory.search("quokka")] == ["Note"]


def test_reindex_gives_the_same_hits(memory: memdir.Memory, folder: Path) -> None:
    memory.knowledge.save("Deploys happen on Tuesdays after the standup", tags=["ops"])
    memory.knowledge.save("The standup moved to 9:30 in November")
    memory.knowledge.update("conventions", "- Deploy only after the standup")
    _journal(folder, "2026-11-28.md", {"Standup": "Talked about the deploy freeze"})
    queries = ["standup", "deploy freeze", "when do deploys happen", ""]

    def results() -> list[list[tuple[str, str, float]]]:
        return [
            [(h.path, h.anchor, round(h.score, 6)) for h in memory.search(q, mode="deep")]
            for q in queries
        ]

    before = results()
    memory.reindex()
    assert results() == before
    memory.close()
    (folder / ".memdir" / "index.db").unlink()  # deleting the index loses nothing
    memory = memdir.open(folder, clock=memory.clock, embedder="hashing")
    assert results() == before


def test_a_new_embedder_re_embeds_instead_of_crashing(folder: Path, clock: FakeClock) -> None:
    small = memdir.open(folder, clock=clock, embedder=HashingEmbedder(dim=32))
    small.knowledge.save("vectors of one size")
    assert small.search("vectors")[0].semantic is not None
    small.close()
    large = memdir.open(folder, clock=clock, embedder=HashingEmbedder(dim=64))
    hit = large.search("vectors")[0]
    assert hit.semantic is not None
    models = dict(large.index.db.execute("SELECT model, count(*) FROM vectors GROUP BY model"))
    assert {"hashing-v1-32", "hashing-v1-64"} <= set(models)
    large.reindex()  # a rebuild drops vectors of other embedders
    models = dict(large.index.db.execute("SELECT model, count(*) FROM vectors GROUP BY model"))
    assert set(models) == {"hashing-v1-64"}


@on_both
def test_same_id_other_dimension_is_ignored_not_fatal(folder: Path, clock: FakeClock) -> None:
    class Liar(HashingEmbedder):
        @property
        def id(self) -> str:
            return "same-id"

    first = memdir.open(folder, clock=clock, embedder=Liar(dim=16))
    first.knowledge.save("dimension mismatch")
    first.search("dimension")
    first.close()
    second = memdir.open(folder, clock=clock, embedder=Liar(dim=48))
    [hit] = second.search("dimension mismatch")
    assert hit.keyword is not None and hit.semantic is None


@on_both
def test_an_index_failure_never_fails_the_write(
    memory: memdir.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.search("warm up")

    def broken(*args: object, **kwargs: object) -> bool:
        raise RuntimeError("disk full")

    monkeypatch.setattr(memory.index, "update_file", broken)
    result = memory.knowledge.save("saved while the index is broken")
    assert result.ok
    assert any("could not index knowledge.md" in str(n) for n in memory.check())
    monkeypatch.undo()
    assert [h.snippet for h in memory.search("broken", kinds=["observation"])]


@on_both
def test_items_carry_line_ranges_that_memory_get_opens(memory: memdir.Memory) -> None:
    memory.knowledge.update("conventions", "- snake_case\n- tabs are banned")
    saved = memory.knowledge.save("Line ranges point at the observation")
    for hit in memory.search("line ranges observation"):
        opened = memory.get(hit.path, hit.line_start, hit.line_end)
        assert opened.ok and hit.title in opened.text
    # a curated section of bullets is found one bullet at a time, its lines exactly
    [bullet] = [h for h in memory.search("tabs banned") if h.anchor == "conventions"]
    opened = memory.get(bullet.path, bullet.line_start, bullet.line_end)
    assert opened.text == "- tabs are banned" and bullet.title == "conventions"
    [hit] = [h for h in memory.search("line ranges") if h.anchor == saved.key]
    assert memory.get(hit.path, hit.line_start, hit.line_end).text.endswith(
        "Line ranges point at the observation"
    )


def test_schema_migrations_run_once_and_are_recorded(tmp_path: Path) -> None:
    from memdir.index.db import MIGRATIONS, connect

    path = tmp_path / "index.db"
    first = connect(path)
    names = [row[0] for row in first.execute("SELECT name FROM migrations ORDER BY name")]
    assert names == [name for name, _ in MIGRATIONS]
    first.execute("INSERT INTO meta (key, value) VALUES ('kept', 'yes')")
    first.close()
    second = connect(path)  # nothing to apply: the data stays
    assert second.execute("SELECT value FROM meta WHERE key = 'kept'").fetchone() == ("yes",)


def test_an_index_from_another_extractor_version_is_rebuilt(memory: memdir.Memory) -> None:
    memory.knowledge.save("versioned observation")
    memory.index.db.execute("UPDATE meta SET value = 'old' WHERE key = 'extract_version'")
    memory.close()
    reopened = memdir.open(memory.root, clock=memory.clock, embedder="hashing")
    assert reopened.index.db.execute("SELECT count(*) FROM items").fetchone() == (0,)
    assert [hit.snippet for hit in reopened.search("versioned")] == ["**versioned** observation"]


@on_both
def test_reindex_and_decay_report_their_progress(memory: memdir.Memory) -> None:
    for n in range(5):
        assert memory.vault.write(f"card-{n}", f"Card number {n}.").ok
    steps: list[tuple[int, int]] = []
    memory.reindex(progress=lambda done, total: steps.append((done, total)))
    files = len(memory.index.files_on_disk())
    assert steps[0][1] == files and steps[-1][0] == steps[-1][1]  # reads, then embeds to the end
    assert all(0 < done <= total for done, total in steps)
    decayed: list[tuple[int, int]] = []
    memory.decay(progress=lambda done, total: decayed.append((done, total)))
    assert decayed == [(5, 5)]


KILLED_EMBEDDING = """
    import sys, time, memdir
    from memdir.index.embedders import HashingEmbedder

    real, calls = HashingEmbedder.embed, []

    def embed(self, texts):
        calls.append(len(texts))
        if len(calls) == 2:  # the first batch is committed; now the kill
            print("one batch embedded", flush=True)
            time.sleep(60)
        return real(self, texts)

    HashingEmbedder.embed = embed
    memdir.open(sys.argv[1], embedder="hashing").reindex()
"""


def test_a_killed_reindex_keeps_what_it_embedded_and_the_next_embeds_the_rest(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL while the second batch is embedded: the first batch's vectors are
    committed, and the next reindex reads every file again but embeds only the rest."""
    for day in range(1, 4):
        notes = {f"note {n}": f"Day {day}, note {n} on topic {n * 7 % 13}." for n in range(200)}
        _journal(folder, f"2026-10-0{day}.md", notes)
    command = [sys.executable, "-c", textwrap.dedent(KILLED_EMBEDDING), str(folder)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"one batch embedded\n"
    os.kill(child.pid, signal.SIGKILL)
    child.communicate()
    with memdir.open(folder, embedder="hashing") as memory:
        embedded, texts = memory.index.vector_counts()
        assert embedded == 256 and texts > 600
        sizes: list[int] = []
        real = HashingEmbedder.embed

        def counted(self: HashingEmbedder, batch: list[str]) -> object:
            sizes.append(len(batch))
            return real(self, batch)

        monkeypatch.setattr(HashingEmbedder, "embed", counted)
        memory.reindex()
        assert sum(sizes) == texts - 256 and memory.index.vector_counts() == (texts, texts)
