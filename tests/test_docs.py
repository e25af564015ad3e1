"""The docs stay true: the README's example runs as written, the CLI reference in docs/cli.md
is the help of the code, and every command and option is documented."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memdir.cli.reference import commands, committed_reference, render

ROOT = Path(__file__).resolve().parent.parent
CLI_DOCS = ROOT / "docs" / "cli.md"


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.DOTALL)


def test_readme_api_example_runs_as_written(tmp_path: Path) -> None:
    blocks = _python_blocks((ROOT / "README.md").read_text())
    assert len(blocks) >= 2  # the API example, then search (they run as one script)
    script = tmp_path / "example.py"
    script.write_text("\n".join(blocks))
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "'ok': False" in done.stdout and "## Your Knowledge" in done.stdout
    assert "## Notebook" in done.stdout
    # The state snapshot it sets shows where the specification loads it: the reflex profile.
    assert "> - deploy: v2.1 rolling out, 60% done" in done.stdout


def test_readme_shows_how_to_install_without_make() -> None:
    readme = (ROOT / "README.md").read_text()
    install = readme.split("## Install it", 1)[1].split("\n## ", 1)[0]
    for line in ("pip install .", "pipx install .", "uv tool install .", "memdir serve"):
        assert line in install, line


def test_readme_shows_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make run" in readme and "make test" in readme
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^run:", makefile, re.MULTILINE)
    assert re.search(r"^test:", makefile, re.MULTILINE)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def _sections(markdown: str, level: str) -> dict[str, str]:
    """Heading text -> the text under it, for headings of one level (``##`` or ``###``)."""
    parts = re.split(rf"^{level} (.+)$", markdown, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_cli_reference_is_generated_from_the_help(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the reference must not depend on the terminal
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "dumb")
    docs = CLI_DOCS.read_text(encoding="utf-8")
    assert committed_reference(docs) == render(), (
        "docs/cli.md's command reference is out of date: run `make docs`"
    )


def test_every_command_is_documented() -> None:
    docs = CLI_DOCS.read_text(encoding="utf-8")
    prose, _, reference = docs.partition("\n## Reference\n")
    sections = _sections(prose, "##")
    blocks = _sections(reference, "###")
    aliases = {
        group: match.group(1)
        for group, block in blocks.items()
        if (match := re.search(r"Its subcommands are those of `([^`]+)`", block))
    }
    for name, command, ctx in commands():
        words = name.split()
        top = " ".join(words[:2])
        ref = name  # an alias group's subcommands are documented under the group it copies
        if top in aliases and len(words) > 2:
            ref = name.replace(top, aliases[top], 1)
        assert ref in blocks, f"the reference in docs/cli.md has no '### {ref}'"
        if len(words) < 2:
            continue
        assert top in sections, f"docs/cli.md has no '## {top}' section"
        if len(words) > 2:
            assert name in sections[top], f"the '## {top}' section does not show '{name}'"
        for param in command.get_params(ctx):
            for option in param.opts:
                if option.startswith("-"):
                    assert option in blocks[ref], f"{option} of '{name}' is not in the reference"


def test_every_command_and_option_has_help() -> None:
    for name, command, ctx in commands():
        assert (command.help or "").strip(), f"'{name}' has no help text"
        for param in command.get_params(ctx):
            assert (getattr(param, "help", None) or "").strip(), (
                f"{'/'.join(param.opts)} of '{name}' has no help text"
            )


def test_make_docs_script_checks_the_reference() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "cli_reference.py"), "--check"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("is up to date.\n")


def test_readme_links_the_cli_docs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "(docs/cli.md)" in readme
    assert re.search(r"^docs:", (ROOT / "Makefile").read_text(), re.MULTILINE)


def test_changelog_has_an_entry_for_this_version() -> None:
    import memdir

    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{memdir.__version__}]" in changelog


def test_readme_lists_every_command() -> None:
    """The README's command list names every top-level command (the full reference is
    in docs/cli.md, generated from the help)."""
    import typer.main

    from memdir.cli import app

    readme = (ROOT / "README.md").read_text()
    listing = readme.split("## The command line", 1)[1].split("\n## ", 1)[0]
    group = typer.main.get_command(app)
    names = [name for name, cmd in group.commands.items() if not cmd.hidden]  # type: ignore[attr-defined]
    missing = [name for name in names if not re.search(rf"(?<![\w-]){name}(?![\w-])", listing)]
    assert not missing, f"the README's command list does not name: {', '.join(missing)}"


def test_the_context_budget_the_docs_state_is_the_one_memdir_budget_checks(
    tmp_path: Path,
) -> None:
    """The docs said "25 KB" (the vault specification's target) where the total is
    checked against [context] max_tokens x 4: 24,000 bytes."""
    from typer.testing import CliRunner

    import memdir
    from memdir.cli import app

    memdir.init(tmp_path / "m")
    done = CliRunner().invoke(app, ["budget", "--dir", str(tmp_path / "m"), "--json"])
    assert done.exit_code == 0, done.output
    total = f"{json.loads(done.stdout)['targets']['total']:,} bytes"
    budget = _sections(CLI_DOCS.read_text(), "##")["memdir budget"]
    context = _sections((ROOT / "docs" / "manifest.md").read_text(), "##")["`[context]`"]
    for said in (budget, context):
        assert total in said.replace("\n", " "), said
