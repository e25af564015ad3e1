"""memdir's web page: browse, search and correct one agent's memory in a browser.

``memdir ui`` serves it on 127.0.0.1; ``memdir serve --http`` serves it at ``/ui``
beside ``/mcp``. ``build_app(memory)`` is the ASGI app (``memdir.ui.app``); each
view lives in its own module. See docs/ui.md.
"""

from __future__ import annotations

from memdir.ui.app import PREFIX, UI, build_app

__all__ = ["PREFIX", "UI", "build_app"]
