"""A saved store's ids, read from its mapped files without decoding them all: id <-> row in O(log n).

A save writes the ids of the store's rows as one UTF-8 buffer and each id's end (`ids`, `id_stops`),
the CRC-32 of each id's bytes sorted with the row beside it (`id_hashes`, `id_rows`), and the rows in
id order (`id_order`, what `get()` without ids returns). Looking an id up is a binary search over the
hashes, confirmed by comparing the id's bytes, so two ids with one hash never meet; reading the id of
a row decodes that id alone. `NumpyVectorStore` answers through this until its first write or lexical
search, when its BM25 index (which also maps ids to rows) is loaded.

The hash arrays are checked whole before the first lookup (a binary search reads anywhere in them:
12 bytes a row, ~6 ms at 1M rows); the id bytes block by block as they are read.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> from stores.numpy.files import MappedFile, write_arrays
    >>> path = Path(tempfile.mkdtemp()) / "ids.bin"
    >>> entry, spans = write_arrays(path, id_arrays(["b", "a"]))
    >>> mapped = MappedFile.open(path, entry)
    >>> files = {name: mapped.part(name, *span) for name, span in spans.items()}
    >>> ids = SavedIds(files)
    >>> ids.rows_of(["a", "x"]).tolist(), ids[0], ids.order().tolist()
    ([1, -1], 'b', [1, 0])
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from stores.numpy.files import MappedPart

__all__ = ["ID_FILES", "SavedIds", "id_arrays"]

IntArray = npt.NDArray[np.int64]
ID_FILES = ("ids.npy", "id_stops.npy", "id_hashes.npy", "id_rows.npy", "id_order.npy")


def _hash(doc_id: str) -> int:
    return zlib.crc32(doc_id.encode("utf-8", "surrogatepass"))


def id_arrays(ids: Sequence[str], order: IntArray | None = None) -> dict[str, npt.NDArray[Any]]:
    """The arrays a save writes for `ids` (by row); `order`, the rows sorted by id, if already known."""
    encoded = [doc_id.encode("utf-8", "surrogatepass") for doc_id in ids]
    stops = np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), dtype=np.int64)
    hashes = np.fromiter(map(zlib.crc32, encoded), np.uint32, len(encoded))
    by_hash = np.argsort(hashes, kind="stable")
    if order is None:
        by_id = np.empty(len(ids), dtype=object)
        by_id[:] = list(ids)
        order = np.argsort(by_id, kind="stable")
    return {
        "ids.npy": np.frombuffer(b"".join(encoded), np.uint8),
        "id_stops.npy": stops,
        "id_hashes.npy": hashes[by_hash],
        "id_rows.npy": by_hash.astype(np.int64),
        "id_order.npy": np.asarray(order, np.int64),
    }


class SavedIds:
    """Ids by row and rows by id over a save's mapped id files (see the module docstring)."""

    def __init__(self, files: Mapping[str, MappedPart]) -> None:
        self._data_file, self._stops_file = files["ids.npy"], files["id_stops.npy"]
        self._hash_files = (files["id_hashes.npy"], files["id_rows.npy"])
        self._order_file = files["id_order.npy"]
        self._data = self._data_file.array()
        self._stops = self._stops_file.array()
        self._hashes = files["id_hashes.npy"].array()
        self._hash_rows = files["id_rows.npy"].array()
        self._view = memoryview(self._data)  # type: ignore[arg-type]  # numpy arrays are buffers

    def __len__(self) -> int:
        return len(self._stops)

    def order(self) -> IntArray:
        """Every row, sorted by id."""
        self._order_file.check_all()
        order: IntArray = self._order_file.array()
        return order

    def _bounds(self, rows: IntArray) -> tuple[IntArray, IntArray]:
        """Where the ids of `rows` start and stop in the buffer, their bytes checked."""
        item = self._stops.itemsize
        before = np.maximum(rows - 1, 0)
        offset = self._stops_file.offset
        self._stops_file.check_blocks_of(offset + before * item, offset + (rows + 1) * item)
        stops = self._stops[rows]
        starts = np.where(rows > 0, self._stops[before], 0)
        base = self._data_file.offset
        self._data_file.check_blocks_of(base + starts, base + stops)
        return starts, stops

    def ids_of(self, rows: Iterable[int]) -> list[str]:
        """The id of each of `rows`."""
        at = np.fromiter(rows, np.int64)
        starts, stops = self._bounds(at)
        view = self._view
        return [
            str(view[a:b], "utf-8", "surrogatepass")
            for a, b in zip(starts.tolist(), stops.tolist(), strict=True)
        ]

    def __getitem__(self, row: int) -> str:
        return self.ids_of([row])[0]

    def all_ids(self) -> list[str]:
        """The id of every row, in row order."""
        return self.ids_of(range(len(self)))

    def rows_of(self, ids: Sequence[str]) -> IntArray:
        """The row of each id, -1 where the store does not hold it."""
        for mapped in self._hash_files:
            mapped.check_all()
        hashes = np.fromiter(map(_hash, ids), np.int64, len(ids))
        low = np.searchsorted(self._hashes, hashes, "left")
        high = np.searchsorted(self._hashes, hashes, "right")
        out = np.full(len(ids), -1, np.int64)
        for i, (a, b) in enumerate(zip(low.tolist(), high.tolist(), strict=True)):
            candidates = self._hash_rows[a:b]
            if not len(candidates):
                continue
            for row, found in zip(candidates.tolist(), self.ids_of(candidates), strict=True):
                if found == ids[i]:
                    out[i] = row
                    break
        return out
