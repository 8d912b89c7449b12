"""`rag mcp --transport http`: the MCP server over streamable HTTP, behind `rag serve`'s token rule.

Loopback by default; binding any other address needs a bearer token (`rag.serve.check_binding`), and
with a token every request must send `Authorization: Bearer <token>` (401 otherwise). The MCP endpoint
is `/mcp`.

Example:
    >>> from rag.secret import Secret
    >>> check_token(b"Bearer s3cret", Secret("s3cret")), check_token(b"Bearer nope", Secret("s3cret"))
    (True, False)
"""

from __future__ import annotations

import hmac
import json
from typing import Any

from mcp.server.lowlevel import Server
from starlette.types import ASGIApp, Receive, Scope, Send

from rag.secret import Secret
from rag.serve.config import check_binding

__all__ = ["MCP_PATH", "check_token", "mcp_http_app"]

MCP_PATH = "/mcp"
"""Where the streamable HTTP endpoint listens."""


def check_token(header: bytes | None, token: Secret) -> bool:
    """Whether an `Authorization` header value carries `token` as a bearer token (constant-time)."""
    scheme, _, given = (header or b"").decode("latin-1").partition(" ")
    matches = hmac.compare_digest(given.strip().encode(), token.reveal().encode())
    return scheme.lower() == "bearer" and matches


class _BearerGuard:
    """Refuses HTTP requests without the bearer token (401); other scopes (lifespan) pass through."""

    def __init__(self, app: ASGIApp, token: Secret) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not check_token(
            dict(scope["headers"]).get(b"authorization"), self.token
        ):
            body = json.dumps(
                {"error": "missing or wrong bearer token: send 'Authorization: Bearer <token>'"}
            ).encode()
            headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def mcp_http_app(server: Server[Any], *, host: str = "127.0.0.1", token: Secret | None = None) -> ASGIApp:
    """The ASGI app serving `server` at `MCP_PATH`, guarded by `token` when one is given.

    Raises:
        ConfigError: `host` is not loopback and no token was given.
    """
    check_binding(host, token)
    app: ASGIApp = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    return _BearerGuard(app, token) if token is not None else app
