"""`DocumentsView`: a store as `rag query`, `ask`, `chat`, `eval` and `rag serve` read it.

Two things stand between a store and what those commands show:

- **Documents only.** `VectorStoreChatMemoryAdvisor` may write its turns into the documents' own
  store, marked `rag:kind = 'chat_memory'` (`rag.retrieval.scope.MEMORY_MARKER`). Every read of the
  view (search, `get`, `count`) ANDs `NOT` that marker into its filter, as `QuestionAnswerAdvisor`
  does, so a remembered turn never comes back as a document. Turns written before the marker existed
  carry none and are not recognised until marked (`rag.memory.mark_legacy_turns`, or
  `rag memory mark-legacy`).
- **Each page once** (`distinct=True`). A real docs tree often holds the same text twice: Node's
  `all.html` repeats every page, a site keeps an old copy of a guide, a README is copied into a docs
  folder. A search drops every hit whose text nearly repeats a better-ranked one of the same page or
  of a copy of its page (`NearDuplicateFilter` with this store: word pairs, ignoring case,
  punctuation and spacing, Jaccard >= 0.9 between the chunks, and the chunks around one hit 90 %
  contained in those around the other), and fills the page from further down the ranking.
  Different pages that share a paragraph (a Prerequisites section repeated in three guides) are
  not copies: each keeps its hit.
  Filling works because a longer result list starts with the shorter one (hybrid and
  MMR rank over a fixed candidate pool up to 100): searching 3 x top_k and filtering keeps the order of
  the original ranking.

- **Evidence.** A hit needs a query word or a positive cosine. Lexical and hybrid searches return no
  other (`rag.retrieval.ranking`); a vector search returns the store's nearest documents whatever their
  cosine, so the view drops those at 0 or below (with the hashing embedder, texts sharing no word).

- **Windows** (`window=n`, what the answering commands read). Each hit's text is widened by up to `n`
  neighbouring chunks of its page on each side (`rag.retrieval.windows`); ids, metadata and scores
  stay the hit's.

Writes (`add`, `delete`) go to the store unchanged.

Example:
    >>> from rag import Document, HashingEmbedding, SearchRequest
    >>> from stores import NumpyVectorStore
    >>> store = NumpyVectorStore(HashingEmbedding())
    >>> store.add([Document("a", "Add the CORS middleware.", {"source": "cors.md"}),
    ...            Document("b", "add the CORS middleware", {"source": "all.html"}),
    ...            Document("c", "CORS headers are sent on preflight.", {"source": "cors.md"}),
    ...            Document("m", "Where is the CORS middleware?", {"rag:kind": "chat_memory"})])
    >>> [d.id for d in DocumentsView(store).similarity_search(SearchRequest("cors middleware", top_k=2))]
    ['a', 'c']
    >>> DocumentsView(store).count(), store.count()
    (3, 4)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from rag.documents import Document, SearchRequest
from rag.embeddings.base import EmbeddingModel
from rag.filters import Filter, as_filter
from rag.filters.tree import operands
from rag.observability.steps import store_kind
from rag.retrieval.postprocessors import NearDuplicateFilter
from rag.retrieval.scope import MEMORY_MARKER, scoped_filter
from rag.retrieval.stages import Query
from rag.retrieval.windows import widen
from rag.vectorstore import VectorStore, asimilarity_search

__all__ = ["NEAR_DUPLICATE", "DocumentsView", "documents_filter"]

NEAR_DUPLICATE = 0.9
"""Word-pair Jaccard similarity from which a hit repeats a better-ranked one (NearDuplicateFilter's)."""
_OVERFETCH = 3  # candidates searched per hit wanted; tripled again while copies leave the page short
_MAX_FETCH = 1000  # a page of near-identical chunks stops growing here (the store's own cost bound)


def documents_filter(filter: str | Filter | None) -> Filter:
    """`filter AND NOT chat-memory`; a filter that already excludes memory (a `QuestionAnswerAdvisor`'s)
    is returned as it is, so the clause is never doubled.

    Example:
        >>> str(documents_filter("lang == 'en'"))
        "(lang == 'en') AND (NOT ('rag:kind' == 'chat_memory'))"
        >>> documents_filter(documents_filter(None)) == documents_filter(None)
        True
    """
    tree = as_filter(filter)
    if tree is not None and any(part == ~MEMORY_MARKER for part in operands(tree)):
        return tree
    return scoped_filter(None, tree)


def _with_evidence(request: SearchRequest, hits: list[Document]) -> list[Document]:
    """`hits` without vector hits whose cosine (their score) is 0 or below: no evidence at all."""
    if request.mode != "vector":
        return hits
    return [hit for hit in hits if hit.score is None or hit.score > 0.0]


class DocumentsView:
    """A store whose reads see documents only (never chat memory) and, if `distinct`, each page once.

    Args:
        store: the store to read.
        distinct: drop near-duplicates of better-ranked hits from the same page or a copy of it, and
            fill the page from further down.
        threshold: the near-duplicate similarity in [0, 1] (1.0: only the same words in the same order).
        window: widen each hit by this many neighbouring chunks of its page on each side
            (`rag.retrieval.windows.widen`): what the answering commands read.
    """

    def __init__(
        self,
        store: VectorStore,
        *,
        distinct: bool = True,
        threshold: float = NEAR_DUPLICATE,
        window: int = 0,
    ) -> None:
        self.store = store
        self.distinct = distinct
        self.window = window
        self._filter = NearDuplicateFilter(threshold, store=self)
        # Tracing spans name the wrapped store (its kind and collection), not this view.
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
        scoped = documents_filter(filter)
        return self.store.get(ids, scoped, limit, include_embeddings=include_embeddings)

    def count(self, filter: str | Filter | None = None) -> int:
        return self.store.count(documents_filter(filter))

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        """The store's best `top_k` documents, without memory turns and (if `distinct`) without copies."""
        request = self._scoped(request)
        if not self.distinct:
            return self._widened(_with_evidence(request, self.store.similarity_search(request)))
        fetch: int | None = request.top_k * _OVERFETCH
        kept: list[Document] = []
        while fetch is not None:
            hits = _with_evidence(request, self.store.similarity_search(request.replace(top_k=fetch)))
            kept, fetch = self._page(request, hits, fetch)
        return self._widened(kept)

    async def asimilarity_search(self, request: SearchRequest | str) -> list[Document]:
        """`similarity_search`, awaited (through the store's own async search when it has one)."""
        request = self._scoped(request)
        if not self.distinct:
            kept = _with_evidence(request, await asimilarity_search(self.store, request))
            return await asyncio.to_thread(self._widened, kept) if self.window else kept
        fetch: int | None = request.top_k * _OVERFETCH
        kept = []
        while fetch is not None:
            found = await asimilarity_search(self.store, request.replace(top_k=fetch))
            # off the event loop: telling copies apart reads from the store
            kept, fetch = await asyncio.to_thread(self._page, request, _with_evidence(request, found), fetch)
        return await asyncio.to_thread(self._widened, kept) if self.window else kept

    def _widened(self, hits: list[Document]) -> list[Document]:
        """`hits` widened by `window` neighbouring chunks (as they are when `window` is 0)."""
        return widen(self, hits, self.window) if self.window and hits else hits

    @staticmethod
    def _scoped(request: SearchRequest | str) -> SearchRequest:
        request = SearchRequest(request) if isinstance(request, str) else request
        return request.replace(filter=documents_filter(request.filter))

    def _page(
        self, request: SearchRequest, hits: list[Document], fetch: int
    ) -> tuple[list[Document], int | None]:
        """The distinct hits among `hits`, and how many to search next (None: the page is final)."""
        kept = self._filter.process(Query(request.query), hits)
        if len(kept) >= request.top_k or len(hits) < fetch or fetch >= _MAX_FETCH:
            return kept[: request.top_k], None
        return kept, min(fetch * _OVERFETCH, _MAX_FETCH)
