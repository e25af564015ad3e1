"""``memdir ui``: the page on 127.0.0.1, until the process is stopped.

It says where once the socket is bound (``--port 0``: any free port). Bound beyond
loopback it needs a token, as ``memdir serve --http`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memdir.errors import MemdirError
from memdir.memory import open_memory
from memdir.ui.app import PREFIX, build_app

DEFAULT_PORT = 8766
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def page_url(host: str, port: int, token: str | None = None) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{PREFIX}/" + (f"?token={token}" if token else "")


def serve_ui(
    folder: Path,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    say: Callable[[str], None] = print,
) -> None:
    if host not in LOOPBACK and not token:
        raise MemdirError(
            f"serving the page on {host} shows this memory beyond this machine: give --token "
            "(or set MEMDIR_TOKEN)"
        )
    import uvicorn

    from memdir.folder_index import warm_search
    from memdir.server.listen import bind

    sock = bind(host, port)
    memory = open_memory(folder)
    warm_search(memory)  # the page's first search finds the model made
    app = build_app(memory, token=token)

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                bound = int(self.servers[0].sockets[0].getsockname()[1])
                say(f"memdir: the page for {memory.root} is at {page_url(host, bound)}")
                if token:
                    say(f"memdir: open it once as {page_url(host, bound, '<token>')}")
                say("memdir: Ctrl-C stops it")

    try:
        Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run([sock])
    finally:
        sock.close()
        memory.close()
