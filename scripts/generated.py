"""What the generators in scripts/ share (``make docs``): a file rewritten from the code,
or, with ``--check``, exit 1 if it is out of date (the tests run that)."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(target: Path, current: str, wanted: str, argv: list[str], wrote: str) -> int:
    """Write ``wanted`` to ``target`` unless it already holds it (``current``); with
    ``--check`` in ``argv``, write nothing and return 1 if it does not. ``wrote``:
    what to say after writing."""
    if wanted == current:
        print(f"{target} is up to date.")
        return 0
    if "--check" in argv:
        print(f"{target} is out of date: run `make docs`", file=sys.stderr)
        return 1
    target.write_text(wanted, encoding="utf-8")
    print(wrote)
    return 0
