"""The `VectorStore` protocol: the behaviour every store implements, specified in its docstring.

A store need not restate `get`: `rag.store_get.GetMixin` defines it (signature, checks, messages) over
one `_get_documents(request)` method.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from rag.documents import Document, SearchRequest
from rag.embeddings.base import EmbeddingModel
from rag.filters import Filter

__all__ = ["AsyncStoreMixin", "Capabilities", "VectorStore", "aadd", "asimilarity_search"]


@dataclass(frozen=True)
class Capabilities:
    """What a store's backend is, declared on every store as its `capabilities` attribute.

    `exact`: vector top-k is exact (every eligible document scored); False means an approximate index
    (Chroma's HNSW), which refuses `SearchRequest(exact=True)`. `lexical`: BM25 runs inside the
    backend, always in step with the vectors; False means an index kept beside it by this toolkit.

    Example:
        >>> from stores import ChromaVectorStore, NumpyVectorStore
        >>> NumpyVectorStore.capabilities.exact, ChromaVectorStore.capabilities.exact
        (True, False)
    """

    exact: bool
    lexical: bool


@runtime_checkable
class VectorStore(Protocol):
    """A collection of documents with vectors, searched by cosine similarity and filtered by metadata.

    The contract (held by the conformance suite in `stores.testing`):

    - `add(documents)` upserts by id. Documents that arrive with an `embedding` keep it (after its
      dimension and finiteness are checked); the others are embedded with `embedding` in batches.
      Metadata keys whose value is None are dropped. A bad batch raises before anything is written.
    - `delete(ids)` removes those ids (unknown ids are ignored); `delete(filter=...)` removes every match.
      Both return the number of documents removed. Giving both or neither is an `InvalidRequestError`.
    - `get(ids=None, filter=None, limit=None)` returns documents without scores. With `ids`, in the
      order given (unknown ids skipped, repeats once); otherwise in ascending id order (code points).
      `filter` and `limit` apply in both cases. `include_embeddings=True` fills `Document.embedding`.
    - `count(filter=None)` counts documents (matching the filter).
    - `similarity_search(request)` returns at most `top_k` documents that match the filter and whose
      cosine similarity to the query passes the threshold (`SearchRequest.accepts`; 0 drops nothing),
      in every mode; best first, equal scores in ascending id order. By `request.mode`:
      "vector" ranks by cosine and `score` is the cosine similarity in [-1, 1]; "lexical" ranks by
      BM25 over the store's lexical index (statistics over the whole collection; only documents with
      a query term are hits) and `score` is the BM25 score (> 0); "hybrid" fuses the vector ranking
      and the lexical ranking, each cut at `max(top_k, 100)` candidates, by reciprocal rank fusion
      (`rrf_k`) or with `fusion="weighted"` a `vector_weight` blend of scores scaled by each list's best, and
      `score` is the fused score. With `diversity` > 0, maximal marginal relevance over the mode's
      best `max(top_k, 100)` candidates (cosine between their stored vectors) chooses and orders the
      results; each keeps its mode's score. The pool being fixed up to 100, a shorter page of hybrid
      or MMR results is exactly a prefix of a longer one. A `str` request means `SearchRequest(str)`.
    - `capabilities` (a `Capabilities`) says what the store is. An exact store (`exact` True) gives
      the same documents, ids, order and scores as every other exact store; an approximate one
      (Chroma's HNSW) may miss a true neighbour and refuses `SearchRequest(exact=True)`.
    - The lexical index is written by the same `add` and `delete` calls as the vectors; a store
      opened without one (older data) builds it from the stored texts.
    - Filters follow docs/filters.md exactly, given as text or trees. A filter a store cannot evaluate
      raises `FilterError` before any query runs; nothing is silently dropped.
    - A store records the embedding model (name and dimensions) its vectors came from, and refuses
      a different model with `EmbeddingModelMismatchError`.
    - A store is safe to share between threads: any mix of these calls gives the results of some
      serial order of them; a search sees one state (vectors, metadata and lexical index between the
      same two writes); searches do not wait for each other (a readers-writer lock). What it promises
      across processes, its docstring says.
    """

    @property
    def embedding(self) -> EmbeddingModel:
        """The model that embeds documents and queries for this store."""
        ...

    def add(self, documents: Iterable[Document]) -> None:
        """Upsert documents by id."""
        ...

    def delete(self, ids: Iterable[str] | None = None, *, filter: str | Filter | None = None) -> int:
        """Delete by ids or by filter; returns how many documents were removed."""
        ...

    def get(
        self,
        ids: Sequence[str] | None = None,
        filter: str | Filter | None = None,
        limit: int | None = None,
        *,
        include_embeddings: bool = False,
    ) -> list[Document]:
        """Documents by ids and/or filter, without scores."""
        ...

    def count(self, filter: str | Filter | None = None) -> int:
        """How many documents (match the filter)."""
        ...

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        """The best `top_k` documents for the request's query, with `score` set."""
        ...


class AsyncStoreMixin:
    """Async methods for a sync store, each running the sync one in a worker thread (the one default).

    Stores are safe to share between threads (see `VectorStore`), so awaiting these from many tasks at
    once is as safe as calling the sync methods from many threads. A backend with a native async driver
    overrides them. Use `asimilarity_search(store, ...)` and `aadd(store, ...)` for stores of any kind.

    Example:
        >>> import asyncio
        >>> from rag import Document, HashingEmbedding
        >>> from stores import NumpyVectorStore
        >>> store = NumpyVectorStore(HashingEmbedding())
        >>> asyncio.run(store.aadd([Document("d1", "Tides flood the causeway.")]))
        >>> [d.id for d in asyncio.run(store.asimilarity_search("causeway"))]
        ['d1']
    """

    async def asimilarity_search(self: VectorStore, request: SearchRequest | str) -> list[Document]:
        """`similarity_search`, awaited."""
        return await asyncio.to_thread(self.similarity_search, request)

    async def aadd(self: VectorStore, documents: Iterable[Document]) -> None:
        """`add`, awaited (the documents are gathered first, so a generator is read on the caller's side)."""
        batch = list(documents)
        await asyncio.to_thread(self.add, batch)

    async def adelete(
        self: VectorStore, ids: Iterable[str] | None = None, *, filter: str | Filter | None = None
    ) -> int:
        """`delete`, awaited."""
        chosen = list(ids) if ids is not None else None
        return await asyncio.to_thread(lambda: self.delete(chosen, filter=filter))

    async def acount(self: VectorStore, filter: str | Filter | None = None) -> int:
        """`count`, awaited."""
        return await asyncio.to_thread(self.count, filter)


async def asimilarity_search(store: VectorStore, request: SearchRequest | str) -> list[Document]:
    """`store.asimilarity_search(request)` when the store has it, else its sync search in a worker thread."""
    native = getattr(store, "asimilarity_search", None)
    if callable(native):
        found: list[Document] = await native(request)
        return found
    return await asyncio.to_thread(store.similarity_search, request)


async def aadd(store: VectorStore, documents: Iterable[Document]) -> None:
    """`store.aadd(documents)` when the store has it, else its sync `add` in a worker thread."""
    native = getattr(store, "aadd", None)
    if callable(native):
        await native(documents)
        return
    batch = list(documents)
    await asyncio.to_thread(store.add, batch)
