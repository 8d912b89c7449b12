"""`rag memory`: chat-memory turns kept in a home's stores (`rag memory mark-legacy`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import click

from rag.cli._common import OpenedStore, common_options, open_store, settings_from
from rag.cli._options import store_options
from rag.config import Settings
from rag.documents import Document
from rag.memory.legacy_turns import mark_legacy_turns

__all__ = ["mark_legacy", "memory"]


@click.group("memory")
@common_options
def memory() -> None:
    """Chat-memory turns kept in the home: by Python code in the documents' store, by `rag chat` apart.

    \b
    Example:
        rag memory mark-legacy --dry-run
    """


def _chat_memory_kept(settings: Settings) -> bool:
    """Whether `rag chat` has written long-term memory for this collection (never create an empty one)."""
    folder = settings.home / "chat"
    if settings.store == "numpy":
        return (folder / "numpy" / f"memory-{settings.collection}").exists()
    if settings.store == "chroma" and not settings.chroma_url:
        return (folder / "chroma").exists()
    # A Chroma server or PostgreSQL: opened as `rag chat` opens it. (PgVectorStore creates its tables
    # on first use, so there an empty memory table may appear; it holds nothing and costs nothing.)
    return True


def _mark_in_chat_memory(settings: Settings, opened: OpenedStore, dry_run: bool) -> list[Document]:
    from rag.cli.chat import chat_memory_store

    if not _chat_memory_kept(settings):
        return []
    store, persist = chat_memory_store(settings, opened)
    try:
        turns = mark_legacy_turns(store, dry_run=dry_run)
        if turns and not dry_run:
            persist()
        return turns
    finally:
        close: Callable[[], None] | None = getattr(store, "close", None)
        if close is not None:
            close()


def _mark_in_documents(opened: OpenedStore, dry_run: bool) -> list[Document]:
    turns = mark_legacy_turns(opened.store, dry_run=dry_run)
    if turns and not dry_run and opened.flush is not None:
        opened.flush()
    return turns


def _report(turns: list[Document], dry_run: bool, where: str) -> None:
    conversations = Counter(str(d.metadata["conversation_id"]) for d in turns)
    for conversation, count in sorted(conversations.items()):
        click.echo(f"  {conversation!r}: {count} turn{'' if count == 1 else 's'}", err=True)
    done = "would mark" if dry_run else "marked"
    click.echo(
        f"{done} {len(turns)} unmarked chat-memory turn{'' if len(turns) == 1 else 's'} "
        f"in {len(conversations)} conversation{'' if len(conversations) == 1 else 's'}{where}"
        + (" (dry run: nothing changed)" if dry_run else "")
    )


@memory.command("mark-legacy")
@click.option("--dry-run", is_flag=True, help="Count and list the turns; change nothing.")
@click.option(
    "--chat",
    "chat_memory",
    is_flag=True,
    help="Repair the long-term memory of `rag chat` (RAG_HOME/chat/) instead of the documents' store.",
)
@store_options()
@common_options
@click.pass_context
def mark_legacy(
    ctx: click.Context, dry_run: bool, chat_memory: bool, store: str | None, collection: str | None
) -> None:
    """Mark chat-memory turns written before turns were marked, so no command reads them as documents.

    VectorStoreChatMemoryAdvisor marks each turn it writes with rag:kind = 'chat_memory'. Older
    versions did not: their turns come back from rag query, ask, chat, eval and serve as documents,
    and the advisor no longer recalls them. A record is taken for such a turn only when its metadata
    is exactly what those versions wrote (conversation_id, message_type user or assistant, turn,
    timestamp, nothing else), so no chunk of `rag ingest` (which always carries source and
    chunk_index) is ever touched. Each turn keeps its id, text and vector; a second run finds
    nothing. With --chat, the turns `rag chat` remembers long-term (before the marker, it wrote
    them unmarked too, and resumed conversations no longer recall them). Waits while a `rag ingest`
    writes to the same home.

    \b
    Example:
        rag memory mark-legacy --dry-run
        rag memory mark-legacy
        rag memory mark-legacy --chat
    """
    from ingest.lock import HomeLock

    settings = settings_from(ctx, store=store, collection=collection)
    opened = open_store(settings)
    lock = HomeLock(settings.home / "ingest.lock", on_wait=lambda m: click.echo(m, err=True))
    try:
        with lock:
            if chat_memory:
                turns = _mark_in_chat_memory(opened.settings, opened, dry_run)
            else:
                turns = _mark_in_documents(opened, dry_run)
    finally:
        opened.close()
    _report(turns, dry_run, " of rag chat's long-term memory" if chat_memory else "")
