"""The file of a saved generation: `.npy` arrays with a CRC-32 per 256 KiB block, mapped, checked on read.

Each array starts on a block boundary; the file is mapped copy-on-write (the store may change its
arrays in memory, never the file) and a block is checked at its first read (docs/performance.md).
A save's ids are read in place (`SavedIds`): each id's UTF-8 bytes and end, the CRC-32 of each id
sorted with its row for lookups in O(log n), and the rows in id order.
"""

from __future__ import annotations

import io
import mmap
import os
import zlib
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.errors import StoreError

__all__ = ["BLOCK", "MappedFile", "MappedPart", "SavedIds", "id_arrays", "packed_bounds", "write_arrays"]

BLOCK = 1 << 18  # 256 KiB: a record read checks a block or two; a 1M-chunk home has ~8k blocks
_WORKERS = max(1, min(4, os.cpu_count() or 1))  # zlib releases the GIL: long checks use threads
FileEntry = dict[str, Any]  # {"size": bytes, "crc32": hex of one big-endian CRC-32 per block}
IntArray = npt.NDArray[np.int64]


def write_arrays(path: Path, arrays: dict[str, npt.NDArray[Any]]) -> tuple[FileEntry, dict[str, list[int]]]:
    """Create `path` with each array as a `.npy` image on a block boundary, flushed to disk; return its
    size and block checksums, and each array's byte span."""
    spans: dict[str, list[int]] = {}
    with open(path, "xb") as handle:
        for name, array in arrays.items():
            handle.seek(-handle.tell() % BLOCK, os.SEEK_CUR)  # a hole: zeros taking no disk space
            start = handle.tell()
            np.lib.format.write_array(handle, np.ascontiguousarray(array), allow_pickle=False)
            spans[name] = [start, handle.tell()]
        handle.flush()
        os.fsync(handle.fileno())
        size = handle.tell()
    with open(path, "rb") as handle:  # read back from the page cache, as a reader will see it
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        view = memoryview(data)
        sums = [zlib.crc32(view[at : at + BLOCK]) for at in range(0, size, BLOCK)]
        view.release()
    return {"size": size, "crc32": np.asarray(sums, ">u4").tobytes().hex()}, spans


class MappedFile:
    """A file `write_arrays` wrote, mapped into memory, each block checked against its CRC-32 before
    first use; `StoreError` at once if its size is not the manifest's (truncated or overwritten)."""

    def __init__(self, path: Path, entry: FileEntry) -> None:
        size, sums = int(entry["size"]), np.frombuffer(bytes.fromhex(entry["crc32"]), ">u4")
        try:
            with open(path, "rb") as handle:
                found = os.fstat(handle.fileno()).st_size
                if found != size or len(sums) != -(-size // BLOCK):
                    raise StoreError(
                        f"the saved store file {str(path)!r} is damaged: {found} bytes, {size} expected "
                        f"(truncated or overwritten); restore the folder or rebuild the home"
                    )
                self.buffer = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY) if size else b""
        except OSError as exc:
            raise StoreError(f"cannot read the saved store file {str(path)!r}: {exc}") from exc
        self.path = path
        self._sums = sums.astype(np.uint32)
        self._checked = np.zeros(len(sums), np.bool_)

    def check(self, starts: npt.NDArray[Any], stops: npt.NDArray[Any]) -> None:
        """Check the unchecked blocks holding bytes `[starts[i], stops[i])` (`StoreError` if damaged)."""
        starts, stops = np.asarray(starts, np.int64), np.asarray(stops, np.int64)
        used = stops > starts
        firsts = starts[used] // BLOCK
        counts = (stops[used] - 1) // BLOCK - firsts + 1
        blocks = np.repeat(firsts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        todo = np.unique(blocks)
        todo = todo[~self._checked[todo]]
        parts = np.array_split(todo, max(1, min(_WORKERS, len(todo) // 64)))
        if len(parts) == 1:
            self._check_blocks(todo)
            return
        with ThreadPoolExecutor(len(parts)) as pool:
            list(pool.map(self._check_blocks, parts))

    def _check_blocks(self, blocks: IntArray) -> None:
        view = memoryview(self.buffer)
        for block in blocks.tolist():
            if zlib.crc32(view[block * BLOCK : (block + 1) * BLOCK]) != int(self._sums[block]):
                raise StoreError(
                    f"the saved store file {str(self.path)!r} is damaged (block {block} of "
                    f"{len(self._sums)} fails its checksum); restore the folder or rebuild the home"
                )
            self._checked[block] = True

    def part(self, name: str, start: int, stop: int) -> MappedPart:
        if not 0 <= start <= stop <= len(self.buffer):
            raise StoreError(f"the store manifest places {name!r} outside {str(self.path)!r}")
        return MappedPart(self, name, start, stop)


class MappedPart:
    """One array of a `MappedFile`, read as a view of the mapping and checked through its blocks."""

    def __init__(self, file: MappedFile, name: str, start: int, stop: int) -> None:
        self.file, self.name, self.start, self.stop = file, name, start, stop
        self.offset = start  # where the array's data begins (after the header), once `array` read it
        self._array: npt.NDArray[Any] | None = None
        self._all_checked = False

    def array(self) -> npt.NDArray[Any]:
        """The array, its header read unchecked (checking its block would read it at every open)."""
        if self._array is None:
            stream = io.BytesIO(memoryview(self.file.buffer)[self.start : min(self.stop, self.start + BLOCK)])
            fmt = np.lib.format
            try:
                version = fmt.read_magic(stream)
                read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
                shape, fortran, dtype = read(stream)
                count = int(np.prod(shape, dtype=np.int64))
                self.offset = self.start + stream.tell()
                if fortran or dtype.hasobject or self.offset + count * dtype.itemsize != self.stop:
                    raise ValueError("the header does not describe the array")
            except ValueError as exc:
                raise StoreError(
                    f"the saved store file {str(self.file.path)!r} ({self.name}) is not an array: {exc}"
                ) from exc
            self._array = np.frombuffer(self.file.buffer, dtype, count, offset=self.offset).reshape(shape)
        return self._array

    def check(self, starts: npt.NDArray[Any], stops: npt.NDArray[Any]) -> None:
        """Check the blocks holding bytes `[starts[i], stops[i])` of the array's data."""
        if not self._all_checked:
            self.array()
            self.file.check(self.offset + starts, self.offset + stops)

    def check_all(self) -> None:
        if not self._all_checked:
            self.file.check(np.array([self.start]), np.array([self.stop]))
            self._all_checked = True


def packed_bounds(stops: MappedPart, data: MappedPart, rows: IntArray) -> tuple[IntArray, IntArray]:
    """Where entries `rows` of a saved packed buffer (`data`, each entry ending at `stops[row]`) start
    and stop, every block they lie in checked first."""
    ends = stops.array()
    item = ends.itemsize
    before = np.maximum(rows - 1, 0)
    stops.check(before * item, (rows + 1) * item)
    starts = np.where(rows > 0, ends[before], 0).astype(np.int64)
    finish = ends[rows].astype(np.int64)
    data.check(starts, finish)
    return starts, finish


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
    """Ids by row and rows by id over a save's mapped id arrays (`id_arrays` wrote them); the store reads
    ids through this until its BM25 index is loaded."""

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
