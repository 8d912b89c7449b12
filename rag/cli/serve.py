"""`rag serve`: the ingested documents behind the OpenAI chat-completions API (and `/v1/search`)."""

from __future__ import annotations

import dataclasses
import os
import socket
from typing import Any

import click

from rag.cli._common import OpenedStore, command_settings, open_store, require
from rag.cli._models import build_chat_model
from rag.cli._options import (
    answering_options,
    threshold_and_filter_options,
)
from rag.config import Settings
from rag.secret import Secret
from rag.serve.config import DEFAULT_MAX_BODY_BYTES, DEFAULT_RATE_LIMIT, ServeConfig, check_binding
from rag.serve.service import RagService

__all__ = ["build_service", "serve"]


def build_service(
    settings: Settings,
    opened: OpenedStore,
    *,
    top_k: int = 4,
    threshold: float = 0.0,
    filter_text: str | None = None,
    history: int = 20,
    keep_duplicates: bool = False,
    follow_up: int = 1,
) -> RagService:
    """The service `rag serve` runs: the store, the configured chat model (or the extractive one), the
    same default search as `rag ask` (documents only, each text once unless `keep_duplicates`), and the
    chat memory of `rag chat` (`RAG_HOME/chat/memory.sqlite`); a follow-up is also searched after the
    `follow_up` questions before it, as in `rag chat`."""
    from rag.memory import MessageWindowChatMemory, SQLiteChatMemoryRepository

    search = settings.search_request(
        "defaults", top_k=top_k, similarity_threshold=threshold, filter=filter_text
    )
    repository = SQLiteChatMemoryRepository(settings.home / "chat" / "memory.sqlite")
    memory = MessageWindowChatMemory(repository, max_messages=history)
    model = build_chat_model(settings)
    return RagService(
        opened.store, model, search, memory, keep_duplicates=keep_duplicates, follow_up=follow_up
    )


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port to bind.")
@click.option(
    "--token",
    metavar="TOKEN",
    help="Bearer token every request must send; required to bind a non-loopback address "
    "[env RAG_SERVE_TOKEN].",
)
@click.option(
    "--forwarded-allow-ips",
    metavar="ADDRESSES",
    help="Comma-separated proxy addresses or networks (or '*') whose X-Forwarded-For header names the "
    "client; by default no one's is believed [env RAG_SERVE_FORWARDED_ALLOW_IPS].",
)
@click.option("--model-name", default="rag", show_default=True, help="The model id clients ask for.")
@click.option(
    "--max-body",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_BODY_BYTES,
    show_default=True,
    help="Largest request body in bytes (larger: 413).",
)
@click.option(
    "--rate-limit",
    type=click.IntRange(min=0),
    default=DEFAULT_RATE_LIMIT,
    show_default=True,
    help="Requests per minute per client address (more: 429); 0 turns the limit off.",
)
@click.option(
    "--top-k", "-k", type=click.IntRange(min=1), default=4, show_default=True, help="Passages to retrieve."
)
@click.option(
    "--history", type=click.IntRange(min=1), default=20, show_default=True, help="Messages remembered."
)
@click.option(
    "--follow-up",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Earlier questions joined to a follow-up for a second search, as in rag chat; 0: none.",
)
@threshold_and_filter_options
@answering_options
@click.pass_context
def serve(
    ctx: click.Context,
    /,
    host: str,
    port: int,
    token: str | None,
    forwarded_allow_ips: str | None,
    model_name: str,
    max_body: int,
    rate_limit: int,
    top_k: int,
    history: int,
    follow_up: int,
    threshold: float,
    filter_text: str | None,
    keep_duplicates: bool,
    **_settings: Any,  # the store, model and search options: command_settings reads them
) -> None:
    """Serve the ingested documents through the OpenAI API on http://HOST:PORT/v1.

    Any OpenAI client or chat UI can talk to it: GET /v1/models, POST /v1/chat/completions (with
    "stream": true for server-sent events) and POST /v1/search for retrieval alone. Answers come from the
    same chain as `rag ask`; a conversation id (header X-Conversation-Id, or the request's "user") turns
    on server-side memory. Chat-memory turns in the store are never returned as documents, and a
    passage that nearly repeats a better-ranked one is left out unless --keep-duplicates (a /v1/search
    request may also send "keep_duplicates": true). A follow-up question is also searched after the
    question before it (--follow-up), as in `rag chat`. See docs/serve.md.

    \b
    Example:
        rag ingest data/docs && rag serve --port 8000
        curl http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' \\
          -d '{"model": "rag", "messages": [{"role": "user", "content": "How do I install it?"}]}'
    """
    secret_text = token if token is not None else os.environ.get("RAG_SERVE_TOKEN")
    secret = Secret(secret_text) if secret_text is not None else None
    check_binding(host, secret)  # before anything is opened: refusing is cheap
    proxies = forwarded_allow_ips or os.environ.get("RAG_SERVE_FORWARDED_ALLOW_IPS") or None
    settings = command_settings(ctx)
    config = ServeConfig(
        model_name=model_name,
        token=secret,
        max_body_bytes=max_body,
        rate_limit=rate_limit,
        forwarded_allow_ips=proxies,
    )
    search = {
        "top_k": top_k,
        "threshold": threshold,
        "filter_text": filter_text,
        "history": history,
        "keep_duplicates": keep_duplicates,
        "follow_up": follow_up,
    }
    _run(settings, config, host, port, search)


def _run(settings: Settings, config: ServeConfig, host: str, port: int, search: dict[str, Any]) -> None:
    """Bind HOST:PORT, then open the store, build the app and serve it until interrupted."""
    require("uvicorn", "serve", "rag serve")
    require("starlette", "serve", "rag serve")
    with _listen(host, port) as listener:  # before the store opens: a port in use is one line, at once
        _serve(settings, config, listener, host, port, search)


def _serve(
    settings: Settings,
    config: ServeConfig,
    listener: socket.socket,
    host: str,
    port: int,
    search: dict[str, Any],
) -> None:
    """Open the store and serve the app on `listener` until interrupted."""
    import uvicorn

    from rag.serve import create_app

    opened = open_store(settings)
    config = dataclasses.replace(config, home_name=opened.location)
    app = create_app(build_service(settings, opened, **search), config)
    guard = "a bearer token" if config.token is not None else "no token (loopback only)"
    where = f"http://{host}:{listener.getsockname()[1]}"  # the port the system gave for --port 0
    click.echo(
        f"serving {opened.location} as model {config.model_name!r} on {where}/v1 with {guard}", err=True
    )
    click.echo(f"ask from a browser: {where}/", err=True)
    # uvicorn believes X-Forwarded-For from 127.0.0.1 by default: only the proxies named here.
    proxies = config.forwarded_allow_ips
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            proxy_headers=proxies is not None,
            forwarded_allow_ips=proxies,
        )
    )
    try:
        server.run(sockets=[listener])
    except KeyboardInterrupt:
        pass  # Ctrl-C: the server has shut down
    finally:
        opened.close()


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to HOST:PORT as uvicorn binds one; an address that cannot be bound (in use, not
    this machine's) ends the command with one line naming it, exit 1."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        click.echo(
            f"error: cannot listen on {host}:{port}: {exc.strerror or exc} (--port chooses another)", err=True
        )
        click.get_current_context().exit(1)
    return listener
