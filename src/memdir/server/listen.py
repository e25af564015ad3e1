"""The socket an HTTP server (``memdir serve --http``, ``memdir ui``) listens on, bound
before uvicorn starts: a port in use, or a host that does not resolve, is a
``MemdirError`` with the reason (the command's one line on stderr, exit 1), where
uvicorn would log its own error and exit with 3, a code the command line does not use."""

from __future__ import annotations

import socket

from memdir.errors import MemdirError


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (its first address; port 0 picks a free one)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise MemdirError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise MemdirError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock
