"""What every document search of the advisors is confined to: a fixed scope, and never chat memory.

`VectorStoreChatMemoryAdvisor` marks the turns it writes with `rag:kind = 'chat_memory'`
(`MEMORY_MARKER`); `QuestionAnswerAdvisor` and `VectorStoreDocumentRetriever` AND `NOT` that marker
into every search, so memory and documents may share one store.

Example:
    >>> str(scoped_filter(None, "lang == 'en'"))
    "(lang == 'en') AND (NOT ('rag:kind' == 'chat_memory'))"
"""

from __future__ import annotations

from rag.filters import Filter, as_filter, key
from rag.retrieval.source_identity import widen_source_names

__all__ = ["CHAT_MEMORY_KIND", "KIND_KEY", "MEMORY_MARKER", "scoped_filter"]

KIND_KEY = "rag:kind"
"""Reserved metadata key that says what wrote a document; do not set it on documents of your own."""

CHAT_MEMORY_KIND = "chat_memory"
"""The `KIND_KEY` value of every document `VectorStoreChatMemoryAdvisor` writes."""

MEMORY_MARKER: Filter = key(KIND_KEY) == CHAT_MEMORY_KIND
"""The filter tree that selects chat-memory documents (and, negated, keeps them out of answers)."""


def scoped_filter(scope: str | Filter | None, filter: str | Filter | None) -> Filter:
    """`scope AND filter AND NOT chat-memory`: what every document search of the advisors runs with.

    `QuestionAnswerAdvisor.effective_filter` and `VectorStoreDocumentRetriever` share it, so both keep
    chat memory out and stay inside their scope the same way, whatever `filter` (a request's) holds.
    A file named in `source` by its identity (`docs/guide/install.md`, as `rag query` shows it) is
    found as by its path (`rag.retrieval.source_identity.widen_source_names`).
    """
    parts = [widen_source_names(part) for part in (as_filter(scope), as_filter(filter)) if part is not None]
    parts.append(~MEMORY_MARKER)
    combined = parts[0]
    for part in parts[1:]:
        combined = combined & part
    return combined
