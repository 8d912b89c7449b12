"""The numpy store's `stores.ranking.Candidates`: exact vector search, its BM25 index, vectors by id.

The store's rows and the lexical index's rows are numbered differently (the store fills holes left by
deletes, the index appends and compacts), so a filter's rows reach the index through `lexical_rows`,
the index row of each store row, which the store keeps until its next write.

Example:
    >>> import numpy as np
    >>> from stores.lexical import LexicalIndex
    >>> index = LexicalIndex()
    >>> index.add(["a", "b"], ["red apples", "green pears"])
    >>> ids = np.array(["a", "b"], dtype=object)
    >>> matrix, query = np.eye(2, dtype=np.float32), np.array([1, 0], np.float32)
    >>> rows = lambda: index.rows_of(ids)
    >>> source = NumpyCandidates(matrix, ids, {"a": 0, "b": 1}, query, "pears", None, index, rows)
    >>> source.vector(2, 0.0), source.lexical(2)
    ([('a', 1.0), ('b', 0.0)], [('b', 0.6931471805599453)])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from stores.lexical.index import LexicalIndex
from stores.numpy.search import exact_scores, rank_candidates, scan

__all__ = ["NumpyCandidates"]

IntArray = npt.NDArray[np.int64]


class NumpyCandidates:
    """Candidate lists for one request over the numpy store's live rows (see the module docstring).

    Args:
        matrix: The live rows' unit vectors (float32, one row per document).
        ids: The id of each row.
        row_of: The row of each id.
        query: The query's unit vector.
        text: The query text, for BM25.
        rows: The rows matching the request's filter, or None for all of them.
        lexical: The store's BM25 index over the same documents.
        lexical_rows: Returns the index row of each store row (valid until the next write).
    """

    def __init__(
        self,
        matrix: npt.NDArray[np.float32],
        ids: npt.NDArray[np.object_],
        row_of: dict[str, int],
        query: npt.NDArray[np.float32],
        text: str,
        rows: IntArray | None,
        lexical: LexicalIndex,
        lexical_rows: Callable[[], IntArray],
    ) -> None:
        self._matrix = matrix
        self._ids = ids
        self._row_of = row_of
        self._query = query
        self._text = text
        self._rows = rows
        self._lexical = lexical
        self._lexical_rows = lexical_rows
        self._mask: npt.NDArray[np.bool_] | None = None

    def vector(self, depth: int, threshold: float) -> list[tuple[str, float]]:
        """The best `depth` (id, cosine) among the filter's rows whose cosine passes `threshold`."""
        if depth == 0 or not len(self._matrix):
            return []
        [found] = scan(self._matrix, self._query[None, :], depth, threshold, self._rows)

        def accepts(score: float) -> bool:
            return threshold == 0.0 or score >= threshold

        ranked = rank_candidates(self._matrix, found, self._query, depth, self._ids, accepts)
        return [(self._ids[row], score) for row, score in ranked]

    def lexical(self, depth: int) -> list[tuple[str, float]]:
        """The best `depth` (id, BM25) among the filter's rows."""
        return self._lexical.search(self._text, depth, row_mask=self._row_mask())

    def _row_mask(self) -> npt.NDArray[np.bool_] | None:
        if self._rows is None:
            return None
        if self._mask is None:
            self._mask = np.zeros(self._lexical.row_count, dtype=np.bool_)
            self._mask[self._lexical_rows()[self._rows]] = True
        return self._mask

    def _store_rows(self, ids: Sequence[str]) -> IntArray:
        return np.fromiter((self._row_of[doc_id] for doc_id in ids), dtype=np.int64, count=len(ids))

    def cosines(self, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """Exact cosine of each id with the query."""
        return exact_scores(self._matrix, self._store_rows(ids), self._query)

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """The stored vector of each id."""
        return self._matrix[self._store_rows(ids)]
