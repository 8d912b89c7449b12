"""What an answer cites for a retrieved chunk: its source file, and a JSON Lines record's id after `#`.

A chunk read from a JSON Lines file (`rag ingest corpus.jsonl --id-field _id`) carries the file as
`source` and its record's id as `doc_id`; citing only the file would point at thousands of records,
so its citation is `corpus.jsonl#12209494`. Every other chunk is cited by its `source`. The prompt's
passages (`format_document`), the CLI's hit lists and answers, and `rag serve`'s sources all cite
through `citation`, so they agree.

Example:
    >>> from rag import Document
    >>> citation(Document("c1", "Spring tides...", {"source": "corpus.jsonl", "doc_id": "12209494"}))
    'corpus.jsonl#12209494'
    >>> citation(Document("c2", "Install...", {"source": "guide/install.md"}))
    'guide/install.md'
    >>> citation(Document("c3", "no source")) is None
    True
"""

from __future__ import annotations

from rag.documents import Document

__all__ = ["RECORD_ID_FIELD", "citation"]

RECORD_ID_FIELD = "doc_id"
"""The metadata key under which the JSON Lines reader stores a record's id (`--id-field`)."""


def citation(document: Document) -> str | None:
    """The chunk's `source`, with `#record id` for a JSON Lines record; None without a source."""
    source, record = document.metadata.get("source"), document.metadata.get(RECORD_ID_FIELD)
    if source is None:
        return None
    return f"{source}#{record}" if record is not None else str(source)
