"""`rag info`: what a store holds and how it was built."""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any

import click

from ingest.embedders import chunking_in_effect
from ingest.search_record import search_origin
from rag.cli._common import OpenedStore, common_options, open_store, settings_from
from rag.cli._options import store_options
from rag.config import DEFAULT_SEARCH_MODE, default_vector_weight
from rag.memory.legacy_turns import count_legacy_turns
from rag.retrieval.scope import MEMORY_MARKER
from rag.vectorstore import VectorStore

__all__ = ["SHOWN_SOURCES", "chunking_in_effect", "describe", "info", "record_counts", "recorded_search"]

SHOWN_SOURCES = 20
"""How many sources `rag info` lists when neither --sources nor --no-sources is given."""


def record_counts(store: VectorStore) -> dict[str, int]:
    """How many records the store holds, and how many of them are documents and chat-memory turns.

    `count` is every record; `chat_memory_turns` those `VectorStoreChatMemoryAdvisor` marked
    (`rag:kind = 'chat_memory'`), which no command reads as documents; `documents` the rest.
    `unmarked_turns` counts the documents that are turns written before the marker existed
    (`rag memory mark-legacy` marks them).
    """
    total = store.count()
    turns = store.count(MEMORY_MARKER) if total else 0
    return {
        "count": total,
        "documents": total - turns,
        "chat_memory_turns": turns,
        "unmarked_turns": count_legacy_turns(store) if total - turns else 0,
    }


_STALE = "stale: the collection changed outside this toolkit; `rag reindex` rebuilds it"


def _records_line(counts: dict[str, int]) -> str:
    """`1,204 (1,200 documents, 4 chat-memory turns)`, and a hint when unmarked turns are left."""
    documents, turns = counts["documents"], counts["chat_memory_turns"]
    line = f"{counts['count']:,} ({documents:,} document{'' if documents == 1 else 's'}, "
    line += f"{turns:,} chat-memory turn{'' if turns == 1 else 's'})"
    unmarked = counts["unmarked_turns"]
    if unmarked:
        line += (
            f"; {unmarked:,} of the documents {'is a turn' if unmarked == 1 else 'are turns'} written "
            "before turns were marked: `rag memory mark-legacy` marks them"
        )
    return line


def recorded_search(opened: OpenedStore) -> dict[str, Any]:
    """The store's recorded search mode and vector weight, and where they came from (`origin`).

    A home written before search settings were recorded shows the embedder's defaults. `RAG_*`
    variables and options are not applied: this is what the home holds.
    """
    record = opened.record
    search = record.search
    return {
        "mode": (search.mode if search else None) or DEFAULT_SEARCH_MODE,
        "vector_weight": search.weight_for(record.embedder)
        if search
        else default_vector_weight(record.embedder),
        "origin": search_origin(record.embedder, search),
        "recorded": search.to_dict() if search else None,
    }


def describe(opened: OpenedStore) -> dict[str, Any]:
    """The store's collection, location, size, model, roots and sources (from the ingestion manifest).

    The size is `record_counts`: every record (`count`), documents and chat-memory turns apart.
    `roots` maps each root's label to its folder; `sources` maps each source id (`label/path`) to its
    number of chunks.
    """
    with opened.open_manifest() as manifest:
        sources = {source: len(entry.chunk_ids) for source, entry in manifest.entries().items()}
        roots = manifest.roots()
    settings, record = opened.settings, opened.record
    size, overlap = chunking_in_effect(record.chunk_size, record.chunk_overlap)
    return {
        "store": settings.store,
        "collection": settings.collection,
        "location": opened.location,
        **record_counts(opened.store),
        "embedder": record.embedder,
        "embedding_model": record.model,
        "dimensions": record.dimensions,
        "chunk_size": size,
        "chunk_overlap": overlap,
        "chunking_defaults": record.chunk_size is None and record.chunk_overlap is None,
        "search": recorded_search(opened),
        "roots": roots,
        "sources": sources,
        "lexical_index_current": _lexical_current(opened),
    }


def _shown_model(spec: str, model: str) -> str:
    """The embedding model as `rag info` prints it: the recorded name, or the folder as the spec gives
    it when the name is only that folder's last part (`st:/models/minilm/model` records `model`)."""
    given = spec.partition(":")[2].strip()
    return given if given != model and PurePath(given).name == model else model


def _lexical_current(opened: OpenedStore) -> bool | None:
    """Whether a BM25 index kept beside the collection (Chroma) holds exactly the collection's records;
    None for a store that keeps BM25 with its vectors."""
    real = getattr(opened.store, "real", opened.store)  # a home's store opens on first use
    check = getattr(real, "lexical_current", None)
    return bool(check()) if callable(check) else None


@click.command("info")
@store_options()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON (every source, always).")
@click.option(
    "--sources/--no-sources",
    "list_sources",
    default=None,
    help=f"List every source, or none; by default the first {SHOWN_SOURCES} and how many more.",
)
@common_options
@click.pass_context
def info(
    ctx: click.Context, store: str | None, collection: str | None, as_json: bool, list_sources: bool | None
) -> None:
    """Show the collection, its record count, embedding model, search settings, roots and sources.

    Records are counted as documents and chat-memory turns apart (turns that Python code wrote into
    the store with VectorStoreChatMemoryAdvisor; no command reads them as documents). Turns written
    before turns were marked are named, with the command that marks them.

    The search line is the mode and vector weight `rag query`, `ask`, `chat` and `serve` use when no
    option or RAG_* variable sets them, and where they came from: the default for the store's
    embedder, or `rag eval --tune` (the questions file and when).

    Sources are listed by identity: the label of the root they were ingested from, then their path
    in it (`docs/guide/install.md`); each root's folder is listed under `roots`. A large home shows
    its first sources and a count of the rest: --sources lists them all, --no-sources none.

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
    for name in ("store", "collection", "location"):
        click.echo(f"{name + ':':<17}{facts[name]}")
    click.echo(f"{'records:':<17}{_records_line(facts)}")
    click.echo(f"{'embedder:':<17}{facts['embedder']}")
    click.echo(f"{'embedding_model:':<17}{_shown_model(facts['embedder'], facts['embedding_model'])}")
    click.echo(f"{'dimensions:':<17}{facts['dimensions']}")
    chunking = f"size {facts['chunk_size']}, overlap {facts['chunk_overlap']}"
    chunking += " (the defaults)" if facts["chunking_defaults"] else ""
    click.echo(f"{'chunking:':<17}{chunking}")
    search = facts["search"]
    weight = f", vector weight {search['vector_weight']:g}" if search["mode"] == "hybrid" else ""
    click.echo(f"{'search:':<17}{search['mode']}{weight} ({search['origin']})")
    if facts["lexical_index_current"] is not None:
        state = "current" if facts["lexical_index_current"] else _STALE
        click.echo(f"{'lexical index:':<17}{state}")
    click.echo(f"{'roots:':<17}{len(facts['roots'])}")
    for label, path in facts["roots"].items():
        click.echo(f"  {label}  {path}")
    sources = list(facts["sources"].items())
    click.echo(f"{'sources:':<17}{len(sources)}")
    shown = len(sources) if list_sources else 0 if list_sources is False else SHOWN_SOURCES
    for source, chunks in sources[:shown]:
        click.echo(f"  {source}  ({chunks} chunk{'' if chunks == 1 else 's'})")
    if list_sources is None and len(sources) > shown:
        click.echo(f"  ... and {len(sources) - shown:,} more (rag info --sources lists them all)")
