"""The lexical index's ids by row and its id -> row map, packed into numpy arrays.

A `str` per id and a `dict` entry per id cost ~130 bytes a document, about what the postings of a
chunk cost. Here ids are UTF-8 in one buffer (rows are appended, so each row's bytes end where the
next row's begin: one offset per row), and the map is a sorted array of the ids' hashes beside their
rows, searched with `np.searchsorted`; every hit is confirmed by comparing the stored bytes, so equal
hashes never confuse two ids. That is why 32 bits of hash are enough: an id absent from a map of n
ids meets a false candidate with probability n / 2**32, which costs one comparison. Ids added since
the main sorted arrays were last rebuilt sit in two small sorted arrays of their own, merged in (by
insertion, O(n)) once they hold an eighth of the rows, so appends cost amortised O(1) each. No
Python object is kept per id: a `str` kept from a batch of documents would also pin the allocator's
arena it sits in once the documents are gone. Dead rows keep their bytes until `renumber` drops
them, and their sorted entries until the next merge. In all, a row costs its UTF-8 bytes plus 13
bytes (offset, live flag, hash, row); offsets take 4 bytes until the ids' bytes pass 4 GiB, then 8.

Hashes are Python's `hash(str)`, salted per process: the arrays live in memory only (a saved index
stores plain ids), and an unpickled copy hashes its ids again. `PackedIds` also maps the lexical
index's terms to their ids (`stores.lexical.text.Vocabulary`).

Example:
    >>> ids = PackedIds()
    >>> ids.append(["a", "b", "c"])
    >>> ids.kill(["b", "x"]).tolist(), ids.rows_of(["c", "b"]).tolist(), len(ids)
    ([1], [2, -1], 2)
    >>> ids.renumber()
    >>> ids.live_ids(), ids.rows_of(["c"]).tolist()
    (['a', 'c'], [1])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["PackedIds", "offsets_for"]

IntArray = npt.NDArray[np.int64]
_MERGE_MIN = 1024  # recent entries kept apart before a merge is worth its pass over the main arrays


_hash = hash  # one name, so a test can force collisions
_NARROW_OFFSETS = 2**32 - 1  # byte offsets up to this fit uint32 (a test lowers it to cross it)


def offsets_for(offsets: npt.NDArray[np.integer[Any]], largest: int) -> npt.NDArray[np.integer[Any]]:
    """`offsets` (uint32 at first: half the bytes of int64) widened to int64 once an offset may pass 4 GiB.

    Example:
        >>> offsets_for(np.zeros(2, np.uint32), 2**32).dtype
        dtype('int64')
    """
    if largest > _NARROW_OFFSETS and offsets.dtype != np.int64:
        return offsets.astype(np.int64)
    return offsets


def _hashes(ids: Iterable[str], count: int) -> npt.NDArray[np.uint32]:
    """The low 32 bits of each id's hash (see the module docstring)."""
    return np.fromiter(map(_hash, ids), np.int64, count).astype(np.uint32)


def _encode(ids: Sequence[str]) -> tuple[bytes, IntArray]:
    """The UTF-8 bytes of `ids` joined, and each one's length (ids are any str, lone surrogates included)."""
    joined = "".join(ids)
    if joined.isascii():  # the common case, without a bytes object per id
        return joined.encode("ascii"), np.fromiter(map(len, ids), np.int64, len(ids))
    encoded = [doc_id.encode("utf-8", "surrogatepass") for doc_id in ids]
    return b"".join(encoded), np.fromiter(map(len, encoded), np.int64, len(ids))


class PackedIds:
    """Ids by row, rows that die, and an id -> live row map (see the module docstring)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._data = np.zeros(0, np.uint8)
        # Row r's bytes: [stops[r - 1] (0 for row 0), stops[r]); uint32 until the bytes pass 4 GiB.
        self._stops: npt.NDArray[np.integer[Any]] = np.zeros(0, np.uint32)
        self._live = np.zeros(0, np.bool_)
        self._rows = 0
        self._count = 0
        self._sorted_hashes = np.zeros(0, np.uint32)  # rows below `_indexed` (dead ones too), by hash
        self._sorted_rows = np.zeros(0, np.int32)
        self._indexed = 0
        self._recent_hashes = np.zeros(0, np.uint32)  # the same for rows from `_indexed` on
        self._recent_rows = np.zeros(0, np.int32)

    def __len__(self) -> int:
        return self._count

    def __setstate__(self, state: dict[str, object]) -> None:
        # Unpickled in another process, whose str hashes are salted differently: hash the ids again.
        self.__dict__.update(state)
        rows = np.flatnonzero(self._live[: self._rows]).astype(np.int32)
        hashes = _hashes(self.ids_at(rows.tolist()), len(rows))
        order = np.argsort(hashes, kind="stable")
        self._sorted_hashes, self._sorted_rows = hashes[order], rows[order]
        self._indexed = self._rows
        self._recent_hashes, self._recent_rows = np.zeros(0, np.uint32), np.zeros(0, np.int32)

    @property
    def live_mask(self) -> npt.NDArray[np.bool_]:
        """Whether each row is live (entries from `row_count` on are False); valid until the next write."""
        return self._live

    @property
    def row_count(self) -> int:
        """Rows ever appended since the last `renumber`, live or dead."""
        return self._rows

    def id_at(self, row: int) -> str:
        """The id of `row` (live or dead)."""
        start = int(self._stops[row - 1]) if row else 0
        return str(memoryview(self._data)[start : int(self._stops[row])], "utf-8", "surrogatepass")  # type: ignore[arg-type]

    def ids_at(self, rows: Iterable[int]) -> list[str]:
        """`id_at` for each of `rows`."""
        at = np.fromiter(rows, np.int64)
        stops = self._stops[at]
        starts = np.where(at > 0, self._stops[at - 1], 0)
        view = memoryview(self._data)  # type: ignore[arg-type]
        return [
            str(view[a:b], "utf-8", "surrogatepass")
            for a, b in zip(starts.tolist(), stops.tolist(), strict=True)
        ]

    def live_ids(self) -> list[str]:
        """Ids of the live rows, in row order."""
        return self.ids_at(np.flatnonzero(self._live[: self._rows]).tolist())

    def append(self, ids: Sequence[str]) -> None:
        """New live rows for `ids`, which must be distinct and not live already."""
        blob, lengths = _encode(ids)
        first, end = self._rows, self._rows + len(ids)
        used = int(self._stops[first - 1]) if first else 0
        self._reserve(end, used + len(blob))
        self._data[used : used + len(blob)] = np.frombuffer(blob, np.uint8)
        self._stops[first:end] = used + np.cumsum(lengths)
        self._live[first:end] = True
        hashes = _hashes(ids, len(ids))
        order = np.argsort(hashes, kind="stable")
        at = np.searchsorted(self._recent_hashes, hashes[order])
        self._recent_hashes = np.insert(self._recent_hashes, at, hashes[order])
        self._recent_rows = np.insert(self._recent_rows, at, (first + order).astype(np.int32))
        self._rows, self._count = end, self._count + len(ids)
        if self._recent_rows.size >= max(_MERGE_MIN, self._indexed // 8):
            self._merge()

    def _reserve(self, rows: int, size: int) -> None:
        self._stops = offsets_for(self._stops, size)
        if rows > len(self._stops):
            capacity = max(rows, len(self._stops) * 3 // 2, 64)
            for name in ("_stops", "_live"):
                old = getattr(self, name)
                grown = np.zeros(capacity, old.dtype)
                grown[: self._rows] = old[: self._rows]
                setattr(self, name, grown)
        if size > len(self._data):
            grown_data = np.empty(max(size, len(self._data) * 3 // 2, 4096), np.uint8)
            used = int(self._stops[self._rows - 1]) if self._rows else 0
            grown_data[:used] = self._data[:used]
            self._data = grown_data

    def _merge(self) -> None:
        """Move the recent entries into the main sorted arrays, leaving out dead rows."""
        keep = self._live[self._sorted_rows]
        hashes, rows = self._sorted_hashes[keep], self._sorted_rows[keep]
        fresh = self._live[self._recent_rows]
        new_hashes, new_rows = self._recent_hashes[fresh], self._recent_rows[fresh]
        at = np.searchsorted(hashes, new_hashes)  # both sorted: insertion keeps the order
        self._sorted_hashes, self._sorted_rows = (
            np.insert(hashes, at, new_hashes),
            np.insert(rows, at, new_rows),
        )
        self._recent_hashes, self._recent_rows = np.zeros(0, np.uint32), np.zeros(0, np.int32)
        self._indexed = self._rows

    def rows_of(self, ids: Sequence[str]) -> IntArray:
        """The live row of each id, -1 where none."""
        out = np.full(len(ids), -1, np.int64)
        if not self._count or not len(ids):
            return out
        hashes = _hashes(ids, len(ids))
        pending = np.arange(len(ids))
        for keys, rows in (
            (self._sorted_hashes, self._sorted_rows),
            (self._recent_hashes, self._recent_rows),
        ):
            low = np.searchsorted(keys, hashes[pending], "left")
            count = np.searchsorted(keys, hashes[pending], "right") - low
            hit = count > 0
            at, low, count = pending[hit], low[hit], count[hit]
            first = rows[low]
            # Confirm the first entry of each hash in bulk; equal hashes (rare) one by one after it.
            held = self.ids_at(first.tolist())
            same = np.fromiter((held[n] == ids[i] for n, i in enumerate(at.tolist())), np.bool_, len(held))
            same &= self._live[first]
            out[at[same]] = first[same]
            for n in np.flatnonzero(~same & (count > 1)).tolist():
                i = int(at[n])
                out[i] = self._confirmed(ids[i], rows[int(low[n]) + 1 : int(low[n] + count[n])])
            pending = pending[out[pending] < 0]
        return out

    def _confirmed(self, doc_id: str, rows: npt.NDArray[np.int32]) -> int:
        """The live row among `rows` (entries with the id's hash) that holds `doc_id`, or -1."""
        for row in rows.tolist():
            if self._live[row] and self.id_at(row) == doc_id:
                return int(row)
        return -1

    def kill(self, ids: Iterable[str]) -> IntArray:
        """Mark the live rows of `ids` dead (unknown ids ignored); returns those rows."""
        rows = self.rows_of(list(dict.fromkeys(ids)))
        rows = rows[rows >= 0]
        self._live[rows] = False
        self._count -= len(rows)
        return rows

    def renumber(self) -> None:
        """Drop the dead rows: live rows keep their order and are numbered from 0."""
        self._merge()  # every live row in the main sorted arrays, which keep their order by hash
        live = self._live[: self._rows]
        rows = np.flatnonzero(live)
        new_row = (np.cumsum(live, dtype=np.int64) - 1).astype(np.int32)
        sorted_hashes, sorted_rows = self._sorted_hashes, new_row[self._sorted_rows]
        starts = np.concatenate(([0], self._stops[: self._rows - 1]))[rows] if self._rows else rows
        stops = self._stops[rows]
        view = memoryview(self._data)  # type: ignore[arg-type]
        blob = b"".join([view[a:b] for a, b in zip(starts.tolist(), stops.tolist(), strict=True)])
        self._reset()
        self._reserve(len(rows), len(blob))
        self._data[: len(blob)] = np.frombuffer(blob, np.uint8)
        self._stops[: len(rows)] = np.cumsum(stops - starts)
        self._live[: len(rows)] = True
        self._rows = self._count = self._indexed = len(rows)
        self._sorted_hashes, self._sorted_rows = sorted_hashes, sorted_rows
