"""Every layout from the command line: ``memdir card``, ``journal``, ``work``, ``intel``,
and the hint a command gives in a layout that cannot serve it.

Through the real entry point (typer's CliRunner on ``memdir.cli.app``; one test
runs ``python -m memdir`` as a subprocess), with the folder's clock standing at
2026-11-30 10:00 UTC (``memdir.memory.utc_now``, the clock a CLI command's
folder opens with) so dates in the output are exact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import memdir
from memdir.cli import app
from memdir.testing import FakeClock

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
DAY = "2026-11-30"
JOURNAL = {
    "default": f"journal/{DAY}.md",
    "vault": f"daily/{DAY}.md",
    "workspace": f"memory/{DAY}.md",
    "notebook": f"daily-logs/{DAY}.md",
}
WORK_FILE = {
    "default": "NOTEBOOK.md",
    "notebook": "NOTEBOOK.md",
    "workspace": "memory/working-state.md",
}
INTEL_FILE = {
    "default": "intel/project-alpha.md",
    "workspace": "memory/project-alpha-research-intel.md",
}
ALICE = "vault/crm/alice-moreau.md"


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")
    clock = FakeClock(NOW)
    monkeypatch.setattr("memdir.memory.utc_now", clock)
    return clock


def made(tmp_path: Path, layout: str) -> Path:
    root = tmp_path / layout
    memdir.init(root, layout=layout)
    return root


def run(folder: Path, *args: str, input: str | None = None) -> Result:
    """A command on ``folder`` (``--dir`` goes before a ``--``, which ends the options)."""
    end = args.index("--") if "--" in args else len(args)
    return CliRunner().invoke(app, [*args[:end], "--dir", str(folder), *args[end:]], input=input)


def ok(result: Result) -> str:
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    return result.stdout


def ok_json(result: Result) -> Any:
    return json.loads(ok(result))


def failed(result: Result) -> str:
    assert (result.exit_code, result.stdout) == (1, ""), result.output
    return result.stderr


# -- cards -------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["default", "vault"])
def test_card_write_show_list_links_history(tmp_path: Path, layout: str) -> None:
    root = made(tmp_path, layout)
    out = ok(run(root, "card", "write", "Alice Moreau", "Head of data at [[acme-corp]].",
                 "--type", "person", "--folder", "crm", "--tag", "client", "--tag", "berlin",
                 "--field", "company=acme-corp", "--field", "score=3"))  # fmt: skip
    assert out == f"Created card {ALICE}.\n"
    assert ok(run(root, "card", "write", "Acme Corp", "-", "-t", "company", input="A client.\n"))
    assert ok(run(root, "card", "write", "Bob", "Knows [[alice-moreau]] and [[nobody]]."))
    text = (root / ALICE).read_text()
    assert "type: person\ntags: [client, berlin]\n" in text and "\nscore: 3\n" in text
    assert "company: acme-corp" in text and text.endswith(
        "# Alice Moreau\n\nHead of data at [[acme-corp]].\n"
    )

    listing = ok(run(root, "card", "list"))
    assert listing.splitlines() == [
        "vault/acme-corp.md Acme Corp (company, active, relevance 1.00)",
        "vault/bob.md Bob (other, active, relevance 1.00)",
        f"{ALICE} Alice Moreau (person, active, relevance 1.00) [client, berlin]",
    ]
    assert ok(run(root, "card", "list", "--tag", "berlin")) == listing.splitlines()[2] + "\n"
    assert ok(run(root, "card", "list", "--type", "idea")) == "No cards of the 3 match.\n"
    data = ok_json(run(root, "card", "list", "--type", "person", "--tier", "active", "--json"))
    assert data == [{
        "path": ALICE, "name": "alice-moreau", "title": "Alice Moreau", "type": "person",
        "tags": ["client", "berlin"], "tier": "active", "relevance": 1.0,
        "last_accessed": DAY, "access_count": 0, "links": ["acme-corp"],
    }]  # fmt: skip

    assert ok(run(root, "card", "links", "alice-moreau")) == (
        f"{ALICE}\n  links: vault/acme-corp.md\n  backlinks: vault/bob.md\n  broken: none\n"
    )
    assert ok_json(run(root, "card", "links", "Bob", "--json")) == {
        "card": "vault/bob.md", "links": [ALICE], "backlinks": [], "broken": ["nobody"],
    }  # fmt: skip

    assert ok(run(root, "card", "history", "alice-moreau", "Signed the renewal")) == (
        f"Added to the history of {ALICE}.\n"
    )
    assert ok(run(root, "card", "history", "Alice Moreau")) == (
        f"- {DAY} (default): Signed the renewal\n"
    )
    assert ok_json(run(root, "card", "history", "bob", "--json")) == {
        "card": "vault/bob.md", "history": [],
    }  # fmt: skip
    shown = ok(run(root, "card", "show", "alice-moreau"))
    assert shown == (root / ALICE).read_text()
    assert "access_count: 2\n" in shown  # the history line touched it, then reading it
    card = ok_json(run(root, "card", "show", "alice-moreau", "--no-touch", "--json"))
    assert card["touched"] is False and card["meta"]["access_count"] == 2
    assert card["meta"]["last_accessed"] == DAY and card["body"].endswith(
        f"## History\n- {DAY} (default): Signed the renewal\n"
    )


def test_card_write_updates_and_refuses(tmp_path: Path) -> None:
    root = made(tmp_path, "vault")
    assert ok(run(root, "card", "write", "Alice Moreau", "Buyer.", "--folder", "crm"))
    assert ok(run(root, "card", "write", "alice-moreau", "--tag", "vip")) == (
        f"Updated card {ALICE}.\n"
    )
    assert "tags: [vip]" in (root / ALICE).read_text()
    assert (root / ALICE).read_text().endswith("Buyer.\n")  # no TEXT: the text is kept
    data = ok_json(run(root, "card", "write", "alice-moreau", "Head buyer.", "--json"))
    assert data == {
        "ok": True, "status": "ok", "store": ALICE, "action": "updated", "key": ALICE,
    }  # fmt: skip
    before = (root / ALICE).read_bytes()
    key = "sk-proj-" + "Ab3" * 12
    refused = run(root, "card", "write", "alice-moreau", f"Her key is {key}")
    assert refused.exit_code == 1 and refused.stderr.startswith("refused: ")
    assert (root / ALICE).read_bytes() == before
    bad = run(root, "card", "write", "alice-moreau", "--field", "nokey")
    assert bad.exit_code == 2 and "is not KEY=VALUE" in bad.stderr
    assert run(root, "card", "list", "--tier", "lukewarm").exit_code == 2


def test_a_missing_card_is_an_error(tmp_path: Path) -> None:
    root = made(tmp_path, "vault")
    message = "error: no card 'nobody' in the vault; memdir card list shows the cards there are\n"
    assert failed(run(root, "card", "show", "nobody")) == message
    assert failed(run(root, "card", "links", "nobody")) == message
    assert failed(run(root, "card", "history", "nobody")) == message
    assert failed(run(root, "card", "history", "nobody", "x")) == (
        "refused: no card 'nobody' in the vault; create it with a card write first\n"
    )
    assert ok(run(root, "card", "list")) == "No cards.\n"


# -- journal -----------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["default", "vault", "workspace", "notebook"])
def test_journal_append_and_show(tmp_path: Path, layout: str) -> None:
    root = made(tmp_path, layout)
    path = JOURNAL[layout]
    assert ok(run(root, "journal", "append", "milestone", "Deployed v2.1")) == (
        f"Updated {path} (Milestones).\n"
    )
    assert ok(run(root, "journal", "append", "decision", "Chose Redis", "--why", "reads dominate"))
    decided = run(root, "journal", "append", "decision", "Went with Postgres", "--json")
    assert ok_json(decided) == {
        "ok": True, "status": "ok", "store": path, "action": "updated", "key": "Decisions",
        "notes": ["decision logged without its reason: add --why TEXT so future-you knows"],
    }  # fmt: skip
    assert ok(run(root, "journal", "append", "learning", "-", input="Webhooks need HTTPS\n"))
    expected = (
        f"# {DAY}\n\n## Decisions\n- Chose Redis because reads dominate\n"
        "- Went with Postgres (why: not recorded)\n\n## Learnings\n- Webhooks need HTTPS\n\n"
        "## Milestones\n- 10:00 — Deployed v2.1\n"
    )
    assert (root / path).read_text() == expected
    assert ok(run(root, "journal", "show")) == expected
    assert ok(run(root, "journal", "show", DAY)) == expected
    assert ok_json(run(root, "journal", "show", "today", "--json")) == {
        "day": DAY, "path": path, "text": expected, "latest_before": None,
    }  # fmt: skip
    yesterday = path.replace(DAY, "2026-11-29")
    assert ok(run(root, "journal", "show", "yesterday")) == (
        f"No journal for 2026-11-29 ({yesterday}).\n"
    )
    assert ok(run(root, "journal", "show", "2026-12-03")) == (
        f"No journal for 2026-12-03 ({path.replace(DAY, '2026-12-03')}); the latest before it "
        f"is {DAY}.\n"
    )
    assert ok_json(run(root, "journal", "show", "2026-12-03", "--json")) == {
        "day": "2026-12-03", "path": path.replace(DAY, "2026-12-03"), "text": None,
        "latest_before": DAY,
    }  # fmt: skip


def test_journal_refuses_bad_input(tmp_path: Path) -> None:
    root = made(tmp_path, "workspace")
    assert run(root, "journal", "append", "gossip", "x").exit_code == 2
    assert run(root, "journal", "show", "last-tuesday").exit_code == 2
    assert failed(run(root, "journal", "append", "context", "   ")) == (
        "refused: the journal line is empty; nothing was written\n"
    )
    assert not (root / JOURNAL["workspace"]).exists()


# -- working state -----------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["default", "workspace", "notebook"])
def test_work_start_finish_spawn_result_show(tmp_path: Path, layout: str) -> None:
    root = made(tmp_path, layout)
    store = WORK_FILE[layout]
    assert ok(run(root, "work", "start", "Build the landing page")) == f"Updated {store}.\n"
    assert ok(run(root, "work", "start", "-", input="Fix the auth bug\n"))
    assert ok(run(root, "work", "finish", "Fix the auth bug"))
    assert ok(run(root, "work", "spawn", "dec-007", "API work"))
    assert ok(run(root, "work", "show")) == (
        f"{store} (done list of {DAY})\n"
        "Right Now\n  - Waiting on sub-agent dec-007 for API work\n  - Build the landing page\n"
        f"Done\n  - [x] Fix the auth bug ({DAY} 10:00)\n"
        "Pending\n  - Sub-agent dec-007 spawned at 10:00 for API work\n"
    )
    produced(root / "out" / "client.py")
    result = run(
        root,
        "work",
        "result",
        "dec-007",
        "client written",
        "--file",
        str(root / "out" / "client.py"),
    )
    assert ok(result) == (
        f"Updated {store}.\n"
        "  verified: out/client.py exists, is not empty and was modified after the spawn\n"
    )
    assert ok(run(root, "work", "finish"))
    assert ok_json(run(root, "work", "show", "--json")) == {
        "store": store,
        "right_now": [],
        "done": [
            f"Fix the auth bug ({DAY} 10:00)",
            f"Sub-agent dec-007: client written (verified on the filesystem: 1 file) ({DAY} 10:00)",
            f"Build the landing page ({DAY} 10:00)",
        ],
        "pending": [],
        "day": DAY,
    }
    assert (
        "- 10:00 — Spawned sub-agent dec-007 for API work" in (root / JOURNAL[layout]).read_text()
    )
    assert failed(run(root, "work", "finish")) == (
        "refused: Right Now is empty: there is no task to finish\n"
    )
    assert failed(run(root, "work", "result", "ghost", "x")) == (
        "refused: no pending sub-agent 'ghost'; pending: none\n"
    )


def test_work_finish_of_a_task_not_in_right_now_is_refused(tmp_path: Path) -> None:
    """A misspelt task was stamped done while the real one stayed in Right Now."""
    root = made(tmp_path, "workspace")
    ok(run(root, "work", "start", "Fix the auth bug"))
    before = (root / WORK_FILE["workspace"]).read_bytes()
    assert failed(run(root, "work", "finish", "Fix the auth bgu")) == (
        "refused: no task 'Fix the auth bgu' in Right Now (it holds: Fix the auth bug); "
        "name it as written there, or name none to finish the first\n"
    )
    assert (root / WORK_FILE["workspace"]).read_bytes() == before


def test_work_show_reads_a_hand_edited_day_that_is_no_date(tmp_path: Path) -> None:
    """``<!-- day: 2026-13-45 -->`` stopped ``work show`` with "month must be in 1..12"."""
    root = made(tmp_path, "workspace")
    ok(run(root, "work", "start", "Fix the auth bug"))
    ok(run(root, "work", "finish"))
    path = root / WORK_FILE["workspace"]
    path.write_text(path.read_text().replace(f"day: {DAY}", "day: 2026-13-45"))
    shown = ok_json(run(root, "work", "show", "--json"))
    assert (shown["day"], shown["done"]) == (None, [f"Fix the auth bug ({DAY} 10:00)"])


def produced(path: Path, text: str = "done\n", *, at: float = NOW.timestamp() + 300) -> Path:
    """A file a sub-agent wrote, last modified ``at`` (five minutes after the spawn)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (at, at))
    return path


def test_work_result_checks_each_file_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = made(tmp_path, "workspace")
    project = tmp_path / "project"  # where the sub-agent worked: outside the memory folder
    produced(project / "README.md")
    produced(project / "empty.md", "")
    produced(project / "stale.md", at=NOW.timestamp() - 3600)
    monkeypatch.chdir(project)  # the shell's relative paths are the current folder's
    assert ok(run(root, "work", "spawn", "dec-007", "API work"))
    result = run(root, "work", "result", "dec-007", "wrote the docs", "--verified",
                 "--file", "README.md", "--file", "empty.md", "--file", "stale.md",
                 "--file", "missing.md", "--json")  # fmt: skip
    data = ok_json(result)
    assert data["ok"] is True and data["notes"] == [
        "recorded as UNVERIFIED: 3 of 4 files failed a check",
        f"{project}/empty.md is empty (0 bytes)",
        f"{project}/stale.md was last modified at 2026-11-30T09:00:00Z, before the spawn at "
        "2026-11-30T10:00:00Z",
        f"{project}/missing.md does not exist",
    ]
    done = ok_json(run(root, "work", "show", "--json"))["done"]
    assert done == [
        f"Sub-agent dec-007: wrote the docs (UNVERIFIED: {project}/empty.md is empty (0 bytes); "
        f"{project}/stale.md was last modified at 2026-11-30T09:00:00Z, before the spawn at "
        f"2026-11-30T10:00:00Z; {project}/missing.md does not exist) ({DAY} 10:00)"
    ]
    assert (project / "README.md").read_text() == "done\n"  # its content never read, never changed


@pytest.mark.parametrize("given", ["", "  ", "out/a.md\nout/b.md"])
def test_work_result_with_a_file_that_is_no_path_is_refused(tmp_path: Path, given: str) -> None:
    """``--file ""`` was the current folder: the result was recorded, UNVERIFIED (a
    folder), and the sub-agent taken off Pending."""
    root = made(tmp_path, "default")
    assert ok(run(root, "work", "spawn", "scout", "price survey"))
    before = (root / "NOTEBOOK.md").read_bytes()
    said = failed(run(root, "work", "result", "scout", "3 quotes", "--file", given))
    assert said == f"refused: {given!r} is not a path: give each file as one line, not empty\n"
    assert (root / "NOTEBOOK.md").read_bytes() == before


def test_work_result_all_files_fine_and_the_callers_word(tmp_path: Path) -> None:
    root = made(tmp_path, "default")
    produced(root / "a.md")
    produced(tmp_path / "b.md")
    assert ok(run(root, "work", "spawn", "scout", "price survey"))
    assert ok(run(root, "work", "spawn", "writer", "draft email"))
    text = ok(run(root, "work", "result", "scout", "3 quotes", "--file", str(root / "a.md"),
                  "--file", str(tmp_path / "b.md")))  # fmt: skip
    assert text.endswith(
        "  verified: all 2 files exist, are not empty and were modified after the spawn\n"
    )
    text = ok(run(root, "work", "result", "writer", "drafted", "--verified"))
    assert text.endswith(
        "  verified on your word: name the files it produced and memdir checks them on disk\n"
    )
    assert ok_json(run(root, "work", "show", "--json"))["done"] == [
        f"Sub-agent scout: 3 quotes (verified on the filesystem: 2 files) ({DAY} 10:00)",
        f"Sub-agent writer: drafted (verified on the filesystem) ({DAY} 10:00)",
    ]


# -- research intel ----------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["default", "workspace"])
def test_intel_add_and_show(tmp_path: Path, layout: str) -> None:
    root = made(tmp_path, layout)
    path = INTEL_FILE[layout]
    added = run(root, "intel", "add", "project-alpha", "CompetitorX cut prices to $49",
                "--topic", "Competitor Analysis")  # fmt: skip
    assert ok(added) == f"Created {path} (Competitor Analysis).\n"
    assert ok(run(root, "intel", "add", "project-alpha", "-", input="Churn is 3% a month\n"))
    week = (
        "### Competitor Analysis\n- CompetitorX cut prices to $49\n\n"
        "### Key Findings\n- Churn is 3% a month"
    )
    assert ok(run(root, "intel", "show", "project-alpha")) == f"{path}: this week\n{week}\n"
    assert ok_json(run(root, "intel", "show", "project-alpha", "--json")) == {
        "project": "project-alpha", "path": path, "current_week": week, "previous_weeks": [],
    }  # fmt: skip
    assert failed(run(root, "intel", "show", "beta")) == (
        f"error: no intel on 'beta' ({path.replace('project-alpha', 'beta')}); "
        "projects: project-alpha\n"
    )


def test_rotate_with_an_unusable_llm_says_it_went_offline(tmp_path: Path) -> None:
    """An [llm] base_url that is not http(s): the week got the offline summary, and
    memdir rotate said nothing of the LLM it had been told to use."""
    root = made(tmp_path, "default")
    manifest = root / "memdir.toml"
    manifest.write_text(manifest.read_text() + '\n[llm]\nbase_url = "ftp://x/v1"\nmodel = "m"\n')
    (root / "intel" / "alpha.md").write_text(
        "# Alpha Research Intel\n\n## Current Week (Nov 16-22, 2026)\n### Competitors\n"
        "- Globex cut its prices to $49.\n\n---\n"
    )
    said = (
        "LLM not used: working offline: the LLM base_url must be an http:// or https:// "
        "URL, not 'ftp://x/v1'; used the offline summary"
    )
    assert ok(run(root, "rotate")) == (
        f"  rotated alpha: Nov 16-22, 2026\n  note: {said}\n1 week rotated, 0 files unchanged.\n"
    )
    assert "Globex cut its prices to $49." in (root / "intel" / "alpha.md").read_text()
    assert ok_json(run(root, "rotate", "--json")) == {"rotated": [], "archives": [], "unchanged": 1}


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".memdir" not in p.parts
    }


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "project name is empty"),
        ("   ", "project name is empty"),
        (
            "!!!...---",
            "project name '!!!...---' has no letter or digit (a-z, 0-9) to name its file after",
        ),  # fmt: skip
        (
            "日本語",
            "project name '日本語' has no letter or digit (a-z, 0-9) to name its file after",
        ),
    ],
)
def test_an_intel_project_that_names_no_file_says_why(
    tmp_path: Path, name: str, reason: str
) -> None:
    """add said "project name is empty" of a name of punctuation or of other scripts."""
    root = made(tmp_path, "workspace")
    before = _files(root)
    such = "; give a name such as 'project-alpha'\n"
    assert failed(run(root, "intel", "add", "--", name, "a finding")) == f"refused: {reason}{such}"
    assert failed(run(root, "intel", "show", "--", name)) == f"error: {reason}{such}"
    assert _files(root) == before


def test_an_intel_project_named_as_a_path_is_written_inside_and_says_where(
    tmp_path: Path,
) -> None:
    root = made(tmp_path, "workspace")
    for name, path in (("../../x", "memory/x-research-intel.md"),
                       ("/etc/passwd", "memory/etc-passwd-research-intel.md")):  # fmt: skip
        assert ok(run(root, "intel", "add", "--", name, "a finding")) == (
            f"Created {path} (Key Findings).\n"
        )
    assert not (tmp_path / "x-research-intel.md").exists()
    assert sorted(p.name for p in (root / "memory").glob("*-research-intel.md")) == [
        "etc-passwd-research-intel.md",
        "x-research-intel.md",
    ]


# -- a command the layout cannot serve says which one can ------------------------------


@pytest.mark.parametrize(
    ("layout", "argv", "hint"),
    [
        ("vault", ["save", "Alice runs billing"],
         "this vault layout keeps facts in cards: memdir card write TITLE TEXT"),
        ("vault", ["update", "conventions", "x"],
         "this vault layout keeps facts in cards: memdir card write TITLE TEXT"),
        ("vault", ["notebook"], "this vault layout keeps its working memory in STATE.md, a file "
         "you edit yourself (memdir get STATE.md prints it)"),
        ("vault", ["work", "start", "x"], "this vault layout keeps its working memory in "
         "STATE.md, a file you edit yourself (memdir get STATE.md prints it)"),
        ("vault", ["state", "set", "deploy", "green"], "this vault layout has no dated "
         "snapshots; its hot state is STATE.md, a file you edit yourself"),
        ("vault", ["intel", "add", "alpha", "x"], "this vault layout keeps research in cards: "
         "memdir card write PROJECT TEXT --type project"),
        ("vault", ["lessons", "check", "deploy"], "this vault layout has no lessons file; log "
         "what you learned with memdir journal append learning TEXT"),
        ("workspace", ["save", "x"], "this workspace layout keeps what it learns in the daily "
         "log: memdir journal append learning TEXT"),
        ("workspace", ["notebook", "set", "task", "x"], "this workspace layout keeps what you "
         "are doing in memory/working-state.md: memdir work start TASK, work show"),
        ("workspace", ["state"], "this workspace layout has no dated snapshots; what you are "
         "doing goes to memory/working-state.md: memdir work start TASK"),
        ("workspace", ["card", "write", "Alice", "x"], "this workspace layout has no cards; "
         "note facts with memdir journal append learning TEXT"),
        ("workspace", ["recall", "list"], "this workspace layout keeps no activity history; "
         "what happened is in its daily log: memdir journal show [DAY]"),
        ("notebook", ["card", "list"], "this notebook layout has no cards; it keeps facts in "
         "knowledge.md: memdir save TEXT"),
        ("notebook", ["intel", "show", "alpha"], "this notebook layout has no research intel; "
         "save a finding with memdir save TEXT --tag PROJECT"),
    ],
)  # fmt: skip
def test_a_command_the_layout_cannot_serve_names_the_one_that_can(
    tmp_path: Path, layout: str, argv: list[str], hint: str
) -> None:
    root = made(tmp_path, layout)
    before = sorted(p.relative_to(root) for p in root.rglob("*") if ".memdir" not in p.parts)
    message = failed(run(root, *argv))
    assert message.startswith("error: ") and message.count("\n") == 1
    assert f"; {hint}" in message, message
    after = sorted(p.relative_to(root) for p in root.rglob("*") if ".memdir" not in p.parts)
    assert after == before


def test_a_hand_written_manifest_gets_the_hint_of_its_layers(tmp_path: Path) -> None:
    """The hint follows the layers declared, not the layout's name."""
    root = made(tmp_path, "workspace")
    manifest = root / "memdir.toml"
    text = manifest.read_text().replace('layout = "workspace"', 'layout = "custom"')
    manifest.write_text(text.replace('paths = ["memory/working-state.md"]', 'paths = ["now.md"]'))
    message = failed(run(root, "notebook"))
    assert message.endswith(
        "; this folder keeps what you are doing in now.md: memdir work start TASK, work show\n"
    )


# -- the real entry point ------------------------------------------------------------------


def test_python_m_memdir_reads_text_from_stdin(tmp_path: Path) -> None:
    root = made(tmp_path, "workspace")
    env = {**os.environ, "MEMDIR_EMBEDDER": "hashing"}
    done = subprocess.run(
        [sys.executable, "-m", "memdir", "journal", "append", "context", "-", "--dir", str(root),
         "--json"],
        input="Owner travels next week\n", capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["ok"] is True and data["key"] == "Context"
    day = data["store"].removeprefix("memory/").removesuffix(".md")
    assert (
        root / data["store"]
    ).read_text() == f"# {day}\n\n## Context\n- Owner travels next week\n"
