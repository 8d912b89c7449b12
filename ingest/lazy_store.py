"""`LazyStore`: a home's store, opened on first use.

A run with nothing to write never loads the store (nor imports chromadb or psycopg), and `open_home`
on a numpy home never needs chromadb at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rag.documents import Document, SearchRequest
from rag.embeddings import EmbeddingModel
from rag.filters import Filter
from rag.store_get import GetMixin, GetRequest
from rag.vectorstore import VectorStore

__all__ = ["LazyStore"]


class LazyStore(GetMixin):
    """A `VectorStore` that opens the real one on first use.

    Example:
        >>> from rag import HashingEmbedding
        >>> from stores import NumpyVectorStore
        >>> lazy = LazyStore(HashingEmbedding(), lambda: NumpyVectorStore(HashingEmbedding()))
        >>> lazy.opened, lazy.count(), lazy.opened
        (False, 0, True)
    """

    def __init__(self, embedding: EmbeddingModel, factory: Callable[[], VectorStore]) -> None:
        self._embedding = embedding
        self._factory = factory
        self._store: VectorStore | None = None

    @property
    def embedding(self) -> EmbeddingModel:
        """The embedding model the store was built with (known without opening it)."""
        return self._embedding

    @property
    def opened(self) -> bool:
        """Whether the real store was opened."""
        return self._store is not None

    @property
    def kind(self) -> str:
        """The family of the store behind this one (`chroma`, `numpy`, `pgvector`), for traces; opens it."""
        from rag.observability.steps import store_kind

        return store_kind(self.real)

    @property
    def real(self) -> VectorStore:
        """The store itself, opened now if it was not yet."""
        if self._store is None:
            self._store = self._factory()
        return self._store

    def add(self, documents: Iterable[Document]) -> None:
        """Upsert documents by id."""
        self.real.add(documents)

    def delete(self, ids: Iterable[str] | None = None, *, filter: str | Filter | None = None) -> int:
        """Delete by ids or by filter; returns how many documents were removed."""
        return self.real.delete(ids, filter=filter)

    def _get_documents(self, request: GetRequest) -> list[Document]:
        return self.real.get(
            request.ids, request.filter, request.limit, include_embeddings=request.include_embeddings
        )

    def count(self, filter: str | Filter | None = None) -> int:
        """How many documents (match the filter)."""
        return self.real.count(filter)

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        """The best `top_k` documents for the request's query, with `score` set."""
        return self.real.similarity_search(request)

    def call_if_opened(self, method: str) -> None:
        """Call `method` on the store if it was opened (`save`, `close`)."""
        if self._store is not None and callable(func := getattr(self._store, method, None)):
            func()
