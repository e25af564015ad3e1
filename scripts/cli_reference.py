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

from memdir.cli.reference import committed_reference, render, replace_reference  # noqa: E402

DOCS = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def main(argv: list[str]) -> int:
    document = DOCS.read_text(encoding="utf-8")
    reference = render()
    if "--check" in argv:
        if committed_reference(document) != reference:
            print(f"{DOCS} is out of date: run `make docs`", file=sys.stderr)
            return 1
        print(f"{DOCS} is up to date.")
        return 0
    updated = replace_reference(document, reference)
    if updated != document:
        DOCS.write_text(updated, encoding="utf-8")
        print(f"Wrote the command reference to {DOCS}.")
    else:
        print(f"{DOCS} is up to date.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
