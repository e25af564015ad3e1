"""The vault: cards, the forgetting curve, touch, search modes, the graph, a shared vault."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import date, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import memdir
from memdir.cli import app
from memdir.config import Decay
from memdir.files.cards import Card
from memdir.maintain.decay import decayed
from memdir.stores.vault import add_history
from memdir.testing import FakeClock
from memdir.tiers import relevance, tier_for
from memdir.tools import Tools

TODAY = date(2026, 11, 30)


def _card(folder: Path, path: str) -> Card:
    return Card.parse((folder / path).read_text())


def _write_card(folder: Path, relpath: str, **meta: object) -> Path:
    card = Card({"type": "person", **meta}, "# Someone\n\nDetails.\n")
    path = folder / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(card.render())
    return path


CURVE = [(0, 1.0), (7, 0.895), (21, 0.685), (33, 0.505), (60, 0.1), (200, 0.1)]
BOUNDARIES = [
    (0, "active"), (7, "active"), (8, "warm"), (21, "warm"),
    (22, "cold"), (60, "cold"), (61, "archive"),
]  # fmt: skip


@pytest.mark.parametrize(("days", "expected"), CURVE)
def test_the_relevance_curve(days: int, expected: float) -> None:
    assert round(relevance(days, Decay()), 3) == expected


@pytest.mark.parametrize(("days", "tier"), BOUNDARIES)
def test_tier_boundaries(days: int, tier: str) -> None:
    assert tier_for(days, Decay()) == tier


def test_decay_only_cools_and_never_moves_core() -> None:
    decay = Decay()
    fresh_but_cold = {"tier": "cold", "last_accessed": TODAY}
    assert decayed(fresh_but_cold, TODAY, decay) == ("cold", 1.0)  # warming is touch's job
    old_active = {"tier": "active", "last_accessed": TODAY - timedelta(days=33)}
    assert decayed(old_active, TODAY, decay) == ("cold", 0.505)
    core = {"tier": "core", "relevance": 1.0, "last_accessed": TODAY - timedelta(days=400)}
    assert decayed(core, TODAY, decay) == ("core", 1.0)


def test_a_new_card_has_every_field(memory: memdir.Memory, folder: Path) -> None:
    result = memory.vault.write(
        "Alice Moreau",
        "Head of data at [[acme-corp]].",
        type="person",
        tags=["client"],
        folder="crm",
    )
    assert result.ok and result.action == "created" and result.store == "vault/crm/alice-moreau.md"
    card = _card(folder, "vault/crm/alice-moreau.md")
    assert card.meta == {
        "type": "person",
        "tags": ["client"],
        "created": TODAY,
        "updated": TODAY,
        "last_accessed": TODAY,
        "access_count": 0,
        "relevance": 1.0,
        "tier": "active",
        "links": ["acme-corp"],  # the body's wiki links
        "by": "api",
    }
    assert card.body == "# Alice Moreau\n\nHead of data at [[acme-corp]].\n"


def test_hand_written_fields_survive_updates(memory: memdir.Memory, folder: Path) -> None:
    path = _write_card(folder, "vault/crm/bob.md", company="Acme", tier="warm", phone_pref="email")
    before = (folder / "vault/crm/bob.md").read_text()
    assert memory.vault.write("bob", tags=["lead"]).ok
    card = _card(folder, "vault/crm/bob.md")
    assert card.meta["company"] == "Acme" and card.meta["phone_pref"] == "email"
    assert card.meta["tags"] == ["lead"]
    assert card.body == Card.parse(before).body  # body untouched byte for byte
    assert path.read_text().endswith("# Someone\n\nDetails.\n")


def test_history_is_append_only(memory: memdir.Memory, folder: Path, clock: FakeClock) -> None:
    memory.vault.write("carol", "Met at the conference.", type="person")
    memory.vault.append_history("carol", "Signed the pilot")
    clock.advance(days=1)
    memory.vault.append_history("carol", "Asked for a discount")
    memory.vault.write("carol", "# Carol\n\nRewritten profile.")  # no History in the new body
    body = _card(folder, "vault/carol.md").body
    assert "Rewritten profile." in body and "Met at the conference." not in body
    assert "- 2026-11-30 (default): Signed the pilot" in body
    assert "- 2026-12-01 (default): Asked for a discount" in body
    assert not memory.vault.append_history("carol", "  ").ok
    assert not memory.vault.append_history("nobody", "x").ok


def test_touch_promotes_one_tier_at_a_time(memory: memdir.Memory, folder: Path) -> None:
    _write_card(folder, "vault/old.md", tier="archive", last_accessed=TODAY - timedelta(days=90))
    tiers = []
    for _ in range(4):
        assert memory.touch("old").ok
        tiers.append(_card(folder, "vault/old.md").meta["tier"])
    assert tiers == ["cold", "warm", "active", "active"]
    meta = _card(folder, "vault/old.md").meta
    assert meta["last_accessed"] == TODAY and meta["access_count"] == 4 and meta["relevance"] == 1.0
    _write_card(folder, "vault/me.md", tier="core", relevance=1.0)
    memory.touch("me")
    assert _card(folder, "vault/me.md").meta["tier"] == "core"


def test_what_touches_and_what_does_not(memory: memdir.Memory, folder: Path) -> None:
    def fresh() -> None:
        _write_card(folder, "vault/dana.md", tier="cold", access_count=0, title="Dana Scully")

    def touched() -> bool:
        return _card(folder, "vault/dana.md").meta["access_count"] == 1

    for action in (
        lambda: memory.vault.read("dana"),  # reading its content through memdir
        lambda: memory.vault.read("Dana Scully"),  # by title
        lambda: memory.vault.write("dana", tags=["x"]),  # updating it
        lambda: memory.vault.append_history("dana", "called"),
        lambda: memory.touch("vault/dana.md"),
    ):
        fresh()
        action()
        assert touched()
    for action in (
        lambda: memory.search("Dana", mode="deep"),  # appearing in results
        lambda: memory.vault.cards(),  # listing
        lambda: memory.vault.read("dana", touch=False),
        lambda: memory.decay(),  # the decay scan
        lambda: memory.write_mocs(),  # bulk
        lambda: memory.graph(),
        lambda: memory.doctor(),
    ):
        fresh()
        action()
        assert not touched()


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"tier": "bogus"}, "tier must be one of"),
        ({"relevance": "abc"}, "relevance must be a number from 0.0 to 1.0"),
        ({"relevance": 1.5}, "relevance must be a number from 0.0 to 1.0"),
        ({"relevance": True}, "relevance must be a number"),
        ({"access_count": -1}, "access_count must be a whole number"),
        ({"last_accessed": "last tuesday"}, "last_accessed must be a day"),
        ({"created": 20261130}, "created must be a day"),
        ({"updated": "2026-11-01"}, "the day of the card's last write"),
    ],
)
def test_a_managed_field_out_of_its_range_is_refused_and_nothing_written(
    memory: memdir.Memory, folder: Path, fields: dict[str, object], reason: str
) -> None:
    """The fields decay, the tiers and search read: a value they could not use is refused
    before anything is written, a new card or an update alike."""
    created = memory.vault.write("zoe", "Zoe runs the data team.", fields=fields)
    assert not created.ok and reason in (created.reason or "")
    assert not list((folder / "vault").rglob("zoe*.md"))
    assert memory.vault.write("zoe", "Zoe runs the data team.").ok
    path = next((folder / "vault").rglob("zoe*.md"))
    before = path.read_bytes()
    updated = memory.vault.write("zoe", fields=fields)
    assert not updated.ok and reason in (updated.reason or "") and path.read_bytes() == before


def test_managed_fields_in_range_are_written(memory: memdir.Memory, folder: Path) -> None:
    fields = {"tier": "core", "relevance": 0.4, "access_count": 7, "last_accessed": "2026-11-01"}
    assert memory.vault.write("yara", "Yara signs the contracts.", fields=fields).ok
    meta = _card(folder, str(next((folder / "vault").rglob("yara*.md")).relative_to(folder))).meta
    assert (meta["tier"], meta["relevance"], meta["access_count"]) == ("core", 0.4, 7)
    assert meta["last_accessed"] == date(2026, 11, 1)  # a day, as memdir writes its own
    text = next((folder / "vault").rglob("yara*.md")).read_text(encoding="utf-8")
    assert "last_accessed: 2026-11-01\n" in text


def test_card_write_refuses_a_bad_field_on_the_command_line(folder: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memdir", "card", "write", "quinn", "Quinn.", "--field",
         "tier=bogus", "--dir", str(folder)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1 and "tier must be one of" in done.stderr
    assert "Traceback" not in done.stderr and not list((folder / "vault").rglob("quinn*.md"))


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (the memory folder and beside it), memdir's databases aside."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".memdir" not in path.parts
    }


ELSEWHERE = [  # a card name that leads out of the vault, and what the refusal says
    ("/tmp/x", "the card '/tmp/x' is a path on the disk; name it inside the vault"),
    ("[[/etc/passwd]]", "the card '[[/etc/passwd]]' is a path on the disk"),
    ("C:\\notes\\x", "the card 'C:\\\\notes\\\\x' is a path on the disk"),
    ("C:/notes/x", "the card 'C:/notes/x' is a path on the disk"),
    ("crm\\alice", "the card 'crm\\\\alice' holds a backslash; separate folders with /"),
    ("../../outside", "the card '../../outside' climbs out of the vault with '..'"),
    ("crm/../../x", "the card 'crm/../../x' climbs out of the vault with '..'"),
    ("..", "the card '..' climbs out of the vault with '..'"),
]


@pytest.mark.parametrize(("name", "reason"), ELSEWHERE)
def test_a_card_named_out_of_the_vault_is_refused_and_nothing_written(
    tmp_path: Path, name: str, reason: str
) -> None:
    """``card write /tmp/x`` wrote vault/tmp/x.md; every card command refuses such a name
    with the reason (one line, exit 1) and leaves every file as it was."""
    folder = tmp_path / "mem"
    memdir.init(folder, layout="vault")
    x = _write_card(folder, "vault/tmp/x.md", tier="warm", access_count=0)  # a look-alike
    before = _files(tmp_path)
    for args, said in [
        (["card", "write", name, "Body."], "refused"),
        (["card", "history", name, "A line."], "refused"),
        (["touch", name], "refused"),
        (["card", "show", name], "error"),
        (["card", "links", name], "error"),
        (["card", "history", name], "error"),
    ]:
        done = CliRunner().invoke(app, [*args, "--dir", str(folder)])
        assert (done.exit_code, done.stdout) == (1, ""), (args, done.output)
        assert done.stderr.startswith(f"{said}: {reason}") and done.stderr.count("\n") == 1
        assert _files(tmp_path) == before, args
    assert "access_count: 0" in x.read_text()  # /tmp/x was not read as vault/tmp/x.md


@pytest.mark.parametrize("folder_given", ["/tmp", "C:\\notes", "crm/../..", "a\\b"])
def test_a_card_folder_out_of_the_vault_is_refused(
    memory: memdir.Memory, folder_given: str
) -> None:
    before = _files(memory.root)
    result = memory.vault.write("alice", "Alice.", folder=folder_given)
    assert not result.ok and (result.reason or "").startswith(f"folder {folder_given!r} ")
    assert _files(memory.root) == before


def test_card_names_inside_the_vault_still_work(memory: memdir.Memory, folder: Path) -> None:
    """Folders with /, a drive-like word with no path after it, the card's path itself."""
    assert memory.vault.write("crm/alice", "Alice.").key == "vault/crm/alice.md"
    assert memory.vault.write("C:minus", "A grade.").key == "vault/c-minus.md"
    assert memory.vault.write("vault/crm/alice.md", "Head of data.").action == "updated"
    read = memory.vault.read("[[crm/alice]]", touch=False)
    assert read is not None and read.body.endswith("Head of data.\n")


def test_a_name_in_another_script_keeps_its_letters(tmp_path: Path) -> None:
    """File names kept a-z and 0-9 only: 'Zoë Martin' was vault/zo-martin.md, so a card
    for 'Zo Martin' replaced hers ("Updated card"), and '日本' was refused as having no
    letters."""
    folder = tmp_path / "mem"
    memdir.init(folder, layout="vault")

    def card_write(name: str, body: str) -> str:
        done = CliRunner().invoke(app, ["card", "write", name, body, "--dir", str(folder)])
        assert done.exit_code == 0, done.output
        return done.stdout

    assert card_write("Zoë Martin", "Runs Lyon.") == "Created card vault/zoë-martin.md.\n"
    assert card_write("Zo Martin", "A different person.") == "Created card vault/zo-martin.md.\n"
    assert "Runs Lyon." in (folder / "vault" / "zoë-martin.md").read_text()
    assert card_write("日本", "The Tokyo team.") == "Created card vault/日本.md.\n"
    # the same name typed decomposed (e, then a combining diaeresis) is the same card
    assert card_write("Zoe\u0308 Martin", "Paris.") == "Updated card vault/zoë-martin.md.\n"


def test_a_new_card_named_by_its_path_gets_that_path(memory: memdir.Memory, folder: Path) -> None:
    """docs/vault.md: a card is named by its name, folder/name or path; a new one named by
    its path made vault/vault/crm/bob-md.md, titled "Bob.md"."""
    made = memory.vault.write("vault/crm/bob.md", "Bob buys.")
    assert (made.action, made.key) == ("created", "vault/crm/bob.md")
    assert _card(folder, "vault/crm/bob.md").body.startswith("# Bob\n")
    assert memory.vault.write("carol.md", "Carol sells.").key == "vault/carol.md"
    assert not (folder / "vault" / "vault").exists()


def test_the_card_tools_refuse_a_name_out_of_the_vault(memory: memdir.Memory) -> None:
    """The agent tools: ``{ok: false}`` with the reason, nothing written."""
    tools = Tools(memory)
    before = _files(memory.root)
    for tool, args in [
        ("card_write", {"card": "/tmp/x", "body": "Body."}),
        ("card_read", {"card": "/tmp/x"}),
        ("card_history", {"card": "/tmp/x", "text": "A line."}),
        ("card_write", {"card": "alice", "body": "Body.", "folder": "/tmp"}),
    ]:
        result = tools.call(tool, args)
        assert result["ok"] is False and "is a path on the disk" in result["reason"], result
    assert _files(memory.root) == before  # over MCP: test_mcp_server.py


def test_memdir_touch_command(folder: Path) -> None:
    _write_card(folder, "vault/erin.md", tier="warm", access_count=2)
    done = subprocess.run(
        [sys.executable, "-m", "memdir", "touch", "erin", "--dir", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "tier warm -> active" in done.stdout
    assert _card(folder, "vault/erin.md").meta["access_count"] == 3


def test_decay_rewrites_only_changed_frontmatter(
    memory: memdir.Memory, folder: Path, clock: FakeClock
) -> None:
    for days in (0, 10, 33, 90):
        _write_card(folder, f"vault/c{days}.md", last_accessed=TODAY - timedelta(days=days))
    _write_card(folder, "vault/core.md", tier="core", relevance=1.0)
    bodies = {p.name: Card.parse(p.read_text()).body for p in (folder / "vault").glob("*.md")}
    dry = memory.decay(dry_run=True)
    assert len(dry.changed) == 4
    assert [c.meta.get("relevance") for c in _all(folder)] == [None, None, None, None, 1.0]
    report = memory.decay()
    assert report.to_dict()["tiers"] == {"core": 1, "active": 1, "warm": 1, "cold": 1, "archive": 1}
    assert {(c.meta["tier"], c.meta["relevance"]) for c in _all(folder)} == {
        ("active", 1.0), ("warm", 0.85), ("cold", 0.505), ("archive", 0.1), ("core", 1.0)
    }  # fmt: skip
    assert {
        p.name: Card.parse(p.read_text()).body for p in (folder / "vault").glob("*.md")
    } == bodies
    mtimes = {p: p.stat().st_mtime_ns for p in (folder / "vault").glob("*.md")}
    assert memory.decay().changed == []  # idempotent
    assert mtimes == {p: p.stat().st_mtime_ns for p in (folder / "vault").glob("*.md")}
    clock.advance(days=1)
    assert sorted(memory.decay().changed) == ["vault/c0.md", "vault/c10.md", "vault/c33.md"]


def _all(folder: Path) -> list[Card]:
    return [Card.parse(p.read_text()) for p in sorted((folder / "vault").glob("*.md"))]


def test_search_modes_follow_card_tiers(memory: memdir.Memory, folder: Path) -> None:
    for tier in ("core", "active", "warm", "cold", "archive"):
        card = Card({"type": "idea", "tier": tier}, f"# Idea {tier}\n\nA walrus plan, {tier}.\n")
        (folder / "vault" / f"{tier}.md").write_text(card.render())
    memory.scan()

    def tiers(mode: str) -> set[str]:
        return {hit.tier for hit in memory.search("walrus", mode=mode, kinds=["card"])}

    assert tiers("heartbeat") == {"core", "active"}
    assert tiers("normal") == {"core", "active", "warm"}
    assert tiers("deep") == {"core", "active", "warm", "cold", "archive"}
    sample = memory.creative(10, seed=7)
    assert {hit.tier for hit in sample} <= {"cold", "archive"} and len(sample) == 2
    assert [h.path for h in memory.creative(1, seed=3)] == [
        h.path for h in memory.creative(1, seed=3)
    ]


def test_graph_and_maps_of_content(memory: memdir.Memory, folder: Path) -> None:
    memory.vault.write("alice", "Works at [[acme-corp]] with [[Bob Stone]].", folder="crm")
    memory.vault.write("acme-corp", "A client.", type="company", folder="crm/clients")
    memory.vault.write("Bob Stone", "Engineer.", folder="crm")
    memory.vault.write("lonely", "Nobody links here.", folder="ideas")
    memory.vault.write("dangling", "See [[ghost]].", folder="ideas")
    graph = memory.graph()
    assert graph.links["vault/crm/alice.md"] == [
        "vault/crm/clients/acme-corp.md",
        "vault/crm/bob-stone.md",
    ]
    assert graph.backlinks["vault/crm/bob-stone.md"] == ["vault/crm/alice.md"]
    assert graph.orphans == ["vault/ideas/dangling.md", "vault/ideas/lonely.md"]
    assert graph.broken == {"vault/ideas/dangling.md": ["ghost"]}
    assert (folder / ".memdir" / "graph.json").exists()
    written = memory.write_mocs()
    assert sorted(written) == ["vault/MOC/crm-clients.md", "vault/MOC/crm.md", "vault/MOC/ideas.md"]
    crm = (folder / "vault/MOC/crm.md").read_text()
    assert "- [[alice]] Alice" in crm and "- [[bob-stone]] Bob Stone" in crm
    assert memory.write_mocs() == []  # nothing changed: nothing rewritten
    assert all(
        h.kind != "card" or "/MOC/" not in h.path for h in memory.search("alice", mode="deep")
    )


SHARED_AGENT = """
import sys, memdir
memory = memdir.open(sys.argv[1], embedder="none")
for n in range(int(sys.argv[3])):
    result = memory.vault.append_history("project-x", f"{sys.argv[2]} note {n}")
    assert result.ok, result
memory.vault.write("project-x", tags=[sys.argv[2]])
"""


def _agent_folder(root: Path, name: str, vault: Path) -> Path:
    folder = root / name
    memdir.init(folder, agent=name)
    manifest = (folder / "memdir.toml").read_text()
    manifest = manifest.replace(
        'paths = ["vault/**/*.md"]', f'paths = ["**/*.md"]\nmount = "{vault.as_posix()}"'
    )
    (folder / "memdir.toml").write_text(manifest)
    return folder


def test_two_agents_share_a_vault(tmp_path: Path) -> None:
    vault = tmp_path / "team-vault"
    one, two = (_agent_folder(tmp_path, name, vault) for name in ("agent-1", "agent-2"))
    first = memdir.open(one, embedder="none")
    assert (
        first.vault.write("project-x", "Shared project.", type="project").store
        == "vault/project-x.md"
    )
    assert (vault / "project-x.md").exists()
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(SHARED_AGENT), str(folder), name, "40"],
            stderr=subprocess.PIPE,
        )
        for folder, name in ((one, "agent-1"), (two, "agent-2"))
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err.decode()
    card = Card.parse((vault / "project-x.md").read_text())
    history = [line for line in card.body.splitlines() if line.startswith("- 2")]
    assert len(history) == 80  # every append from both agents landed
    assert {f"agent-{a} note {n}" for a in (1, 2) for n in range(40)} == {
        line.split(": ", 1)[1] for line in history
    }
    assert card.meta["access_count"] == 80 + 2  # each agent's touches count on the shared card
    assert card.meta["tags"] in (["agent-1"], ["agent-2"])  # last write wins
    second = memdir.open(two, embedder="none")
    opened = second.get("vault/project-x.md")
    assert opened.ok and "Shared project." in opened.text
    assert [h.path for h in second.search("shared project", kinds=["card"])] == [
        "vault/project-x.md"
    ]


def test_the_vault_layout_works_as_its_specification_says(tmp_path: Path) -> None:
    folder = tmp_path / "agent"
    memdir.init(folder, layout="vault")
    clock = FakeClock("2026-11-30T10:00:00Z")
    memory = memdir.open(folder, clock=clock, embedder="none")
    assert memory.vault.write("alice", "Client in Berlin.", folder="crm/clients").store == (
        "vault/crm/clients/alice.md"
    )
    (folder / "daily" / "2026-09-01.md").parent.mkdir(exist_ok=True)
    (folder / "daily" / "2026-09-01.md").write_text("# 2026-09-01\n\n## Context\n- Old day\n")
    (folder / "daily" / "2026-11-29.md").write_text("# 2026-11-29\n\n## Context\n- Recent day\n")
    memory.scan()
    # Daily files are tiered by their date: recent ones in normal search, old ones deep.
    assert [h.path for h in memory.search("day", kinds=["journal"])] == ["daily/2026-11-29.md"]
    assert len(memory.search("day", kinds=["journal"], mode="deep")) == 2
    assert [h.path for h in memory.creative(5, seed=1)] == ["daily/2026-09-01.md"]
    with pytest.raises(memdir.LayerNotConfigured):
        memory.notebook.entries()


def test_links_follow_the_body_on_every_write(memory: memdir.Memory, folder: Path) -> None:
    """The frontmatter's ``links`` holds the explicit links, then every ``[[wiki link]]``
    of the body, each target once; a wiki link the body loses leaves the field too."""
    path = "vault/crm/alice.md"

    def links() -> object:
        return _card(folder, path).meta["links"]

    memory.vault.write("alice", "Head of data at [[acme-corp]] ([[Acme Corp|ACME]]).", folder="crm")
    assert links() == ["acme-corp"]
    memory.vault.write("alice", "Moved to [[beta-inc]].", links=["bob"])
    assert links() == ["bob", "beta-inc"]  # acme-corp left the body, so the field
    memory.vault.write("alice", "Back at [[acme-corp]].")  # bob was explicit: it stays
    assert links() == ["bob", "acme-corp"]
    memory.vault.append_history("alice", "Introduced [[carol]]")
    assert links() == ["bob", "acme-corp", "carol"]
    memory.vault.write("alice", tags=["client"])  # no body given: nothing changes but tags
    assert links() == ["bob", "acme-corp", "carol"]
    # A person adds a link by hand: the next write through memdir (a touch) records it.
    card = folder / path
    card.write_text(
        card.read_text().replace("Back at [[acme-corp]].", "Back at [[acme-corp]], [[dana]].")
    )
    memory.vault.touch("alice")
    assert links() == ["bob", "acme-corp", "carol", "dana"]  # a new link goes last
    assert memory.graph().broken[path] == ["bob", "acme-corp", "carol", "dana"]


def test_a_card_without_links_gets_no_links_field_from_a_touch(
    memory: memdir.Memory, folder: Path
) -> None:
    path = _write_card(folder, "vault/plain.md")
    memory.vault.touch("plain")
    assert "links" not in Card.parse(path.read_text()).meta


def test_the_vault_layout_saves_its_graph_in_vault_graph(tmp_path: Path) -> None:
    memdir.init(tmp_path, layout="vault")
    memory = memdir.open(tmp_path, embedder="none")
    memory.vault.write("alice", "Works at [[acme-corp]].", folder="crm/clients")
    memory.vault.write("acme-corp", "A client.", type="company", folder="crm/clients")
    memory.graph()
    saved = json.loads((tmp_path / "vault" / ".graph" / "graph.json").read_text())
    assert saved["links"]["vault/crm/clients/alice.md"] == ["vault/crm/clients/acme-corp.md"]
    assert not (tmp_path / ".memdir" / "graph.json").exists()


HAND_WRITTEN = st.lists(
    st.sampled_from(["# Alice", "## History", "- 2026-01-01: met", "## Notes", "likes tea", "",
                     "<!-- note -->", "  ", "### Sub"]),
    max_size=8,
)  # fmt: skip


@settings(max_examples=300)
@given(lines=HAND_WRITTEN, newline=st.sampled_from(["\n", "\r\n"]), end=st.booleans())
def test_a_history_line_ends_the_card_with_one_newline(
    lines: list[str], newline: str, end: bool
) -> None:
    """What ``append_history`` writes (``add_history`` into the card's body, the card
    rendered), on hand-written cards of every shape."""
    body = newline.join(lines) + (newline if end else "")
    card = Card.parse(f"---{newline}type: person{newline}---{newline}{body}")
    for line in ("- 2026-11-30 (default): Signed the renewal", "- 2026-11-30 (default): Called"):
        card.body = add_history(card.body, line)
        card.meta["access_count"] = int(card.meta.get("access_count") or 0) + 1
        text = card.render()
        assert text.endswith("\n"), text
        card = Card.parse(text)
    assert "Signed the renewal" in text and text.count(": Called") == 1


def test_append_history_ends_the_card_with_a_newline(memory: memdir.Memory, folder: Path) -> None:
    (folder / "vault" / "alice.md").write_text("---\ntype: person\n---\n# Alice\n\n## Notes\nTea")
    assert memory.vault.append_history("alice", "Signed the renewal").ok
    text = (folder / "vault" / "alice.md").read_text()
    assert text.endswith(
        "## Notes\nTea\n\n## History\n- 2026-11-30 (default): Signed the renewal\n"
    )
