"""`rag mcp` over stdio: the server reads JSON-RPC on stdin and writes it on stdout (logs go to stderr)."""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

__all__ = ["run_stdio"]


async def run_stdio(server: Server[Any]) -> None:
    """Serve one host on this process's stdin and stdout until the host closes stdin."""
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
