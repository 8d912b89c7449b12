"""`rag info`: what a store holds and how it was built."""

from __future__ import annotations

import json
from typing import Any

import click

from rag.cli._common import OpenedStore, common_options, open_store, settings_from
from rag.cli._options import store_options

__all__ = ["describe", "info"]


def describe(opened: OpenedStore) -> dict[str, Any]:
    """The store's collection, location, size, model and sources (from the ingestion manifest)."""
    with opened.open_manifest() as manifest:
        sources = {source: len(entry.chunk_ids) for source, entry in manifest.entries().items()}
    settings, record = opened.settings, opened.record
    return {
        "store": settings.store,
        "collection": settings.collection,
        "location": opened.location,
        "count": opened.store.count(),
        "embedder": record.embedder,
        "embedding_model": record.model,
        "dimensions": record.dimensions,
        "chunk_size": record.chunk_size,
        "chunk_overlap": record.chunk_overlap,
        "sources": sources,
    }


@click.command("info")
@store_options()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@common_options
@click.pass_context
def info(ctx: click.Context, store: str | None, collection: str | None, as_json: bool) -> None:
    """Show the collection, its chunk count, embedding model and ingested sources.

    \b
    Example:
        rag info --json
    """
    opened = open_store(settings_from(ctx, store=store, collection=collection))
    try:
        facts = describe(opened)
    finally:
        opened.close()
    if as_json:
        click.echo(json.dumps(facts, indent=2))
        return
    for name in ("store", "collection", "location", "count", "embedder", "embedding_model", "dimensions"):
        click.echo(f"{name + ':':<17}{facts[name]}")
    size, overlap = (("default" if facts[k] is None else facts[k]) for k in ("chunk_size", "chunk_overlap"))
    chunking = f"size {size}, overlap {overlap}"
    click.echo(f"{'chunking:':<17}{chunking}")
    click.echo(f"{'sources:':<17}{len(facts['sources'])}")
    for source, chunks in facts["sources"].items():
        click.echo(f"  {source}  ({chunks} chunk{'' if chunks == 1 else 's'})")
