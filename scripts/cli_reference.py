"""Write the help of every `memdir` command into docs/cli.md (``make docs``).

    python scripts/cli_reference.py           # rewrite the reference between the markers
    python scripts/cli_reference.py --check   # exit 1 if docs/cli.md is out of date

The text comes from ``memdir.cli.reference.render()``: the plain help at a fixed
width, without colour, so it is the same on every machine.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Before memdir (and typer, rich) are imported: a fixed width, no colour.
os.environ.update({"COLUMNS": "88", "NO_COLOR": "1", "TERM": "dumb"})
for name in ("FORCE_COLOR", "PY_COLORS", "CLICOLOR_FORCE", "GITHUB_ACTIONS"):
    os.environ.pop(name, None)

from generated import write_or_check  # noqa: E402

from memdir.cli.reference import render, replace_reference  # noqa: E402

DOCS = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def main(argv: list[str]) -> int:
    document = DOCS.read_text(encoding="utf-8")
    updated = replace_reference(document, render())
    return write_or_check(DOCS, document, updated, argv, f"Wrote the command reference to {DOCS}.")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
