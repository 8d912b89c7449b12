"""`VectorStoreDocumentRetriever`: a `DocumentRetriever` over any `VectorStore`, in any search mode."""

from __future__ import annotations

from dataclasses import dataclass

from rag.documents import Document, Fusion, SearchMode, SearchRequest
from rag.filters import Filter, as_filter
from rag.retrieval.params import SearchParams
from rag.retrieval.scope import scoped_filter
from rag.retrieval.stages import Query
from rag.vectorstore import VectorStore

__all__ = ["VectorStoreDocumentRetriever"]


class VectorStoreDocumentRetriever:
    """Searches a store with the query's text: vector, lexical or hybrid, top-k, threshold, filters.

    `search_request` gives the defaults (its query is ignored) and the keywords override them, as for
    `QuestionAnswerAdvisor`. Per request, `VectorStoreDocumentRetriever.Params(top_k=..., mode=...,
    filter=...)` given with `.advisors(...)` wins, for every such retriever of the request (the fields
    are those of `QuestionAnswerAdvisor.Params`: one `SearchParams` definition). The filter searched
    with is built as a tree from three parts:

    - `scope` (text or tree), ANDed in always: a request can narrow it, never widen it;
    - the request's `Params(filter=...)` (Spring AI's name: `vector_store_filter`), which *replaces*
      the default `filter` for that request;
    - `NOT rag:kind == 'chat_memory'`: documents written by `VectorStoreChatMemoryAdvisor` are never
      retrieved, whatever the filters say (the same `scoped_filter` the QuestionAnswerAdvisor uses).

    Example:
        >>> from rag import Document, HashingEmbedding
        >>> from stores import NumpyVectorStore
        >>> store = NumpyVectorStore(HashingEmbedding())
        >>> store.add([Document("en", "The beacon is lit at dusk.", {"lang": "en"}),
        ...            Document("fr", "Le beacon est allumé au crépuscule.", {"lang": "fr"})])
        >>> retriever = VectorStoreDocumentRetriever(store, top_k=2, mode="hybrid", scope="lang == 'en'")
        >>> [d.id for d in retriever.retrieve(Query("When is the beacon lit?"))]
        ['en']
    """

    @dataclass(frozen=True, slots=True, kw_only=True)
    class Params(SearchParams):
        """Per-request search settings of every `VectorStoreDocumentRetriever` of the request.

        Example:
            >>> VectorStoreDocumentRetriever.Params(top_k=2, mode="lexical").top_k
            2
        """

        aliases = {"vector_store_filter": "filter"}  # noqa: RUF012  # a ClassVar of AdvisorParams

    def __init__(
        self,
        store: VectorStore,
        search_request: SearchRequest | None = None,
        *,
        top_k: int | None = None,
        similarity_threshold: float | None = None,
        filter: str | Filter | None = None,
        scope: str | Filter | None = None,
        mode: SearchMode | None = None,
        fusion: Fusion | None = None,
        vector_weight: float | None = None,
        diversity: float | None = None,
    ) -> None:
        self.store = store
        # The keywords are the same SearchParams a request may give, checked the same way.
        defaults = self.Params(
            top_k=top_k,
            similarity_threshold=similarity_threshold,
            filter=filter,
            mode=mode,
            fusion=fusion,
            vector_weight=vector_weight,
            diversity=diversity,
        )
        self.search_request = defaults.apply(search_request or SearchRequest("defaults"))
        self.scope = as_filter(scope)

    def search_request_for(self, query: Query) -> SearchRequest:
        """The search run for `query`: its text, the request's overrides over the defaults, scoped."""
        search = self.search_request.replace(query=query.text)
        wanted = query.params.get(VectorStoreDocumentRetriever.Params)
        if wanted is not None:
            search = wanted.apply(search)
        return search.replace(filter=scoped_filter(self.scope, search.filter))

    def retrieve(self, query: Query) -> list[Document]:
        return self.store.similarity_search(self.search_request_for(query))

    def __repr__(self) -> str:
        request = self.search_request
        return (
            f"VectorStoreDocumentRetriever(store={type(self.store).__name__}, top_k={request.top_k}, "
            f"mode={request.mode!r}, filter={str(request.filter) if request.filter else None!r}, "
            f"scope={str(self.scope) if self.scope else None!r})"
        )
