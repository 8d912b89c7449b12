"""`rag delete`: remove chunks by filter or by source, and forget them in the ingestion manifest."""

from __future__ import annotations

from collections import defaultdict

import click

from rag.cli._common import OpenedStore, common_options, open_store, settings_from
from rag.cli._options import store_options
from rag.filters import Filter, as_filter, key

__all__ = ["delete", "delete_matching"]


def delete_matching(opened: OpenedStore, selection: Filter) -> tuple[int, int]:
    """Delete every chunk matching `selection` and update the manifest; returns (chunks, sources).

    A source whose chunks are all gone is forgotten (the next `rag ingest` adds it as new); one that
    keeps some chunks is marked for processing, so the next run restores what the file still holds.
    """
    matches = opened.store.get(filter=selection)
    by_source: dict[str, set[str]] = defaultdict(set)
    for doc in matches:
        by_source[str(doc.metadata.get("source", ""))].add(doc.id)
    removed = opened.store.delete([doc.id for doc in matches]) if matches else 0
    if opened.flush is not None:
        opened.flush()
    with opened.open_manifest() as manifest:
        for source, ids in by_source.items():
            entry = manifest.get(source)
            if entry is None:
                continue
            if set(entry.chunk_ids) <= ids:
                manifest.remove(source)
            else:
                manifest.forget_ids(source, ids)
        manifest.commit()
    return removed, len(by_source)


@click.command("delete")
@click.option(
    "--filter", "filter_text", metavar="EXPR", help="Delete the chunks matching this metadata filter."
)
@click.option("--source", metavar="PATH", help="Delete every chunk of this source (as `rag info` lists it).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@store_options()
@common_options
@click.pass_context
def delete(
    ctx: click.Context,
    filter_text: str | None,
    source: str | None,
    yes: bool,
    store: str | None,
    collection: str | None,
) -> None:
    """Delete chunks by metadata filter or by source; give exactly one of --filter and --source.

    \b
    Example:
        rag delete --source drafts/old.md --yes
        rag delete --filter "year < 2020"
    """
    if (filter_text is None) == (source is None):
        raise click.UsageError("give exactly one of --filter and --source")
    selection = key("source") == source if source is not None else as_filter(filter_text)
    assert selection is not None  # one of the two was given, checked above
    opened = open_store(settings_from(ctx, store=store, collection=collection))
    try:
        count = opened.store.count(selection)
        if count == 0:
            click.echo("nothing matches; nothing deleted", err=True)
            return
        if not yes:
            click.confirm(f"Delete {count} chunk(s) matching {str(selection)!r}?", abort=True, err=True)
        removed, sources = delete_matching(opened, selection)
    finally:
        opened.close()
    click.echo(f"deleted {removed} chunk(s) from {sources} source(s)")
