"""Immutable postings segments (term-major CSR) of the lexical index: built, merged and read.

A segment holds the postings of rows `[first_row, end_row)`: for each term present, ascending, the
rows holding it (ascending, as offsets from `first_row`: two bytes each, since the index keeps its
segments within `NARROW_SPAN` rows) and the term's frequency in each (a byte while all fit). Segments
are never modified: an add builds one, a delete clears the row's bit in the index's live-row mask, and
merging neighbours writes a new segment without the postings of dead rows.

Example:
    >>> import numpy as np
    >>> segment = build(np.array([3, 1, 3, 1], np.int32), np.array([0, 0, 0, 1]), 2, first_row=0)
    >>> segment.terms.tolist(), segment.rows.tolist(), segment.tfs.tolist()
    ([1, 3], [0, 1, 0], [1, 1, 2])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["NARROW_SPAN", "Segment", "build", "merge", "narrow_tfs", "postings_of", "split"]

NARROW_SPAN = 1 << 16
"""A segment over at most this many rows keeps its row offsets as uint16."""

Ints = npt.NDArray[np.integer[Any]]
Postings = tuple[npt.NDArray[np.int32], Ints]


@dataclass(frozen=True)
class Segment:
    """The postings of rows `[first_row, end_row)`: `rows[starts[i]:starts[i + 1]]` hold `terms[i]`."""

    first_row: int
    end_row: int
    terms: npt.NDArray[np.int32]  # sorted, distinct
    starts: npt.NDArray[np.int64]  # len(terms) + 1 offsets into rows and tfs
    rows: Ints  # offsets from first_row: uint16 within NARROW_SPAN rows, else int32
    tfs: Ints  # uint8 while every frequency fits (a term rarely repeats 255 times in a chunk)

    @property
    def size(self) -> int:
        """Number of postings."""
        return int(self.rows.size)

    @property
    def absolute_rows(self) -> npt.NDArray[np.int32]:
        """The index row of every posting."""
        return np.add(self.rows, self.first_row, dtype=np.int32)

    @property
    def posting_terms(self) -> npt.NDArray[np.int32]:
        """The term of every posting."""
        return np.repeat(self.terms, np.diff(self.starts))


def narrow_tfs(tfs: Ints) -> Ints:
    """`tfs` in the narrowest type that holds them."""
    top = int(tfs.max(initial=0))
    return tfs.astype(np.uint8 if top <= 0xFF else np.uint16 if top <= 0xFFFF else np.int32)


def _assemble(terms: Ints, rows: Ints, tfs: Ints, first_row: int, end_row: int) -> Segment:
    """A segment from postings sorted by term, then row."""
    term_starts = np.flatnonzero(np.concatenate(([True], terms[1:] != terms[:-1]))) if terms.size else terms
    starts = np.append(term_starts, terms.size).astype(np.int64)
    distinct = terms[term_starts].astype(np.int32)
    offsets: Ints = (rows - first_row).astype(np.uint16 if end_row - first_row <= NARROW_SPAN else np.int32)
    return Segment(first_row, end_row, distinct, starts, offsets, narrow_tfs(tfs))


def build(term_ids: Ints, owners: Ints, count: int, first_row: int) -> Segment:
    """The segment of `count` documents from `first_row`: one term id per occurrence, with its document."""
    span = max(count, 1)
    keys = np.sort(term_ids.astype(np.int64) * span + owners)
    runs = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if keys.size else keys
    tfs = np.diff(np.append(runs, keys.size))
    terms, local = np.divmod(keys[runs], span)
    return _assemble(terms, local + first_row, tfs, first_row, first_row + count)


def merge(parts: Sequence[Segment], live: npt.NDArray[np.bool_], new_row: Ints | None = None) -> Segment:
    """One segment of the live postings of neighbouring `parts` (none only with `new_row`), rows
    renumbered through `new_row`."""
    terms = np.concatenate([np.zeros(0, np.int32), *(part.posting_terms for part in parts)])
    rows = np.concatenate([np.zeros(0, np.int32), *(part.absolute_rows for part in parts)])
    tfs = np.concatenate([np.zeros(0, np.uint8), *(part.tfs for part in parts)])
    kept = live[rows]
    terms, rows, tfs = terms[kept], rows[kept], tfs[kept]
    if new_row is None:
        first_row, end_row = parts[0].first_row, parts[-1].end_row
    else:
        rows = new_row[rows]
        first_row, end_row = 0, int(np.count_nonzero(live))
    # Each part is sorted by (term, row) and rows grow from part to part: a stable sort by term keeps
    # rows ascending within each term.
    order = np.argsort(terms, kind="stable")
    return _assemble(terms[order], rows[order], tfs[order], first_row, end_row)


def split(segment: Segment) -> list[Segment]:
    """`segment` cut into segments of at most `NARROW_SPAN` rows, each with two-byte row offsets (empty
    ones left out); a stable sort by piece keeps each piece's postings in (term, row) order."""
    rows, terms, tfs = segment.absolute_rows, segment.posting_terms, segment.tfs
    piece = (rows - segment.first_row) // NARROW_SPAN
    order = np.argsort(piece, kind="stable")
    pieces = (segment.end_row - segment.first_row + NARROW_SPAN - 1) // NARROW_SPAN
    out = []
    for number, picked in enumerate(np.split(order, np.searchsorted(piece[order], np.arange(1, pieces)))):
        first = segment.first_row + number * NARROW_SPAN
        if picked.size:
            end = min(first + NARROW_SPAN, segment.end_row)
            out.append(_assemble(terms[picked], rows[picked], tfs[picked], first, end))
    return out


def postings_of(segments: Sequence[Segment], terms: Sequence[int]) -> list[Postings]:
    """The rows (dead ones included) and frequencies of each of `terms` across `segments`."""
    parts: list[list[Postings]] = [[] for _ in terms]
    wanted = np.array(terms, np.int64)
    for segment in segments:
        held, starts = segment.terms, segment.starts
        for i, at in enumerate(held.searchsorted(wanted).tolist()):
            if at < held.size and held[at] == terms[i]:
                begin, end = int(starts[at]), int(starts[at + 1])
                rows = np.add(segment.rows[begin:end], segment.first_row, dtype=np.int32)
                parts[i].append((rows, segment.tfs[begin:end]))
    return [_joined(found) for found in parts]


def _joined(found: list[Postings]) -> Postings:
    if len(found) == 1:  # the common case, without a copy
        return found[0]
    if not found:
        return np.zeros(0, np.int32), np.zeros(0, np.uint8)
    return np.concatenate([rows for rows, _ in found]), np.concatenate([tfs for _, tfs in found])
