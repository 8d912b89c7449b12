"""Immutable postings segments (term-major CSR) for the lexical index, and how they are built and merged.

A segment holds the postings of a contiguous range of rows: for each term present, the rows that contain
it (ascending) and the term's frequency in each. Rows are kept as offsets from the segment's first row:
two bytes each for a segment of at most `NARROW_SPAN` rows (the index keeps its segments that narrow,
`split` cuts wider ones), four otherwise, except that the commonest terms of a narrow segment keep a
bitmap of its rows instead, whenever that is smaller (`stores.lexical.dense`); frequencies take half a
byte
(`stores.lexical.frequencies`), and each term's offset into the postings four bytes (eight only past
2**32 postings). Segments are never modified: an add builds a new one,
a delete only clears the row's bit in the index's live-row mask, and merging two neighbours writes a third
without the postings of dead rows. Keeping segment sizes roughly geometric (see `LexicalIndex`) keeps
their number logarithmic in the index size.

Example:
    >>> import numpy as np
    >>> segment = build(np.array([3, 1, 3, 1], np.int32), np.array([0, 0, 0, 1]), 2, first_row=0)
    >>> segment.terms.tolist(), segment.rows.tolist(), segment.tfs.tolist()
    ([1, 3], [0, 1, 0], [1, 1, 2])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stores.lexical.dense import NO_DENSE, DenseRows, split_dense
from stores.lexical.frequencies import PackedFrequencies, narrow_tfs

__all__ = [
    "NARROW_SPAN",
    "Segment",
    "build",
    "merge",
    "narrow_starts",
    "narrow_terms",
    "narrow_tfs",
    "postings",
    "postings_of",
    "split",
]

NARROW_SPAN = 1 << 16
"""A segment over at most this many rows keeps its row offsets as uint16."""

_EMPTY_I32 = np.zeros(0, dtype=np.int32)
_EMPTY_TFS = np.zeros(0, dtype=np.uint8)
_EMPTY_U16 = np.zeros(0, dtype=np.uint16)


def narrow_terms(terms: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.integer[Any]]:
    """Term ids as uint16 (half the bytes of int32) while the largest is under 65,536, else int32.

    Example:
        >>> narrow_terms(np.array([3, 70_000])).dtype, narrow_terms(np.array([3], np.int32)).dtype
        (dtype('int32'), dtype('uint16'))
    """
    dtype = np.uint16 if not terms.size or int(terms.max()) <= 0xFFFF else np.int32
    return terms if terms.dtype == dtype else terms.astype(dtype)


def narrow_starts(starts: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.integer[Any]]:
    """Term offsets as uint32 (half the bytes of int64) unless the postings pass 2**32 - 1.

    Example:
        >>> narrow_starts(np.array([0, 3], np.int64)).dtype
        dtype('uint32')
    """
    dtype = np.uint32 if not starts.size or int(starts[-1]) <= 0xFFFFFFFF else np.int64
    return starts if starts.dtype == dtype else starts.astype(dtype)


@dataclass(frozen=True)
class Segment:
    """The postings of rows `[first_row, end_row)`: `rows[starts[i]:starts[i + 1]]` hold `terms[i]`.

    `rows` is assembled on demand: the segment keeps the offsets of most terms in `sparse` and those
    of its commonest terms as bitmaps in `dense` (`stores.lexical.dense`); `term_rows` reads one term.
    """

    first_row: int
    end_row: int
    terms: npt.NDArray[np.integer[Any]]  # sorted, distinct: uint16 while every id fits, else int32
    starts: npt.NDArray[np.integer[Any]]  # len(terms) + 1 offsets into the postings (`narrow_starts`)
    sparse: npt.NDArray[np.integer[Any]]  # row - first_row of the sparse terms' postings: uint16 within
    # NARROW_SPAN rows, else int32
    frequencies: PackedFrequencies  # of each posting, half a byte each
    dense: DenseRows = NO_DENSE

    @staticmethod
    def of(
        first_row: int,
        end_row: int,
        terms: npt.NDArray[np.integer[Any]],
        starts: npt.NDArray[np.integer[Any]],
        rows: npt.NDArray[np.integer[Any]],
        tfs: npt.NDArray[np.integer[Any]],
    ) -> Segment:
        """A segment of the postings `rows` (offsets from `first_row`) and `tfs`, packed here:
        frequencies in half bytes, and the rows of common terms as bitmaps when the segment is narrow
        (a wider one is only read back or written, then split)."""
        frequencies = PackedFrequencies.pack(tfs)
        span = end_row - first_row
        if span > NARROW_SPAN:
            return Segment(first_row, end_row, terms, starts, rows, frequencies)
        dense, sparse = split_dense(starts, rows, span, itemsize=2)
        return Segment(first_row, end_row, terms, starts, sparse, frequencies, dense)

    @property
    def rows(self) -> npt.NDArray[np.integer[Any]]:
        """Every posting's row - first_row, in posting order (assembled: for merges and saves)."""
        return self.dense.expand(self.starts, self.sparse, self.end_row - self.first_row)

    @property
    def tfs(self) -> npt.NDArray[np.integer[Any]]:
        """The frequency of every posting, unpacked (in the narrowest type that holds them)."""
        return self.frequencies.all()

    @property
    def size(self) -> int:
        """Number of postings."""
        return self.frequencies.size

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays."""
        arrays = (self.terms, self.starts, self.sparse)
        return sum(a.nbytes for a in arrays) + self.frequencies.nbytes + self.dense.nbytes

    def absolute_rows(self, begin: int = 0, end: int | None = None) -> npt.NDArray[np.int32]:
        """The rows of postings `begin:end` (default: all), as index rows."""
        rows: npt.NDArray[np.int32] = np.add(self.rows[begin:end], self.first_row, dtype=np.int32)
        return rows

    def term_rows(self, at: int, begin: int, end: int) -> npt.NDArray[np.integer[Any]]:
        """The rows - first_row of the term at position `at` of `terms`, whose postings are `begin:end`."""
        k = self.dense.find(at)
        if k >= 0:
            return self.dense.rows(k, self.end_row - self.first_row)
        low, high = self.dense.sparse_range(at, begin, end)
        return self.sparse[low:high]


def _local(rows: npt.NDArray[np.integer[Any]], first_row: int, end_row: int) -> npt.NDArray[np.integer[Any]]:
    """`rows` as offsets from `first_row`, in the narrowest type the segment's span allows."""
    dtype = np.uint16 if end_row - first_row <= NARROW_SPAN else np.int32
    return (rows - first_row).astype(dtype)


def _assemble(
    terms: npt.NDArray[np.integer[Any]],
    rows: npt.NDArray[np.integer[Any]],
    tfs: npt.NDArray[np.integer[Any]],
    first_row: int,
    end_row: int,
) -> Segment:
    """A segment from postings sorted by term then row (rows absolute)."""
    if terms.size == 0:
        return Segment.of(first_row, end_row, _EMPTY_I32, np.zeros(1, np.uint32), _EMPTY_U16, _EMPTY_TFS)
    term_starts = np.flatnonzero(np.concatenate(([True], terms[1:] != terms[:-1])))
    starts = narrow_starts(np.append(term_starts, terms.size))
    local = _local(rows, first_row, end_row)
    return Segment.of(first_row, end_row, narrow_terms(terms[term_starts]), starts, local, tfs)


def _from_sorted_keys(keys: npt.NDArray[np.int64], span: int, first_row: int, end_row: int) -> Segment:
    """A segment from sorted keys `term * span + local_row`, one key per occurrence."""
    if keys.size == 0:
        return _assemble(_EMPTY_I32, _EMPTY_I32, _EMPTY_TFS, first_row, end_row)
    run_starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    tfs = np.diff(np.append(run_starts, keys.size))
    distinct = keys[run_starts]
    term_of = distinct // span
    rows = distinct - term_of * span + first_row
    return _assemble(term_of, rows, tfs, first_row, end_row)


def build(
    term_ids: npt.NDArray[np.int32], owners: npt.NDArray[np.int64], count: int, first_row: int
) -> Segment:
    """The segment of `count` documents from `first_row`: one term id per occurrence, with its document."""
    span = max(count, 1)
    keys = term_ids.astype(np.int64) * span + owners
    keys.sort()
    return _from_sorted_keys(keys, span, first_row, first_row + count)


def _expanded_terms(segment: Segment) -> npt.NDArray[np.integer[Any]]:
    return np.repeat(segment.terms, np.diff(segment.starts))


def merge(
    parts: Sequence[Segment], live: npt.NDArray[np.bool_], new_row: npt.NDArray[np.int64] | None = None
) -> Segment:
    """One segment holding the live postings of neighbouring `parts` (in row order).

    With `new_row` (old row -> new row, for live rows), rows are renumbered: compaction.
    """
    terms = np.concatenate([_expanded_terms(part) for part in parts])
    rows = np.concatenate([part.absolute_rows() for part in parts])
    tfs = np.concatenate([part.tfs for part in parts])
    kept = live[rows]
    terms, rows, tfs = terms[kept], rows[kept], tfs[kept]
    if new_row is not None:
        rows = new_row[rows].astype(np.int32)
    # Each part is sorted by (term, row) and rows grow from part to part, so a stable sort by term alone
    # leaves rows ascending within each term.
    order = np.argsort(terms, kind="stable")
    terms, rows, tfs = terms[order], rows[order], tfs[order]
    first_row, end_row = parts[0].first_row, parts[-1].end_row
    if new_row is not None:
        first_row, end_row = 0, int(np.count_nonzero(live))
    return _assemble(terms, rows, tfs, first_row, end_row)


def _narrowed(segment: Segment) -> Segment:
    """`segment` with every array in its narrowest type (a segment read from a save holds wide ones)."""
    if segment.end_row - segment.first_row > NARROW_SPAN:
        return segment
    sparse = segment.sparse if segment.sparse.dtype == np.uint16 else segment.sparse.astype(np.uint16)
    starts, terms = narrow_starts(segment.starts), narrow_terms(segment.terms)
    if sparse is segment.sparse and starts is segment.starts and terms is segment.terms:
        return segment
    return dataclasses.replace(segment, terms=terms, starts=starts, sparse=sparse)


def split(segment: Segment, span: int | None = None) -> list[Segment]:
    """`segment` cut into segments of at most `span` rows (default `NARROW_SPAN`; empty ones left
    out), so each keeps its rows narrow; rows stay ascending within each term."""
    span = NARROW_SPAN if span is None else span
    if segment.end_row - segment.first_row <= span:
        return [_narrowed(segment)] if segment.size else []
    terms = _expanded_terms(segment)
    chunk = (segment.rows // span).astype(np.int32)
    # A stable sort by chunk keeps each chunk's postings in (term, row) order.
    order = np.argsort(chunk, kind="stable")
    bounds = np.searchsorted(
        chunk[order], np.arange(1, (segment.end_row - segment.first_row - 1) // span + 1)
    )
    rows, tfs = segment.absolute_rows(), segment.tfs
    out = []
    for number, (begin, end) in enumerate(
        zip(np.concatenate(([0], bounds)), np.append(bounds, segment.size), strict=True)
    ):
        if begin == end:
            continue
        picked = order[begin:end]
        first = segment.first_row + number * span
        out.append(
            _assemble(terms[picked], rows[picked], tfs[picked], first, min(first + span, segment.end_row))
        )
    return out


def postings(
    segments: Sequence[Segment], term: int
) -> tuple[npt.NDArray[np.integer[Any]], npt.NDArray[np.integer[Any]]]:
    """Rows (index rows, in the narrowest type that holds them) and frequencies of `term` across
    `segments` (dead rows included)."""
    [found] = postings_of(segments, [term])
    return found


def postings_of(
    segments: Sequence[Segment], terms: Sequence[int]
) -> list[tuple[npt.NDArray[np.integer[Any]], npt.NDArray[np.integer[Any]]]]:
    """`postings` of each of `terms`, looked up with one search per segment rather than per term."""
    row_parts: list[list[npt.NDArray[np.integer[Any]]]] = [[] for _ in terms]
    tf_parts: list[list[npt.NDArray[np.integer[Any]]]] = [[] for _ in terms]
    wanted = np.array(terms, np.int64)
    for segment in segments:
        held, starts = segment.terms, segment.starts
        # Scalar reads from here on: a query has a few terms, and a numpy call per step costs more.
        for i, at in enumerate(held.searchsorted(wanted).tolist()):
            if at < held.size and held[at] == terms[i]:
                begin, end = int(starts[at]), int(starts[at + 1])
                offsets = segment.term_rows(at, begin, end)
                # The first segment's offsets are its rows already: no copy (nor numpy call) needed.
                first = segment.first_row
                row_parts[i].append(np.add(offsets, first, dtype=np.int32) if first else offsets)
                tf_parts[i].append(segment.frequencies.slice(begin, end))
    return [_joined(rows, tfs) for rows, tfs in zip(row_parts, tf_parts, strict=True)]


def _joined(
    rows: list[npt.NDArray[np.integer[Any]]], tfs: list[npt.NDArray[np.integer[Any]]]
) -> tuple[npt.NDArray[np.integer[Any]], npt.NDArray[np.integer[Any]]]:
    if not rows:
        return _EMPTY_I32, _EMPTY_TFS
    if len(rows) == 1:
        return rows[0], tfs[0]
    return np.concatenate(rows), np.concatenate(tfs)
