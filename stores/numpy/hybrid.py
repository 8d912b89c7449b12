"""Lexical, hybrid and diversified requests on the numpy store, through `stores.ranking`.

A filter's store rows reach the BM25 index through the store's `RowMap`. The keys of the keyed lists
are index rows, so a hybrid fusion decodes only the ids it returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rag.documents import SearchRequest
from stores.lexical.index import LexicalIndex
from stores.numpy.rowmap import RowMap
from stores.numpy.search import exact_scores, top_rows
from stores.ranking import Keyed, rank_keys, rank_scored

__all__ = ["NumpyCandidates"]

IntArray = npt.NDArray[np.int64]


@dataclass
class NumpyCandidates:
    """`stores.ranking.KeyedCandidates` for one request over the store's live rows (`rows` match the
    request's filter, None for all), and the ranking of that request (`ranked`)."""

    matrix: npt.NDArray[np.float32]
    query: npt.NDArray[np.float32]
    text: str
    rows: IntArray | None
    row_map: RowMap
    index: LexicalIndex
    mask: npt.NDArray[np.bool_] | None = None  # `rows` as index rows, built at the first lexical search

    def vector(self, depth: int, threshold: float) -> list[tuple[str, float]]:
        keys, scores = self.vector_keys(depth, threshold)
        return list(zip(self.ids_of(keys), scores.tolist(), strict=True))

    def lexical(self, depth: int) -> list[tuple[str, float]]:
        keys, scores = self.lexical_keys(depth)
        return list(zip(self.ids_of(keys), scores.tolist(), strict=True))

    def vector_keys(self, depth: int, threshold: float) -> Keyed:
        if depth == 0 or not len(self.matrix):
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        rows, scores = top_rows(self.matrix, self.query, depth, self.row_map.ids_of, threshold, self.rows)
        return self.row_map.index_rows_of(rows), scores

    def lexical_keys(self, depth: int) -> Keyed:
        if self.rows is not None and self.mask is None:
            self.mask = np.zeros(self.index.row_count, dtype=np.bool_)
            self.mask[self.row_map.index_rows_of(self.rows)] = True
        return self.index.search_rows(self.text, depth, row_mask=self.mask)

    def ids_of(self, keys: IntArray) -> list[str]:
        return self.index.ids_at(keys.tolist())

    def cosines(self, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        return exact_scores(self.matrix, self.row_map.rows_of(ids), self.query)

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.matrix[self.row_map.rows_of(ids)]

    def ranked(self, request: SearchRequest) -> tuple[list[int], list[float], list[dict[str, float]]]:
        """The store rows `request` returns, their scores and named scores."""
        page = rank_keys(request, self)  # hybrid: index rows fused, only the page's ids decoded
        if page is not None:
            kept = self.row_map.store_rows(page.keys)
            cosines = exact_scores(self.matrix, kept, self.query).tolist()  # what `cosines` gives
            named = [{**scores, "cosine": cosine} for scores, cosine in zip(page.named, cosines, strict=True)]
            return kept.tolist(), list(page.scores), named
        hits = rank_scored(request, self)
        found = self.row_map.rows_of([hit.id for hit in hits]).tolist()
        return found, [hit.score for hit in hits], [hit.scores for hit in hits]
