"""`rag memory`: chat-memory turns kept in a home's store (`rag memory mark-legacy`)."""

from __future__ import annotations

from collections import Counter

import click

from rag.cli._common import common_options, open_store, settings_from
from rag.cli._options import store_options
from rag.memory.legacy_turns import mark_legacy_turns

__all__ = ["mark_legacy", "memory"]


@click.group("memory")
@common_options
def memory() -> None:
    """Chat-memory turns that Python code keeps in the home's store.

    \b
    Example:
        rag memory mark-legacy --dry-run
    """


@memory.command("mark-legacy")
@click.option("--dry-run", is_flag=True, help="Count and list the turns; change nothing.")
@store_options()
@common_options
@click.pass_context
def mark_legacy(ctx: click.Context, dry_run: bool, store: str | None, collection: str | None) -> None:
    """Mark chat-memory turns written before turns were marked, so no command reads them as documents.

    VectorStoreChatMemoryAdvisor marks each turn it writes with rag:kind = 'chat_memory'. Older
    versions did not: their turns come back from rag query, ask, chat, eval and serve as documents.
    A record is taken for such a turn only when its metadata is exactly what those versions wrote
    (conversation_id, message_type user or assistant, turn, timestamp, nothing else), so no chunk
    of `rag ingest` (which always carries source and chunk_index) is ever touched. Each turn keeps
    its id, text and vector; a second run finds nothing. Waits while a `rag ingest` writes to the
    same home.

    \b
    Example:
        rag memory mark-legacy --dry-run
        rag memory mark-legacy
    """
    from ingest.lock import HomeLock

    settings = settings_from(ctx, store=store, collection=collection)
    opened = open_store(settings)
    lock = HomeLock(settings.home / "ingest.lock", on_wait=lambda m: click.echo(m, err=True))
    try:
        with lock:
            turns = mark_legacy_turns(opened.store, dry_run=dry_run)
            if turns and not dry_run and opened.flush is not None:
                opened.flush()
    finally:
        opened.close()
    conversations = Counter(str(d.metadata["conversation_id"]) for d in turns)
    for conversation, count in sorted(conversations.items()):
        click.echo(f"  {conversation!r}: {count} turn{'' if count == 1 else 's'}", err=True)
    done = "would mark" if dry_run else "marked"
    click.echo(
        f"{done} {len(turns)} unmarked chat-memory turn{'' if len(turns) == 1 else 's'} "
        f"in {len(conversations)} conversation{'' if len(conversations) == 1 else 's'}"
        + (" (dry run: nothing changed)" if dry_run else "")
    )
