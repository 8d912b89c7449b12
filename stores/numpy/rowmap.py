"""Ids and rows of the numpy store, kept by its BM25 index: the store holds no id map (or id) of its own.

The store and its `LexicalIndex` index the same documents, and the index already keeps every id
(packed) and maps it to its row. So the store keeps no id of its own, only two int32 arrays: the index
row of each store row (also what a filtered hybrid search needs to mask the index) and the store row of
each index row. The two numberings differ (the store fills the holes a delete leaves with its last
rows; the index appends and, now and then, renumbers everything), so the arrays are patched after each
write, and remapped through `LexicalIndex.last_renumbering` when the index renumbered. Until the
numberings first differ (a store filled by adds of new ids only, the common case of an ingest, and
any store loaded from a save of one), store row i is index row i: the map then holds no array at
all, saving 8 bytes a document, and materialises both arrays at the first write that breaks it.

Example:
    >>> import numpy as np
    >>> from stores.lexical import LexicalIndex
    >>> index = LexicalIndex()
    >>> index.add(["a", "b"], ["red", "blue"])
    >>> rows = RowMap(index)
    >>> rows.link(np.array([1, 0]), ["a", "b"])
    >>> rows.rows_of(["b", "x", "a"]).tolist(), rows[0], rows.all_ids()
    ([0, -1, 1], 'b', ['b', 'a'])
    >>> rows.identity
    False
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from rag.errors import StoreError
from stores.lexical.index import LexicalIndex

__all__ = ["RowMap"]

IntArray = npt.NDArray[np.int64]


class RowMap:
    """Store rows <-> rows of the store's `LexicalIndex`, and ids by store row (see the module docstring).

    Indexing a `RowMap` with a store row gives that row's id.

    Args:
        lexical: The index the store writes every document into, by the same ids.
    """

    def __init__(self, lexical: LexicalIndex) -> None:
        self._lexical = lexical
        # int32: 4 bytes a document each, and no store holds 2**31 documents in one process.
        self._index_row = np.zeros(0, np.int32)  # store row -> index row
        self._store_row = np.zeros(0, np.int32)  # index row -> store row (stale for dead index rows)
        self._identity = True  # store row i is index row i: the two arrays above are not kept
        self._renumberings = lexical.renumberings
        self._size = 0

    @property
    def identity(self) -> bool:
        """Whether store row i is index row i for every row (no arrays are held then)."""
        return self._identity

    def index_rows_of(self, rows: IntArray) -> IntArray:
        """The index row of each of the store `rows`."""
        if self._identity:
            return rows.astype(np.int64)
        return self._index_row[rows].astype(np.int64)

    def rows_of(self, ids: Sequence[str]) -> IntArray:
        """The store row of each id, -1 where the store does not hold it."""
        found = self._lexical.rows_of(ids)
        if self._identity:
            return found  # the index's own rows, -1 for unknown ids
        known = found >= 0
        out = np.full(len(found), -1, np.int64)
        out[known] = self._store_row[found[known]]
        return out

    def store_rows(self, index_rows: IntArray) -> IntArray:
        """The store row of each live index row."""
        if self._identity:
            return index_rows.astype(np.int64)
        return self._store_row[index_rows].astype(np.int64)

    def __getitem__(self, row: int) -> str:
        return self._lexical.id_at(row if self._identity else int(self._index_row[row]))

    def ids_of(self, rows: Iterable[int]) -> list[str]:
        """The id of each store row."""
        return self._lexical.ids_at(self.index_rows_of(np.fromiter(rows, np.int64)).tolist())

    def all_ids(self) -> list[str]:
        """The id of every store row, in row order."""
        if self._identity:
            return self._lexical.ids_at(range(self._size))
        return self._lexical.ids_at(self._index_row[: self._size].tolist())

    def link(self, rows: IntArray, ids: Sequence[str]) -> None:
        """Record that `ids`, just added to the index, live at store `rows` (call `sync` first)."""
        if not len(rows):
            return
        size = max(self._size, int(rows.max()) + 1)
        if self._identity and self._appended(rows, size):
            self._size = size  # the index appended the same ids in the same order: still the identity
            return
        self._materialise()
        index_rows = self._lexical.rows_of(ids)
        self._size = size
        self._index_row = _grown(self._index_row, self._size)
        self._store_row = _grown(self._store_row, self._lexical.row_count)
        self._index_row[rows] = index_rows
        self._store_row[index_rows] = rows

    def _appended(self, rows: IntArray, size: int) -> bool:
        """Whether `rows` are the next store rows in order and the index's newest rows are the same."""
        count = len(rows)
        return (
            size == self._size + count
            and self._lexical.row_count == size
            and bool(np.array_equal(rows, np.arange(self._size, size)))
        )

    def _materialise(self) -> None:
        """Hold both arrays from now on (the numberings are about to differ)."""
        if self._identity:
            self._index_row = np.arange(self._size, dtype=np.int32)
            self._store_row = np.arange(self._size, dtype=np.int32)
            self._identity = False

    def move(self, holes: IntArray, tails: IntArray, new_size: int) -> None:
        """The store moved row `tails[i]` into `holes[i]` and shrank to `new_size` rows."""
        if self._identity and not len(holes):
            self._size = new_size  # only the last rows went: the rest keep their numbers
            return
        self._materialise()
        moved = self._index_row[tails]
        self._index_row[holes] = moved
        self._store_row[moved] = holes
        self._size = new_size

    def sync(self) -> None:
        """Follow a renumbering of the index's rows (`LexicalIndex.compact`) during the last write.

        Store rows whose documents the write removed from the index map to -1 until the store moves
        or overwrites them.
        """
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

    def relink(self, ids: Sequence[str]) -> None:
        """Rebuild both arrays from the store's ids in row order (after a load)."""
        self._renumberings = self._lexical.renumberings
        self._size = len(ids)
        index_rows = self._lexical.rows_of(ids)
        self._identity = self._lexical.row_count == len(ids) and bool(
            np.array_equal(index_rows, np.arange(len(ids)))
        )
        if self._identity:
            self._index_row, self._store_row = np.zeros(0, np.int32), np.zeros(0, np.int32)
            return
        self._index_row = index_rows.astype(np.int32)
        self._store_row = np.full(self._lexical.row_count, -1, np.int32)
        self._store_row[self._index_row] = np.arange(len(ids), dtype=np.int32)


def _grown(array: npt.NDArray[np.int32], size: int) -> npt.NDArray[np.int32]:
    """`array` with room for at least `size` entries (geometric growth, so appends are amortised O(1))."""
    if size <= len(array):
        return array
    grown = np.zeros(max(size, len(array) * 3 // 2, 64), np.int32)
    grown[: len(array)] = array
    return grown
