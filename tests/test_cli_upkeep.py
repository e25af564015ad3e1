"""The vault and workspace commands (``touch``, ``decay``, ``creative``, ``moc``, ``lessons``,
``rotate``) and upkeep (``context``, ``budget``, ``reindex``, ``doctor``)."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import memdir
from memdir.cli import _common, app
from memdir.index.embedders import HashingEmbedder

CARD = "vault/alice-moreau.md"


@pytest.fixture(autouse=True)
def hashing_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")


def invoke(folder: Path, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--dir", str(folder)])


def ok_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return json.loads(result.stdout)


def old_card(folder: Path, tier: str = "active", link: str = "") -> None:
    """A card last read in 2020: any decay today sends it to the archive tier."""
    with memdir.open(folder, embedder="hashing") as memory:
        fields = {"tier": tier, "last_accessed": date(2020, 1, 1)}
        body = "Alice runs billing." + (f" See [[{link}]]." if link else "")
        assert memory.vault.write("Alice Moreau", body, type="person", fields=fields).ok


def test_touch(folder: Path) -> None:
    old_card(folder, tier="cold")
    result = invoke(folder, "touch", "Alice Moreau")
    assert (result.exit_code, result.stdout) == (0, f"Touched {CARD}: tier cold -> warm\n")
    data = ok_json(invoke(folder, "touch", "alice-moreau", "--json"))
    assert data == {
        "ok": True, "status": "ok", "store": CARD, "action": "touched", "key": CARD,
        "notes": ["tier warm -> active"],
    }  # fmt: skip
    missing = invoke(folder, "touch", "Nobody")
    assert (missing.exit_code, missing.stdout) == (1, "")
    assert missing.stderr == "refused: no card 'Nobody' in the vault\n"


def test_decay_dry_run_then_for_real(folder: Path) -> None:
    old_card(folder)
    before = (folder / CARD).read_text()
    dry = invoke(folder, "decay", "--dry-run")
    assert dry.stdout == (
        "1 card, 1 would change. Tiers: core 0, active 0, warm 0, cold 0, archive 1.\n"
    )
    assert (folder / CARD).read_text() == before
    data = ok_json(invoke(folder, "decay", "--json"))
    assert data == {
        "cards": 1,
        "changed": 1,
        "tiers": {"core": 0, "active": 0, "warm": 0, "cold": 0, "archive": 1},
        "dry_run": False,
        "unreadable": [],
    }
    assert "tier: archive" in (folder / CARD).read_text()
    again = invoke(folder, "decay")
    assert again.stdout.startswith("1 card, 0 changed.")


def test_creative_repeats_with_a_seed(folder: Path) -> None:
    old_card(folder)
    assert invoke(folder, "decay").exit_code == 0
    first = invoke(folder, "creative", "3", "--seed", "7")
    assert first.exit_code == 0, first.output
    assert invoke(folder, "creative", "3", "--seed", "7").stdout == first.stdout
    hits = ok_json(invoke(folder, "creative", "3", "--seed", "7", "--json"))
    assert CARD in [hit["path"] for hit in hits]
    assert invoke(folder, "creative", "0").exit_code == 2


def test_moc(folder: Path) -> None:
    old_card(folder, link="Bob Stone")
    result = invoke(folder, "moc")
    assert result.stdout.splitlines() == [
        "1 map written; 1 card, 1 orphan, 1 broken link.",
        "  wrote vault/MOC/index.md",
    ]
    data = ok_json(invoke(folder, "moc", "--json"))
    assert data["cards"] == [CARD]
    assert data["broken"] == {CARD: ["Bob Stone"]}


def test_doctor_exits_1_on_findings(folder: Path) -> None:
    assert invoke(folder, "reindex").exit_code == 0
    clean = invoke(folder, "doctor")
    assert (clean.exit_code, clean.stdout) == (0, "No problems found.\n")
    assert ok_json(invoke(folder, "doctor", "--json")) == []
    old_card(folder, link="Bob Stone")
    found = invoke(folder, "doctor")
    assert found.exit_code == 1
    assert f"[broken-link] {CARD}: [[Bob Stone]] names no card" in found.stdout.splitlines()
    as_json = invoke(folder, "doctor", "--json")
    assert as_json.exit_code == 1
    assert {"check": "broken-link", "path": CARD} in [
        {"check": f["check"], "path": f["path"]} for f in json.loads(as_json.stdout)
    ]


def test_lessons(folder: Path) -> None:
    lesson = ["--mistake", "Deployed on a Friday", "--happened", "Nobody was around for the "
              "rollback", "--rule", "Deploy Mon-Thu"]  # fmt: skip
    added = invoke(folder, "lessons", "add", "Deploys", *lesson)
    assert (added.exit_code, added.stdout) == (0, "Updated lessons.md (Deploys).\n")
    hits = ok_json(invoke(folder, "lessons", "check", "friday deploy", "-k", "1", "--json"))
    assert [(hit["path"], hit["kind"]) for hit in hits] == [("lessons.md", "lesson")]
    assert hits[0]["snippet"].endswith("**Rule:** **Deploy** Mon-Thu")
    # an empty query was 'Nothing to list: no observations yet', exit 0, beside a lesson
    nothing = invoke(folder, "lessons", "check", " ")
    assert (nothing.exit_code, nothing.stdout) == (1, "")
    assert nothing.stderr == (
        "error: the query is empty; say what you are about to do, such as 'deploy on a Friday'\n"
    )
    empty = invoke(folder, "lessons", "add", "Deploys", "--mistake", " ", "--happened", "x",
                   "--rule", "y")  # fmt: skip
    assert (empty.exit_code, empty.stdout) == (1, "")
    assert empty.stderr.startswith("refused: mistake is empty")


def test_rotate_with_nothing_to_rotate(folder: Path) -> None:
    assert invoke(folder, "rotate").stdout == "0 weeks rotated, 0 files unchanged.\n"
    assert ok_json(invoke(folder, "rotate", "--json")) == {
        "rotated": [], "archives": [], "unchanged": 0
    }  # fmt: skip


def test_rotate_of_a_project_with_no_intel_says_so(folder: Path) -> None:
    """It printed "0 weeks rotated", exit 0: a typo looked like a rotation done."""
    (folder / "intel" / "alpha.md").write_text(OLD_WEEK, encoding="utf-8")
    result = invoke(folder, "rotate", "--project", "alpah")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == ("error: no intel on 'alpah' (intel/alpah.md); projects: alpha\n")
    assert (folder / "intel" / "alpha.md").read_text(encoding="utf-8") == OLD_WEEK
    assert not (folder / "intel" / "alpah.md").exists()


OLD_WEEK = """\
# Alpha Research Intel

## Current Week (Feb 10-16, 2025)
### Pricing
- Acme raised its enterprise price by 20% and lost two customers.
- Globex kept its prices.

---

## Previous Weeks (Compressed)
"""


@pytest.mark.parametrize("command", [("rotate",), ("maintain", "--only", "intel")])
def test_a_failed_llm_summary_falls_back_and_says_so(
    folder: Path, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    (folder / "intel").mkdir(exist_ok=True)
    (folder / "intel" / "alpha.md").write_text(OLD_WEEK, encoding="utf-8")
    monkeypatch.setenv("MEMDIR_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens
    monkeypatch.setenv("MEMDIR_LLM_MODEL", "any")
    result = invoke(folder, *command)
    assert result.exit_code == 0, result.output
    notes = [line.strip() for line in result.stdout.splitlines() if "note:" in line]
    assert len(notes) == 1 and notes[0].startswith("note: LLM summary failed: ")
    assert notes[0].endswith("; used the offline summary")
    text = (folder / "intel" / "alpha.md").read_text(encoding="utf-8")
    assert "- **Feb 10-16:** Acme raised its enterprise price by 20%" in text
    if command[0] == "maintain":
        assert "rotated 1 week; 1 summary fell back to the offline one" in result.stdout


def test_reindex(folder: Path) -> None:
    result = invoke(folder, "reindex")
    assert result.exit_code == 0, result.output
    data = ok_json(invoke(folder, "reindex", "--json"))
    assert set(data) == {"files", "items", "seconds", "read_seconds", "embed_seconds"}
    assert data["files"] > 0 and data["items"] > 0
    assert result.stdout.startswith(f"Reindexed {data['files']} files, {data['items']} items in ")


@pytest.mark.parametrize(
    ("embedder", "reason"),
    [
        ("nosuch", "no embedder named 'nosuch'; known: "),
        ("openai:nomic-embed-text", "the openai embedder needs a server: base_url in "),
    ],
)
def test_reindex_with_an_embedder_that_cannot_be_made_fails_and_changes_nothing(
    folder: Path, monkeypatch: pytest.MonkeyPatch, embedder: str, reason: str
) -> None:
    """It rebuilt a keyword-only index and said "Reindexed ..." as if all were well."""
    assert invoke(folder, "reindex").exit_code == 0
    index = folder / ".memdir" / "index.db"
    before = index.read_bytes()
    monkeypatch.setenv("MEMDIR_EMBEDDER", embedder)
    result = invoke(folder, "reindex")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith(f"error: {reason}") and result.stderr.count("\n") == 1
    assert result.stderr.endswith(
        '; nothing was reindexed (fix the embedder, or set [index] embedder = "none" for '
        "keyword search only)\n"
    )
    assert index.read_bytes() == before
    monkeypatch.setenv("MEMDIR_EMBEDDER", "none")  # told to have none: a keyword index
    assert invoke(folder, "reindex").exit_code == 0


def test_a_search_that_goes_by_keyword_alone_says_why_on_stderr(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It answered by keyword with nothing said: a newcomer's typo in [index] embedder
    went unnoticed."""
    assert invoke(folder, "save", "Deploys happen on Tuesdays.").exit_code == 0
    monkeypatch.setenv("MEMDIR_EMBEDDER", "nosuch")
    for args in ([], ["--json"]):
        result = invoke(folder, "search", "deploys", *args)
        assert result.exit_code == 0 and "Tuesdays" in result.stdout
        assert result.stderr.count("keyword search only") == 1 and result.stderr.startswith(
            "memdir: index: keyword search only: no embedder named 'nosuch'; known: "
        ), result.stderr
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")
    assert invoke(folder, "search", "deploys").stderr == ""


def test_reindex_reports_the_time_of_the_reading_and_of_the_embedding(folder: Path) -> None:
    """The time the user waited: the files read, then their texts embedded (the
    report said the reading alone, 3 s of a 4-minute reindex)."""
    data = ok_json(invoke(folder, "reindex", "--json"))
    assert data["seconds"] == pytest.approx(data["read_seconds"] + data["embed_seconds"], abs=0.002)
    assert 0 < data["read_seconds"] <= data["seconds"]
    text = invoke(folder, "reindex").stdout
    assert re.fullmatch(
        rf"Reindexed {data['files']} files, {data['items']} items in \d+\.\d s "
        r"\(reading \d+\.\d s, embedding \d+\.\d s\)\.\n",
        text,
    ), text


def test_a_reindex_stopped_by_ctrl_c_keeps_what_it_embedded(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the second batch is embedded: exit 130, one line saying how far it
    got and how to go on, no traceback; the next reindex embeds the rest."""
    journal = "".join(f"\n## note {n}\nNote {n} on topic {n % 13}.\n" for n in range(300))
    (folder / "journal" / "2026-10-01.md").write_text(f"# 2026-10-01\n{journal}")
    real, calls = HashingEmbedder.embed, []

    def embed(self: HashingEmbedder, texts: list[str]) -> object:
        calls.append(len(texts))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, texts)

    monkeypatch.setattr(HashingEmbedder, "embed", embed)
    stopped = invoke(folder, "reindex")
    with memdir.open(folder, embedder="hashing") as memory:
        texts = memory.index.vector_counts()[1]
    assert stopped.exit_code == 130 and stopped.stdout == ""
    assert stopped.stderr == (
        f"stopped: 256 of {texts:,} texts embedded and kept; run memdir reindex again to go on\n"
    )
    monkeypatch.setattr(HashingEmbedder, "embed", real)
    assert invoke(folder, "reindex").exit_code == 0
    with memdir.open(folder, embedder="hashing") as memory:
        assert memory.index.vector_counts() == (texts, texts)


def test_progress_off_a_terminal_is_a_line_every_few_seconds(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Off a terminal (here: CliRunner's pipe) no bar is drawn; a line says how far the
    job is every PROGRESS_EVERY seconds (0 here: every step), on stderr only."""
    quiet = invoke(folder, "reindex", "--json")  # a job shorter than the interval: nothing
    assert (quiet.exit_code, quiet.stderr) == (0, "")
    monkeypatch.setattr(_common, "PROGRESS_EVERY", 0.0)
    result = invoke(folder, "reindex", "--json")
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)  # stdout holds the JSON document only
    found = [
        re.fullmatch(r"rebuilding the index: ([\d,]+) of ([\d,]+) \((\d+)%\) after \d+ s", line)
        for line in result.stderr.splitlines()
    ]
    assert found and all(found), result.stderr
    assert any(m is not None and m.group(1) == m.group(2) and m.group(3) == "100" for m in found)


def test_context_and_budget(folder: Path) -> None:
    assert invoke(folder, "notebook", "set", "plan", "Ship the invoices report").exit_code == 0
    text = invoke(folder, "context")
    assert text.exit_code == 0, text.output
    assert "Ship the invoices report" in text.stdout and "[Live context]" in text.stdout
    data = ok_json(invoke(folder, "context", "--profile", "reflex", "--json"))
    reflex = invoke(folder, "context", "--profile", "reflex").stdout
    assert data["profile"] == "reflex" and data["stable"] in reflex and data["live"] in reflex
    assert data["tokens"] <= data["budget"]
    report = invoke(folder, "context", "--report", "--budget", "5000")
    assert any(line.endswith("of 5000 tokens (bytes/4).") for line in report.stdout.splitlines())

    budget = ok_json(invoke(folder, "budget", "--json"))
    assert "NOTEBOOK.md" in [row["path"] for row in budget["rows"]]
    assert invoke(folder, "budget").stdout.splitlines()[-1] == "  Within every target."
