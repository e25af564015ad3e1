"""The page served for real and a real Chromium, for the browser tests.

Debian's ``chromium`` (``.ci/run`` installs it) driven by Playwright for Python, which
is pointed at that executable: no browser is ever downloaded. Without chromium the
browser tests skip, saying why, unless ``MEMDIR_REQUIRE_BROWSER=1`` (set by
``.ci/run``) demands them: then they fail.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

CHROMIUM = os.environ.get("MEMDIR_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def missing_browser() -> str | None:
    """Why no browser test can run here, or None."""
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        return (
            f"no chromium at {CHROMIUM} (apt-get install chromium; MEMDIR_CHROMIUM names another)"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[dev]')"
    return None


def require_browser() -> None:
    why = missing_browser()
    if why is None:
        return
    if os.environ.get("MEMDIR_REQUIRE_BROWSER") == "1":
        pytest.fail(f"MEMDIR_REQUIRE_BROWSER=1 but {why}")
    pytest.skip(why)


class LiveServer:
    """An ASGI app served by uvicorn in a thread on a free loopback port."""

    def __init__(self, app: Any, *, lifespan: str = "off") -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", lifespan=lifespan, ws="none"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def launch_chromium() -> Iterator[Any]:
    """One Chromium (a fresh profile, nothing on the network), for a session fixture."""
    require_browser()
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="memdir-chromium-")
    with sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1200, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)
