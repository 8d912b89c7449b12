"""`rag delete`: remove chunks by filter or by source, and forget them in the ingestion manifest."""

from __future__ import annotations

from collections import defaultdict

import click

from rag.cli._common import OpenedStore, common_options, open_store, settings_from
from rag.cli._options import checked_filter, store_options
from rag.filters import Filter, as_filter, key

__all__ = ["delete", "delete_matching"]


def delete_matching(opened: OpenedStore, selection: Filter) -> tuple[int, int]:
    """Delete every chunk matching `selection` and update the manifest; returns (chunks, sources).

    A source whose chunks are all gone is forgotten (the next `rag ingest` adds it as new); one that
    keeps some chunks is marked for processing, so the next run restores what the file still holds.
    """
    matches = opened.store.get(filter=selection)
    # Chunks are grouped by their file: (root label, path in the root); older chunks have no root.
    by_source: dict[tuple[str | None, str], set[str]] = defaultdict(set)
    for doc in matches:
        root = doc.metadata.get("root")
        by_source[(None if root is None else str(root), str(doc.metadata.get("source", "")))].add(doc.id)
    removed = opened.store.delete([doc.id for doc in matches]) if matches else 0
    if opened.flush is not None:
        opened.flush()
    with opened.open_manifest() as manifest:
        for (root, source), ids in by_source.items():
            for entry in manifest.find(source, root):
                if set(entry.chunk_ids) <= ids:
                    manifest.remove(entry.source)
                else:
                    manifest.forget_ids(entry.source, ids)
        manifest.commit()
    return removed, len(by_source)


def _source_selection(opened: OpenedStore, source: str) -> Filter:
    """The chunks of one source: a source id as `rag info` lists it (`docs/guide.md`: that root only),
    else a path matched in every root."""
    with opened.open_manifest() as manifest:
        entry = manifest.get(source)
    if entry is None or entry.relative == entry.source:
        return key("source") == source
    scoped = (key("root") == entry.root) & (key("source") == entry.relative)
    # Chunks written before roots were recorded carry no `root`: their path alone names them.
    return scoped if opened.store.count(scoped) else key("source") == entry.relative


def _confirmed(question: str) -> bool:
    """The user's answer to `question`; input that ends unanswered (a script, `< /dev/null`) is an error
    saying how to delete without asking, instead of click's bare `Aborted!`."""
    try:
        return click.confirm(question, err=True)
    except click.Abort:
        # A new line ends the prompt's; then one line in the toolkit's own error format.
        click.echo("\nerror: no answer, so nothing deleted; --yes deletes without asking", err=True)
        click.get_current_context().exit(1)


@click.command("delete")
@click.option(
    "--filter",
    "filter_text",
    metavar="EXPR",
    callback=checked_filter,
    help="Delete the chunks matching this metadata filter.",
)
@click.option(
    "--source",
    metavar="PATH",
    help="Delete every chunk of this source: its id as `rag info` lists it (root/path), or a path.",
)
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

    Waits while a `rag ingest` writes to the same home. The file itself stays: ingesting its folder
    again brings it back (`rag ingest DIR --exclude PATTERN` keeps it out).

    \b
    Example:
        rag delete --source drafts/old.md --yes
        rag delete --filter "year < 2020"
    """
    from ingest.lock import HomeLock

    if (filter_text is None) == (source is None):
        raise click.UsageError("give exactly one of --filter and --source")
    parsed = as_filter(filter_text) if filter_text is not None else None
    settings = settings_from(ctx, store=store, collection=collection)
    opened = open_store(settings)
    # The store and the manifest change together: never beside a running `rag ingest` on this home.
    lock = HomeLock(settings.home / "ingest.lock", on_wait=lambda m: click.echo(m, err=True))
    try:
        with lock:
            selection = parsed if source is None else _source_selection(opened, source)
            assert selection is not None  # one of the two was given, checked above
            count = opened.store.count(selection)
            asked = f"--source {source!r}" if source is not None else f"--filter {filter_text!r}"
            if count == 0:
                where = " (rag info --sources lists the sources)" if source is not None else ""
                click.echo(f"nothing matches {asked}{where}; nothing deleted", err=True)
                return
            # Named as the user wrote it: the file's name, not the filter it became.
            what = f"of {source!r}" if source is not None else f"matching {filter_text!r}"
            question = f"Delete {count} chunk(s) {what}?"
            if not yes and not _confirmed(question):
                # Declining is an answer, not a failure: say what happened and exit 0.
                click.echo("nothing deleted", err=True)
                return
            removed, sources = delete_matching(opened, selection)
    finally:
        opened.close()
    click.echo(f"deleted {removed} chunk(s) from {sources} source(s)")
