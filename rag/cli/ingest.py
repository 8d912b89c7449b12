"""`rag ingest PATH...`: bring a store up to date with folders and files, incrementally."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from rag.cli._common import common_options, open_store, settings_from
from rag.cli._options import store_options
from rag.documents import MetadataValue
from rag.embeddings import EmbeddingModel, TokenCounter

__all__ = ["ingest", "make_splitter", "parse_meta"]


def parse_meta(items: tuple[str, ...]) -> dict[str, MetadataValue]:
    """`key=value` pairs as metadata: `true`/`false` become booleans, numbers become numbers."""
    meta: dict[str, MetadataValue] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"expected key=value, got {item!r}", param_hint="--meta")
        value: MetadataValue = raw
        if raw.lower() in ("true", "false"):
            value = raw.lower() == "true"
        else:
            for kind in (int, float):
                try:
                    value = kind(raw)
                    break
                except ValueError:
                    continue
        meta[name.strip()] = value
    return meta


def make_splitter(model: EmbeddingModel, chunk_size: int | None, chunk_overlap: int | None) -> Any:
    """The recursive splitter sized in the model's tokens (words when it has no tokenizer)."""
    from ingest.splitters import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, RecursiveSplitter

    size = DEFAULT_CHUNK_SIZE if chunk_size is None else chunk_size
    overlap = min(DEFAULT_CHUNK_OVERLAP, size - 1) if chunk_overlap is None else chunk_overlap
    counter = model if isinstance(model, TokenCounter) else None
    return RecursiveSplitter(size, overlap, counter)


def _print_report(report: Any, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    for file in report.files:
        if file.status != "unchanged":
            click.echo(file.line())
    click.echo(report.summary())


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@store_options(defaults=True)
@click.option(
    "--embedder",
    metavar="SPEC",
    help="hashing, hashing:DIM, st:MODEL_OR_PATH, openai:MODEL [env RAG_EMBEDDER].",
)
@click.option(
    "--chunk-size", type=click.IntRange(min=1), help="Chunk size in model tokens [env RAG_CHUNK_SIZE]."
)
@click.option("--chunk-overlap", type=click.IntRange(min=0), help="Chunk overlap [env RAG_CHUNK_OVERLAP].")
@click.option(
    "--include", multiple=True, metavar="GLOB", help="Only files matching (repeatable), e.g. '*.md'."
)
@click.option(
    "--exclude", multiple=True, metavar="GLOB", help="Skip files and folders matching (repeatable)."
)
@click.option(
    "--meta", multiple=True, metavar="KEY=VALUE", help="Metadata added to every chunk (repeatable)."
)
@click.option("--no-prune", is_flag=True, help="Keep the chunks of files that were deleted.")
@click.option("--pdf-password", help="Password for encrypted PDFs (the empty one is always tried).")
@click.option(
    "--text-field", default="text", show_default=True, help="JSON Lines text field(s), comma-separated."
)
@click.option("--id-field", help="JSON Lines record id field, e.g. _id.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@common_options
@click.pass_context
def ingest(
    ctx: click.Context,
    paths: tuple[Path, ...],
    store: str | None,
    collection: str | None,
    embedder: str | None,
    chunk_size: int | None,
    chunk_overlap: int | None,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    meta: tuple[str, ...],
    no_prune: bool,
    pdf_password: str | None,
    text_field: str,
    id_field: str | None,
    as_json: bool,
) -> None:
    """Ingest files and folders into the store; only what changed since the last run is embedded.

    Exits 1 when any file failed (the others are ingested all the same).

    \b
    Example:
        rag ingest docs/ --exclude 'drafts/**' --meta project=atlas
        rag ingest corpus.jsonl --text-field title,text --id-field _id --store numpy
    """
    from ingest.pipeline import IngestPipeline
    from ingest.progress import TerminalProgress
    from ingest.readers import ReaderOptions

    extra = parse_meta(meta)
    settings = settings_from(
        ctx,
        store=store,
        collection=collection,
        embedder=embedder,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
    )
    opened = open_store(settings, create=True)
    try:
        splitter = make_splitter(
            opened.store.embedding, opened.record.chunk_size, opened.record.chunk_overlap
        )
        pipeline = IngestPipeline(
            opened.store,
            splitter,
            manifest=opened.open_manifest(),
            flush=opened.flush,
            reader_options=ReaderOptions(pdf_password=pdf_password, text_field=text_field, id_field=id_field),
            extra_metadata=extra,
            on_progress=TerminalProgress(),
        )
        try:
            report = pipeline.run(paths, include=include, exclude=exclude, prune=not no_prune)
        finally:
            pipeline.manifest.close()
    finally:
        opened.close()
    _print_report(report, as_json)
    if report.truncated_chunks:
        click.echo(f"warning: {report.truncated_chunks} chunk(s) were cut to fit the model's input", err=True)
    if not report.ok:
        failed = report.counts["failed"]
        click.echo(f"error: {failed} file(s) failed; see the report above", err=True)
        ctx.exit(1)
