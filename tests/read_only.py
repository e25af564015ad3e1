"""A memory folder seen read-only, as a read-only share would be: a bind mount
remounted ``ro`` (root only; tests that need it are skipped elsewhere)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def _can_mount() -> bool:
    if os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory() as source, tempfile.TemporaryDirectory() as view:
        if subprocess.run(["mount", "--bind", source, view], capture_output=True).returncode:
            return False
        subprocess.run(["umount", "-l", view], capture_output=True)
    return True


needs_mount = pytest.mark.skipif(not _can_mount(), reason="needs root and mount")


@contextlib.contextmanager
def read_only_view(folder: Path) -> Iterator[Path]:
    """``folder`` seen through a read-only bind mount."""
    with tempfile.TemporaryDirectory() as view:
        subprocess.run(["mount", "--bind", str(folder), view], check=True)
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", view], check=True)
            yield Path(view)
        finally:
            subprocess.run(["umount", "-l", view], check=True)
