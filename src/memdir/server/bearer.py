"""The credential of an ``Authorization: Bearer <token>`` header, the scheme in any
case (RFC 9110); the one reading of it for ``serve --http``, the web page and the
team server."""

from __future__ import annotations


def bearer_token(header: str | bytes) -> str | None:
    """The token an Authorization header carries, or None when it is not Bearer (or
    has none). Bytes are read as Latin-1, as HTTP headers are."""
    text = header.decode("latin-1") if isinstance(header, bytes) else header
    scheme, _, given = text.partition(" ")
    token = given.strip()
    return token if scheme.lower() == "bearer" and token else None
