"""The numpy store's texts and metadata, packed into one byte buffer per store and decoded on read.

A Python `str` costs ~50 bytes beyond its characters and a metadata dict ~200 bytes even with one key,
which for short chunks is as much as the text itself. So each row keeps one record in one growing
`uint8` buffer: the text's UTF-8 bytes (lone surrogates kept), then the metadata serialised with
`marshal` (exact for every metadata type: ints of any size, floats to the bit including -0.0 and NaN,
bools, key order, lists, and strings with lone surrogates; nothing at all for empty metadata), then
the metadata's length in one byte (255, then eight bytes before it, for 255 bytes or more). Two
offsets per row say where the record lies (uint32 until the buffer passes 4 GiB, then int64).
Reading a row decodes a fresh record (a microsecond for a chunk), so callers never share a dict with
the store. Records are encoded a few thousand at a time: a bytes object per record for a whole large
batch would spread over the allocator's arenas, which stay resident for as long as any later
allocation shares them.

Values of a subclass of str, int or float (a `numpy.float64`, an `enum.StrEnum` member) are stored
as the plain value, as a save and load (JSON) or any other store gives them back: `marshal` would
misread or refuse them.

Replaced and removed records leave their bytes behind as garbage; when garbage outweighs the live
bytes the buffer is rewritten in row order (amortised O(1) per byte written). `marshal` is used only
for this process's own memory: saved folders keep their JSON format.

Example:
    >>> import numpy as np
    >>> records = PackedRecords()
    >>> records.write(np.arange(2), [("red", {"n": 1}), ("blue", {})])
    >>> records.read(1), len(records)
    (('blue', {}), 2)
"""

from __future__ import annotations

import marshal
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import MetadataValue
from stores.lexical.idmap import offsets_for

__all__ = ["PackedRecords", "Record"]

IntArray = npt.NDArray[np.int64]
Record = tuple[str, dict[str, MetadataValue]]
_COMPACT_MIN_BYTES = 1 << 20  # below this much garbage a rewrite is not worth its pass
_ENCODE_BATCH = 2048  # records encoded at a time (see the module docstring)
_LONG = 255  # trailer byte of metadata of 255 bytes or more: its length is in the 8 bytes before


_PLAIN = (str, int, float, bool)


def _plain(value: Any) -> Any:
    """`value` as an exact str, int, float or bool (or a list of them): subclasses become their value."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, str):
        return str.__str__(value)  # the characters, whatever the subclass's own __str__ says
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return value


def _plain_record(text: str, metadata: dict[str, MetadataValue]) -> Record:
    """The record with only exact built-in types, which `marshal` writes faithfully."""
    if type(text) is not str:
        text = str.__str__(text)
    for name, value in metadata.items():
        plain = type(value) in _PLAIN or (type(value) is list and all(type(v) in _PLAIN for v in value))
        if type(name) is not str or not plain:
            return text, {str.__str__(key): _plain(item) for key, item in metadata.items()}
    return text, metadata


def _encode(text: str, metadata: dict[str, MetadataValue]) -> bytes:
    text, metadata = _plain_record(text, metadata)
    meta = marshal.dumps(metadata) if metadata else b""
    size = len(meta)
    trailer = bytes((size,)) if size < _LONG else size.to_bytes(8, "little") + bytes((_LONG,))
    return b"".join((text.encode("utf-8", "surrogatepass"), meta, trailer))


def _decode(view: memoryview, start: int, stop: int) -> Record:
    size = view[stop - 1]
    end = stop - 1
    if size == _LONG:
        end -= 8
        size = int.from_bytes(view[end : stop - 1], "little")
    split = end - size
    metadata: dict[str, MetadataValue] = marshal.loads(view[split:end]) if size else {}
    return str(view[start:split], "utf-8", "surrogatepass"), metadata


class PackedRecords:
    """`(text, metadata)` per row in one byte buffer (see the module docstring).

    Rows are dense like the store's: `write` fills existing rows or appends, `remove` moves the last
    rows into the holes left by removed ones.
    """

    def __init__(self) -> None:
        self._data = np.zeros(0, np.uint8)
        self._end = 0  # bytes of `_data` in use (live records and garbage)
        self._live_bytes = 0
        self._starts: npt.NDArray[np.integer[Any]] = np.zeros(0, np.uint32)
        self._stops: npt.NDArray[np.integer[Any]] = np.zeros(0, np.uint32)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        """Bytes held: the buffer's used part and the offsets (for memory accounting)."""
        return self._end + self._starts.nbytes + self._stops.nbytes

    def read(self, row: int) -> Record:
        """The text and a fresh metadata dict of `row`."""
        return _decode(self._view(), int(self._starts[row]), int(self._stops[row]))

    def read_many(self, rows: Sequence[int]) -> list[Record]:
        """`read` for each of `rows`."""
        view, at = self._view(), np.fromiter(rows, np.int64)
        starts, stops = self._starts[at].tolist(), self._stops[at].tolist()
        return [_decode(view, start, stop) for start, stop in zip(starts, stops, strict=True)]

    def _view(self) -> memoryview:
        return memoryview(self._data)  # type: ignore[arg-type]  # numpy arrays are buffers

    def metadata(self, row: int) -> dict[str, MetadataValue]:
        """The metadata of `row` (decoded fresh)."""
        return self.read(row)[1]

    def __getitem__(self, row: int) -> dict[str, MetadataValue]:
        # Indexing yields metadata: `MetadataColumns.mask` reads rows it must settle in Python this way.
        return self.metadata(row)

    def write(self, rows: IntArray, records: Sequence[Record]) -> None:
        """Store `records[i]` at `rows[i]`: existing rows are replaced, rows up to `len(self)` appended."""
        if not len(rows):
            return
        blobs, length_parts = [], []
        for begin in range(0, len(records), _ENCODE_BATCH):
            encoded = [_encode(text, metadata) for text, metadata in records[begin : begin + _ENCODE_BATCH]]
            length_parts.append(np.fromiter(map(len, encoded), np.int64, count=len(encoded)))
            blobs.append(b"".join(encoded))
        lengths = np.concatenate(length_parts)
        total = int(lengths.sum())
        self._reserve_rows(int(rows.max()) + 1)
        self._reserve_bytes(self._end + total)
        at = self._end
        for blob in blobs:
            self._data[at : at + len(blob)] = np.frombuffer(blob, np.uint8)
            at += len(blob)
        replaced = rows[rows < self._size]
        self._live_bytes -= int((self._stops[replaced] - self._starts[replaced]).sum())
        stops = self._end + np.cumsum(lengths)
        self._starts[rows] = stops - lengths
        self._stops[rows] = stops
        self._end += total
        self._live_bytes += total
        self._size = max(self._size, int(rows.max()) + 1)
        self._maybe_compact()

    def remove(self, rows: IntArray, holes: IntArray, tails: IntArray, new_size: int) -> None:
        """Drop `rows`; row `tails[i]` moves to `holes[i]`, and the rows shrink to `new_size`."""
        self._live_bytes -= int((self._stops[rows] - self._starts[rows]).sum())
        self._starts[holes] = self._starts[tails]
        self._stops[holes] = self._stops[tails]
        self._size = new_size
        self._maybe_compact()
        if len(self._starts) > 2 * max(new_size, 1024):
            self._resize_rows(max(new_size + new_size // 4, 64))  # give memory back after large deletes

    def _reserve_rows(self, size: int) -> None:
        if size > len(self._starts):
            self._resize_rows(max(size, len(self._starts) * 3 // 2, 64))

    def _resize_rows(self, capacity: int) -> None:
        for name in ("_starts", "_stops"):
            grown = np.zeros(capacity, getattr(self, name).dtype)
            grown[: self._size] = getattr(self, name)[: self._size]
            setattr(self, name, grown)

    def _reserve_bytes(self, size: int) -> None:
        self._starts, self._stops = offsets_for(self._starts, size), offsets_for(self._stops, size)
        if size > len(self._data):
            # np.empty: the spare tail takes no resident memory until written.
            grown = np.empty(max(size, len(self._data) * 3 // 2, 4096), np.uint8)
            grown[: self._end] = self._data[: self._end]
            self._data = grown

    def _maybe_compact(self) -> None:
        garbage = self._end - self._live_bytes
        if garbage >= _COMPACT_MIN_BYTES and garbage > self._live_bytes:
            self.compact()

    def compact(self) -> None:
        """Rewrite the buffer with the live records only, in row order."""
        view = self._view()
        starts, stops = self._starts[: self._size], self._stops[: self._size]
        blob = b"".join([view[a:b] for a, b in zip(starts.tolist(), stops.tolist(), strict=True)])
        lengths = stops - starts
        self._data = np.frombuffer(blob, np.uint8).copy()
        self._stops[: self._size] = np.cumsum(lengths)
        self._starts[: self._size] = self._stops[: self._size] - lengths
        self._end = self._live_bytes = len(blob)

    def all(self) -> tuple[list[str], list[dict[str, MetadataValue]]]:
        """Texts and metadata of every row, in row order (for saving)."""
        records = self.read_many(range(self._size))
        return [text for text, _ in records], [metadata for _, metadata in records]
