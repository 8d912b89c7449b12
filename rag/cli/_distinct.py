"""Distinct hits for `rag query` and `rag ask`: near-identical chunks crowd out the rest of a docs tree.

A real docs tree often holds the same text twice: Node's `all.html` repeats every page, a site keeps
an old copy of a guide, a README is copied into a docs folder. Each copy is its own chunk, so the top
10 can be five texts shown twice. `DistinctHits` wraps a store so that a search drops every hit whose
text nearly repeats a better-ranked one (`rag.retrieval.NearDuplicateFilter`: word pairs, ignoring
case, punctuation and spacing, Jaccard >= 0.9) and fills the page from further down the ranking.

Filling works because a longer result list starts with the shorter one (hybrid and MMR rank over a
fixed candidate pool up to 100): searching 3 x top_k and filtering keeps the order of the original
ranking. The commands turn it off with `--keep-duplicates`.

Example:
    >>> from rag import Document, HashingEmbedding, SearchRequest
    >>> from stores import NumpyVectorStore
    >>> store = NumpyVectorStore(HashingEmbedding())
    >>> store.add([Document("a", "Add the CORS middleware.", {"source": "cors.md"}),
    ...            Document("b", "add the CORS middleware", {"source": "all.html"}),
    ...            Document("c", "CORS headers are sent on preflight.", {"source": "cors.md"})])
    >>> [d.id for d in DistinctHits(store).similarity_search(SearchRequest("cors middleware", top_k=2))]
    ['a', 'c']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import click

from rag.documents import Document, SearchRequest
from rag.embeddings.base import EmbeddingModel
from rag.filters import Filter
from rag.observability.steps import store_kind
from rag.retrieval import NearDuplicateFilter, Query
from rag.vectorstore import VectorStore

__all__ = ["NEAR_DUPLICATE", "DistinctHits", "distinct_option"]

NEAR_DUPLICATE = 0.9
"""Word-pair Jaccard similarity from which a hit repeats a better-ranked one (NearDuplicateFilter's)."""
_OVERFETCH = 3  # candidates searched per hit wanted; tripled again while copies leave the page short
_MAX_FETCH = 1000  # a page of near-identical chunks stops growing here (the store's own cost bound)


F = TypeVar("F", bound=Callable[..., Any])


def distinct_option(func: F) -> F:
    """`--keep-duplicates` for `rag query` and `rag ask` (parameter `keep_duplicates`)."""
    return click.option(
        "--keep-duplicates",
        is_flag=True,
        help="Also show chunks whose text nearly repeats a better-ranked hit (a page copied into "
        "another file); by default each text is shown once and the page is filled from further down.",
    )(func)


class DistinctHits:
    """A store whose searches skip near-duplicates of better-ranked hits; everything else passes through.

    Args:
        store: the store to search.
        threshold: the near-duplicate similarity in [0, 1] (1.0: only the same words in the same order).
    """

    def __init__(self, store: VectorStore, threshold: float = NEAR_DUPLICATE) -> None:
        self.store = store
        self._filter = NearDuplicateFilter(threshold)
        # Spans and `rag info` name the wrapped store, not this wrapper.
        self.kind = store_kind(store)
        self.collection_name = getattr(store, "collection_name", None)

    @property
    def embedding(self) -> EmbeddingModel:
        return self.store.embedding

    def add(self, documents: Iterable[Document]) -> None:
        self.store.add(documents)

    def delete(self, ids: Iterable[str] | None = None, *, filter: str | Filter | None = None) -> int:
        return self.store.delete(ids, filter=filter)

    def get(
        self,
        ids: Sequence[str] | None = None,
        filter: str | Filter | None = None,
        limit: int | None = None,
        *,
        include_embeddings: bool = False,
    ) -> list[Document]:
        return self.store.get(ids, filter, limit, include_embeddings=include_embeddings)

    def count(self, filter: str | Filter | None = None) -> int:
        return self.store.count(filter)

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        """The wrapped store's best `top_k` hits, leaving out near-duplicates of better-ranked ones."""
        request = SearchRequest(request) if isinstance(request, str) else request
        wanted = request.top_k
        if wanted == 0:
            return []
        fetch = wanted * _OVERFETCH
        while True:
            hits = self.store.similarity_search(request.replace(top_k=fetch))
            kept = self._filter.process(Query(request.query), hits)
            if len(kept) >= wanted or len(hits) < fetch or fetch >= _MAX_FETCH:
                return kept[:wanted]
            fetch = min(fetch * _OVERFETCH, _MAX_FETCH)
