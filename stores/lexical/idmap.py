"""The lexical index's ids by row and its id -> row map, packed into numpy arrays.

A `str` per id and a `dict` entry per id cost ~130 bytes a document, about what the postings of a
chunk cost. Here ids are UTF-8 in one buffer (rows are appended, so each row's bytes end where the
next row's begin: one offset per row), and the map is a sorted array of the ids' hashes beside their
rows, searched with `np.searchsorted`; every hit is confirmed by comparing the stored bytes, so equal
hashes never confuse two ids. That is why 32 bits of hash are enough: an id absent from a map of n
ids meets a false candidate with probability n / 2**32, which costs one comparison. Ids added since
the sorted arrays were last rebuilt sit in a small dict, merged in (by insertion into the sorted
arrays, O(n)) once it holds an eighth of the rows, so appends cost amortised O(1) each. Dead rows keep
their bytes until `renumber` drops them; a merge drops their sorted entries. In all, a row costs its
UTF-8 bytes plus 17 bytes (offset, live flag, hash, row).

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

import numpy as np
import numpy.typing as npt

__all__ = ["PackedIds"]

IntArray = npt.NDArray[np.int64]
_MERGE_MIN = 1024  # ids kept in the dict before a merge is worth its sort


_hash = hash  # one name, so a test can force collisions


def _hashes(ids: Iterable[str], count: int) -> npt.NDArray[np.uint32]:
    """The low 32 bits of each id's hash (see the module docstring)."""
    return np.fromiter(map(_hash, ids), np.int64, count).astype(np.uint32)


def _encode(doc_id: str) -> bytes:
    return doc_id.encode("utf-8", "surrogatepass")  # ids are any str, lone surrogates included


class PackedIds:
    """Ids by row, rows that die, and an id -> live row map (see the module docstring)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._data = np.zeros(0, np.uint8)
        self._stops = np.zeros(0, np.int64)  # row r's bytes: [stops[r - 1] (0 for row 0), stops[r])
        self._live = np.zeros(0, np.bool_)
        self._rows = 0
        self._count = 0
        self._sorted_hashes = np.zeros(0, np.uint32)  # live rows below `_indexed` (and dead ones), by hash
        self._sorted_rows = np.zeros(0, np.int32)
        self._indexed = 0
        self._recent: dict[str, int] = {}  # live rows from `_indexed` on

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
        self._recent = {}

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
        encoded = [_encode(doc_id) for doc_id in ids]
        blob = b"".join(encoded)
        first, end = self._rows, self._rows + len(ids)
        used = int(self._stops[first - 1]) if first else 0
        self._reserve(end, used + len(blob))
        self._data[used : used + len(blob)] = np.frombuffer(blob, np.uint8)
        self._stops[first:end] = used + np.cumsum(np.fromiter(map(len, encoded), np.int64, len(ids)))
        self._live[first:end] = True
        self._recent.update(zip(ids, range(first, end), strict=True))
        self._rows, self._count = end, self._count + len(ids)
        if len(self._recent) >= max(_MERGE_MIN, self._indexed // 8):
            self._merge()

    def _reserve(self, rows: int, size: int) -> None:
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
        """Move the recent rows into the sorted arrays, and drop the dead rows' entries from them."""
        keep = self._live[self._sorted_rows]
        hashes, rows = self._sorted_hashes[keep], self._sorted_rows[keep]
        recent = self._recent
        if recent:
            new_hashes = _hashes(recent, len(recent))
            order = np.argsort(new_hashes, kind="stable")
            new_rows = np.fromiter(recent.values(), np.int32, len(recent))[order]
            at = np.searchsorted(hashes, new_hashes[order])
            hashes, rows = np.insert(hashes, at, new_hashes[order]), np.insert(rows, at, new_rows)
        self._sorted_hashes, self._sorted_rows = hashes, rows
        self._indexed = self._rows
        self._recent = {}

    def rows_of(self, ids: Sequence[str]) -> IntArray:
        """The live row of each id, -1 where none."""
        out = np.full(len(ids), -1, np.int64)
        if not self._count or not len(ids):
            return out
        hashes = _hashes(ids, len(ids))
        low = np.searchsorted(self._sorted_hashes, hashes, "left")
        high = np.searchsorted(self._sorted_hashes, hashes, "right")
        recent = self._recent
        for i in np.flatnonzero((high > low) | bool(recent)).tolist():
            doc_id = ids[i]
            row = recent.get(doc_id, -1)
            if row < 0:
                row = self._confirmed(doc_id, int(low[i]), int(high[i]))
            out[i] = row
        return out

    def _confirmed(self, doc_id: str, low: int, high: int) -> int:
        """The live row among sorted entries `low..high` (equal hashes) that holds `doc_id`, or -1."""
        for position in range(low, high):
            row = int(self._sorted_rows[position])
            if self._live[row] and self.id_at(row) == doc_id:
                return row
        return -1

    def kill(self, ids: Iterable[str]) -> IntArray:
        """Mark the live rows of `ids` dead (unknown ids ignored); returns those rows."""
        wanted = list(dict.fromkeys(ids))
        rows = self.rows_of(wanted)
        rows = rows[rows >= 0]
        self._live[rows] = False
        for doc_id in wanted:
            self._recent.pop(doc_id, None)
        self._count -= len(rows)
        return rows

    def renumber(self) -> None:
        """Drop the dead rows: live rows keep their order and are numbered from 0."""
        self._merge()  # every live row in the sorted arrays, which keep their order by hash
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
