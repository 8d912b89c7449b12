"""The numpy store's `stores.ranking.KeyedCandidates`: exact vector search, its BM25 index, vectors by id.

The store's rows and the lexical index's rows are numbered differently (the store fills holes left by
deletes, the index appends and compacts), so a filter's rows reach the index through the store's
`RowMap`, which also turns ids back into store rows. The keys of the keyed lists are index rows, so
the hybrid fusion decodes only the ids it returns.

Example:
    >>> import numpy as np
    >>> from stores.lexical import LexicalIndex
    >>> index = LexicalIndex()
    >>> index.add(["a", "b"], ["red apples", "green pears"])
    >>> row_map = RowMap(index)
    >>> row_map.relink(["a", "b"])
    >>> matrix, query = np.eye(2, dtype=np.float32), np.array([1, 0], np.float32)
    >>> source = NumpyCandidates(matrix, query, "pears", None, row_map, index)
    >>> source.vector(2, 0.0), source.lexical(2)
    ([('a', 1.0), ('b', 0.0)], [('b', 0.6931471805599453)])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from stores.lexical.index import LexicalIndex
from stores.numpy.rowmap import RowMap
from stores.numpy.search import exact_scores, order_rows, rank_rows, scan, scan_scored
from stores.ranking import Keyed

__all__ = ["NumpyCandidates"]

IntArray = npt.NDArray[np.int64]


class NumpyCandidates:
    """Candidate lists for one request over the numpy store's live rows (see the module docstring).

    Args:
        matrix: The live rows' unit vectors (float32, one row per document).
        query: The query's unit vector.
        text: The query text, for BM25.
        rows: The rows matching the request's filter, or None for all of them.
        row_map: The store's rows <-> index rows, ids -> rows and rows -> ids.
        lexical: The store's BM25 index over the same documents.
    """

    def __init__(
        self,
        matrix: npt.NDArray[np.float32],
        query: npt.NDArray[np.float32],
        text: str,
        rows: IntArray | None,
        row_map: RowMap,
        lexical: LexicalIndex,
    ) -> None:
        self._matrix = matrix
        self._query = query
        self._text = text
        self._rows = rows
        self._row_map = row_map
        self._lexical = lexical
        self._mask: npt.NDArray[np.bool_] | None = None

    def vector(self, depth: int, threshold: float) -> list[tuple[str, float]]:
        """The best `depth` (id, cosine) among the filter's rows whose cosine passes `threshold`."""
        keys, scores = self.vector_keys(depth, threshold)
        return list(zip(self.ids_of(keys), scores.tolist(), strict=True))

    def lexical(self, depth: int) -> list[tuple[str, float]]:
        """The best `depth` (id, BM25) among the filter's rows."""
        keys, scores = self.lexical_keys(depth)
        return list(zip(self.ids_of(keys), scores.tolist(), strict=True))

    def vector_keys(self, depth: int, threshold: float) -> Keyed:
        """`vector` as index rows (the keys of this source) and cosines."""
        if depth == 0 or not len(self._matrix):
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        [found] = scan(self._matrix, self._query[None, :], depth, threshold, self._rows)
        rows, scores = rank_rows(self._matrix, found, self._query, depth, self._row_map, threshold)
        return self._row_map.index_rows_of(rows), scores

    def vector_order(self, depth: int) -> IntArray:
        """The keys of `vector_keys(depth, 0.0)`, in its order, without the cosines (`order_rows`)."""
        if depth == 0 or not len(self._matrix):
            return np.zeros(0, np.int64)
        found, approximate = scan_scored(self._matrix, self._query, depth, 0.0, self._rows)
        rows = order_rows(self._matrix, found, approximate, self._query, depth, self._row_map)
        return self._row_map.index_rows_of(rows)

    def lexical_keys(self, depth: int) -> Keyed:
        """`lexical` as index rows and BM25 scores."""
        return self._lexical.search_rows(self._text, depth, row_mask=self._row_mask())

    def ids_of(self, keys: IntArray) -> list[str]:
        """The id of each index row."""
        return self._lexical.ids_at(keys.tolist())

    def _row_mask(self) -> npt.NDArray[np.bool_] | None:
        if self._rows is None:
            return None
        if self._mask is None:
            self._mask = np.zeros(self._lexical.row_count, dtype=np.bool_)
            self._mask[self._row_map.index_rows_of(self._rows)] = True
        return self._mask

    def _store_rows(self, ids: Sequence[str]) -> IntArray:
        return self._row_map.rows_of(ids)

    def cosines(self, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """Exact cosine of each id with the query."""
        return exact_scores(self._matrix, self._store_rows(ids), self._query)

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """The stored vector of each id."""
        return self._matrix[self._store_rows(ids)]
