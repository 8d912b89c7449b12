"""The rows of a segment's frequent terms as bitmaps: one bit per row of the segment, not 2 bytes a posting.

A segment keeps each term's rows as offsets from its first row, two bytes each. A term held by more
than one row in sixteen (on Zipf-like text the few dozen commonest words, which carry about 40% of
all postings) costs less as a bitmap over the segment's rows: `span / 8` bytes, whatever its count.
`split_dense` chooses, term by term, whichever form is smaller; the offsets of the other terms stay
in one array (`sparse`), in posting order with the dense terms' postings left out. Frequencies are
untouched: they stay in posting order for every term (`stores.lexical.frequencies`).

A search reads a dense term's rows with one `np.unpackbits` and one `np.flatnonzero`, ascending like
the offsets they replace, so scores are the same to the last bit.

Example:
    >>> import numpy as np
    >>> starts = np.array([0, 3, 4])  # term 0 in rows 0, 2, 5; term 1 in row 1
    >>> dense, sparse = split_dense(starts, np.array([0, 2, 5, 1], np.uint16), span=6, itemsize=8)
    >>> dense.at.tolist(), sparse.tolist(), dense.rows(0, 6).tolist()
    ([0], [1], [0, 2, 5])
    >>> dense.sparse_range(1, 3, 4)
    (0, 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["NO_DENSE", "DenseRows", "split_dense"]

# A bitmap also costs its term an entry in `at` and in `before`: 12 bytes.
_ENTRY_BYTES = 12


@dataclass(frozen=True)
class DenseRows:
    """The bitmaps of a segment's dense terms (see the module docstring)."""

    at: npt.NDArray[np.int32]  # positions of the dense terms in the segment's `terms`, ascending
    before: npt.NDArray[np.int64]  # postings of the dense terms before each one (and of all, last)
    bits: npt.NDArray[np.uint8]  # one row of bits per dense term, bit r (little-endian) for row r

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        return self.at.nbytes + self.before.nbytes + self.bits.nbytes

    def find(self, term_at: int) -> int:
        """Which bitmap holds the term at position `term_at` of the segment's terms, or -1."""
        if not self.at.size:
            return -1
        k = int(self.at.searchsorted(term_at))
        return k if k < self.at.size and int(self.at[k]) == term_at else -1

    def rows(self, k: int, span: int) -> npt.NDArray[np.int64]:
        """The rows (offsets from the segment's first row, ascending) of dense term number `k`."""
        return np.flatnonzero(np.unpackbits(self.bits[k], count=span, bitorder="little"))

    def sparse_range(self, term_at: int, begin: int, end: int) -> tuple[int, int]:
        """Where the postings `begin:end` of the (sparse) term at `term_at` sit in the sparse offsets."""
        if not self.at.size:
            return begin, end
        shift = int(self.before[int(self.at.searchsorted(term_at))])
        return begin - shift, end - shift

    def expand(
        self, starts: npt.NDArray[np.integer[Any]], sparse: npt.NDArray[np.integer[Any]], span: int
    ) -> npt.NDArray[np.integer[Any]]:
        """Every posting's row offset, in posting order: `sparse` with the dense terms' rows put back."""
        if not self.at.size:
            return sparse
        size = sparse.size + int(self.before[-1])
        out = np.empty(size, sparse.dtype)
        keep = np.ones(size, np.bool_)
        for k, term_at in enumerate(self.at.tolist()):
            begin, end = int(starts[term_at]), int(starts[term_at + 1])
            out[begin:end] = self.rows(k, span)
            keep[begin:end] = False
        out[keep] = sparse
        return out


NO_DENSE = DenseRows(np.zeros(0, np.int32), np.zeros(1, np.int64), np.zeros((0, 0), np.uint8))
"""The `DenseRows` of a segment without dense terms."""


def split_dense(
    starts: npt.NDArray[np.integer[Any]], local: npt.NDArray[np.integer[Any]], span: int, itemsize: int
) -> tuple[DenseRows, npt.NDArray[np.integer[Any]]]:
    """Bitmaps for the terms whose offsets (`itemsize` bytes each) would take more room, and the
    offsets of the other terms.

    Args:
        starts: Each term's first posting, and the number of postings last.
        local: Every posting's row offset (< `span`), ascending within each term.
        span: The segment's rows.
        itemsize: Bytes an offset will take in the segment.
    """
    counts = np.diff(starts).astype(np.int64)
    row_bytes = (span + 7) // 8
    dense = np.flatnonzero(counts * itemsize > row_bytes + _ENTRY_BYTES)
    if not dense.size:
        return NO_DENSE, local
    lengths = counts[dense]
    firsts = starts[dense].astype(np.int64)
    # Every posting of a dense term, term after term: its position and its flat bit number.
    owners = np.repeat(np.arange(dense.size), lengths)
    positions = np.arange(int(lengths.sum())) + np.repeat(firsts - np.cumsum(lengths) + lengths, lengths)
    flat = owners * (row_bytes * 8) + local[positions].astype(np.int64)
    # Flat bit numbers ascend (term after term, rows ascending): OR each byte's bits in one pass.
    byte = flat >> 3
    groups = np.flatnonzero(np.concatenate(([True], byte[1:] != byte[:-1])))
    bits = np.zeros(dense.size * row_bytes, np.uint8)
    bits[byte[groups]] = np.bitwise_or.reduceat(np.left_shift(1, flat & 7).astype(np.uint8), groups)
    keep = np.ones(local.size, np.bool_)
    keep[positions] = False
    before = np.concatenate(([0], np.cumsum(lengths)))
    return DenseRows(dense.astype(np.int32), before, bits.reshape(dense.size, row_bytes)), local[keep]
