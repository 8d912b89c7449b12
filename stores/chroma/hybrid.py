"""The Chroma store's `stores.ranking.Candidates`: its vector search, the BM25 index, rows by id.

A filter means for lexical candidates exactly what it means for vector search: the ids it matches
(`ChromaVectorStore._matching_ids`, Chroma's `where` plus the Python post-filter, or the exact copy of
`stores.chroma.mirror`) restrict the BM25 ranking. The vector list holds ids and cosines only (from
Chroma's distances, or the exact copy); rows are read from Chroma once, for the ids the ranking keeps,
with embeddings only when the threshold or MMR needs them. A hybrid search thus costs one vector
query, one BM25 ranking and one read of the final documents.

Example:
    >>> from rag import Document, HashingEmbedding, SearchRequest
    >>> from stores import ChromaVectorStore
    >>> with ChromaVectorStore(HashingEmbedding(), collection="hybrid-demo") as store:
    ...     store.add([Document("a", "exact error code E-214"), Document("b", "dense retrieval")])
    ...     [d.id for d in store.similarity_search(SearchRequest("E-214", top_k=1, mode="hybrid"))]
    ['a']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from rag.documents import SearchRequest
from rag.errors import StoreError
from stores.chroma.search import Row, scores
from stores.lexical.index import LexicalIndex

__all__ = ["ChromaCandidates"]

_TEXT_FIELDS = ["metadatas", "documents"]
_ROW_FIELDS = ["embeddings", "metadatas", "documents"]


class ChromaCandidates:
    """Candidate lists for one request over a Chroma collection (see the module docstring).

    Args:
        request: The request (its query text, filter, top-k and threshold).
        query: The query's unit vector.
        vector_hits: Vector search for a request: (id, cosine), best first.
        allowed: The ids matching the filter, or None when there is no filter.
        fetch: Rows by ids with the fields asked for (unknown ids skipped).
        lexical: The collection's BM25 index, current with its records.
    """

    def __init__(
        self,
        request: SearchRequest,
        query: npt.NDArray[np.float32],
        vector_hits: Callable[[SearchRequest], list[tuple[str, float]]],
        allowed: Callable[[], set[str] | None],
        fetch: Callable[[list[str], list[str]], list[Row]],
        lexical: Callable[[], LexicalIndex],
    ) -> None:
        self._request = request
        self._query = query
        self._vector_hits = vector_hits
        self._allowed = allowed
        self._fetch = fetch
        self._lexical = lexical
        self._rows: dict[str, Row] = {}

    def vector(self, depth: int, threshold: float) -> list[tuple[str, float]]:
        """The best `depth` (id, cosine) among the filter's matches whose cosine passes `threshold`."""
        if depth == 0:
            return []
        plain = self._request.replace(
            mode="vector", diversity=0.0, top_k=depth, similarity_threshold=threshold
        )
        return self._vector_hits(plain)

    def lexical(self, depth: int) -> list[tuple[str, float]]:
        """The best `depth` (id, BM25) among the filter's matches."""
        return self._lexical().search(self._request.query, depth, allowed=self._allowed())

    def rows(self, ids: Sequence[str], *, embeddings: bool = False) -> list[Row]:
        """The rows of `ids` (text and metadata, and embeddings if asked), read once and kept."""
        missing = [
            doc_id
            for doc_id in dict.fromkeys(ids)
            if doc_id not in self._rows or (embeddings and self._rows[doc_id].embedding is None)
        ]
        if missing:
            fields = _ROW_FIELDS if embeddings else _TEXT_FIELDS
            self._rows.update((row.id, row) for row in self._fetch(missing, fields))
        lost = [doc_id for doc_id in ids if doc_id not in self._rows]
        if lost:
            raise StoreError(f"the lexical index holds ids the collection does not, such as {lost[0]!r}")
        return [self._rows[doc_id] for doc_id in ids]

    def cosines(self, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """Exact cosine of each id with the query (as the numpy store computes it)."""
        return scores(self.rows(ids, embeddings=True), self._query)

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """The stored vector of each id."""
        rows = self.rows(ids, embeddings=True)
        return np.stack([row.embedding for row in rows if row.embedding is not None]).astype(np.float32)
