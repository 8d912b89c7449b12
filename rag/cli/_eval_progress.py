"""`rag eval`'s progress: its searches counted as they run, drawn by `ingest.progress.CountProgress`.

The evaluation searches once per question, filter setting and mode (once per threshold too, where the
ranking is not the cosine every threshold reads); the store the sweep reads is wrapped so each search
advances the count.
"""

from __future__ import annotations

from typing import Any

from ingest.progress import CountProgress
from rag.documents import Document, SearchRequest
from rag.vectorstore import VectorStore

__all__ = ["CountedSearches", "expected_searches"]


def expected_searches(
    questions: int, filters: int, modes: list[str], thresholds: int, diversity: float
) -> int:
    """How many searches `rag.eval.evaluate` runs for these settings."""
    per_mode = [1 if mode == "vector" and diversity == 0.0 else thresholds for mode in modes]
    return questions * filters * sum(per_mode)


class CountedSearches:
    """`store`, with each `similarity_search` counted on `progress`; everything else passed through."""

    def __init__(self, store: VectorStore, progress: CountProgress) -> None:
        self._store = store
        self._progress = progress

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        found = self._store.similarity_search(request)
        self._progress.advance()
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)
