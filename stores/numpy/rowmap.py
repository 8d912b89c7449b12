"""Ids and rows of the numpy store, kept by its BM25 index: the store holds no id map of its own.

The index row of each store row and the store row of each index row, patched after each write (the
store fills holes with its last rows, the index appends and renumbers); none while they are equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from rag.errors import StoreError
from stores.lexical.index import LexicalIndex

__all__ = ["RowMap"]

IntArray = npt.NDArray[np.int64]


def _grown(array: npt.NDArray[np.int32], size: int) -> npt.NDArray[np.int32]:
    """`array` with room for at least `size` entries (geometric growth: appends are amortised O(1))."""
    if size <= len(array):
        return array
    grown = np.zeros(max(size, len(array) * 3 // 2, 64), np.int32)
    grown[: len(array)] = array
    return grown


class RowMap:
    """Store rows <-> rows of the store's `LexicalIndex`, and the ids of store rows; `ids` are the
    store's ids by row when the index already holds them (a load), None when the numberings agree."""

    def __init__(self, lexical: LexicalIndex, ids: Sequence[str] | None = None) -> None:
        self._lexical = lexical
        self._renumberings = lexical.renumberings
        self._size = lexical.row_count if ids is None else len(ids)
        self._index_row = np.zeros(0, np.int32)  # store row -> index row (int32: below 2**31 documents)
        self._store_row = np.zeros(0, np.int32)  # index row -> store row (stale for dead index rows)
        index_rows = None if ids is None else lexical.rows_of(ids)
        self._identity = index_rows is None or (
            lexical.row_count == self._size and bool(np.array_equal(index_rows, np.arange(self._size)))
        )
        if index_rows is not None and not self._identity:
            self._index_row = index_rows.astype(np.int32)
            self._store_row = np.full(lexical.row_count, -1, np.int32)
            self._store_row[self._index_row] = np.arange(self._size, dtype=np.int32)

    def index_rows_of(self, rows: IntArray) -> IntArray:
        return (rows if self._identity else self._index_row[rows]).astype(np.int64)

    def store_rows(self, index_rows: IntArray) -> IntArray:
        return (index_rows if self._identity else self._store_row[index_rows]).astype(np.int64)

    def rows_of(self, ids: Sequence[str]) -> IntArray:
        """The store row of each id, -1 where the store does not hold it."""
        found = self._lexical.rows_of(ids)
        if self._identity:
            return found
        out = np.full(len(found), -1, np.int64)
        out[found >= 0] = self._store_row[found[found >= 0]]
        return out

    def ids_of(self, rows: Iterable[int]) -> list[str]:
        return self._lexical.ids_at(self.index_rows_of(np.fromiter(rows, np.int64)).tolist())

    def all_ids(self) -> list[str]:
        return self.ids_of(range(self._size))

    def link(self, rows: IntArray, ids: Sequence[str]) -> None:
        """Record that `ids`, just added to the index, live at store `rows` (after `sync`)."""
        if not len(rows):
            return
        size = max(self._size, int(rows.max()) + 1)
        appended = size == self._size + len(rows) == self._lexical.row_count
        if self._identity and appended and np.array_equal(rows, np.arange(self._size, size)):
            self._size = size  # the index appended the same ids in the same order: still the identity
            return
        self._materialise()
        index_rows = self._lexical.rows_of(ids)
        self._size = size
        self._index_row = _grown(self._index_row, self._size)
        self._store_row = _grown(self._store_row, self._lexical.row_count)
        self._index_row[rows] = index_rows
        self._store_row[index_rows] = rows

    def _materialise(self) -> None:
        """Hold both arrays from now on (the numberings are about to differ)."""
        if self._identity:
            self._index_row = np.arange(self._size, dtype=np.int32)
            self._store_row = np.arange(self._size, dtype=np.int32)
            self._identity = False

    def move(self, holes: IntArray, tails: IntArray, new_size: int) -> None:
        """The store moved row `tails[i]` into `holes[i]` and shrank to `new_size` rows."""
        if len(holes):
            self._materialise()
            moved = self._index_row[tails]
            self._index_row[holes] = moved
            self._store_row[moved] = holes
        self._size = new_size

    def sync(self) -> None:
        """Follow a renumbering of the index's rows during the last write; store rows whose documents
        the write removed map to -1 until the store moves or overwrites them."""
        if self._lexical.renumberings == self._renumberings:
            return
        new_row = self._lexical.last_renumbering
        if self._lexical.renumberings != self._renumberings + 1 or new_row is None:
            raise StoreError("the lexical index was renumbered twice between writes: rebuild the store")
        self._renumberings += 1
        self._materialise()
        index_rows = self._index_row[: self._size]
        index_rows[:] = new_row[index_rows]
        self._store_row = np.full(max(self._lexical.row_count, 1), -1, np.int32)
        live = index_rows >= 0
        self._store_row[index_rows[live]] = np.flatnonzero(live)
