"""Write the reference of every agent tool into docs/tools.md (``make docs``).

python scripts/tools_reference.py           # rewrite the reference between the markers
python scripts/tools_reference.py --check   # exit 1 if docs/tools.md is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

from generated import write_or_check

from memdir.tools.catalog import TOOLS
from memdir.tools.reference import reference, splice

DOCS = Path(__file__).resolve().parent.parent / "docs" / "tools.md"


def main(argv: list[str]) -> int:
    document = DOCS.read_text(encoding="utf-8")
    updated = splice(document, reference(TOOLS))
    return write_or_check(DOCS, document, updated, argv, f"Wrote the tools reference to {DOCS}.")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
