"""Memory.search: hybrid ranking, filters, modes, fallbacks, and memory_get."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

import memdir
from memdir.testing import ConceptEmbedder, FakeClock
from pg_fixture import index_backend  # noqa: F401  (every test on SQLite and PostgreSQL)

pytestmark = pytest.mark.usefixtures("index_backend")

CONCEPTS = ConceptEmbedder(
    {
        "cat": ["cat", "cats", "feline", "kitten", "tabby"],
        "money": ["invoice", "billing", "payment", "refund", "charge"],
        "weather": ["rain", "storm", "umbrella", "forecast"],
    }
)


@pytest.fixture
def mem(folder: Path, clock: FakeClock) -> memdir.Memory:
    return memdir.open(folder, clock=clock, embedder=CONCEPTS)


def _keys(hits: list[memdir.Hit]) -> list[str]:
    return [hit.snippet.replace("**", "") for hit in hits]


def test_keyword_hits_carry_where_and_why(mem: memdir.Memory) -> None:
    saved = mem.knowledge.save("The refund API needs an idempotency key", tags=["billing"])
    [hit] = [h for h in mem.search("idempotency key") if h.anchor == saved.key]
    assert (hit.path, hit.kind, hit.layer, hit.tags) == (
        "knowledge.md",
        "observation",
        "knowledge",
        ("billing",),
    )
    assert hit.snippet == "The refund API needs an **idempotency** **key**"
    assert hit.keyword is not None and hit.keyword > 0 and hit.semantic is None
    assert hit.relevance == 1.0 and hit.tier == "active" and hit.date == mem.clock()
    data = hit.to_dict()
    assert data["lines"] == [hit.line_start, hit.line_end] and set(data["parts"]) == {
        "keyword",
        "semantic",
        "relevance",
    }


def test_words_are_or_matched_and_ranked_by_how_many_match(mem: memdir.Memory) -> None:
    mem.knowledge.save("alpha bravo charlie")
    mem.knowledge.save("alpha only here")
    mem.knowledge.save("nothing relevant")
    assert _keys(mem.search("alpha bravo charlie", kinds=["observation"])) == [
        "alpha bravo charlie",
        "alpha only here",
    ]


def test_a_semantic_only_hit_still_ranks(mem: memdir.Memory) -> None:
    mem.knowledge.save("The tabby slept on the keyboard all afternoon")
    mem.knowledge.save("Quarterly numbers look fine")
    hits = mem.search("feline", kinds=["observation"])
    assert _keys(hits) == ["The tabby slept on the keyboard all afternoon"]
    assert hits[0].keyword is None and hits[0].semantic == pytest.approx(1.0)


def test_an_exact_match_is_never_lost_to_the_fusion(folder: Path, clock: FakeClock) -> None:
    # Short texts that repeat the query's words (more BM25, equal cosine) against a long
    # one that holds the query as written: the one holding it must still come first.
    memory = memdir.open(folder, clock=clock, embedder=ConceptEmbedder({"fruit": ["apple", "red"]}))
    for n in range(6):
        memory.knowledge.save(f"apple apple apple red red {n}")
    exact = (
        "In the long story about the orchard we finally found one red apple "
        "near the old fence by the river bank this morning"
    )
    memory.knowledge.save(exact)
    hits = memory.search("red apple", k=3, kinds=["observation"])
    assert _keys(hits)[0] == exact
    assert hits[0].keyword is not None and hits[1].keyword is not None
    assert hits[0].keyword < hits[1].keyword  # it won on exactness, not on BM25


def test_a_query_naming_a_weekday_prefers_it_to_another_weekday(
    folder: Path, clock: FakeClock
) -> None:
    # The other weekdays share more of the query's wording ("backed up"), and Thursday
    # is common in the file (low BM25 weight): they used to rank above the answer.
    memory = memdir.open(folder, clock=clock, embedder="hashing")
    for day in ("Friday", "Wednesday", "Saturday", "Monday", "Sunday", "Tuesday"):
        memory.knowledge.save(f"Every {day} the sandbox database gets backed up.")
    answer = "The sandbox database backup happens every Thursday."
    memory.knowledge.save(answer)
    for n in range(20):
        memory.knowledge.save(f"Ticket {n} was closed by the support team on Thursday.")
    hits = memory.search("The sandbox database is backed up every Thursday.", k=3)
    assert _keys(hits)[0] == answer
    # a query naming no weekday ranks them as before: all six still come up
    plain = memory.search("when is the sandbox database backed up", k=7)
    assert sum("gets backed up" in key for key in _keys(plain)) == 6


def test_an_empty_query_lists_the_most_recent_observations(
    mem: memdir.Memory, clock: FakeClock
) -> None:
    for n in range(4):
        mem.knowledge.save(f"observation {n}")
        clock.advance(minutes=5)
    mem.notebook.update("task", "not an observation")
    assert _keys(mem.search("", k=3)) == ["observation 3", "observation 2", "observation 1"]
    assert _keys(mem.search("  ?! ", k=1)) == ["observation 3"]


def test_keyword_search_answers_without_embeddings(folder: Path, clock: FakeClock) -> None:
    plain = memdir.open(folder, clock=clock, embedder="none")
    plain.knowledge.save("Backups run at 02:00 UTC")
    [hit] = plain.search("backups", kinds=["observation"])
    assert hit.semantic is None and hit.keyword is not None


def test_a_broken_embedder_falls_back_to_keywords(folder: Path, clock: FakeClock) -> None:
    class Broken(ConceptEmbedder):
        def embed(self, texts: object) -> object:  # type: ignore[override]
            raise RuntimeError("model file is corrupt")

    memory = memdir.open(folder, clock=clock, embedder=Broken({"x": ["x"]}))
    memory.knowledge.save("Keyword search still works")
    assert _keys(memory.search("keyword", kinds=["observation"])) == ["Keyword search still works"]


def test_modes_filter_by_tier(mem: memdir.Memory, clock: FakeClock, folder: Path) -> None:
    ages = {"active": 0, "warm": 15, "cold": 40, "old": 90}
    start = clock()
    for label, days in sorted(ages.items(), key=lambda pair: -pair[1]):
        clock.now = start - timedelta(days=days)
        mem.knowledge.save(f"zebra sighting {label}")
    clock.now = start
    mem.knowledge.update("zoo", "Zebra facts everyone should know")  # curated: core
    archive = folder / "archive" / "notes" / "2025-01.md"
    archive.parent.mkdir(parents=True)
    archive.write_text("# Archive\n\n## zebra\nAn archived zebra note\n")
    mem.scan()

    def found(mode: str) -> set[str]:
        return {hit.snippet.replace("**", "") for hit in mem.search("zebra", k=50, mode=mode)}

    core = "Zebra facts everyone should know"
    assert found("heartbeat") == {core, "zebra sighting active"}
    assert found("normal") == {core, "zebra sighting active", "zebra sighting warm"}
    normal = mem.search("zebra", k=50)
    assert not normal.widened and normal.colder == 2  # cold and old; never the archive folder
    assert found("deep") == {
        core,
        "zebra sighting active",
        "zebra sighting warm",
        "zebra sighting cold",
        "zebra sighting old",
        "An archived zebra note",
    }
    tiers = {h.snippet.replace("**", ""): h.tier for h in mem.search("zebra", k=50, mode="deep")}
    assert tiers["zebra sighting cold"] == "cold" and tiers["zebra sighting old"] == "archive"
    assert tiers["An archived zebra note"] == "archive" and tiers[core] == "core"


def test_filters_by_layer_kind_tag_and_date(mem: memdir.Memory, clock: FakeClock) -> None:
    mem.knowledge.save("storm report one", tags=["ops", "incident"])
    clock.advance(days=2)
    mem.knowledge.save("storm report two", tags=["ops"])
    mem.notebook.update("storm-watch", "watch the storm report")
    mem.state.set("storm", "storm report pending")
    assert {h.kind for h in mem.search("storm report", kinds=["notebook", "state"])} == {
        "notebook",
        "state",
    }
    assert _keys(mem.search("storm", tags=["incident"])) == ["storm report one"]
    assert {h.layer for h in mem.search("storm", layers=["state"])} == {"state"}
    since = clock() - timedelta(days=1)
    assert "storm report one" not in _keys(mem.search("storm", since=since))
    assert _keys(mem.search("storm", until="2026-11-30T23:00:00Z", kinds=["observation"])) == [
        "storm report one"
    ]


def test_bad_arguments_raise_value_error(mem: memdir.Memory) -> None:
    with pytest.raises(ValueError, match="mode"):
        mem.search("x", mode="creative")
    with pytest.raises(ValueError, match="k must"):
        mem.search("x", k=0)
    with pytest.raises(ValueError, match="since"):
        mem.search("x", since="last tuesday")
    # a misspelt kind would find nothing and look like an empty memory
    with pytest.raises(ValueError, match="no item kind 'cards'; the kinds are: archive, card"):
        mem.search("x", kinds=["observation", "cards"])
    assert mem.search("invoice", kinds=["archive"]) == []  # a kind with no item: no hits


def test_every_kind_extraction_makes_is_one_a_search_takes(mem: memdir.Memory) -> None:
    from memdir.index.extract import ITEM_KINDS

    writes = [
        mem.knowledge.save("the invoice is due", type="fact"),
        mem.knowledge.update(section="conventions", content="- one\n- two"),
        mem.notebook.update("task", "write the docs"),
        mem.state.set("deploy", "green"),
        mem.journal.append("learning", "learned about kinds"),
        mem.vault.write("Alice", "a buyer"),
    ]
    assert all(result.ok for result in writes), writes
    kinds = {str(row["kind"]) for row in mem.index.rows.select()}
    assert {"observation", "section", "notebook", "state", "journal", "card"} <= kinds, kinds
    assert kinds <= ITEM_KINDS | {""}, kinds


def test_memory_get_returns_exact_lines_and_refuses_escapes(
    mem: memdir.Memory, folder: Path, tmp_path: Path
) -> None:
    mem.knowledge.update("conventions", "- one\n- two")
    whole = mem.get("knowledge.md")
    assert whole.ok and whole.from_line == 1 and whole.to_line == whole.total_lines
    part = mem.get("knowledge.md", 3, 4)
    assert part.text == "## conventions\n<!-- updated: 2026-11-30T10:00:00Z; by: api -->"
    outside = tmp_path / "secret.md"
    outside.write_text("secret")
    (folder / "link.md").symlink_to(outside)
    for path in ("../secret.md", str(outside), "link.md", ".memdir/index.db", "missing.md"):
        refused = mem.get(path)
        assert not refused.ok and refused.reason and refused.to_dict()["status"] == "error"
    assert not mem.get("knowledge.md", 500, 600).ok
    assert not mem.get("knowledge.md", 0, 2).ok


def test_a_selective_filter_still_finds_its_semantic_hits(folder: Path, clock: FakeClock) -> None:
    # 900 old items that the embedder rates closer to the query than the one recent
    # item: more than the first semantic pass looks at, and all outside normal mode.
    embedder = ConceptEmbedder({"cat": ["kitten", "feline", "tabby"], "fur": ["fur", "fluffy"]})
    memory = memdir.open(folder, clock=clock, embedder=embedder)
    old = "".join(f"\n## note {n}\nfeline fur fact number {n}\n" for n in range(900))
    (folder / "journal" / "2025-01-01.md").write_text(f"# 2025-01-01\n{old}")
    (folder / "journal" / "2026-11-29.md").write_text("# 2026-11-29\n\n## today\na tabby visited\n")
    memory.scan()
    hits = memory.search("kitten fluffy", mode="heartbeat")  # semantic only; never widens
    assert [hit.snippet for hit in hits] == ["a tabby visited"]
    assert hits[0].semantic == pytest.approx(0.7071, abs=1e-3)
    # normal mode widens: the old notes match both words, the recent one only one
    assert memory.search("kitten fluffy").widened
    deep = memory.search("kitten fluffy", mode="deep", k=5)
    assert all(hit.semantic == pytest.approx(1.0) for hit in deep)


def test_vectors_are_computed_once_per_text(mem: memdir.Memory) -> None:
    mem.knowledge.save("a first cat note")
    mem.search("cat")
    assert mem.index.ensure_vectors() == 0  # nothing new since the last search
    mem.knowledge.save("a second cat note")
    mem.knowledge.save("a second cat note")  # same text, one vector
    assert mem.index.ensure_vectors() == 1
    assert mem.index.ensure_vectors() == 0


# -- widening to the colder tiers ----------------------------------------------------------


def _journal_day(folder: Path, day: str, sections: dict[str, str]) -> None:
    body = "".join(f"\n## {title}\n{text}\n" for title, text in sections.items())
    (folder / "journal" / f"{day}.md").write_text(f"# {day}\n{body}")


def test_imported_history_is_found_by_a_plain_search(
    mem: memdir.Memory, folder: Path, clock: FakeClock
) -> None:
    # A conversation imported with its own date, 2025: archive tier, outside normal mode.
    _journal_day(folder, "2025-03-02", {"chat": "Quilla bought a sailboat named Wren"})
    mem.knowledge.save("The deploy freeze starts on Friday")  # fresh, unrelated
    mem.scan()
    hits = mem.search("Quilla's sailboat")
    assert hits.widened and hits.colder is None
    assert [(hit.path, hit.tier) for hit in hits] == [("journal/2025-03-02.md", "archive")]
    assert hits.report() == {
        "widened": ["cold", "archive"],
        "note": "Nothing strong in the core, active and warm tiers: searched the cold and "
        "archive tiers too (each hit names its tier).",
    }
    assert mem.search("Quilla's sailboat", mode="heartbeat") == []  # heartbeat never widens


def test_widening_never_reaches_what_memdir_moved_to_the_archive(
    mem: memdir.Memory, folder: Path
) -> None:
    gone = mem.knowledge.save("the quokka feeding happens on Mondays").key
    mem.knowledge.update(mode="delete", ids=[gone])  # kept in the archive folder
    assert mem.search("quokka feeding") == []
    assert [h.kind for h in mem.search("quokka feeding", mode="deep")] == ["archive"]
    assert [h.kind for h in mem.search("quokka feeding", kinds=["archive"])] == ["archive"]


def test_a_fresh_memory_wins_a_tie_with_an_old_one(
    mem: memdir.Memory, folder: Path, clock: FakeClock
) -> None:
    _journal_day(folder, "2025-03-02", {"chat": "the sailboat is moored at pier nine"})
    (folder / "archive" / "notes").mkdir(parents=True)
    (folder / "archive" / "notes" / "2026-11.md").write_text(
        "# Archive\n\n## evicted\nthe sailboat is moored at pier nine\n"
    )  # dated today, but the archive folder is archive tier: never fresher than that
    mem.knowledge.save("the sailboat is moored at pier nine")
    mem.scan()
    hits = mem.search("sailboat moored", mode="deep")
    assert hits[0].path == "knowledge.md" and {h.tier for h in hits[1:]} == {"archive"}
    assert hits[0].score > 1.5 * hits[1].score


def test_a_strong_recent_hit_keeps_the_radius_and_counts_the_colder_hits(
    mem: memdir.Memory, folder: Path, clock: FakeClock
) -> None:
    start = clock()
    for days in (30, 90, 400):
        clock.now = start - timedelta(days=days)
        mem.knowledge.save(f"invoice reminder sent, {days} days back")
    clock.now = start
    mem.knowledge.save("invoice reminder sent today")
    hits = mem.search("invoice reminder")
    assert [hit.tier for hit in hits] == ["active"] and not hits.widened
    assert hits.colder == 3
    assert hits.report()["note"] == (
        "3 more in colder tiers (cold and archive): mode 'deep' shows them."
    )
    assert len(mem.search("invoice reminder", mode="deep")) == 4
    assert mem.search("invoice reminder", mode="heartbeat").colder is None  # not counted


def test_the_result_is_still_a_list_of_hits(mem: memdir.Memory) -> None:
    mem.knowledge.save("a note about parrots")
    hits = mem.search("parrots")
    assert isinstance(hits, list) and isinstance(hits, memdir.Hits)
    assert hits == [hits[0]] and hits[:1] == [hits[0]] and hits.mode == "normal"


# -- the floor and the listing ---------------------------------------------------------------


def test_hits_far_below_the_best_are_dropped(mem: memdir.Memory) -> None:
    # 'weekly' is in most items (almost no BM25 weight); 'zanzibar' in one.
    mem.knowledge.save("The zanzibar weekly report goes to finance")
    for n in range(12):
        mem.knowledge.save(f"weekly note number {n}")
    hits = mem.search("zanzibar weekly", kinds=["observation"])
    assert _keys(hits) == ["The zanzibar weekly report goes to finance"]
    # on its own the common word still finds every item holding it
    assert len(mem.search("weekly", k=50, kinds=["observation"])) == 13


def test_an_empty_query_is_a_listing_without_scores(mem: memdir.Memory, clock: FakeClock) -> None:
    mem.knowledge.save("first")
    clock.advance(minutes=1)
    mem.knowledge.save("second")
    listed = mem.search("")
    assert listed.listing and _keys(listed) == ["second", "first"]
    assert all("score" not in data and "parts" not in data for data in listed.to_dicts())
    assert listed.report() == {
        "listing": True,
        "note": "An empty query: listing the most recent observations, newest first.",
    }
    assert not mem.search("first").listing


def test_a_listing_reaches_older_observations_when_the_radius_has_too_few(
    mem: memdir.Memory, clock: FakeClock
) -> None:
    start = clock()
    clock.now = start - timedelta(days=200)
    mem.knowledge.save("imported long ago")
    clock.now = start
    mem.knowledge.save("saved today")
    assert _keys(mem.search("", k=5)) == ["saved today", "imported long ago"]
    assert _keys(mem.search("", k=5, mode="heartbeat")) == ["saved today"]


# -- query words and snippets --------------------------------------------------------------


def test_a_possessive_or_one_letter_token_is_not_a_query_word(
    mem: memdir.Memory, folder: Path
) -> None:
    (folder / "identity" / "AGENTS.md").write_text(
        "# Agents\n\nRead today's log, then yesterday's, then a o s t notes.\n"
    )
    mem.knowledge.save("Quilla bought a sailboat")
    mem.scan()
    assert memdir.index.search.query_words("Quilla's sailboat, o'clock") == [
        "quilla", "sailboat", "clock",
    ]  # fmt: skip
    assert memdir.index.search.query_words("x") == ["x"]  # nothing else: it is the query
    hits = mem.search("Quilla's sailboat")
    assert [hit.path for hit in hits] == ["knowledge.md"]


def test_a_snippet_marks_whole_words_and_their_inflections() -> None:
    from memdir.index.words import snippet

    body = "Quilla's sailboats sail past; she sails, running as the runner runs."
    assert snippet(body, ["quilla", "sailboat", "run"]) == (
        "**Quilla**'s **sailboats** sail past; she sails, **running** as the runner **runs**."
    )
    assert snippet("The retries retried; retry later", ["retries"]) == (
        "The **retries** **retried**; **retry** later"
    )


def test_the_index_backend_is_the_one_asked_for(
    mem: memdir.Memory, request: pytest.FixtureRequest
) -> None:
    from memdir.index.sqlite_rows import SqliteRows
    from memdir.storage.postgres.index import PgIndex

    kind = PgIndex if request.getfixturevalue("index_backend") == "postgres" else SqliteRows
    assert isinstance(mem.index.rows, kind)


def test_a_new_embedder_re_embeds_and_never_mixes_two_models(
    folder: Path, clock: FakeClock
) -> None:
    # The same two concepts, with "feline" on the other side in the second model: a
    # vector of the first model left in play would find the tabby for "feline".
    first = ConceptEmbedder({"cat": ["tabby", "feline"], "money": ["refund"]}, version="a")
    second = ConceptEmbedder({"cat": ["tabby"], "money": ["refund", "feline"]}, version="b")
    memory = memdir.open(folder, clock=clock, embedder=first)
    memory.knowledge.save("The tabby slept on the keyboard")
    memory.knowledge.save("The refund policy changed")
    assert _keys(memory.search("feline", kinds=["observation"])) == [
        "The tabby slept on the keyboard"
    ]
    memory.close()
    again = memdir.open(folder, clock=clock, embedder=second)
    hits = again.search("feline", kinds=["observation"])
    assert _keys(hits) == ["The refund policy changed"]
    assert hits[0].semantic == pytest.approx(1.0)
    embedded, texts = again.index.vector_counts()
    assert embedded == texts > 2  # every text has the new model's vector
    again.close()
    back = memdir.open(folder, clock=clock, embedder=first)
    assert _keys(back.search("feline", kinds=["observation"])) == [
        "The tabby slept on the keyboard"
    ]
