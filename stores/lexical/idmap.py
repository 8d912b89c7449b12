"""The lexical index's ids by row and its id -> row map, packed into numpy arrays.

Ids are UTF-8 in one buffer (an offset per row) and the map is the sorted CRC-32s of the live ids beside
their rows, each candidate confirmed against the stored bytes; the same in every process, so a save
keeps the map as it is. `PackedIds` also maps terms to their ids (`stores.lexical.text.Vocabulary`).

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

import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["NARROW_OFFSETS", "PackedIds", "offsets_for"]

IntArray = npt.NDArray[np.int64]

NARROW_OFFSETS = 2**32 - 1
"""The largest byte offset kept in uint32; ids, terms and records past it take int64 offsets.

Read at each write, so a test can lower it to cross the 4 GiB boundary with a few bytes."""
_SAVED = ("bytes", "stops", "hashes", "rows")


def offsets_for(offsets: npt.NDArray[np.integer[Any]], largest: int) -> npt.NDArray[np.integer[Any]]:
    """`offsets` (uint32 at first) widened to int64 once an offset may pass 4 GiB."""
    if largest > NARROW_OFFSETS and offsets.dtype != np.int64:
        return offsets.astype(np.int64)
    return offsets


def _hash(text: str) -> int:
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def _hashes(ids: Iterable[str], count: int) -> npt.NDArray[np.uint32]:
    return np.fromiter(map(_hash, ids), np.int64, count).astype(np.uint32)


class PackedIds:
    """Ids by row, rows that die, and an id -> live row map (see the module docstring)."""

    def __init__(self) -> None:
        self._data = np.zeros(0, np.uint8)
        # Row r's bytes: [stops[r - 1] (0 for row 0), stops[r]).
        self._stops: npt.NDArray[np.integer[Any]] = np.zeros(0, np.uint32)
        self._live = np.zeros(0, np.bool_)
        self._rows = 0
        self._count = 0
        self._hashes = np.zeros(0, np.uint32)  # of the live rows, ascending
        self._hash_rows = np.zeros(0, np.int32)

    def __len__(self) -> int:
        return self._count

    def to_arrays(self, prefix: str) -> dict[str, npt.NDArray[Any]]:
        """The arrays a save writes, named from `prefix`; every row must be live (see `renumber`)."""
        used = int(self._stops[self._rows - 1]) if self._rows else 0
        kept = (self._data[:used], self._stops[: self._rows], self._hashes, self._hash_rows)
        return {f"{prefix}_{name}": array for name, array in zip(_SAVED, kept, strict=True)}

    @classmethod
    def saved(cls, arrays: Mapping[str, npt.NDArray[Any]], prefix: str) -> PackedIds:
        """The ids `to_arrays` wrote, read in place (a write copies what it changes)."""
        packed = cls()
        packed._data, packed._stops, packed._hashes, packed._hash_rows = (
            arrays[f"{prefix}_{name}"] for name in _SAVED
        )
        packed._rows = packed._count = len(packed._stops)
        packed._live = np.ones(packed._rows, np.bool_)
        return packed

    @property
    def live_mask(self) -> npt.NDArray[np.bool_]:
        """Whether each row is live (entries from `row_count` on are False); valid until the next write."""
        return self._live

    @property
    def row_count(self) -> int:
        """Rows appended since the last `renumber`, live or dead."""
        return self._rows

    def _bounds(self, rows: IntArray) -> tuple[npt.NDArray[np.integer[Any]], npt.NDArray[np.integer[Any]]]:
        """Where the bytes of each of `rows` start and stop."""
        return np.where(rows > 0, self._stops[rows - 1], 0), self._stops[rows]

    def id_at(self, row: int) -> str:
        """The id of `row` (live or dead)."""
        return self.ids_at([row])[0]

    def ids_at(self, rows: Iterable[int]) -> list[str]:
        """`id_at` for each of `rows`."""
        starts, stops = self._bounds(np.fromiter(rows, np.int64))
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
        joined = "".join(ids)
        if joined.isascii():  # the common case, without a bytes object per id
            blob, lengths = joined.encode("ascii"), np.fromiter(map(len, ids), np.int64, len(ids))
        else:  # ids are any str, lone surrogates included
            encoded = [doc_id.encode("utf-8", "surrogatepass") for doc_id in ids]
            blob, lengths = b"".join(encoded), np.fromiter(map(len, encoded), np.int64, len(ids))
        first, end = self._rows, self._rows + len(ids)
        used = int(self._stops[first - 1]) if first else 0
        self._stops = offsets_for(self._stops, used + len(blob))
        if end > len(self._stops):
            capacity = max(end, len(self._stops) * 3 // 2, 64)
            self._stops = np.concatenate([self._stops[:first], np.zeros(capacity - first, self._stops.dtype)])
            self._live = np.concatenate([self._live[:first], np.zeros(capacity - first, np.bool_)])
        if used + len(blob) > len(self._data):
            grown = np.empty(max(used + len(blob), len(self._data) * 3 // 2, 4096), np.uint8)
            grown[:used] = self._data[:used]
            self._data = grown
        self._data[used : used + len(blob)] = np.frombuffer(blob, np.uint8)
        self._stops[first:end] = used + np.cumsum(lengths)
        self._live[first:end] = True
        hashes = _hashes(ids, len(ids))
        order = np.argsort(hashes, kind="stable")
        at = np.searchsorted(self._hashes, hashes[order])
        self._hashes = np.insert(self._hashes, at, hashes[order])
        self._hash_rows = np.insert(self._hash_rows, at, (first + order).astype(np.int32))
        self._rows, self._count = end, self._count + len(ids)

    def rows_of(self, ids: Sequence[str]) -> IntArray:
        """The live row of each id, -1 where none."""
        out = np.full(len(ids), -1, np.int64)
        if not self._count or not len(ids):
            return out
        hashes = _hashes(ids, len(ids))
        low = np.searchsorted(self._hashes, hashes, "left")
        count = np.searchsorted(self._hashes, hashes, "right") - low
        at = np.flatnonzero(count)
        low, count = low[at], count[at]
        first = self._hash_rows[low]
        # Confirm the first entry of each hash in bulk; equal hashes (rare) one by one after it.
        held = self.ids_at(first.tolist())
        same = np.fromiter((held[n] == ids[i] for n, i in enumerate(at.tolist())), np.bool_, len(held))
        out[at[same]] = first[same]
        for n in np.flatnonzero(~same & (count > 1)).tolist():
            doc_id = ids[int(at[n])]
            rows = self._hash_rows[int(low[n]) + 1 : int(low[n] + count[n])].tolist()
            out[int(at[n])] = next((row for row in rows if self.id_at(row) == doc_id), -1)
        return out

    def kill(self, ids: Iterable[str]) -> IntArray:
        """Mark the live rows of `ids` dead (unknown ids ignored); returns those rows."""
        rows = self.rows_of(list(dict.fromkeys(ids)))
        rows = rows[rows >= 0]
        if rows.size:
            self._live[rows] = False
            self._count -= len(rows)
            kept = self._live[self._hash_rows]
            self._hashes, self._hash_rows = self._hashes[kept], self._hash_rows[kept]
        return rows

    def renumber(self) -> None:
        """Drop the dead rows: live rows keep their order and are numbered from 0."""
        live = self._live[: self._rows]
        rows = np.flatnonzero(live)
        starts, stops = self._bounds(rows)
        view = memoryview(self._data)  # type: ignore[arg-type]
        blob = b"".join([view[a:b] for a, b in zip(starts.tolist(), stops.tolist(), strict=True)])
        self._data = np.frombuffer(blob, np.uint8).copy()
        self._stops = np.cumsum(stops - starts).astype(np.int64 if len(blob) > NARROW_OFFSETS else np.uint32)
        self._hash_rows = (np.cumsum(live, dtype=np.int64) - 1).astype(np.int32)[self._hash_rows]
        self._live = np.ones(len(rows), np.bool_)  # a new array: the old mask stays as it was
        self._rows = len(rows)
