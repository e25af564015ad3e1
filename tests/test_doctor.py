"""``memdir doctor``: one test per finding (hot-context, dry, broken-link, cap, index),
read-only, and the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import memdir
from memdir.maintain.doctor import Finding
from memdir.testing import FakeClock

ALICE = "vault/crm/alice-moreau.md"
DETAIL = "Alice Moreau is head of data at Acme and signs off the renewal budget."
WRITERS: list[Callable[[memdir.Memory, str], memdir.WriteResult]] = [
    lambda memory, text: memory.knowledge.update("clients", f"- {text}"),
    lambda memory, text: memory.journal.append("context", text),
    lambda memory, text: memory.notebook.update("clients", text),
]


def found(memory: memdir.Memory, check: str) -> list[Finding]:
    return [finding for finding in memory.doctor() if finding.check == check]


def notebook_with(agent_entries: int) -> str:
    return "# Notebook\n" + "".join(
        f"\n## task-{n}\n<!-- managed: agent; updated: 2026-11-2{n}T10:00:00Z -->\nStep {n}.\n"
        for n in range(agent_entries)
    )


@pytest.fixture
def vault_memory(tmp_path: Path, clock: FakeClock) -> Iterator[memdir.Memory]:
    root = tmp_path / "vault-mem"
    memdir.init(root, layout="vault")
    with memdir.open(root, clock=clock, embedder="hashing") as opened:
        yield opened


@pytest.mark.parametrize(
    "text",
    ["\n".join(f"- step {n} done" for n in range(100)), "\n".join(["word " * 90] * 10)],
    ids=["100-lines", "4.5-KB"],
)
def test_hot_context_notebook(memory: memdir.Memory, text: str) -> None:
    memory.notebook.update("log", "- one short line", managed="system")
    assert found(memory, "hot-context") == []
    memory.notebook.update("log", text, managed="system")
    [finding] = found(memory, "hot-context")
    assert finding.path == "NOTEBOOK.md"
    data = (memory.root / "NOTEBOOK.md").read_bytes()
    lines, size = data.count(b"\n"), len(data)
    assert lines > 80 or size > 4096
    target = f"{lines} lines, {size} bytes (target under 80 lines and 4096 bytes): move what"
    assert finding.message.startswith(target)


@pytest.mark.parametrize("lines", [80, 90])
def test_hot_context_vault_state_file(vault_memory: memdir.Memory, lines: int) -> None:
    assert found(vault_memory, "hot-context") == []
    (vault_memory.root / "STATE.md").write_text("".join(f"- reminder {n}\n" for n in range(lines)))
    findings = found(vault_memory, "hot-context")
    flagged = [(finding.path, finding.message[:9]) for finding in findings]
    assert flagged == ([] if lines <= 80 else [("STATE.md", "90 lines,")])  # "over 80 lines"


def test_hot_context_budget(memory: memdir.Memory) -> None:
    assert found(memory, "hot-context") == []
    identity = memory.root / "identity" / "IDENTITY.md"
    identity.write_text("# Identity\n" + "I am careful and I write things down.\n" * 800)
    [finding] = found(memory, "hot-context")  # the identity file is not working memory
    assert finding.path == "."
    assert "over the 24000-byte context budget" in finding.message
    assert finding.message.startswith("always-loaded files total ")


def test_observations_do_not_count_toward_the_budget(memory: memdir.Memory) -> None:
    for n in range(200):
        memory.knowledge.save(f"The payments API allows 50 requests a second per key ({n}).")
    assert memory.knowledge.check() == []
    assert (memory.root / "knowledge.md").stat().st_size > 24_000
    assert found(memory, "hot-context") == []


@pytest.mark.parametrize(
    "files, text, flagged",
    [(3, DETAIL, True), (2, DETAIL, False), (3, "Met Alice Moreau today.", False)],
    ids=["three-files", "two-files", "short-mentions"],
)
def test_dry(memory: memdir.Memory, files: int, text: str, flagged: bool) -> None:
    memory.vault.write("Alice Moreau", "Head of data at Acme.", type="person", folder="crm")
    for write in WRITERS[:files]:
        assert write(memory, text).ok
    findings = found(memory, "dry")
    if not flagged:
        assert findings == []
        return
    [finding] = findings
    assert finding.path == ALICE
    assert finding.message.startswith("Alice Moreau is described in 3 files (")
    for relpath in ("knowledge.md", "journal/2026-11-30.md", "NOTEBOOK.md", ALICE):
        assert relpath in finding.message


def test_dry_title_ending_in_punctuation(memory: memdir.Memory) -> None:
    memory.vault.write("Acme Inc.", "A client.", type="company")
    for write in WRITERS:
        write(memory, "Acme Inc. is our biggest client and pays every invoice very late.")
    assert [finding.path for finding in found(memory, "dry")] == ["vault/acme-inc.md"]


def test_broken_link(memory: memdir.Memory) -> None:
    memory.vault.write("Alice Moreau", "Head of data.", type="person", folder="crm")
    body = "Reports to [[alice-moreau]], [[Alice Moreau]], [[crm/alice-moreau|Alice]] and "
    body += "[[alice-moreau#History]]."  # by file name, title, path, with a heading
    memory.vault.write("Bob", body, links=["alice-moreau"], folder="crm")
    assert found(memory, "broken-link") == []
    memory.vault.write("Carol", "Knows [[nobody-here]] and [[alice-moreau]].", folder="crm")
    [finding] = found(memory, "broken-link")
    assert finding.path == "vault/crm/carol.md"
    assert finding.message == "[[nobody-here]] names no card"


def test_cap_knowledge_section_edited_by_hand(memory: memdir.Memory) -> None:
    def knowledge(lines: int) -> str:
        line = "Alice signs the renewal every spring.\n"
        return f"# Knowledge\n\n## clients\n{line * lines}\n## _observations\n"

    (memory.root / "knowledge.md").write_text(knowledge(10))
    assert found(memory, "cap") == []
    (memory.root / "knowledge.md").write_text(knowledge(100))
    [finding] = found(memory, "cap")
    assert finding.path == "knowledge.md"
    assert finding.message.startswith("section 'clients' is 3799 chars, over the 3000-char cap")


def test_cap_notebook_agent_entries_written_by_hand(memory: memdir.Memory) -> None:
    notebook = memory.root / "NOTEBOOK.md"
    notebook.write_text(notebook_with(4))
    assert found(memory, "cap") == []
    notebook.write_text(notebook_with(6))
    [finding] = found(memory, "cap")
    assert finding.path == "NOTEBOOK.md"
    assert finding.message.startswith("2 agent entries over the cap of 4")
    assert finding.message.endswith("task-0, task-1")  # the two oldest


def test_index(memory: memdir.Memory) -> None:
    memory.search("renewal")  # syncs the index
    assert found(memory, "index") == []
    heartbeat = memory.root / "HEARTBEAT.md"
    heartbeat.write_text(heartbeat.read_text() + "- check the backups\n")
    (memory.root / "lessons.md").unlink()
    [finding] = found(memory, "index")
    assert finding.path == ".memdir/index.db"
    assert finding.message.startswith("1 file changed and 1 removed")
    assert "(HEARTBEAT.md, lessons.md)" in finding.message
    assert "memdir reindex" in finding.message
    memory.scan()
    assert found(memory, "index") == []


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        path.relative_to(root).as_posix(): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in root.rglob("*")
        if path.is_file() and ".memdir" not in path.relative_to(root).parts
    }


def test_doctor_reads_only(folder: Path, clock: FakeClock) -> None:
    with memdir.open(folder, clock=clock, embedder="hashing") as memory:
        memory.vault.write("Alice Moreau", "Knows [[nobody-here]].", type="person", folder="crm")
        for write in WRITERS:
            write(memory, DETAIL)
        memory.notebook.update("log", "\n".join(["- a line"] * 90), managed="system")
        (folder / "NOTEBOOK.md").write_text((folder / "NOTEBOOK.md").read_text() + notebook_with(6))
    clock.advance(days=3)  # a touch now would change last_accessed
    before = snapshot(folder)
    with memdir.open(folder, clock=clock, embedder="hashing") as memory:
        accessed = {card.path: card.last_accessed for card in memory.vault.cards()}
        checks = {finding.check for finding in memory.doctor()}
        assert checks == {"hot-context", "dry", "broken-link", "cap", "index"}
        assert {card.path: card.last_accessed for card in memory.vault.cards()} == accessed
    assert snapshot(folder) == before


def _dead_pid() -> int:
    """The pid of a process that has finished (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def test_temp_file(memory: memdir.Memory) -> None:
    """Temp files a killed writer left, in any folder memdir writes, are findings; one a
    live writer may still rename is not; the doctor removes nothing."""
    dead, here = _dead_pid(), os.getpid()
    left = {
        "vault/crm/.alice.md.{pid}.0badf00d.memdir-tmp": dead,
        "journal/.2026-11-30.md.{pid}.12345678.memdir-tmp": dead,
        "archive/knowledge/.2026-11.md.{pid}.abcdef01.memdir-tmp": dead,
        ".memdir/.graph.json.{pid}.00000000.memdir-tmp": dead,
        "journal/.2026-11-29.md.{pid}.87654321.memdir-tmp": here,  # a live writer's
    }
    for name, pid in left.items():
        path = memory.root / name.format(pid=pid)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("half a file")
    findings = found(memory, "temp-file")
    assert [finding.path for finding in findings] == sorted(
        name.format(pid=dead) for name, pid in left.items() if pid == dead
    )
    assert findings[0].message.startswith("left by a write that was interrupted")
    assert all((memory.root / name.format(pid=pid)).exists() for name, pid in left.items())


def test_doctor_reports_a_card_it_cannot_read(memory: memdir.Memory) -> None:
    broken = memory.root / "vault" / "crm" / "broken.md"
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text("---\ntype: [person\n---\n# Broken\n")
    assert "vault/crm/broken.md" in {finding.path for finding in memory.doctor()}


@pytest.mark.parametrize("name", ["knowledge.md", "NOTEBOOK.md"])
def test_doctor_reports_a_hot_file_not_utf8_instead_of_failing(
    memory: memdir.Memory, name: str
) -> None:
    """Counting its loaded bytes raised UnicodeEncodeError: `memdir doctor` said only
    "error: 'utf-8' codec can't encode characters"."""
    heading = "## s\n" if name == "knowledge.md" else "## s\n<!-- managed: agent -->\n"
    (memory.root / name).write_bytes(b"# T\n\n" + heading.encode() + b"caf\xff\xfe menu\n")
    encoding = [f for f in memory.doctor() if f.check == "encoding"]
    assert [f.path for f in encoding] == [name]


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "400"}  # no wrapping of the lines we check
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CLICOLOR_FORCE"):
        env.pop(name, None)
    command = [sys.executable, "-m", "memdir", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def test_cli_clean_folder(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    memdir.init(root)
    fresh = cli("doctor", "--dir", root)  # init indexed its starter files, every one
    assert (fresh.returncode, fresh.stdout, fresh.stderr) == (0, "No problems found.\n", "")
    assert cli("reindex", "--dir", root).returncode == 0
    result = cli("doctor", "--dir", root)
    assert (result.returncode, result.stdout, result.stderr) == (0, "No problems found.\n", "")
    result = cli("doctor", "--dir", root, "--json")
    assert (result.returncode, json.loads(result.stdout)) == (0, [])


def test_cli_reports_findings(tmp_path: Path, clock: FakeClock) -> None:
    root = tmp_path / "mem"
    memdir.init(root)
    assert cli("reindex", "--dir", root).returncode == 0
    with memdir.open(root, clock=clock, embedder="hashing") as memory:
        memory.vault.write("Bob", "Knows [[nobody-here]].", folder="crm")  # indexed as written
    expected = {"check": "broken-link", "path": "vault/crm/bob.md"}
    expected["message"] = "[[nobody-here]] names no card"
    result = cli("doctor", "--dir", root)
    assert result.returncode == 1
    assert "[broken-link] vault/crm/bob.md: [[nobody-here]] names no card" in result.stdout
    assert "No problems found." not in result.stdout
    result = cli("doctor", "--dir", root, "--json")
    assert (result.returncode, json.loads(result.stdout)) == (1, [expected])
