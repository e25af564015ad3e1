"""Claude's memory tool (memory_20250818) over a memory folder: the exact texts Claude
expects, confinement, read-only places, caps, and the index following every change."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import memdir
from memdir.testing import FakeClock
from memdir.tools import Tools
from memdir.tools.claude_memory import ANTHROPIC_MEMORY_TOOL, MEMORY_TOOL, run_memory_command
from memdir.tools.claude_paths import human_size

Memory = memdir.Memory
HEADER = (
    "Here're the files and directories up to 2 levels deep in {}, "
    "excluding hidden items and node_modules:"
)


def call(memory: Memory, **args: Any) -> dict[str, Any]:
    return Tools(memory, [MEMORY_TOOL]).call("memory", args)


def run(memory: Memory, **args: Any) -> str:
    return run_memory_command(memory, args)


def rows(memory: Memory, relpath: str) -> int:
    found = memory.index.db.execute("SELECT count(*) FROM items WHERE path = ?", (relpath,))
    return int(found.fetchone()[0])


def unchanged(path: Path, before: bytes) -> bool:
    return path.read_bytes() == before


# -- the declaration --------------------------------------------------------------------


def test_the_anthropic_declaration_and_the_registry_tool() -> None:
    assert ANTHROPIC_MEMORY_TOOL == {"type": "memory_20250818", "name": "memory"}
    schema = MEMORY_TOOL.anthropic()["input_schema"]
    assert schema["required"] == ["command"]
    assert schema["properties"]["command"]["enum"] == [
        "view",
        "create",
        "str_replace",
        "insert",
        "delete",
        "rename",
    ]
    assert set(schema["properties"]) == {
        "command",
        "path",
        "view_range",
        "file_text",
        "old_str",
        "new_str",
        "insert_line",
        "insert_text",
        "old_path",
        "new_path",
    }
    assert MEMORY_TOOL.name == "memory"
    assert MEMORY_TOOL.destructive and not MEMORY_TOOL.read_only


# -- view -------------------------------------------------------------------------------


def test_view_a_folder_two_levels_deep_with_sizes(memory: Memory) -> None:
    notes = memory.root / "notes"
    (notes / "deep" / "deeper").mkdir(parents=True)
    (notes / "a.md").write_text("a" * 1536)
    (notes / "deep" / "b.txt").write_text("b" * 100)
    (notes / "deep" / "deeper" / "c.md").write_text("c" * 20)  # level 3: counted, not listed
    (notes / ".hidden.md").write_text("never listed")
    (notes / "node_modules").mkdir()
    (notes / "node_modules" / "x.js").write_text("never listed")

    assert run(memory, command="view", path="/memories/notes") == "\n".join(
        [
            HEADER.format("/memories/notes"),
            "1.7K\t/memories/notes",  # 1,656 bytes, rounded up as du does
            "1.5K\t/memories/notes/a.md",
            "120B\t/memories/notes/deep",
            "100B\t/memories/notes/deep/b.txt",
            "20B\t/memories/notes/deep/deeper",
        ]
    )


def test_a_long_listing_stops_and_says_so(memory: Memory) -> None:
    many = memory.root / "many"
    many.mkdir()
    for n in range(1003):
        (many / f"{n:04}.md").write_text("x")
    lines = run(memory, command="view", path="/memories/many").splitlines()
    assert len(lines) == 1 + 1 + 1000 + 1
    assert lines[1] == "1003B\t/memories/many"
    assert lines[-2] == "1B\t/memories/many/0999.md"
    assert lines[-1] == "... and 3 more; view a folder inside /memories/many to see them"


def test_view_the_root_lists_the_folder_but_nothing_hidden(memory: Memory) -> None:
    text = run(memory, command="view", path="/memories")
    lines = text.splitlines()
    assert lines[0] == HEADER.format("/memories")
    assert lines[1].endswith("\t/memories")
    listed = [line.split("\t")[1] for line in lines[1:]]
    assert "/memories/knowledge.md" in listed
    assert "/memories/NOTEBOOK.md" in listed
    assert "/memories/identity/SOUL.md" in listed
    assert f"{human_size(len('# Notebook' + chr(10)))}\t/memories/NOTEBOOK.md" in lines
    assert not any("/." in path for path in listed)  # .memdir/ is never shown
    assert run(memory, command="view", path="/memories/") == text


def test_view_a_file_with_line_numbers(memory: Memory) -> None:
    (memory.root / "notes.md").write_text("# Notes\nfirst\nsecond\n")
    assert run(memory, command="view", path="/memories/notes.md") == (
        "Here's the content of /memories/notes.md with line numbers:\n"
        "     1\t# Notes\n     2\tfirst\n     3\tsecond"
    )
    assert run(memory, command="view", path="/memories/notes.md", view_range=[2, -1]) == (
        "Here's the content of /memories/notes.md with line numbers:\n     2\tfirst\n     3\tsecond"
    )
    assert run(memory, command="view", path="/memories/notes.md", view_range=[1, 1]) == (
        "Here's the content of /memories/notes.md with line numbers:\n     1\t# Notes"
    )
    assert run(memory, command="view", path="/memories/notes.md", view_range=[5, 6]) == (
        "Error: Invalid `view_range` parameter: [5, 6]. Its first element `5` should be "
        "within the range of lines of the file: [1, 3]"
    )


def test_view_a_missing_path(memory: Memory) -> None:
    result = call(memory, command="view", path="/memories/nope.md")
    assert result == {
        "ok": False,
        "status": "error",
        "reason": "The path /memories/nope.md does not exist. Please provide a valid path.",
        "store": "nope.md",
    }


def test_view_a_card_touches_it(memory: Memory, clock: FakeClock) -> None:
    memory.vault.write("alice", "Head of data.", type="person")
    before = memory.vault.read("vault/alice.md", touch=False)
    assert before is not None
    text = run(memory, command="view", path="/memories/vault/alice.md")
    after = memory.vault.read("vault/alice.md", touch=False)
    assert after is not None
    assert after.meta["access_count"] == before.meta["access_count"] + 1
    assert "access_count: 1" in text


# -- create, str_replace, insert ----------------------------------------------------------


def test_create_then_search_finds_it(memory: Memory) -> None:
    result = call(
        memory,
        command="create",
        path="/memories/projects/billing.md",
        file_text="# Billing\nThe invoice service retries webhooks three times.\n",
    )
    assert result == {
        "ok": True,
        "status": "ok",
        "store": "projects/billing.md",
        "content": "File created successfully at: /memories/projects/billing.md",
    }
    assert (memory.root / "projects" / "billing.md").read_text().startswith("# Billing")
    assert rows(memory, "projects/billing.md") > 0  # indexed in the same call
    hits = memory.search("invoice webhooks retries")
    assert hits and hits[0].path == "projects/billing.md"


def test_create_never_overwrites(memory: Memory) -> None:
    path = memory.root / "knowledge.md"
    before = path.read_bytes()
    assert run(memory, command="create", path="/memories/knowledge.md", file_text="x") == (
        "Error: File /memories/knowledge.md already exists"
    )
    assert unchanged(path, before)


def test_str_replace_shows_the_change(memory: Memory) -> None:
    text = "".join(f"line {n}\n" for n in range(1, 9))
    (memory.root / "log.md").write_text(text)
    assert run(
        memory, command="str_replace", path="/memories/log.md", old_str="line 5", new_str="five"
    ) == (
        "The memory file has been edited. Here is the snippet showing the change "
        "(with line numbers):\n"
        "     3\tline 3\n     4\tline 4\n     5\tfive\n     6\tline 6\n     7\tline 7"
    )
    assert (memory.root / "log.md").read_text() == text.replace("line 5", "five")


def test_str_replace_refusals_leave_the_file(memory: Memory) -> None:
    path = memory.root / "log.md"
    path.write_text("alpha\nbeta alpha\ngamma\n")
    before = path.read_bytes()
    assert run(
        memory, command="str_replace", path="/memories/log.md", old_str="delta", new_str="x"
    ) == (
        "No replacement was performed, old_str `delta` did not appear verbatim in /memories/log.md."
    )
    assert run(
        memory, command="str_replace", path="/memories/log.md", old_str="alpha", new_str="x"
    ) == (
        "No replacement was performed. Multiple occurrences of old_str `alpha` in lines: 1, 2. "
        "Please ensure it is unique"
    )
    assert run(
        memory, command="str_replace", path="/memories/gone.md", old_str="a", new_str="b"
    ) == ("Error: The path /memories/gone.md does not exist. Please provide a valid path.")
    assert unchanged(path, before)


def test_insert(memory: Memory) -> None:
    path = memory.root / "todo.md"
    path.write_text("# Todo\n- one\n")
    assert run(
        memory, command="insert", path="/memories/todo.md", insert_line=2, insert_text="- two\n"
    ) == ("The file /memories/todo.md has been edited.")
    assert run(
        memory, command="insert", path="/memories/todo.md", insert_line=0, insert_text="top"
    ) == ("The file /memories/todo.md has been edited.")
    assert path.read_text() == "top\n# Todo\n- one\n- two\n"
    before = path.read_bytes()
    for line in (5, -1):
        assert run(
            memory, command="insert", path="/memories/todo.md", insert_line=line, insert_text="x"
        ) == (
            f"Error: Invalid `insert_line` parameter: {line}. It should be within the range "
            "of lines of the file: [0, 4]"
        )
    assert run(
        memory, command="insert", path="/memories/nope.md", insert_line=0, insert_text="x"
    ) == ("Error: The file /memories/nope.md does not exist")
    assert unchanged(path, before)


def test_edits_keep_crlf_files_crlf(memory: Memory) -> None:
    path = memory.root / "win.md"
    path.write_bytes(b"one\r\ntwo\r\n")
    run(memory, command="insert", path="/memories/win.md", insert_line=1, insert_text="mid")
    assert path.read_bytes() == b"one\r\nmid\r\ntwo\r\n"


# -- delete, rename ------------------------------------------------------------------------


def test_delete_moves_to_the_archive_and_out_of_the_index(memory: Memory) -> None:
    run(memory, command="create", path="/memories/notes/old.md", file_text="# Old\nobsolete plan\n")
    assert rows(memory, "notes/old.md") > 0
    result = call(memory, command="delete", path="/memories/notes/old.md")
    assert result["content"] == "Successfully deleted /memories/notes/old.md"
    assert result["archived_to"] == "archive/deleted/2026-11-30/notes/old.md"
    assert not (memory.root / "notes" / "old.md").exists()
    assert (memory.root / result["archived_to"]).read_text() == "# Old\nobsolete plan\n"
    assert rows(memory, "notes/old.md") == 0
    assert [hit.path for hit in memory.search("obsolete plan")] == []  # normal mode: no archive
    deep = [hit.path for hit in memory.search("obsolete plan", mode="deep")]
    assert deep == [result["archived_to"]]


def test_delete_a_folder(memory: Memory) -> None:
    run(memory, command="create", path="/memories/drafts/a.md", file_text="draft a\n")
    run(memory, command="create", path="/memories/drafts/b/c.md", file_text="draft c\n")
    assert run(memory, command="delete", path="/memories/drafts") == (
        "Successfully deleted /memories/drafts"
    )
    assert not (memory.root / "drafts").exists()
    assert rows(memory, "drafts/a.md") == rows(memory, "drafts/b/c.md") == 0
    kept = memory.root / "archive" / "deleted" / "2026-11-30" / "drafts"
    assert (kept / "b" / "c.md").read_text() == "draft c\n"


def test_delete_refusals(memory: Memory) -> None:
    assert run(memory, command="delete", path="/memories") == (
        "Error: Cannot delete the /memories directory itself"
    )
    assert run(memory, command="delete", path="/memories/nope.md") == (
        "Error: The path /memories/nope.md does not exist"
    )
    assert run(memory, command="delete", path="/memories/archive").startswith(
        "Error: /memories/archive is read-only through the memory tool"
    )


def test_rename_moves_the_file_and_its_rows(memory: Memory) -> None:
    run(memory, command="create", path="/memories/a.md", file_text="# A\nquokka facts\n")
    result = call(memory, command="rename", old_path="/memories/a.md", new_path="/memories/z/b.md")
    assert result["content"] == "Successfully renamed /memories/a.md to /memories/z/b.md"
    assert result["store"] == "z/b.md"
    assert (memory.root / "z" / "b.md").read_text() == "# A\nquokka facts\n"
    assert rows(memory, "a.md") == 0 and rows(memory, "z/b.md") > 0


def test_rename_a_folder_and_into_the_vault(memory: Memory) -> None:
    run(memory, command="create", path="/memories/people/ann.md", file_text="# Ann\nowl keeper\n")
    bad = "---\ntype: [person\n---\n# Bo\n"
    run(memory, command="create", path="/memories/people/bo.md", file_text=bad)
    refusal = run(
        memory, command="rename", old_path="/memories/people", new_path="/memories/vault/people"
    )
    assert refusal.startswith(
        "Error: /memories/vault/people/bo.md was left as it was: the card's frontmatter"
    )
    assert (memory.root / "people" / "bo.md").read_text() == bad  # nothing moved
    run(memory, command="delete", path="/memories/people/bo.md")
    assert run(
        memory, command="rename", old_path="/memories/people", new_path="/memories/vault/people"
    ) == ("Successfully renamed /memories/people to /memories/vault/people")
    assert rows(memory, "people/ann.md") == 0 and rows(memory, "vault/people/ann.md") > 0
    assert memory.search("owl keeper")[0].path == "vault/people/ann.md"


def test_rename_onto_an_existing_file_is_refused(memory: Memory) -> None:
    (memory.root / "a.md").write_text("a\n")
    (memory.root / "b.md").write_text("b\n")
    assert run(memory, command="rename", old_path="/memories/a.md", new_path="/memories/b.md") == (
        "Error: The destination /memories/b.md already exists"
    )
    assert run(memory, command="rename", old_path="/memories/x.md", new_path="/memories/y.md") == (
        "Error: The path /memories/x.md does not exist"
    )
    assert (memory.root / "a.md").read_text() == "a\n" and (memory.root / "b.md").read_text() == (
        "b\n"
    )


# -- confinement and read-only places -------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        (
            "/memories/../etc/passwd",
            "Error: The path /memories/../etc/passwd would leave /memories ('..' is not allowed)",
        ),
        (
            "/etc/passwd",
            "Error: The path /etc/passwd is outside /memories; every memory path starts with "
            "/memories, such as /memories/notes.md",
        ),
        (
            "/memoriesX/a.md",
            "Error: The path /memoriesX/a.md is outside /memories; every memory path starts "
            "with /memories, such as /memories/notes.md",
        ),
    ],
)
def test_paths_outside_are_refused(memory: Memory, path: str, reason: str) -> None:
    for args in (
        {"command": "view", "path": path},
        {"command": "create", "path": path, "file_text": "x"},
        {"command": "delete", "path": path},
    ):
        assert run_memory_command(memory, args) == reason


def test_hidden_paths_are_never_read_or_written(memory: Memory) -> None:
    text = run(memory, command="view", path="/memories/.memdir/index.db")
    assert text.startswith("Error: The path /memories/.memdir/index.db is hidden")
    assert run(memory, command="create", path="/memories/.env", file_text="x").startswith(
        "Error: The path /memories/.env is hidden"
    )
    assert not (memory.root / ".env").exists()


def test_a_link_out_of_the_folder_is_refused(memory: Memory, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("not yours\n")
    os.symlink(outside, memory.root / "link")
    assert run(memory, command="view", path="/memories/link/secret.md") == (
        "Error: The path /memories/link/secret.md leads outside /memories through a link"
    )
    assert run(memory, command="create", path="/memories/link/new.md", file_text="x") == (
        "Error: The path /memories/link/new.md leads outside /memories through a link"
    )
    assert not (outside / "new.md").exists()
    assert "/memories/link" not in run(memory, command="view", path="/memories")


def test_a_loop_of_links_is_said_to_be_one(memory: Memory) -> None:
    """It was "leads outside /memories through a link", for a link that leads nowhere."""
    os.symlink("loop-b.md", memory.root / "loop-a.md")
    os.symlink("loop-a.md", memory.root / "loop-b.md")
    reason = (
        "Error: The path /memories/loop-a.md is a loop of links that leads to no file or "
        "folder; replace the link"
    )
    for args in (
        {"command": "view", "path": "/memories/loop-a.md"},
        {"command": "create", "path": "/memories/loop-a.md", "file_text": "x"},
        {"command": "delete", "path": "/memories/loop-a.md"},
        {"command": "rename", "old_path": "/memories/loop-a.md", "new_path": "/memories/b.md"},
        {
            "command": "rename",
            "old_path": "/memories/knowledge.md",
            "new_path": "/memories/loop-a.md",
        },
    ):
        assert run_memory_command(memory, args) == reason, args
    assert os.readlink(memory.root / "loop-a.md") == "loop-b.md"


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("memdir.toml", "it is the folder's manifest; edit it by hand"),
        ("archive/notebook/2026-11.md", "it keeps what memdir took out of other files"),
        ("sessions/s1.jsonl", "it holds conversation transcripts memdir appends to"),
        ("tool-outputs/out.md", "it holds tool results memdir saved"),
    ],
)
def test_read_only_places(memory: Memory, path: str, why: str) -> None:
    real = memory.root / path
    real.parent.mkdir(parents=True, exist_ok=True)
    if not real.exists():
        real.write_text("# kept\n")
    before = real.read_bytes()
    refusal = f"Error: /memories/{path} is read-only through the memory tool: {why}."
    shown = f"/memories/{path}"
    assert run(memory, command="str_replace", path=shown, old_str="k", new_str="x") == refusal
    assert run(memory, command="insert", path=shown, insert_line=0, insert_text="x") == refusal
    assert run(memory, command="delete", path=shown) == refusal
    assert run(memory, command="rename", old_path=shown, new_path="/memories/x.md") == refusal
    assert unchanged(real, before)
    assert run(memory, command="view", path=shown).startswith("Here's the content of")


def test_nothing_is_moved_into_a_read_only_place(memory: Memory) -> None:
    (memory.root / "a.md").write_text("a\n")
    assert run(
        memory, command="rename", old_path="/memories/a.md", new_path="/memories/archive/a.md"
    ) == (
        "Error: /memories/archive/a.md is read-only through the memory tool: it keeps what "
        "memdir took out of other files."
    )
    assert (memory.root / "a.md").exists()


# -- caps --------------------------------------------------------------------------------


def test_a_knowledge_section_over_its_cap_is_refused(memory: Memory) -> None:
    path = memory.root / "knowledge.md"
    before = path.read_bytes()
    long = "## conventions\n" + "x" * 3001 + "\n\n"
    reason = run(
        memory,
        command="str_replace",
        path="/memories/knowledge.md",
        old_str="## _observations",
        new_str=long + "## _observations",
    )
    assert reason == (
        "Error: /memories/knowledge.md was left as it was: section 'conventions' of "
        "knowledge.md would be 3001 chars, over the 3000-char cap of a curated section; "
        "shorten it, or keep the details as observations under ## _observations or in "
        "another file."
    )
    assert unchanged(path, before)
    ok = run(
        memory,
        command="str_replace",
        path="/memories/knowledge.md",
        old_str="## _observations",
        new_str="## conventions\nsnake_case\n\n## _observations",
    )
    assert ok.startswith("The memory file has been edited.")
    assert memory.knowledge.section("conventions") is not None


def test_knowledge_total_over_its_cap_is_refused(memory: Memory) -> None:
    path = memory.root / "knowledge.md"
    before = path.read_bytes()
    sections = "".join(f"## s{n}\n{'y' * 2900}\n\n" for n in range(6))  # 17,400 chars
    reason = run(
        memory,
        command="insert",
        path="/memories/knowledge.md",
        insert_line=1,
        insert_text=sections,
    )
    assert "would total 17400 chars, over the 15000-char cap" in reason
    assert unchanged(path, before)


def test_create_over_a_cap_leaves_the_file_absent(memory: Memory) -> None:
    run(memory, command="delete", path="/memories/knowledge.md")
    reason = run(
        memory,
        command="create",
        path="/memories/knowledge.md",
        file_text="# Knowledge\n\n## big\n" + "z" * 4000 + "\n",
    )
    assert reason.startswith("Error: /memories/knowledge.md was left as it was: section 'big'")
    assert not (memory.root / "knowledge.md").exists()


def test_the_notebook_keeps_its_caps(memory: Memory) -> None:
    path = memory.root / "NOTEBOOK.md"
    for key in ("a", "b", "c", "d"):
        assert memory.notebook.update(key, f"entry {key}").ok
    before = path.read_bytes()
    reason = run(
        memory,
        command="insert",
        path="/memories/NOTEBOOK.md",
        insert_line=1,
        insert_text="\n## e\nfifth entry\n",
    )
    assert reason == (
        "Error: /memories/NOTEBOOK.md was left as it was: NOTEBOOK.md would hold 5 "
        "agent-managed entries (e, a, b, c, d); the cap is 4. Replace or remove an entry "
        "instead of adding one."
    )
    assert unchanged(path, before)
    reason = run(
        memory,
        command="str_replace",
        path="/memories/NOTEBOOK.md",
        old_str="entry a",
        new_str="w" * 6001,
    )
    assert reason.startswith(
        "Error: /memories/NOTEBOOK.md was left as it was: entry 'a' of NOTEBOOK.md would be "
        "6001 chars, over the 6000-char cap"
    )
    assert unchanged(path, before)
    assert run(
        memory,
        command="str_replace",
        path="/memories/NOTEBOOK.md",
        old_str="entry a",
        new_str="entry a, revised",
    ).startswith("The memory file has been edited.")
    entry = memory.notebook.get("a")
    assert entry is not None and entry.text == "entry a, revised"


def test_state_stays_under_4_kb(memory: Memory) -> None:
    path = memory.root / "state.md"
    before = path.read_bytes()
    reason = run(
        memory,
        command="insert",
        path="/memories/state.md",
        insert_line=1,
        insert_text="".join(f"## k{n}\n{'s' * 300}\n\n" for n in range(14)),
    )
    assert reason.startswith("Error: /memories/state.md was left as it was: state.md would be")
    assert "over its 4096-byte cap" in reason
    assert unchanged(path, before)


def test_cards_keep_valid_frontmatter(memory: Memory) -> None:
    memory.vault.write("acme", "A client.", type="company")
    path = memory.root / "vault" / "acme.md"
    before = path.read_bytes()
    reason = run(
        memory,
        command="str_replace",
        path="/memories/vault/acme.md",
        old_str="type: company",
        new_str="type: [company",
    )
    assert reason.startswith(
        "Error: /memories/vault/acme.md was left as it was: the card's frontmatter is not "
        "valid YAML"
    )
    reason = run(
        memory,
        command="str_replace",
        path="/memories/vault/acme.md",
        old_str="---\ntype",
        new_str="type",
    )
    assert "would lose its frontmatter" in reason
    assert unchanged(path, before)
    assert run(
        memory,
        command="str_replace",
        path="/memories/vault/acme.md",
        old_str="A client.",
        new_str="A client since 2024.",
    ).startswith("The memory file has been edited.")


def test_secrets_are_refused(memory: Memory) -> None:
    key = "sk-proj-" + "Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY"
    reason = run(
        memory, command="create", path="/memories/creds.md", file_text=f"OPENAI_API_KEY={key}\n"
    )
    assert reason.startswith("Error: /memories/creds.md was left as it was: this looks like")
    assert not (memory.root / "creds.md").exists()


def test_a_secret_completed_by_an_edit_is_refused(memory: Memory) -> None:
    path = memory.root / "db.md"
    path.write_text("# Database\nDB_PASSWORD=changeme\n")
    before = path.read_bytes()
    reason = run(
        memory,
        command="str_replace",
        path="/memories/db.md",
        old_str="changeme",
        new_str="x9Kq2LmP4vT7wZ",  # harmless alone; a password on its line
    )
    assert reason.startswith("Error: /memories/db.md was left as it was: this looks like")
    assert unchanged(path, before)


# -- arguments ---------------------------------------------------------------------------


def test_bad_arguments_get_a_sentence(memory: Memory) -> None:
    assert run(memory, command="view") == (
        "Error: Missing required parameter `path` for command `view` (it takes path)"
    )
    assert run(memory, command="str_replace", path="/memories/a.md", old_str="x") == (
        "Error: Missing required parameter `new_str` for command `str_replace` (it takes "
        "path, old_str, new_str)"
    )
    assert run(memory, command="list", path="/memories").startswith(
        "memory: command must be one of 'view', 'create'"
    )
    assert run_memory_command(memory, "not json").startswith("memory: the arguments are not")


def test_create_on_a_folder_path_is_refused(memory: Memory) -> None:
    """``/memories/notes/`` made a file called ``notes`` and said it was created."""
    result = call(memory, command="create", path="/memories/notes/", file_text="x")
    assert not result["ok"]
    assert result["reason"] == (
        "Error: The path /memories/notes/ names a folder; create writes a file, such as "
        "/memories/notes/notes.md (folders are made for the files in them)"
    )
    assert not (memory.root / "notes").exists()
    assert call(memory, command="create", path="/memories/notes/a.md", file_text="x")["ok"]


def test_an_sdk_command_model_is_accepted(memory: Memory) -> None:
    class ViewCommand:  # the shape of anthropic's BetaMemoryTool20250818ViewCommand
        def model_dump(self, exclude_none: bool = False) -> dict[str, Any]:
            return {"command": "view", "path": "/memories/state.md"}

    assert run_memory_command(memory, ViewCommand()).startswith(
        "Here's the content of /memories/state.md with line numbers:"
    )


# -- a mounted vault -----------------------------------------------------------------------


def test_a_mounted_vault_resolves_to_its_own_folder(tmp_path: Path, clock: FakeClock) -> None:
    shared = tmp_path / "team-vault"
    root = tmp_path / "agent"
    memdir.init(root)
    manifest = (root / "memdir.toml").read_text()
    manifest = manifest.replace(
        'paths = ["vault/**/*.md"]', f'paths = ["**/*.md"]\nmount = "{shared.as_posix()}"'
    )
    (root / "memdir.toml").write_text(manifest)
    with memdir.open(root, clock=clock, embedder="hashing") as memory:
        card = "---\ntype: person\n---\n# Bob\nRuns the payments team.\n"
        created = run(memory, command="create", path="/memories/vault/bob.md", file_text=card)
        assert created == "File created successfully at: /memories/vault/bob.md"
        assert (shared / "bob.md").read_text() == card
        assert not (root / "vault" / "bob.md").exists()
        assert "/memories/vault/bob.md" in run(memory, command="view", path="/memories")
        assert memory.search("payments team")[0].path == "vault/bob.md"
        assert run(memory, command="delete", path="/memories/vault").startswith(
            "Error: /memories/vault is a layer mounted from another folder"
        )


# -- the notes layer -------------------------------------------------------------------------


def test_the_notes_layer_indexes_what_no_other_layer_claims(tmp_path: Path) -> None:
    root = tmp_path / "nb"
    memdir.init(root, layout="notebook")
    (root / "daily-logs").mkdir(exist_ok=True)
    (root / "daily-logs" / "2026-11-30.md").write_text("# Log\nwombat audit line\n")
    (root / "ideas.txt").write_text("wombat migration idea\n")
    (root / "MEMORY.md").write_text("# Legacy\nwombat legacy note\n")
    with memdir.open(root, embedder="hashing") as memory:
        assert list(memory.manifest.layers)[-1] == "notes"
        assert [hit.path for hit in memory.search("wombat", mode="deep")] == ["ideas.txt"]
        assert memory.index.layer_of("daily-logs/2026-11-30.md") is None  # audit only
        assert memory.index.layer_of("MEMORY.md") is None  # legacy, never indexed
        found = memory.index.layer_of("ideas.txt")
        assert found is not None and found[0] == "notes"
