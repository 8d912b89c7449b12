"""The file of a saved generation: written with a CRC-32 per block, mapped into memory, checked on read.

A numpy store's save is one file of `.npy` arrays (`write_arrays`), each starting on a `BLOCK`
boundary; the writer records the CRC-32 of each `BLOCK` bytes as it goes and flushes the file to
disk. Opening maps the file (`mmap`, copy-on-write: the store may change its arrays in memory, never
the file) in constant time, whatever its size; `MappedFile.check` then verifies the blocks a read is
about to use, each once per process, and raises `StoreError` naming the file when one does not
match. So opening costs the same at 10k and 1M chunks; a read pays for the blocks it touches (zlib's
CRC-32 runs at ~2 GB/s on one core here: 0.1 ms a block), and a full check of an array (the vectors,
before the first search scans them) costs one pass at that speed, split between two threads.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "arrays.bin"
    >>> entry, spans = write_arrays(path, {"a": np.arange(3), "b": np.ones(2, np.float32)})
    >>> mapped = MappedFile.open(path, entry)
    >>> mapped.part("a", *spans["a"]).array().tolist(), spans["b"][0]
    ([0, 1, 2], 262144)
"""

from __future__ import annotations

import io
import mmap
import os
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from rag.errors import StoreError

__all__ = ["BLOCK", "FileEntry", "MappedFile", "MappedPart", "write_arrays"]

_WORKERS = max(1, min(4, os.cpu_count() or 1))
_PARALLEL_BLOCKS = 64  # a file of 16 MiB or more is checked by several threads
BLOCK = 1 << 18  # 256 KiB: a record read checks a block or two; a 1M-chunk home has ~8k blocks
FileEntry = dict[str, Any]  # {"size": bytes, "crc32": hex of one big-endian CRC-32 per block}


class _Summing:
    """A file handle that keeps the CRC-32 of each `BLOCK` of what is written through it."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle
        self.sums: list[int] = []
        self.size = 0
        self._crc = 0

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self._handle.write(view)
        at = 0
        while at < len(view):
            room = BLOCK - self.size % BLOCK
            part = view[at : at + room]
            self._crc = zlib.crc32(part, self._crc)
            self.size += len(part)
            at += len(part)
            if self.size % BLOCK == 0:
                self.sums.append(self._crc)
                self._crc = 0
        return len(view)

    def skip_to_block(self) -> None:
        """Advance to the next block boundary, leaving a hole (read as zeros, taking no disk space)."""
        gap = -self.size % BLOCK
        if gap:
            self._handle.seek(gap, os.SEEK_CUR)
            self._crc = zlib.crc32(bytes(gap), self._crc)
            self.size += gap
            self.sums.append(self._crc)
            self._crc = 0

    def finish(self) -> FileEntry:
        sums = self.sums + ([self._crc] if self.size % BLOCK else [])
        return {"size": self.size, "crc32": np.asarray(sums, ">u4").tobytes().hex()}


def _write_file(path: Path, fill: Callable[[_Summing], None]) -> FileEntry:
    """Create `path` (it must not exist) with what `fill` writes, flush it to disk, and return its size
    and block checksums."""
    with open(path, "xb") as handle:
        summing = _Summing(handle)
        fill(summing)
        handle.flush()
        os.fsync(handle.fileno())
    return summing.finish()


def write_arrays(path: Path, arrays: dict[str, npt.NDArray[Any]]) -> tuple[FileEntry, dict[str, list[int]]]:
    """Create `path` with every array as a `.npy` image, one after the other, each starting on a block
    boundary (so a damaged array never fails a read of another); flush it and return its size and
    block checksums, and the byte span of each array.

    One file for a whole save means one mapping, hence one file descriptor, per open store.
    """
    spans: dict[str, list[int]] = {}

    def fill(summing: _Summing) -> None:
        for name, array in arrays.items():
            summing.skip_to_block()
            start = summing.size
            np.lib.format.write_array(summing, np.ascontiguousarray(array), allow_pickle=False)
            spans[name] = [start, summing.size]

    return _write_file(path, fill), spans


class MappedFile:
    """A saved file mapped into memory, each block checked against its CRC-32 before first use."""

    def __init__(self, path: Path, buffer: mmap.mmap | bytes, sums: npt.NDArray[np.uint32]) -> None:
        self.path = path
        self.buffer = buffer
        self._sums = sums
        self._checked = np.zeros(len(sums), np.bool_)
        self._all = not len(sums)

    @classmethod
    def open(cls, path: Path, entry: FileEntry) -> MappedFile:
        """Map `path`, which the manifest says holds `entry["size"]` bytes (a size that differs, a
        truncated or grown file, is a `StoreError` now; the contents are checked as they are read)."""
        try:
            size, sums = int(entry["size"]), np.frombuffer(bytes.fromhex(entry["crc32"]), ">u4")
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"the store manifest describes {str(path)!r} wrongly: {exc}") from exc
        try:
            with open(path, "rb") as handle:
                found = os.fstat(handle.fileno()).st_size
                if found != size or len(sums) != -(-size // BLOCK):
                    raise StoreError(
                        f"the saved store file {str(path)!r} is damaged: {found} bytes, "
                        f"{size} expected (truncated or overwritten); restore the folder or rebuild the home"
                    )
                # Copy-on-write: the store's writes change its memory, never the saved file.
                buffer: mmap.mmap | bytes = (
                    mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY) if size else b""
                )
        except OSError as exc:
            raise StoreError(f"cannot read the saved store file {str(path)!r}: {exc}") from exc
        return cls(path, buffer, sums.astype(np.uint32))

    @property
    def size(self) -> int:
        return len(self.buffer)

    @property
    def checked(self) -> bool:
        """Whether every block has been checked."""
        return self._all

    def check(self, start: int, stop: int) -> None:
        """Check the blocks holding bytes `[start, stop)` (once each).

        Raises:
            StoreError: a block does not match its checksum (the file is damaged).
        """
        if self._all or stop <= start:
            return
        first, last = start // BLOCK, (stop - 1) // BLOCK + 1
        todo = np.flatnonzero(~self._checked[first:last])
        for block in (todo + first).tolist():
            self._check_block(block)

    def check_blocks_of(self, starts: npt.NDArray[Any], stops: npt.NDArray[Any]) -> None:
        """`check` for the byte ranges `[starts[i], stops[i])` (each within a block or two)."""
        if self._all or not len(starts):
            return
        nonempty = stops > starts
        firsts = starts[nonempty].astype(np.int64) // BLOCK
        lasts = (stops[nonempty].astype(np.int64) - 1) // BLOCK
        blocks = np.unique(np.concatenate((firsts, lasts)))
        for block in blocks[~self._checked[blocks]].tolist():
            self._check_block(block)
        wide = lasts > firsts + 1  # ranges spanning three blocks or more: the middle ones too
        for first, last in zip(firsts[wide].tolist(), lasts[wide].tolist(), strict=True):
            self.check(first * BLOCK, last * BLOCK)

    def check_all(self) -> None:
        """Check every block not yet checked."""
        if not self._all:
            self.check_span(0, self.size)
            self._all = True

    def check_span(self, start: int, stop: int) -> None:
        """`check` for a long span: its blocks split between threads (zlib releases the GIL)."""
        if self._all or stop <= start:
            return
        first, last = start // BLOCK, (stop - 1) // BLOCK + 1
        todo = np.flatnonzero(~self._checked[first:last]) + first
        workers = min(_WORKERS, len(todo) // _PARALLEL_BLOCKS)
        if workers > 1:
            parts = np.array_split(todo, workers)
            with ThreadPoolExecutor(max_workers=workers - 1) as pool:
                futures = [pool.submit(self._check_blocks, part) for part in parts[1:]]
                self._check_blocks(parts[0])
                for future in futures:
                    future.result()
        else:
            self._check_blocks(todo)

    def part(self, name: str, start: int, stop: int) -> MappedPart:
        """The array `name` stored in bytes `[start, stop)` (`write_arrays`)."""
        if not 0 <= start <= stop <= self.size:
            raise StoreError(f"the store manifest places {name!r} outside {str(self.path)!r}")
        return MappedPart(self, name, start, stop)

    def _check_blocks(self, blocks: npt.NDArray[np.intp]) -> None:
        for block in blocks.tolist():
            self._check_block(block)

    def _check_block(self, block: int) -> None:
        view = memoryview(self.buffer)[block * BLOCK : (block + 1) * BLOCK]
        if zlib.crc32(view) != int(self._sums[block]):
            raise StoreError(
                f"the saved store file {str(self.path)!r} is damaged (block {block} of "
                f"{len(self._sums)} fails its checksum); restore the folder or rebuild the home"
            )
        self._checked[block] = True


class MappedPart:
    """One array of a `MappedFile`: its bytes `[start, stop)`, checked through the file's blocks."""

    def __init__(self, file: MappedFile, name: str, start: int, stop: int) -> None:
        self.file = file
        self.path = f"{file.path} ({name})"  # what errors name
        self._start, self._stop = start, stop
        self.offset = start  # where the array's data begins in the file (after the header), set by `array`

    def check_blocks_of(self, starts: npt.NDArray[Any], stops: npt.NDArray[Any]) -> None:
        """`MappedFile.check_blocks_of` (positions in the whole file: add `offset`)."""
        self.file.check_blocks_of(starts, stops)

    def check_all(self) -> None:
        """Check every block of the array."""
        self.file.check_span(self._start, self._stop)

    def array(self) -> npt.NDArray[Any]:
        """The array, as a view of the mapping.

        The header is not checked against its block's checksum here (that would read the block at
        every open); it must describe exactly the array's span, and any read of the data checks the
        blocks it uses.
        """
        head = memoryview(self.file.buffer)[self._start : min(self._stop, self._start + BLOCK)]
        try:
            stream = io.BytesIO(head)
            version = np.lib.format.read_magic(stream)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
            count = int(np.prod(shape, dtype=np.int64))
            if (
                fortran
                or dtype.hasobject
                or stream.tell() + count * dtype.itemsize != self._stop - self._start
            ):
                raise ValueError("the header does not describe the array")
        except ValueError as exc:
            raise StoreError(f"the saved store file {self.path!r} is not a readable array: {exc}") from exc
        self.offset = self._start + stream.tell()
        return np.frombuffer(self.file.buffer, dtype, count, offset=self.offset).reshape(shape)
