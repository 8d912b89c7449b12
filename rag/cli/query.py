"""`rag query TEXT`: the chunks most similar to a text, with scores and sources."""

from __future__ import annotations

import json
from typing import Any

import click

from rag.citations import citation
from rag.cli._common import command_settings, common_options, open_store
from rag.cli._empty import filter_selects_nothing
from rag.cli._options import (
    check_exact,
    distinct_option,
    exact_option,
    not_blank,
    search_options,
    store_options,
    threshold_and_filter_options,
)
from rag.cli._scores import SCORES_LEGEND, cosines, score_kind
from rag.documents import Document
from rag.hits import hit_record
from rag.observability.steps import traced_search
from rag.retrieval.documents_view import DocumentsView

__all__ = ["query", "snippet"]


def snippet(text: str, width: int = 100) -> str:
    """The text on one line, cut at `width` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def _page(doc: Document) -> str:
    page = doc.metadata.get("page")
    return "-" if page is None else str(page)


def _as_dict(rank: int, doc: Document, kind: str) -> dict[str, Any]:
    """A hit as `rag.hits.hit_record` lists it, with what `score` holds (`score_kind`), the citation
    under its older key `source_id`, and the whole metadata."""
    return {**hit_record(rank, doc), "score_kind": kind, "source_id": citation(doc), "metadata": doc.metadata}


@click.command("query")
@click.argument("text", callback=not_blank)
@click.option(
    "--top-k", "-k", type=click.IntRange(min=1), default=4, show_default=True, help="How many chunks."
)
@threshold_and_filter_options
@exact_option
@store_options()
@click.option(
    "--embedder", metavar="SPEC", help="Override the embedder the store was built with (must match)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the hits as JSON.")
@distinct_option
@search_options()
@common_options
@click.pass_context
def query(
    ctx: click.Context,
    /,
    text: str,
    top_k: int,
    threshold: float,
    filter_text: str | None,
    exact: bool,
    as_json: bool,
    keep_duplicates: bool,
    **_settings: Any,  # the store, embedder and search options: command_settings reads them
) -> None:
    """Show the chunks most similar to TEXT: rank, score, cosine, source, page and a snippet.

    Two numbers per hit: `score` ranks the hits in the search mode (cosine in vector mode, BM25 in
    lexical mode, the fused score in hybrid mode, where the top hit often scores 1.000), and `cosine`
    is the cosine similarity that --threshold compares in every mode. JSON output names the first
    one's kind in `score_kind`. A lexical search without --threshold never embeds TEXT, so its hits
    show no cosine (`-`).

    The source column names the file as every answer cites it, `root/path` (the root's label, then
    the path inside it); `--filter "source == 'root/path'"` selects it. A chunk whose text nearly
    repeats a better-ranked hit (a page copied into another file) is left out and the list filled
    from further down, unless --keep-duplicates.
    Chat-memory turns written into the store (VectorStoreChatMemoryAdvisor) are never shown.

    \b
    Example:
        rag query "how do I rotate the keys?" --top-k 5 --filter "source == 'guide.md'"
        rag query "error E-214" --mode lexical
        rag query "rotate keys" --mode hybrid --fusion weighted --vector-weight 0.7 --diversity 0.3
    """
    settings = command_settings(ctx)
    request = settings.search_request(
        text, top_k=top_k, similarity_threshold=threshold, filter=filter_text, exact=exact
    )
    opened = open_store(settings)
    try:
        check_exact(opened.store, exact)
        searched = DocumentsView(opened.store, distinct=not keep_duplicates)
        hits = traced_search(searched, request)
        cosine = cosines(hits)
        empty = None if hits else filter_selects_nothing(searched, filter_text)
    finally:
        opened.close()
    kind = score_kind(request)
    if as_json:
        click.echo(json.dumps([_as_dict(rank, doc, kind) for rank, doc in enumerate(hits, 1)], indent=2))
        return
    if not hits:
        click.echo(empty or "no matching chunks", err=True)
        return
    click.echo(SCORES_LEGEND.format(kind=kind), err=True)
    for rank, (doc, similarity) in enumerate(zip(hits, cosine, strict=True), 1):
        click.echo(
            f"{rank:>3}  score {_number(doc.score)}  cosine {_number(similarity)}  "
            f"{citation(doc) or '-'}  p.{_page(doc)}  {snippet(doc.text)}"
        )


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
