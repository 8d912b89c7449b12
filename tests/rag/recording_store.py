"""`RecordingStore`: a VectorStore that delegates to a real store and keeps every search request it gets."""

from __future__ import annotations

from collections.abc import Iterable

from rag import Document, SearchRequest
from rag.embeddings import EmbeddingModel
from rag.filters import Filter
from rag.store_get import GetMixin, GetRequest
from rag.vectorstore import VectorStore


class RecordingStore(GetMixin):
    """Wraps `inner` (any VectorStore); `requests` lists the `SearchRequest`s searched, in order.

    Example:
        >>> store = RecordingStore(NumpyVectorStore(HashingEmbedding()))  # doctest: +SKIP
        >>> hits = store.similarity_search(SearchRequest("q", mode="hybrid"))  # doctest: +SKIP
        >>> store.requests[0].mode  # doctest: +SKIP
        'hybrid'
    """

    __test__ = False

    def __init__(self, inner: VectorStore) -> None:
        self.inner = inner
        self.requests: list[SearchRequest] = []

    @property
    def embedding(self) -> EmbeddingModel:
        return self.inner.embedding

    def add(self, documents: Iterable[Document]) -> None:
        self.inner.add(documents)

    def delete(self, ids: Iterable[str] | None = None, *, filter: str | Filter | None = None) -> int:
        return self.inner.delete(ids, filter=filter)

    def _get_documents(self, request: GetRequest) -> list[Document]:
        return self.inner.get(
            request.ids, request.filter, request.limit, include_embeddings=request.include_embeddings
        )

    def count(self, filter: str | Filter | None = None) -> int:
        return self.inner.count(filter)

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        search = request if isinstance(request, SearchRequest) else SearchRequest(request)
        self.requests.append(search)
        return self.inner.similarity_search(search)
