"""A saved store's ids, read from its mapped files without decoding them all: id <-> row in O(log n).

The ids by row (one UTF-8 buffer and each id's end), the CRC-32 of each id sorted with its row, and
the rows in id order. The store reads ids through this until its BM25 index is loaded.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from stores.numpy.files import MappedPart, packed_bounds

__all__ = ["SavedIds", "id_arrays"]

IntArray = npt.NDArray[np.int64]


def _encode(doc_id: str) -> bytes:
    return doc_id.encode("utf-8", "surrogatepass")


def id_arrays(ids: Sequence[str], order: IntArray) -> dict[str, npt.NDArray[Any]]:
    """The arrays a save writes for `ids` (by row) and `order`, the rows sorted by id."""
    encoded = [_encode(doc_id) for doc_id in ids]
    hashes = np.fromiter(map(zlib.crc32, encoded), np.uint32, len(encoded))
    by_hash = np.argsort(hashes, kind="stable")
    return {
        "ids.npy": np.frombuffer(b"".join(encoded), np.uint8),
        "id_stops.npy": np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), dtype=np.int64),
        "id_hashes.npy": hashes[by_hash],
        "id_rows.npy": by_hash.astype(np.int64),
        "id_order.npy": np.asarray(order, np.int64),
    }


class SavedIds:
    """Ids by row and rows by id over a save's mapped id files."""

    def __init__(self, files: Mapping[str, MappedPart]) -> None:
        self._data, self._stops = files["ids.npy"], files["id_stops.npy"]
        self._hashes, self._rows = files["id_hashes.npy"], files["id_rows.npy"]
        self._order = files["id_order.npy"]

    def order(self) -> IntArray:
        """Every row, sorted by id."""
        self._order.check_all()
        order: IntArray = self._order.array()
        return order

    def ids_of(self, rows: Iterable[int]) -> list[str]:
        starts, stops = packed_bounds(self._stops, self._data, np.fromiter(rows, np.int64))
        view = memoryview(self._data.array())  # type: ignore[arg-type]  # numpy arrays are buffers
        return [
            str(view[a:b], "utf-8", "surrogatepass")
            for a, b in zip(starts.tolist(), stops.tolist(), strict=True)
        ]

    def all_ids(self) -> list[str]:
        return self.ids_of(range(len(self._stops.array())))

    def rows_of(self, ids: Sequence[str]) -> IntArray:
        """The row of each id, -1 where the store does not hold it."""
        self._hashes.check_all()
        self._rows.check_all()
        hashes, hash_rows = self._hashes.array(), self._rows.array()
        wanted = np.fromiter((zlib.crc32(_encode(doc_id)) for doc_id in ids), np.int64, len(ids))
        low = np.searchsorted(hashes, wanted, "left").tolist()
        high = np.searchsorted(hashes, wanted, "right").tolist()
        out = np.full(len(ids), -1, np.int64)
        for i, (a, b) in enumerate(zip(low, high, strict=True)):
            candidates = hash_rows[a:b].tolist()
            found = self.ids_of(candidates) if candidates else []
            out[i] = next(
                (row for row, doc_id in zip(candidates, found, strict=True) if doc_id == ids[i]), -1
            )
        return out
