"""`rag mcp`: the ingested documents as Model Context Protocol tools and resources (stdio or HTTP)."""

from __future__ import annotations

import os
from typing import Any

import click

from rag.cli._common import command_settings, open_store, require
from rag.cli._options import answering_options, threshold_and_filter_options
from rag.cli.serve import build_service
from rag.secret import Secret
from rag.serve.config import check_binding

__all__ = ["mcp"]


@click.command("mcp")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio: the host starts this command and talks on its stdin/stdout; http: streamable HTTP "
    "on http://HOST:PORT/mcp.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind with --transport http.")
@click.option("--port", type=click.IntRange(0, 65535), default=8001, show_default=True, help="Port (http).")
@click.option(
    "--token",
    metavar="TOKEN",
    help="Bearer token every HTTP request must send; required to bind a non-loopback address "
    "[env RAG_SERVE_TOKEN].",
)
@click.option(
    "--top-k", "-k", type=click.IntRange(min=0), default=4, show_default=True, help="Passages to retrieve."
)
@threshold_and_filter_options
@answering_options
@click.pass_context
def mcp(
    ctx: click.Context,
    /,
    transport: str,
    host: str,
    port: int,
    token: str | None,
    top_k: int,
    threshold: float,
    filter_text: str | None,
    keep_duplicates: bool,
    **_settings: Any,  # the store, model and search options: command_settings reads them
) -> None:
    """Serve the ingested documents to an MCP host (Claude Desktop, an IDE, an agent).

    Tools: search (passages with source, citation and scores), ask (an answer with numbered sources)
    and sources (the files held); each source file is a resource the host can open. See docs/mcp.md
    for the host configuration.

    \b
    Example:
        rag mcp --home ~/docs/.rag                       # a host runs this over stdio
        rag mcp --transport http --port 8001             # http://127.0.0.1:8001/mcp
    """
    require("mcp", "mcp", "rag mcp")
    secret_text = token or os.environ.get("RAG_SERVE_TOKEN") or None
    secret = Secret(secret_text) if secret_text else None
    if transport == "http":
        check_binding(host, secret)  # before anything is opened: refusing is cheap
    settings = command_settings(ctx)
    import anyio

    from rag.mcp.server import create_mcp_server

    opened = open_store(settings)
    try:
        service = build_service(
            settings,
            opened,
            top_k=top_k,
            threshold=threshold,
            filter_text=filter_text,
            keep_duplicates=keep_duplicates,
        )
        server = create_mcp_server(service)
        if transport == "stdio":
            from rag.mcp.stdio import run_stdio

            click.echo(f"serving {opened.location} over MCP on stdio", err=True)
            anyio.run(run_stdio, server)
        else:
            import uvicorn

            from rag.mcp.http import MCP_PATH, mcp_http_app

            app = mcp_http_app(server, host=host, token=secret)
            guard = "a bearer token" if secret is not None else "no token (loopback only)"
            click.echo(
                f"serving {opened.location} over MCP on http://{host}:{port}{MCP_PATH} with {guard}", err=True
            )
            uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
    finally:
        opened.close()
