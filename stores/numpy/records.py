"""The numpy store's texts and metadata, packed into one byte buffer and decoded on read.

A record is the text's UTF-8 bytes (lone surrogates kept), the metadata, and the metadata's length in
one byte (255, then eight bytes before it, for 255 bytes or more). Metadata is the LEB128 number of
its key sequence in a table the records share (`_KeySets`) and its values serialised with `marshal`
(format 4; exact for every metadata type); empty metadata takes no byte. The memory layout, and when
a row's start is kept, are described in docs/exactness.md.
"""

from __future__ import annotations

import marshal
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import MetadataValue
from stores.lexical.idmap import offsets_for
from stores.numpy.files import MappedPart, packed_bounds

__all__ = ["PackedRecords", "Record"]

IntArray = npt.NDArray[np.int64]
Record = tuple[str, dict[str, MetadataValue]]
_COMPACT_MIN_BYTES = 1 << 20  # below this much garbage a rewrite is not worth its pass
_ENCODE_BATCH = 2048  # a bytes object per record of a large batch would scatter over allocator arenas
_LONG = 255  # trailer byte of metadata of 255 bytes or more: its length is in the 8 bytes before
_MAX_KEY_SETS = 4096  # distinct key sequences numbered (see `_KeySets`); a number takes two bytes at most
_BYTES = [bytes((i,)) for i in range(256)]
_MARSHAL_VERSION = 4
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


def _varint(number: int) -> bytes:
    """`number` (below 2**14) in LEB128: seven bits a byte, low first, a high bit on all but the last."""
    return _BYTES[number] if number < 0x80 else bytes(((number & 0x7F) | 0x80, number >> 7))


def _read_varint(view: memoryview, at: int) -> tuple[int, int]:
    """The LEB128 number at `view[at]`, and where the bytes after it begin."""
    number = shift = 0
    while True:
        byte = view[at]
        at += 1
        number |= (byte & 0x7F) << shift
        if byte < 0x80:
            return number, at
        shift += 7


class _KeySets:
    """The distinct key sequences of the metadata written so far, numbered from 1; past
    `_MAX_KEY_SETS` of them, number 0: the keys go into the record."""

    def __init__(self, keys: list[tuple[str, ...]] | None = None) -> None:
        self.keys = keys or []
        self._numbers = {names: i + 1 for i, names in enumerate(self.keys)}

    def number(self, keys: tuple[str, ...]) -> int:
        found = self._numbers.get(keys)
        if found is None:
            if len(self.keys) >= _MAX_KEY_SETS:
                return 0
            self.keys.append(keys)
            found = self._numbers[keys] = len(self.keys)
        return found

    def encode(self, text: str, metadata: dict[str, MetadataValue]) -> bytes:
        """The record's bytes (see the module docstring)."""
        text, metadata = _plain_record(text, metadata)
        meta = b""
        if metadata:
            number = self.number(tuple(metadata))
            values = tuple(metadata.values()) if number else metadata
            meta = _varint(number) + marshal.dumps(values, _MARSHAL_VERSION)
        size = len(meta)
        trailer = _BYTES[size] if size < _LONG else size.to_bytes(8, "little") + _BYTES[_LONG]
        return b"".join((text.encode("utf-8", "surrogatepass"), meta, trailer))

    def decode(self, view: memoryview, start: int, stop: int) -> Record:
        """The record in `view[start:stop]`, with a fresh metadata dict."""
        size = view[stop - 1]
        end = stop - 1
        if size == _LONG:
            end -= 8
            size = int.from_bytes(view[end : stop - 1], "little")
        split = end - size
        text = str(view[start:split], "utf-8", "surrogatepass")
        if not size:
            return text, {}
        number, at = _read_varint(view, split)
        found = marshal.loads(view[at:end])
        return text, dict(zip(self.keys[number - 1], found, strict=True)) if number else found


class PackedRecords:
    """`(text, metadata)` per row in one byte buffer; `remove` moves the last rows into the holes.

    Example:
        >>> records = PackedRecords()
        >>> records.write(np.arange(2), ["red", "blue"], [{"n": 1}, {}])
        >>> records.read(1), len(records)
        (('blue', {}), 2)
    """

    def __init__(self) -> None:
        self._keys = _KeySets()
        self._data = np.zeros(0, np.uint8)
        self._end = 0  # bytes of `_data` in use (live records and garbage)
        self._live_bytes = 0
        # Where each row's record starts (empty while `_in_order`) and stops.
        self._starts: npt.NDArray[np.integer[Any]] = np.zeros(0, np.uint32)
        self._stops: npt.NDArray[np.integer[Any]] = np.zeros(0, np.uint32)
        self._in_order = True
        self._size = 0
        self._files: tuple[MappedPart, MappedPart] | None = None  # (stops, data) while read from a save

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:  # the buffer's used part and the offsets, for memory accounting
        return self._end + self._starts.nbytes + self._stops.nbytes

    def read(self, row: int) -> Record:
        """The text and a fresh metadata dict of `row`."""
        return self.read_many([row])[0]

    def read_many(self, rows: Sequence[int]) -> list[Record]:
        view, at = self._view(), np.fromiter(rows, np.int64)
        self._check(at)
        decode, starts, stops = self._keys.decode, self._starts_of(at).tolist(), self._stops[at].tolist()
        return [decode(view, start, stop) for start, stop in zip(starts, stops, strict=True)]

    def _view(self) -> memoryview:
        return memoryview(self._data)  # type: ignore[arg-type]  # numpy arrays are buffers

    def metadata(self, row: int) -> dict[str, MetadataValue]:
        return self.read(row)[1]

    def write(
        self, rows: IntArray, texts: Sequence[str], metadatas: Sequence[dict[str, MetadataValue]]
    ) -> None:
        """Store `texts[i]` and `metadatas[i]` at `rows[i]`: existing rows are replaced, rows up to
        `len(self)` appended."""
        if not len(rows):
            return
        blobs, length_parts = [], []
        for begin in range(0, len(texts), _ENCODE_BATCH):
            encode, end = self._keys.encode, begin + _ENCODE_BATCH
            encoded = list(map(encode, texts[begin:end], metadatas[begin:end]))
            length_parts.append(np.fromiter(map(len, encoded), np.int64, count=len(encoded)))
            blobs.append(b"".join(encoded))
        lengths = np.concatenate(length_parts)
        total, top = int(lengths.sum()), int(rows.max()) + 1
        needed = self._end + total
        if top > len(self._stops):
            self._resize_rows(max(top, len(self._stops) * 3 // 2, 64))
        self._starts, self._stops = offsets_for(self._starts, needed), offsets_for(self._stops, needed)
        if needed > len(self._data):  # np.empty: the spare tail takes no resident memory until written
            grown = np.empty(max(needed, len(self._data) * 3 // 2, 4096), np.uint8)
            grown[: self._end] = self._data[: self._end]
            self._data = grown
        at = self._end
        for blob in blobs:
            self._data[at : at + len(blob)] = np.frombuffer(blob, np.uint8)
            at += len(blob)
        replaced = rows[rows < self._size]
        self._live_bytes -= int((self._stops[replaced] - self._starts_of(replaced)).sum())
        if not (replaced.size == 0 and np.array_equal(rows, np.arange(self._size, self._size + len(rows)))):
            self._keep_starts()  # not appended in order: each row needs its start
        stops = self._end + np.cumsum(lengths)
        if not self._in_order:
            self._starts[rows] = stops - lengths
        self._stops[rows] = stops
        self._end += total
        self._live_bytes += total
        self._size = max(self._size, top)
        self._maybe_compact()

    def remove(self, rows: IntArray, holes: IntArray, tails: IntArray, new_size: int) -> None:
        """Drop `rows`; row `tails[i]` moves to `holes[i]`, and the rows shrink to `new_size`."""
        self._live_bytes -= int((self._stops[rows] - self._starts_of(rows)).sum())
        self._keep_starts()  # the bytes of removed rows stay behind as garbage
        self._starts[holes] = self._starts[tails]
        self._stops[holes] = self._stops[tails]
        self._size = new_size
        self._maybe_compact()
        if len(self._stops) > 2 * max(new_size, 1024):
            self._resize_rows(max(new_size + new_size // 4, 64))  # give memory back after large deletes

    def _resize_rows(self, capacity: int) -> None:
        for name in ("_stops",) if self._in_order else ("_starts", "_stops"):
            grown = np.zeros(capacity, getattr(self, name).dtype)
            grown[: self._size] = getattr(self, name)[: self._size]
            setattr(self, name, grown)

    def _maybe_compact(self) -> None:
        garbage = self._end - self._live_bytes
        if garbage >= _COMPACT_MIN_BYTES and garbage > self._live_bytes:
            self.compact()

    def compact(self) -> None:
        """Rewrite the buffer with the live records only, in row order."""
        data, stops = self.packed()
        self._data = data.copy()
        self._stops[: self._size] = stops
        self._starts, self._in_order = np.zeros(0, self._stops.dtype), True  # back to back again
        self._end = self._live_bytes = len(data)

    def packed(self) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        """The live records back to back in row order, and where each one stops (for saving)."""
        self._check(np.arange(self._size))
        stops = self._stops[: self._size].astype(np.int64)
        if self._in_order:
            return self._data[: int(stops[-1]) if self._size else 0], stops
        view = self._view()
        starts = self._starts_of(np.arange(self._size))
        blob = b"".join([view[a:b] for a, b in zip(starts.tolist(), stops.tolist(), strict=True)])
        return np.frombuffer(blob, np.uint8), np.cumsum(stops - starts, dtype=np.int64)

    @classmethod
    def saved(cls, parts: Mapping[str, MappedPart], keys: list[tuple[str, ...]]) -> PackedRecords:
        """Records over a save's mapped files (`packed` wrote them), each checked as it is read."""
        data, stops = parts["records.npy"], parts["record_stops.npy"]
        records = cls()
        records._keys = _KeySets(keys)
        records._data, records._stops = data.array(), stops.array()
        records._end = records._live_bytes = len(records._data)
        records._size = len(records._stops)
        records._files = (stops, data)
        return records

    def key_sets(self) -> list[tuple[str, ...]]:
        return list(self._keys.keys)

    def check_all(self) -> None:
        """Check every saved block the records lie in, then stop checking (before a write changes them)."""
        if self._files is not None:
            for part in self._files:
                part.check_all()
            self._files = None

    def _check(self, rows: IntArray) -> None:
        """Check the saved blocks holding the records of `rows` (while they are read from a save)."""
        if self._files is not None and len(rows):
            packed_bounds(*self._files, rows)

    def _starts_of(self, rows: IntArray) -> npt.NDArray[np.integer[Any]]:
        if not self._in_order:
            return self._starts[rows]
        return np.where(rows > 0, self._stops[rows - 1], 0).astype(self._stops.dtype)

    def _keep_starts(self) -> None:
        """Hold every row's start from now on (the records are about to leave row order)."""
        if self._in_order:
            self._starts = np.zeros(len(self._stops), self._stops.dtype)
            self._starts[: self._size] = self._starts_of(np.arange(self._size))
            self._in_order = False
