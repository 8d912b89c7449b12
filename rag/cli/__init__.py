"""The `rag` command line: the composition root that wires stores, embedders and models together.

Each command lives in its own module in this folder and is registered below.
"""

from __future__ import annotations

import click

from rag.cli._common import RagGroup, common_options
from rag.cli.ask import ask
from rag.cli.chat import chat
from rag.cli.delete import delete
from rag.cli.eval import eval_command
from rag.cli.info import info
from rag.cli.ingest import ingest
from rag.cli.mcp import mcp
from rag.cli.memory import memory
from rag.cli.query import query
from rag.cli.reindex import reindex
from rag.cli.serve import serve
from rag.observability.setup import tracing_from_env

__all__ = ["main"]


@click.group(cls=RagGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rag-advisors", prog_name="rag")
@common_options
@click.pass_context
def main(ctx: click.Context) -> None:
    """rag-advisors: ingest documents, then ask questions about them.

    Set RAG_OTEL=otlp (or console) to export OpenTelemetry traces and metrics.

    \b
    Example:
        rag ingest data/
        rag ask "How do I install it?"
    """
    shutdown = tracing_from_env()
    if shutdown is not None:
        ctx.call_on_close(shutdown)


main.add_command(ingest)
main.add_command(query)
main.add_command(info)
main.add_command(delete)
main.add_command(ask)
main.add_command(eval_command)
main.add_command(chat)
main.add_command(serve)
main.add_command(mcp)
main.add_command(memory)
main.add_command(reindex)
