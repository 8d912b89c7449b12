"""Which store row holds an id: the numpy store reuses its BM25 index's id map instead of keeping its own.

The store and its `LexicalIndex` index the same documents, and the index already maps every id to its
row. A second `dict` in the store cost ~70 bytes an id, so the store keeps two int64 arrays instead:
the index row of each store row (also what a filtered hybrid search needs to mask the index) and the
store row of each index row. The two numberings differ (the store fills the holes a delete leaves with
its last rows; the index appends and, now and then, renumbers everything), so the arrays are patched
after each write and rebuilt when the index reports a renumbering (`LexicalIndex.renumberings`).

Example:
    >>> import numpy as np
    >>> from stores.lexical import LexicalIndex
    >>> index = LexicalIndex()
    >>> index.add(["a", "b"], ["red", "blue"])
    >>> rows = RowMap(index)
    >>> rows.link(np.array([1, 0]), ["a", "b"])
    >>> rows.rows_of(["b", "x", "a"]).tolist()
    [0, -1, 1]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from stores.lexical.index import LexicalIndex

__all__ = ["RowMap"]

IntArray = npt.NDArray[np.int64]


class RowMap:
    """Store rows <-> rows of the store's `LexicalIndex` (see the module docstring).

    Args:
        lexical: The index the store writes every document into, by the same ids.
    """

    def __init__(self, lexical: LexicalIndex) -> None:
        self._lexical = lexical
        self._index_row = np.zeros(0, np.int64)  # store row -> index row
        self._store_row = np.zeros(0, np.int64)  # index row -> store row (stale for dead index rows)
        self._renumberings = lexical.renumberings
        self._size = 0

    def index_rows(self) -> IntArray:
        """The index row of each store row (a view, valid until the next write)."""
        return self._index_row[: self._size]

    def rows_of(self, ids: Sequence[str]) -> IntArray:
        """The store row of each id, -1 where the store does not hold it."""
        found = self._lexical.rows_of(ids)
        known = found >= 0
        out = np.full(len(found), -1, np.int64)
        out[known] = self._store_row[found[known]]
        return out

    def link(self, rows: IntArray, ids: Sequence[str]) -> None:
        """Record that `ids`, just added to the index, live at store `rows` (unless `stale()`: `relink`)."""
        index_rows = self._lexical.rows_of(ids)
        self._size = max(self._size, int(rows.max()) + 1 if len(rows) else 0)
        self._index_row = _grown(self._index_row, self._size)
        self._store_row = _grown(self._store_row, self._lexical.row_count)
        self._index_row[rows] = index_rows
        self._store_row[index_rows] = rows

    def move(self, holes: IntArray, tails: IntArray, new_size: int) -> None:
        """The store moved row `tails[i]` into `holes[i]` and shrank to `new_size` rows."""
        moved = self._index_row[tails]
        self._index_row[holes] = moved
        self._store_row[moved] = holes
        self._size = new_size

    def stale(self) -> bool:
        """Whether the index renumbered its rows since the last `link` or `relink`."""
        return self._lexical.renumberings != self._renumberings

    def relink(self, ids: Sequence[str]) -> None:
        """Rebuild both arrays from the store's ids in row order (after the index renumbered)."""
        self._renumberings = self._lexical.renumberings
        self._size = len(ids)
        self._index_row = self._lexical.rows_of(ids)
        self._store_row = np.full(self._lexical.row_count, -1, np.int64)
        self._store_row[self._index_row] = np.arange(len(ids), dtype=np.int64)


def _grown(array: IntArray, size: int) -> IntArray:
    """`array` with room for at least `size` entries (geometric growth, so appends are amortised O(1))."""
    if size <= len(array):
        return array
    grown = np.zeros(max(size, len(array) * 3 // 2, 64), np.int64)
    grown[: len(array)] = array
    return grown
