"""Searching a `NumpyVectorStore`: vector, lexical and hybrid requests, in batches that share scans.

This is the search half of `stores.numpy.store.NumpyVectorStore` (which holds the state, the writes,
`get` and saving). Queries are embedded before the read lock is taken, in one batch, and only those
whose request needs a vector and carries none (`SearchRequest.embeds_query`, `query_vector`);
requests that share a filter share its mask and one scan of the selected rows; lexical, hybrid and
diversified requests go through `stores.ranking` over `stores.numpy.hybrid.NumpyCandidates`. Every
hit carries its named scores (`Document.scores`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rag.documents import Document, SearchRequest
from rag.embeddings import EmbeddingModel
from rag.errors import InvalidRequestError
from rag.filters import Filter
from stores.lexical.index import LexicalIndex
from stores.locking import ReadWriteLock
from stores.numpy.hybrid import NumpyCandidates
from stores.numpy.rowmap import RowMap
from stores.numpy.saved_ids import SavedIds
from stores.numpy.search import exact_scores, rank_candidates, scan
from stores.query_vector import given_vector
from stores.ranking import named_scores, needs_ranking, rank_keys, rank_scored

__all__ = ["StoreSearch"]

IntArray = npt.NDArray[np.int64]


class StoreSearch:
    """`similarity_search` and its batch form, over the state a `NumpyVectorStore` keeps."""

    _size: int
    _batch_size: int
    _matrix: npt.NDArray[np.float32]  # live rows first, then spare capacity
    _rows: RowMap | SavedIds
    _lock: ReadWriteLock

    @property
    def embedding(self) -> EmbeddingModel:
        raise NotImplementedError  # the store's

    def _loaded_lexical(self) -> LexicalIndex:
        raise NotImplementedError  # the store's

    def _check_vectors(self) -> None:
        raise NotImplementedError  # the store's

    def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        raise NotImplementedError  # the store's

    def _mask(self, tree: Filter | None) -> npt.NDArray[np.bool_]:
        raise NotImplementedError  # the store's

    def _documents(
        self,
        rows: Sequence[int],
        scores: Sequence[float] | None = None,
        with_embedding: bool = False,
        ids: Sequence[str] | None = None,
    ) -> list[Document]:
        raise NotImplementedError  # the store's

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        """The best `top_k` documents for the request's query, best first, with `score` set."""
        return self.similarity_search_batch([request])[0]

    def similarity_search_batch(self, requests: Sequence[SearchRequest | str]) -> list[list[Document]]:
        """`similarity_search` for many requests, embedding the queries together and scoring in bulk."""
        checked = [SearchRequest(r) if isinstance(r, str) else r for r in requests]
        for request in checked:
            if not isinstance(request, SearchRequest):
                raise InvalidRequestError(f"expected a SearchRequest or a query string, got {request!r}")
        results: list[list[Document]] = [[] for _ in checked]
        active = [i for i, r in enumerate(checked) if r.top_k > 0 and self._size > 0]
        if not active:
            return results
        queries = self._query_vectors([checked[i] for i in active])
        # Requests that share a filter share its mask and one scan of the selected rows.
        groups: dict[Filter | None, list[int]] = {}
        for position, index in enumerate(active):
            groups.setdefault(checked[index].filter, []).append(position)
        with self._lock.read():  # queries were embedded outside: writers wait only for the scans
            self._search_groups(groups, checked, active, queries, results)
        return results

    def _query_vectors(self, requests: list[SearchRequest]) -> npt.NDArray[np.float32]:
        """One row per request: its `query_vector`, the model's embedding of its query (embedded
        together, in batches), or zeros when the request needs no vector (a lexical one)."""
        queries = np.zeros((len(requests), self._matrix.shape[1]), np.float32)
        embedded: list[int] = []
        for i, request in enumerate(requests):
            given = given_vector(request, self.embedding)
            if given is not None:
                queries[i] = given
            elif request.embeds_query:
                embedded.append(i)
        texts = [requests[i].query for i in embedded]
        for start in range(0, len(texts), self._batch_size):
            chosen = embedded[start : start + self._batch_size]
            queries[chosen] = self._embed(texts[start : start + self._batch_size])
        return queries

    def _search_groups(
        self,
        groups: dict[Filter | None, list[int]],
        checked: list[SearchRequest],
        active: list[int],
        queries: npt.NDArray[np.float32],
        results: list[list[Document]],
    ) -> None:
        if not self._size:
            return  # emptied by a delete since the queries were embedded
        self._check_vectors()
        for tree, positions in groups.items():
            found = self._search_group(tree, [checked[active[p]] for p in positions], queries[positions])
            for position, documents in zip(positions, found, strict=True):
                results[active[position]] = documents

    def _search_group(
        self, tree: Filter | None, requests: list[SearchRequest], queries: npt.NDArray[np.float32]
    ) -> list[list[Document]]:
        rows = None if tree is None else np.flatnonzero(self._mask(tree))
        if rows is not None and len(rows) == 0:
            return [[] for _ in requests]
        if rows is not None and len(rows) == self._size:
            rows = None  # a filter that keeps everything scans like no filter
        results: list[list[Document]] = [[] for _ in requests]
        plain = [i for i, request in enumerate(requests) if not needs_ranking(request)]
        if plain:
            top_k = max(requests[i].top_k for i in plain)
            threshold = min(requests[i].similarity_threshold for i in plain)
            found = scan(self._matrix[: self._size], queries[plain], top_k, threshold, rows)
            for i, candidates in zip(plain, found, strict=True):
                request = requests[i]
                threshold = request.similarity_threshold
                ranked = rank_candidates(
                    self._matrix, candidates, queries[i], request.top_k, self._rows, threshold
                )
                hits = self._documents([row for row, _ in ranked], [score for _, score in ranked])
                results[i] = [
                    doc.with_scores(named_scores(request, score))
                    for doc, (_, score) in zip(hits, ranked, strict=True)
                ]
        for i, request in enumerate(requests):
            if needs_ranking(request):
                results[i] = self._ranked(request, queries[i], rows)
        return results

    def _ranked(
        self, request: SearchRequest, query: npt.NDArray[np.float32], rows: IntArray | None
    ) -> list[Document]:
        """A lexical, hybrid or diversified search (`stores.ranking.rank`) over `rows` (None: all)."""
        lexical = self._loaded_lexical()  # first: it moves the store's ids onto the index's id map
        row_map = self._rows
        assert isinstance(row_map, RowMap)
        source = NumpyCandidates(self._matrix[: self._size], query, request.query, rows, row_map, lexical)
        page = rank_keys(request, source)  # hybrid: index rows fused, only the page's ids decoded
        if page is not None:
            kept = row_map.store_rows(page.keys)
            cosines = exact_scores(self._matrix, kept, query).tolist()  # what `source.cosines` gives
            found = self._documents(kept.tolist(), page.scores, ids=page.ids)
            return [
                doc.with_scores({**named, "cosine": cosine})
                for doc, named, cosine in zip(found, page.named, cosines, strict=True)
            ]
        hits = rank_scored(request, source)
        found = self._documents(row_map.rows_of([hit.id for hit in hits]).tolist(), [h.score for h in hits])
        return [doc.with_scores(hit.scores) for doc, hit in zip(found, hits, strict=True)]
