"""Bulk writes into the PostgreSQL index: a push or a reindex inserts each row with its
vector (made before the insert, or kept from the row it replaces), one statement a
batch, in the folder lock's transaction; the rows are the ones a file's own write
makes, and a bulk job that fails leaves none of its rows."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import memdir
from memdir.index.embedders import Embedder, Vectors, load_embedder
from memdir.memory import open_agent
from memdir.storage.postgres.db import Database, close_shared
from memdir.storage.postgres.index import PgIndex, index_text
from memdir.storage.transfer import push

JOURNAL = "# Journal {day}\n\n" + "".join(
    f"## Entry {n}\n<!-- date: 2026-11-{{day2}}T09:0{n}:00Z -->\nOn day {{day}} note {n}: "
    f"{word} by the harbour with the kids.\n\n"
    for n, word in enumerate(("sailing", "painting", "running", "reading", "cooking"))
)


class Counting:
    """An embedder that counts the texts it is given (the hashing embedder's vectors)."""

    def __init__(self) -> None:
        inner = load_embedder("hashing")
        assert inner is not None
        self.inner: Embedder = inner
        self.texts: list[str] = []

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture
def url(pg_url: str, pg_schema: str) -> Iterator[str]:
    yield pg_url
    close_shared()


def _folder(root: Path, days: int = 12) -> Path:
    memdir.init(root, agent="bulk")
    (root / "journal").mkdir(exist_ok=True)
    for day in range(1, days + 1):
        text = JOURNAL.replace("{day2}", f"{day:02d}").replace("{day}", f"2026-11-{day:02d}")
        (root / "journal" / f"2026-11-{day:02d}.md").write_text(text)
    return root


def _rows(db: Database, agent: str) -> list[tuple[object, ...]]:
    return (
        db.reader()
        .execute(
            "SELECT path, anchor, ordinal, kind, title, heading, body, meta, tags, date, "
            "content_hash, vector_key, line_start, line_end, layer, tier, decay_from, relevance, "
            "ntokens, tsv::text, tf::text, model FROM items WHERE agent = %s "
            "ORDER BY path, ordinal",
            (agent,),
        )
        .fetchall()
    )


def _stats(db: Database, agent: str) -> tuple[int, int]:
    row = (
        db.reader()
        .execute("SELECT s.items, s.tokens FROM index_stats AS s WHERE s.agent = %s", (agent,))
        .fetchone()
    )
    counted = (
        db.reader()
        .execute("SELECT count(*), coalesce(sum(ntokens), 0) FROM items WHERE agent = %s", (agent,))
        .fetchone()
    )
    assert row is not None and counted is not None
    assert (int(row[0]), int(row[1])) == (int(counted[0]), int(counted[1]))  # BM25's N, |D|
    return int(row[0]), int(row[1])


def _texts_embed_to_their_vectors(db: Database, agent: str, embedder: Embedder) -> int:
    rows = (
        db.reader()
        .execute(
            "SELECT heading, meta, body, embedding, model FROM items WHERE agent = %s", (agent,)
        )
        .fetchall()
    )
    for heading, meta, body, vector, model in rows:
        assert model == embedder.id and vector is not None
        text = "\n".join(part for part in (heading, meta, body) if part)
        expected = np.asarray(embedder.embed([text])[0], dtype=np.float32)
        assert np.allclose(vector.to_numpy(), expected, atol=1e-6)
    return len(rows)


def test_a_push_leaves_every_text_embedded_and_the_rows_a_file_write_makes(
    tmp_path: Path, url: str, pg_schema: str, pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")
    folder = _folder(tmp_path / "bulk")
    push(url, "pushed", folder, schema=pg_schema)
    embedder = load_embedder("hashing")
    assert embedder is not None
    assert _texts_embed_to_their_vectors(pg_db, "pushed", embedder) > 60
    with open_agent(url, "pushed", embedder="hashing", schema=pg_schema) as memory:
        assert memory.index.ensure_vectors() == 0  # nothing left to embed
        made, texts = memory.index.vector_counts()
        assert made == texts > 0
        assert memory.search("sailing by the harbour")  # found by meaning and words
    # the same files written one at a time (no bulk): the same rows, the same counts
    with memdir.open(folder, embedder="hashing") as local:
        one = PgIndex(pg_db, "one-by-one")
        for relpath, (name, layer) in sorted(local.index.files_on_disk().items()):
            stat = (folder / relpath).stat()
            text = (folder / relpath).read_bytes().decode("utf-8", "surrogateescape")
            index_text(
                one, relpath, text, name, layer, mtime_ns=stat.st_mtime_ns, size=stat.st_size
            )
        one.ensure_vectors(embedder)
    assert _rows(pg_db, "one-by-one") == _rows(pg_db, "pushed")
    assert _stats(pg_db, "one-by-one") == _stats(pg_db, "pushed")


def _index_all(pg: PgIndex, folder: Path) -> None:
    with memdir.open(folder, embedder="hashing") as local:
        for relpath, (name, layer) in sorted(local.index.files_on_disk().items()):
            stat = (folder / relpath).stat()
            text = (folder / relpath).read_bytes().decode("utf-8", "surrogateescape")
            index_text(pg, relpath, text, name, layer, mtime_ns=stat.st_mtime_ns, size=stat.st_size)


def test_a_bulk_job_that_fails_leaves_none_of_its_rows(tmp_path: Path, pg_db: Database) -> None:
    folder = _folder(tmp_path / "bulk", days=3)
    pg = PgIndex(pg_db, "failing")
    embedder = Counting()
    with pytest.raises(RuntimeError), pg.bulk(embedder):
        _index_all(pg, folder)
        raise RuntimeError("killed mid-push")
    assert pg.count() == 0 and pg.file_states() == {}
    # nothing held over: the next write is its own, and the counts are its
    _index_all(pg, folder)
    assert pg.count() > 0 and _stats(pg_db, "failing")[0] == pg.count()
    # an inner bulk that fails inside an outer one drops only its own rows
    pg.clear()
    paths = sorted(p.relative_to(folder).as_posix() for p in (folder / "journal").iterdir())
    with memdir.open(folder, embedder="hashing") as local:
        known = local.index.files_on_disk()

    def write(relpath: str) -> None:
        name, layer = known[relpath]
        text = (folder / relpath).read_text()
        index_text(pg, relpath, text, name, layer, mtime_ns=1, size=len(text))

    with pg.bulk(embedder):
        write(paths[0])
        with pytest.raises(ValueError), pg.bulk():
            write(paths[1])
            raise ValueError("a refusal")
        write(paths[2])
    assert sorted(pg.file_states()) == [paths[0], paths[2]]
    assert {row["path"] for row in pg.select()} == {paths[0], paths[2]}
    assert _stats(pg_db, "failing")[0] == pg.count() == 10


def _two_days_embedded(
    tmp_path: Path, pg_db: Database, agent: str
) -> tuple[Path, PgIndex, Counting, dict[str, Any], dict[str, Any]]:
    """Two days' journal pushed as ``agent`` with a counting embedder: the folder, the
    index, the embedder, each text's vector (by vector key) and the folder's files by
    the layer and store that own them."""
    folder = _folder(tmp_path / "bulk", days=2)
    pg = PgIndex(pg_db, agent)
    embedder = Counting()
    with pg.bulk(embedder):
        _index_all(pg, folder)
    before = {
        str(k): v.to_numpy()
        for k, v in pg_db.reader().execute(
            "SELECT vector_key, embedding FROM items WHERE agent = %s", (agent,)
        )
    }
    with memdir.open(folder, embedder="hashing") as local:
        known = dict(local.index.files_on_disk())
    return folder, pg, embedder, before, known


def test_a_moved_text_keeps_its_vector_and_is_not_embedded_again(
    tmp_path: Path, pg_db: Database
) -> None:
    folder, pg, embedder, before, known = _two_days_embedded(tmp_path, pg_db, "mover")
    first = len(embedder.texts)
    assert first >= 10 and pg.vector_counts(embedder.id)[0] == pg.vector_counts(embedder.id)[1]
    # the first day's entries move to the second day's file, in one bulk job
    one, two = folder / "journal" / "2026-11-01.md", folder / "journal" / "2026-11-02.md"
    moved = one.read_text().split("\n\n", 1)[1]
    with pg.bulk(embedder):
        for path, text in ((one, "# Journal 2026-11-01\n"), (two, two.read_text() + moved)):
            relpath = path.relative_to(folder).as_posix()
            name, layer = known[relpath]
            index_text(pg, relpath, text, name, layer, mtime_ns=2, size=len(text))
    again = embedder.texts[first:]
    assert not [text for text in again if "harbour" in text]  # no moved text embedded again
    after = (
        pg_db.reader()
        .execute("SELECT path, vector_key, embedding, model FROM items WHERE agent = 'mover'")
        .fetchall()
    )
    moved_rows = [row for row in after if "harbour" in str(before.get(str(row[1]), ""))]
    assert sum(1 for path, *_ in after if path == "journal/2026-11-02.md") == 10
    assert not [row for row in after if row[0] == "journal/2026-11-01.md" and row[1] in before]
    for _, key, vector, model in after:
        assert model == embedder.id
        if str(key) in before:
            assert np.array_equal(vector.to_numpy(), before[str(key)])
    assert not moved_rows or all(row[3] == embedder.id for row in moved_rows)


def test_a_removed_files_text_written_later_in_the_same_job_keeps_its_vector(
    tmp_path: Path, pg_db: Database
) -> None:
    """A file removed in a bulk job (renamed, archived) and its text written to another
    file later in it: the text is inserted with the removed row's vector, not embedded."""
    folder, pg, embedder, before, known = _two_days_embedded(tmp_path, pg_db, "remover")
    first = len(embedder.texts)
    one, two = folder / "journal" / "2026-11-01.md", folder / "journal" / "2026-11-02.md"
    moved = one.read_text().split("\n\n", 1)[1]
    relpath = two.relative_to(folder).as_posix()
    name, layer = known[relpath]
    text = two.read_text() + moved
    # by text: a moved short entry is re-keyed (its key names the entries before it in
    # its window, ``index.windows``), and keeps its text's lone vector (the hashing
    # embedder runs no windows)
    by_text = "SELECT heading || meta || body, embedding FROM items WHERE agent = 'remover'"
    lone = {str(t): v.to_numpy() for t, v in pg_db.reader().execute(by_text)}
    with pg.bulk(embedder):
        pg.remove_file(one.relative_to(folder).as_posix())
        index_text(pg, relpath, text, name, layer, mtime_ns=2, size=len(text))
    assert embedder.texts[first:] == []  # every text had a vector: none embedded again
    journal = (
        "SELECT path, vector_key, embedding, model FROM items WHERE agent = 'remover' "
        "AND path LIKE 'journal/%'"
    )
    rows = pg_db.reader().execute(journal).fetchall()
    assert {row[0] for row in rows} == {relpath} and len(rows) == 10
    said = by_text.replace(", embedding", ", embedding, model") + " AND path LIKE 'journal/%'"
    for entry, vector, model in pg_db.reader().execute(said):
        assert model == embedder.id and np.array_equal(vector.to_numpy(), lone[str(entry)])
    # outside a bulk job nothing is carried over: a removed file's text written afterwards
    # has no row left to take its vector from, and waits for a search to embed it
    pg.remove_file(relpath)
    index_text(pg, relpath, text, name, layer, mtime_ns=3, size=len(text))
    rows = pg_db.reader().execute(journal).fetchall()
    assert len(rows) == 10 and all(vector is None for _, _, vector, _ in rows)


def test_a_reindex_in_the_database_embeds_what_it_inserts(
    tmp_path: Path, url: str, pg_schema: str, pg_db: Database
) -> None:
    folder = _folder(tmp_path / "bulk", days=4)
    push(url, "re", folder, schema=pg_schema)  # the manifest's embedder; replaced below
    with open_agent(url, "re", embedder="hashing", schema=pg_schema) as memory:
        rows = memory.index.rows
        assert isinstance(rows, PgIndex)
        rows.clear()  # rows lost: a reindex makes every one again
        memory.reindex()
        made, texts = memory.index.vector_counts()
        assert made == texts > 20
        assert memory.index.ensure_vectors() == 0
    embedder = load_embedder("hashing")
    assert embedder is not None
    _texts_embed_to_their_vectors(pg_db, "re", embedder)
    _stats(pg_db, "re")


def test_vector_writes_build_no_hnsw_index_and_one_built_is_walked(
    tmp_path: Path, pg_db: Database
) -> None:
    from memdir.index.search import Filters
    from memdir.storage.postgres.schema import _m005_no_hnsw_on_write, vector_index
    from memdir.storage.seam import Scope
    from memdir.testing import FakeClock

    folder = _folder(tmp_path / "bulk", days=3)
    pg = PgIndex(pg_db, "walk")
    _index_all(pg, folder)
    embedder = load_embedder("hashing")
    assert embedder is not None
    assert pg.ensure_vectors(embedder) > 0

    def hnsw() -> list[str]:
        rows = pg_db.reader().execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexname LIKE "
            "'items\\_hnsw\\_%%'",
            (pg_db.schema,),
        )
        return [str(row[0]) for row in rows]

    assert hnsw() == []
    conn = pg_db.reader()
    with conn.transaction():
        name = vector_index(conn, embedder.id, embedder.dim)
    assert hnsw() == [name]
    with memdir.open(folder, embedder="hashing") as local:
        scope = Scope(Filters(mode="deep"), local.manifest.decay, FakeClock()())
    query = embedder.embed(["sailing by the harbour"])[0]
    exact = pg.semantic(query, embedder.id, scope, 10, -1.0)
    walked = pg.semantic(query, embedder.id, scope, 10, -1.0, method="hnsw")
    assert {i for i, _ in walked} == {i for i, _ in exact}  # (near ties may swap)
    assert [s for _, s in walked] == pytest.approx([s for _, s in exact], abs=1e-5)
    with conn.transaction():  # the migration drops what earlier versions built on write
        _m005_no_hnsw_on_write(conn, pg_db.schema)
    assert hnsw() == []


def test_a_reindex_does_not_hold_up_another_agents_reindex(
    tmp_path: Path, url: str, pg_schema: str, pg_db: Database
) -> None:
    """A reindex's ANALYZE runs after its commit: inside its transaction it would hold a
    table lock that a second agent's reindex (its own ANALYZE) waits for until then."""
    for agent in ("one", "two"):
        push(url, agent, _folder(tmp_path / agent, days=3), schema=pg_schema)
    held, release = threading.Event(), threading.Event()
    failed: list[BaseException] = []

    def hold(done: int, total: int) -> None:  # the file pass's last call: still in its lock
        if done == total and not held.is_set():
            held.set()
            release.wait(60)

    def first() -> None:
        try:
            with open_agent(url, "one", embedder="hashing", schema=pg_schema) as memory:
                memory.reindex(hold)
        except BaseException as exc:  # noqa: BLE001 - asserted below
            failed.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert held.wait(60)
        with open_agent(url, "two", embedder="hashing", schema=pg_schema) as memory:
            memory.lock.timeout = 2.0  # type: ignore[attr-defined]
            memory.reindex()
            made, texts = memory.index.vector_counts()
            assert made == texts > 0
    finally:
        release.set()
        thread.join(60)
    assert not failed
    with pg_db.connect() as conn:
        (analysed,) = conn.execute(
            "SELECT last_analyze FROM pg_stat_user_tables "
            "WHERE schemaname = %s AND relname = 'items'",
            (pg_schema,),
        ).fetchone() or (None,)
    assert analysed is not None  # the statistics were still refreshed, after the commits
