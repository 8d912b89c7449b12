"""`rag ask QUESTION`: an answer from the ingested documents, then the numbered sources."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from rag.advisors.question_answer import QuestionAnswerAdvisor
from rag.chat.media import Media
from rag.cli._common import command_settings, open_store
from rag.cli._empty import filter_selects_nothing
from rag.cli._models import build_chat_model
from rag.cli._options import (
    answering_options,
    check_exact,
    exact_option,
    not_blank,
    threshold_and_filter_options,
)
from rag.cli._scores import cosines
from rag.cli._sources import source_lines
from rag.client import ChatClient
from rag.documents import Document
from rag.hits import hit_record
from rag.retrieval.documents_view import DocumentsView
from rag.retrieval.windows import ANSWER_WINDOW

__all__ = ["ask"]


def _print_sources(
    documents: Sequence[Document], cosine: Sequence[float | None], answer: str, empty: str | None
) -> None:
    if not documents:
        click.echo(empty or "no passages matched the question", err=True)
        return
    click.echo("\nSources:")
    for line in source_lines(documents, cosine, answer):
        click.echo(line)


@click.command("ask")
@click.argument("question", callback=not_blank)
@click.option(
    "--top-k", "-k", type=click.IntRange(min=1), default=4, show_default=True, help="Passages to retrieve."
)
@threshold_and_filter_options
@exact_option
@click.option(
    "--stream/--no-stream", default=None, help="Print the answer as it arrives [default: when a terminal]."
)
@click.option("--json", "as_json", is_flag=True, help="Print {answer, sources} as JSON.")
@click.option(
    "--image",
    "images",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="An image file (png, jpeg, gif, webp) sent with the question to a vision model; repeatable.",
)
@answering_options
@click.pass_context
def ask(
    ctx: click.Context,
    /,
    question: str,
    top_k: int,
    threshold: float,
    filter_text: str | None,
    exact: bool,
    stream: bool | None,
    as_json: bool,
    images: tuple[Path, ...],
    keep_duplicates: bool,
    **_settings: Any,  # the store, model and search options: command_settings reads them
) -> None:
    """Answer QUESTION from the ingested documents and list the sources used.

    Each source shows its rank score (BM25 or fused in lexical and hybrid mode) and its cosine
    similarity, the number --threshold compares (none in lexical mode without --threshold, which
    never embeds the question).

    With no endpoint configured (OPENAI_BASE_URL, OPENAI_API_KEY, RAG_CHAT_MODEL, --model, --base-url) the
    answer quotes the most relevant passages, offline, and says that no language model was used.
    Passages that nearly repeat a better-ranked one are left out unless --keep-duplicates; chat-memory
    turns written into the store are never used as passages.

    \b
    Example:
        rag ask "How do I mount the beacon?" --top-k 3 --filter "source == 'guide/install.md'"
        rag ask "What does error E-214 mean?" --mode lexical
    """
    media = [Media.from_file(path) for path in images]  # checked before anything is opened
    settings = command_settings(ctx)
    search = settings.search_request(
        question, top_k=top_k, similarity_threshold=threshold, filter=filter_text, exact=exact
    )
    opened = open_store(settings)
    searched = DocumentsView(opened.store, distinct=not keep_duplicates, window=ANSWER_WINDOW)
    model = build_chat_model(settings)
    try:
        check_exact(opened.store, exact)
        spec = ChatClient(model, advisors=[QuestionAnswerAdvisor(searched, search)]).prompt(question)
        spec.media(*media)
        streaming = sys.stdout.isatty() if stream is None else stream
        if streaming and not as_json:
            reply = spec.stream()
            pieces = []
            for piece in reply.content():
                pieces.append(piece)
                click.echo(piece, nl=False)
            click.echo()
            retrieved, answer = reply.documents, "".join(pieces)
        else:
            response = spec.call().response()
            retrieved, answer = response.documents, response.text or ""
            if not as_json:
                click.echo(response.text)
        cosine = cosines(retrieved)
        empty = None if retrieved else filter_selects_nothing(searched, filter_text)
    finally:
        opened.close()
        close = getattr(model, "close", None)
        if callable(close):
            close()
    if as_json:
        rows = [hit_record(rank, doc) for rank, doc in enumerate(retrieved, 1)]
        click.echo(json.dumps({"answer": response.text, "sources": rows}, indent=2, ensure_ascii=False))
    else:
        _print_sources(retrieved, cosine, answer, empty)
