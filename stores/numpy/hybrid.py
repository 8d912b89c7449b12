"""Lexical, hybrid and diversified requests on the numpy store, through `stores.ranking`.

A filter's store rows reach the BM25 index through the store's `RowMap`. The keys of the keyed lists
are index rows, so a hybrid fusion decodes only the ids it returns.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rag.documents import SearchRequest
from stores.lexical.index import LexicalIndex
from stores.numpy.rowmap import RowMap
from stores.numpy.search import exact_scores, rank_rows, scan_scored
from stores.ranking import Keyed, rank_keys, rank_scored

__all__ = ["NumpyCandidates", "ranked"]

IntArray = npt.NDArray[np.int64]


class NumpyCandidates:
    """`stores.ranking.KeyedCandidates` for one request over the store's live rows (`rows` match the
    request's filter, None for all)."""

    def __init__(
        self,
        matrix: npt.NDArray[np.float32],
        query: npt.NDArray[np.float32],
        text: str,
        rows: IntArray | None,
        row_map: RowMap,
        lexical: LexicalIndex,
    ) -> None:
        self._matrix, self._query, self._text, self._rows = matrix, query, text, rows
        self._row_map, self._lexical = row_map, lexical
        self._mask: npt.NDArray[np.bool_] | None = None

    def vector(self, depth: int, threshold: float) -> list[tuple[str, float]]:
        keys, scores = self.vector_keys(depth, threshold)
        return list(zip(self.ids_of(keys), scores.tolist(), strict=True))

    def lexical(self, depth: int) -> list[tuple[str, float]]:
        keys, scores = self.lexical_keys(depth)
        return list(zip(self.ids_of(keys), scores.tolist(), strict=True))

    def vector_keys(self, depth: int, threshold: float) -> Keyed:
        if depth == 0 or not len(self._matrix):
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        found, _ = scan_scored(self._matrix, self._query, depth, threshold, self._rows)
        rows, scores = rank_rows(self._matrix, found, self._query, depth, self._row_map.ids_of, threshold)
        return self._row_map.index_rows_of(rows), scores

    def lexical_keys(self, depth: int) -> Keyed:
        if self._rows is not None and self._mask is None:
            self._mask = np.zeros(self._lexical.row_count, dtype=np.bool_)
            self._mask[self._row_map.index_rows_of(self._rows)] = True
        return self._lexical.search_rows(self._text, depth, row_mask=self._mask)

    def ids_of(self, keys: IntArray) -> list[str]:
        return self._lexical.ids_at(keys.tolist())

    def cosines(self, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        return exact_scores(self._matrix, self._row_map.rows_of(ids), self._query)

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._matrix[self._row_map.rows_of(ids)]


def ranked(
    request: SearchRequest,
    query: npt.NDArray[np.float32],
    matrix: npt.NDArray[np.float32],
    rows: IntArray | None,
    row_map: RowMap,
    lexical: LexicalIndex,
) -> tuple[list[int], list[float], list[dict[str, float]]]:
    """The store rows `request` returns over `rows` (None: all), their scores and named scores."""
    source = NumpyCandidates(matrix, query, request.query, rows, row_map, lexical)
    page = rank_keys(request, source)  # hybrid: index rows fused, only the page's ids decoded
    if page is not None:
        kept = row_map.store_rows(page.keys)
        cosines = exact_scores(matrix, kept, query).tolist()  # what `source.cosines` gives
        named = [{**scores, "cosine": cosine} for scores, cosine in zip(page.named, cosines, strict=True)]
        return kept.tolist(), list(page.scores), named
    hits = rank_scored(request, source)
    found = row_map.rows_of([hit.id for hit in hits]).tolist()
    return found, [hit.score for hit in hits], [hit.scores for hit in hits]
