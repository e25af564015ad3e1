"""Write the reference of every agent tool into docs/tools.md (``make docs``).

python scripts/tools_reference.py           # rewrite the reference between the markers
python scripts/tools_reference.py --check   # exit 1 if docs/tools.md is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

from memdir.tools.catalog import TOOLS
from memdir.tools.reference import reference, splice

DOCS = Path(__file__).resolve().parent.parent / "docs" / "tools.md"


def main(argv: list[str]) -> int:
    document = DOCS.read_text(encoding="utf-8")
    updated = splice(document, reference(TOOLS))
    if updated == document:
        print(f"{DOCS} is up to date.")
        return 0
    if "--check" in argv:
        print(f"{DOCS} is out of date: run `make docs`", file=sys.stderr)
        return 1
    DOCS.write_text(updated, encoding="utf-8")
    print(f"Wrote the tools reference to {DOCS}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
