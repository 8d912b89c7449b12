"""`rag reindex`: rebuild the BM25 index a Chroma home keeps beside its collection."""

from __future__ import annotations

import click

from rag.cli._common import common_options, open_store, settings_from
from rag.cli._options import store_options

__all__ = ["reindex"]


@click.command("reindex")
@store_options()
@common_options
@click.pass_context
def reindex(ctx: click.Context, store: str | None, collection: str | None) -> None:
    """Rebuild the BM25 index of a Chroma home from its collection.

    The index reflects the writes made through this toolkit; run this after writing to the collection
    with other tools. Other stores keep BM25 with their vectors: nothing to rebuild.

    \b
    Example:
        rag reindex
    """
    opened = open_store(settings_from(ctx, store=store, collection=collection))
    try:
        real = getattr(opened.store, "real", opened.store)  # a home's store opens on first use
        rebuild = getattr(real, "reindex", None)
        if rebuild is None:
            click.echo("this store keeps its BM25 index with its vectors: nothing to rebuild", err=True)
            return
        rebuild()
        click.echo(f"rebuilt the BM25 index of {opened.store.count()} chunk(s)")
    finally:
        opened.close()
