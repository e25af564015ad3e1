"""``memdir maintain`` and ``memdir dream``: every due job in order, once a day where
the job says so, one run at a time per folder; through the API and the real CLI."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
from filelock import FileLock
from typer.testing import CliRunner, Result

import memdir
from memdir.cli import app
from memdir.maintain.background import Housekeeper
from memdir.maintain.jobs import JOBS, MAINTAIN_LOCK
from memdir.testing import FakeClock


@pytest.fixture
def mem(folder: Path, clock: FakeClock) -> memdir.Memory:
    return memdir.open(folder, clock=clock, embedder="hashing")


def _observations(memory: memdir.Memory, n: int) -> None:
    for i in range(n):
        assert memory.knowledge.save(f"Shipment {i} left dock {i % 4} with {i * 3} crates.").ok


def test_maintain_runs_the_due_jobs_in_order(mem: memdir.Memory, clock: FakeClock) -> None:
    assert mem.state.set("deploy", "rolling out").ok
    clock.advance(days=8)
    _observations(mem, 50)
    report = mem.maintain()
    assert [job.name for job in report.jobs] == list(JOBS)
    ran = {job.name: job.ran for job in report.jobs}
    assert ran == {"decay": True, "state": True, "dream": True, "journals": False, "intel": False}
    state = next(job for job in report.jobs if job.name == "state")
    assert state.details["pruned"] == ["deploy"]
    again = {job.name: job.summary for job in mem.maintain().jobs}
    assert again["decay"] == "already ran today"
    assert again["dream"].startswith("dream not run: already dreamt 1 time today")
    clock.advance(days=1)
    assert next(job for job in mem.maintain().jobs if job.name == "decay").ran


def test_a_second_maintain_while_one_runs_does_nothing(mem: memdir.Memory, folder: Path) -> None:
    _observations(mem, 50)
    with FileLock(str(folder / ".memdir" / MAINTAIN_LOCK)):
        report = mem.maintain()
    assert report.busy and report.jobs == []
    assert len(mem.knowledge.observations()) == 50  # nothing was done


def test_only_and_dry_run(mem: memdir.Memory, folder: Path) -> None:
    _observations(mem, 50)
    before = (folder / "knowledge.md").read_bytes()
    report = mem.maintain(only=["dream"], dry_run=True)
    assert [job.name for job in report.jobs] == ["dream"]
    assert report.jobs[0].summary.startswith("offline dream would leave knowledge.md as it was")
    assert (folder / "knowledge.md").read_bytes() == before
    assert mem.history.recent(5) == []
    with pytest.raises(ValueError, match="unknown job nap: the jobs are decay"):
        mem.maintain(only=["nap"])


def test_a_notebook_layout_skips_what_it_has_no_layer_for(tmp_path: Path) -> None:
    memdir.init(tmp_path / "nb", layout="notebook")
    with memdir.open(tmp_path / "nb", embedder="none") as memory:
        skipped = {job.name: job.summary for job in memory.maintain().jobs if not job.ran}
    assert skipped["decay"] == "no vault layer" and skipped["intel"] == "no intel layer"


# -- the command line ---------------------------------------------------------------------


def invoke(folder: Path, *args: str) -> Result:
    return CliRunner().invoke(
        app, [*args, "--dir", str(folder)], env={"MEMDIR_EMBEDDER": "hashing"}
    )


def test_a_journal_file_named_for_no_day_is_left_out(folder: Path) -> None:
    """``journal/2026-13-45.md`` (a hand-made file) stopped maintain: "month must be in
    1..12", after the jobs before it had written."""
    stray = folder / "journal" / "2026-13-45.md"
    stray.write_text("# notes\n\n- kept as written\n", encoding="utf-8")
    result = invoke(folder, "maintain", "--only", "journals", "--json")
    assert result.exit_code == 0, result.output
    assert [job["job"] for job in json.loads(result.stdout)["jobs"]] == ["journals"]
    assert stray.read_text(encoding="utf-8") == "# notes\n\n- kept as written\n"
    with memdir.open(folder, embedder="hashing") as memory:
        assert memory.journal.days() == []


def test_cli_dream_when_not_due_then_forced(folder: Path) -> None:
    with memdir.open(folder, embedder="hashing") as memory:
        memory.knowledge.save("Same fact.", "fact", ["ops"])
        memory.knowledge.save("same fact", "fact", ["ops"])
    result = invoke(folder, "dream")
    assert (
        result.exit_code == 0 and result.stdout == "dream not run: 2 observations, fewer than 50\n"
    )
    forced = invoke(folder, "dream", "--force", "--json")
    assert forced.exit_code == 0, forced.output
    report = json.loads(forced.stdout)
    assert report["ran"] and len(report["merged"]) == 1 and report["observations_after"] == 1
    assert report["snapshot"].startswith("archive/dreams/")
    text = invoke(folder, "dream", "--force", "--dry-run").stdout
    assert text.startswith("offline dream would leave knowledge.md as it was: 1 -> 1 observations")


def test_cli_dream_with_the_llm_planner_but_no_llm_exits_1(folder: Path) -> None:
    result = invoke(folder, "dream", "--force", "--planner", "llm")
    assert result.exit_code == 1
    assert "the llm planner needs an [llm] endpoint" in result.stderr


def test_cli_dream_with_the_llm_planner_and_an_unusable_llm_says_why(folder: Path) -> None:
    manifest = folder / "memdir.toml"
    manifest.write_text(manifest.read_text() + '\n[llm]\nbase_url = "ftp://x/v1"\nmodel = "m"\n')
    before = (folder / "knowledge.md").read_bytes()
    result = invoke(folder, "dream", "--force", "--planner", "llm")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "error: the llm planner cannot run: working offline: the LLM base_url must be an "
        "http:// or https:// URL, not 'ftp://x/v1'\n"
    )
    assert (folder / "knowledge.md").read_bytes() == before


def test_cli_maintain(folder: Path) -> None:
    result = invoke(folder, "maintain")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[1] for line in lines] == list(JOBS)
    assert lines[0] == "ran  decay     0 cards, 0 changed"
    assert lines[2] == "skip dream     dream not run: 0 observations, fewer than 50"
    data = json.loads(invoke(folder, "maintain", "--only", "state", "--json").stdout)
    assert [job["job"] for job in data["jobs"]] == ["state"] and data["busy"] is False
    assert invoke(folder, "maintain", "--only", "nap").exit_code == 2


# -- while a server runs ------------------------------------------------------------------


def test_the_housekeeper_runs_maintain_in_a_child_and_logs_what_changed(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDIR_EMBEDDER", "hashing")  # the child's embedder
    with memdir.open(folder, embedder="hashing") as memory:
        _observations(memory, 50)
        assert memory.knowledge.save("shipment 0 left dock 0 with 0 crates").ok  # a duplicate
    log = io.StringIO()
    report = Housekeeper(folder, 900, log=log).run_once()
    assert report is not None and not report["busy"]
    assert next(job for job in report["jobs"] if job["job"] == "dream")["ran"]
    assert "memdir serve: dream: offline dream changed knowledge.md: 51 -> " in log.getvalue()
    with memdir.open(folder, embedder="hashing") as memory:
        assert len(memory.knowledge.observations()) < 51
        assert memory.history.search("dream")  # the child recorded its dream


def test_the_housekeeper_logs_a_failed_run(tmp_path: Path) -> None:
    log = io.StringIO()
    assert Housekeeper(tmp_path / "not-a-memory", 900, log=log).run_once() is None
    assert log.getvalue().startswith("memdir serve: maintain failed (exit 1): error: ")


def test_the_housekeeper_runs_on_its_timer_until_stopped(folder: Path) -> None:
    keeper = Housekeeper(folder, 0.2, log=io.StringIO()).start()
    deadline = time.monotonic() + 60
    while keeper.runs < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    keeper.stop()
    assert keeper.runs >= 2
    runs = keeper.runs
    time.sleep(0.5)
    assert keeper.runs == runs  # stopped: no more runs
    with pytest.raises(ValueError, match="positive"):
        Housekeeper(folder, 0)


def test_status_says_when_the_last_dream_ran_and_whether_one_is_due(folder: Path) -> None:
    with memdir.open(folder, embedder="hashing") as memory:
        _observations(memory, 50)
    history = folder / ".memdir" / "history.db"
    assert not history.exists()
    before = json.loads(invoke(folder, "status", "--json").stdout)["dream"]
    assert before == {"due": True, "why": "50 observations and no dream yet", "last": None}
    assert not history.exists()  # status wrote nothing
    assert invoke(folder, "dream").exit_code == 0
    after = json.loads(invoke(folder, "status", "--json").stdout)["dream"]
    assert after["due"] is False and after["why"].startswith("already dreamt 1 time today")
    assert after["last"]["summary"].startswith("offline dream")
    line = next(x for x in invoke(folder, "status").stdout.splitlines() if x.startswith("Dream"))
    assert line.startswith(f"Dream    last {after['last']['at']}; not due (already dreamt")
