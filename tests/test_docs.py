"""The docs stay true: the README's example runs as written, every CLI option is documented."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import typer

from memdir.cli import app

ROOT = Path(__file__).resolve().parent.parent


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


def test_readme_shows_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make run" in readme and "make test" in readme
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^run:", makefile, re.MULTILINE)
    assert re.search(r"^test:", makefile, re.MULTILINE)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_every_command_and_option_is_in_the_cli_docs() -> None:
    docs = (ROOT / "docs" / "cli.md").read_text()
    command = typer.main.get_command(app)
    assert isinstance(command, typer.core.TyperGroup)
    for name, sub in command.commands.items():
        heading = f"## memdir {name}"
        assert heading in docs, f"docs/cli.md has no '{heading}'"
        section = docs.split(heading, 1)[1].split("\n## ", 1)[0]
        for param in sub.params:
            for option in param.opts:
                if option.startswith("-"):
                    assert option in section, f"{option} of 'memdir {name}' is not documented"


def test_changelog_has_an_entry_for_this_version() -> None:
    import memdir

    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{memdir.__version__}]" in changelog
