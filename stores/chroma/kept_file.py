"""The kept records of an embedded folder's sidecar, saved beside it and loaded without reading them.

An embedded store's sidecar is loaded from disk by every process (each `rag query` is one), so kept
records (`stores.chroma.kept`) that had to be read from Chroma at each open would cost more than the
final page's `get` they spare. They are saved instead in the sidecar's token folder, in two files:

- `kept-texts-<nonce>.npy`: every record's text in UTF-8 (lone surrogates kept), one after the
  other in the filter columns' row order, loaded with `mmap_mode="r"`, so an open reads none of it;
- `FILE` (`.npz`, atomic and CRC-checked like the columns' file): a header naming that `.npy` and
  its size, each row's byte offsets (`rows + 1` int64), whether the row is kept (records another
  tool wrote are not, as in memory) and a CRC-32 of each row's id and text.

The metadata is not saved again: `stores.chroma.columns.FilterColumns` keeps each record's exact
metadata as JSON by row, and a page decodes it for its own rows only. A read checks the row's CRC,
so a damaged byte, or a texts file that does not belong to these columns, leaves that record to
Chroma's `get`; a missing, old or inconsistent save makes `SavedRecords.load` answer None and the
sidecar is rebuilt. Nothing here is Python-version specific (no `marshal`, no pickle).

The loaded records stay read-only where they are: records written since live in memory in a
`KeptRecords` over them, and the saved records they replace or delete are hidden, so a write costs
what it writes (no saved record is read; the first write copies the columns' id map and list of
metadata texts, pointers only). The next save writes the merged form: runs of saved rows are copied
byte for byte with their checksums, only records written since are encoded, and the new save is
loaded as the new base (`stores.chroma.lexical`). Being a new texts file and a new header, it is as
atomic as before; a save of this form loads in older versions, and their saves load here.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> columns = FilterColumns()
    >>> columns.write(["a", "b"], [{"n": 1}, {}])
    >>> kept = KeptRecords()
    >>> kept.write(["a", "b"], ["red", "blue"], [{"n": 1}, {}])
    >>> folder = Path(tempfile.mkdtemp())
    >>> save_records(kept, columns, folder)
    >>> SavedRecords.load(folder, columns).read(["a"])
    {'a': ('red', {'n': 1})}
"""

from __future__ import annotations

import json
import os
import uuid
import zlib
from collections.abc import Iterable, Sequence
from itertools import repeat
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rag.errors import StoreError
from stores.chroma.columns import FilterColumns
from stores.chroma.kept import KeptRecords
from stores.durable import sync_folder, write_new
from stores.numpy.columns_file import read_arrays, read_text_array, write_arrays
from stores.numpy.records import Record

__all__ = ["FILE", "SavedRecords", "save_records"]

FILE = "kept-records.npz"
"""The header, offsets, kept flags and checksums of the saved records, in a sidecar's token folder."""
_TEXTS_PREFIX = "kept-texts-"
_FORMAT = "rag-chroma-kept-records"
_VERSION = 1
_INT64, _BOOL, _UINT32 = np.dtype(np.int64), np.dtype(np.bool_), np.dtype(np.uint32)


def _check(doc_id: str, text: bytes) -> int:
    """The CRC-32 of a row: its id ties the text to the columns' row, the text catches damage."""
    return zlib.crc32(text, zlib.crc32(doc_id.encode("utf-8", "surrogatepass") + b"\x00"))


class _Parts(NamedTuple):
    """What a save writes, in the columns' row order: the texts' bytes as chunks in that order, and
    each row's byte length, kept flag and `_check`."""

    chunks: list[bytes | memoryview]
    lengths: npt.NDArray[np.int64]
    kept: npt.NDArray[np.bool_]
    crc: npt.NDArray[np.uint32]


def _parts_of(records: KeptRecords, ids: list[str]) -> _Parts:
    """Every record of `records` encoded again (a sidecar built from the collection)."""
    held = records.read(ids)
    texts = [held[doc_id][0].encode("utf-8", "surrogatepass") if doc_id in held else b"" for doc_id in ids]
    return _Parts(
        list(texts),
        np.fromiter(map(len, texts), np.int64, len(ids)),
        np.fromiter((doc_id in held for doc_id in ids), np.bool_, len(ids)),
        np.fromiter(map(_check, ids, texts), np.uint32, len(ids)),
    )


def _write_texts(path: Path, chunks: list[bytes | memoryview], size: int) -> None:
    """A `.npy` file of `size` bytes (uint8) holding `chunks` one after the other, written in pieces:
    a save copies the saved texts it keeps without holding them all in memory."""
    header = {"descr": np.dtype(np.uint8).str, "fortran_order": False, "shape": (size,)}

    def write(handle: IO[bytes]) -> None:
        np.lib.format.write_array_header_1_0(handle, header)
        for chunk in chunks:
            handle.write(chunk)

    staged = path.with_name(f".{path.name}.tmp")
    try:
        write_new(staged, write)
        os.replace(staged, path)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise


def save_records(records: KeptRecords | SavedRecords, columns: FilterColumns, folder: Path) -> None:
    """Save `records` in `folder`, in the row order of `columns` (saved there too), atomically.

    Records loaded from a save are copied from it as they are, by runs of bytes, with their checksums;
    only those written since are encoded (`SavedRecords.parts`).

    Raises:
        StoreError: The folder cannot be written.
    """
    ids = columns.ids
    parts = records.parts(columns) if isinstance(records, SavedRecords) else _parts_of(records, ids)
    offsets = np.zeros(len(ids) + 1, np.int64)
    np.cumsum(parts.lengths, out=offsets[1:])
    name = f"{_TEXTS_PREFIX}{uuid.uuid4().hex}.npy"
    header = {
        "format": _FORMAT,
        "version": _VERSION,
        "rows": len(ids),
        "texts": name,
        "bytes": int(offsets[-1]),
    }
    arrays: dict[str, npt.NDArray[Any]] = {
        "header": np.frombuffer(json.dumps(header).encode("ascii"), np.uint8),
        "offsets": offsets,
        "kept": parts.kept,
        "crc": parts.crc,
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # The texts first, under a new name: the header that names them is replaced last.
        _write_texts(folder / name, parts.chunks, int(offsets[-1]))
        write_arrays(folder / FILE, arrays)
        for old in folder.glob(f"{_TEXTS_PREFIX}*.npy"):
            if old.name != name:
                old.unlink(missing_ok=True)
        sync_folder(folder)
    except OSError as exc:
        raise StoreError(f"could not save the kept records to {str(folder)!r}: {exc}") from exc


class SavedRecords:
    """Kept records loaded from a save, and the writes made since (see the module docstring).

    The saved records stay where they are (the texts memory-mapped, the metadata in the filter
    columns); records written since live in a `KeptRecords` over them, and the saved records they
    replace or delete are hidden. A write therefore costs what it writes.

    Args:
        columns: The filter columns loaded from the same folder (ids, rows and metadata).
        data: Every text's UTF-8 bytes (memory-mapped).
        offsets: Where each row's text starts; `offsets[-1]` is `len(data)`.
        kept: Whether each row is kept (False: read from Chroma).
        crc: Each row's `_check`.
    """

    def __init__(
        self,
        columns: FilterColumns,
        data: npt.NDArray[np.uint8],
        offsets: npt.NDArray[np.int64],
        kept: npt.NDArray[np.bool_],
        crc: npt.NDArray[np.uint32],
    ) -> None:
        self._columns, self._data, self._offsets, self._kept, self._crc = columns, data, offsets, kept, crc
        # The saved rows by id and their metadata texts: the columns' own until a write is about to
        # change them (`detach`), then a copy of them as saved.
        self._rows: dict[str, int] | None = None
        self._metadata: list[str] | None = None
        self._written = KeptRecords()  # records written since the load
        self._hidden: set[str] = set()  # saved records written or deleted since: never read from the save
        self._saved = int(np.count_nonzero(kept))  # kept saved records not hidden

    def __len__(self) -> int:
        return self._saved + len(self._written)

    def __contains__(self, doc_id: object) -> bool:
        if doc_id in self._written:
            return True
        if not isinstance(doc_id, str) or doc_id in self._hidden:
            return False
        row = self._row(doc_id)
        return row is not None and bool(self._kept[row])

    @property
    def written(self) -> int:
        """How many records were written since the load (held in memory beside the save)."""
        return len(self._written)

    @classmethod
    def load(cls, folder: Path, columns: FilterColumns) -> SavedRecords | None:
        """The records saved in `folder` for `columns`, or None when there is no usable save."""
        arrays = read_arrays(folder / FILE)
        if arrays is None:
            return None
        try:
            header = read_text_array(arrays, "header")
            offsets, kept, crc = arrays["offsets"], arrays["kept"], arrays["crc"]
        except (KeyError, ValueError):
            return None
        rows = len(columns)
        name = header.get("texts") if isinstance(header, dict) else None
        if (
            not isinstance(header, dict)
            or (header.get("format"), header.get("version"), header.get("rows")) != (_FORMAT, _VERSION, rows)
            or not isinstance(name, str)
            or not name.startswith(_TEXTS_PREFIX)
            or Path(name).name != name
            or (offsets.dtype, offsets.shape, kept.dtype, kept.shape) != (_INT64, (rows + 1,), _BOOL, (rows,))
            or (crc.dtype, crc.shape) != (_UINT32, (rows,))
            or int(offsets[0]) != 0
            or bool((np.diff(offsets) < 0).any())
            or int(offsets[-1]) != header.get("bytes")
        ):
            return None
        data = cls._texts(folder / name, int(offsets[-1]))
        return None if data is None else cls(columns, data, offsets, kept, crc)

    @staticmethod
    def _texts(path: Path, size: int) -> npt.NDArray[np.uint8] | None:
        try:
            # An empty array cannot be mapped; its file is still required, as proof of the save.
            data: Any = np.load(path, mmap_mode="r" if size else None, allow_pickle=False)
        except (OSError, ValueError):
            return None
        if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.shape != (size,):
            return None
        return data

    def _row(self, doc_id: str) -> int | None:
        """The saved row of `doc_id`, or None when the save has none."""
        return self._columns.row_of(doc_id) if self._rows is None else self._rows.get(doc_id)

    def detach(self) -> None:
        """Keep the saved rows apart from the columns, whose rows a write is about to change (copies
        the id map and the metadata texts' list once: no record is read)."""
        if self._rows is None:
            self._rows, self._metadata = self._columns.saved_rows()

    def write(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[dict[str, Any]],
        trusted: Sequence[bool] | None = None,
    ) -> None:
        """`KeptRecords.write`, over the save: the saved records of `ids` are hidden."""
        self.detach()
        self._hide(ids)
        self._written.write(ids, texts, metadatas, trusted)

    def delete(self, ids: Iterable[str]) -> int:
        """Forget `ids` (unknown ones ignored); returns how many were held."""
        self.detach()
        ids = list(ids)
        return self._written.delete(ids) + self._hide(ids)

    def _hide(self, ids: Iterable[str]) -> int:
        """Hide the saved records of `ids`; returns how many kept ones were not hidden yet."""
        hidden = 0
        for doc_id in ids:
            row = None if doc_id in self._hidden else self._row(doc_id)
            if row is not None:
                self._hidden.add(doc_id)
                hidden += bool(self._kept[row])
        self._saved -= hidden
        return hidden

    def read(self, ids: Iterable[str]) -> dict[str, Record]:
        """Text and a fresh metadata dict of each of `ids` held here whose saved row checks (others left
        out: a damaged row is read from Chroma)."""
        wanted = list(dict.fromkeys(ids))
        written = self._written.read(wanted)
        found: dict[str, Record] = {}
        for doc_id in wanted:
            record = written.get(doc_id)
            if record is None and doc_id not in self._hidden:
                record = self._saved_record(doc_id)
            if record is not None:
                found[doc_id] = record
        return found

    def _saved_record(self, doc_id: str) -> Record | None:
        row = self._row(doc_id)
        if row is None or not self._kept[row]:
            return None
        raw = self._data[int(self._offsets[row]) : int(self._offsets[row + 1])].tobytes()
        if _check(doc_id, raw) != int(self._crc[row]):
            return None  # damaged, or not these columns' row: Chroma is asked
        text = self._columns.metadata_text(row) if self._metadata is None else self._metadata[row]
        metadata = json.loads(text)
        return (raw.decode("utf-8", "surrogatepass"), metadata) if type(metadata) is dict else None

    def parts(self, columns: FilterColumns) -> _Parts:
        """What `save_records` writes for these records in the row order of `columns`: the saved texts
        as runs of their bytes with their saved checksums, the records written since encoded."""
        ids = columns.ids
        size = len(ids)
        if self._rows is None:
            source = np.arange(size, dtype=np.int64)  # nothing written: the saved rows themselves
        else:
            source = np.fromiter(map(self._rows.get, ids, repeat(-1)), np.int64, size)
        # Written or deleted since the load: not from the save.
        source[[row for row in map(columns.row_of, self._hidden) if row is not None]] = -1
        saved = source >= 0
        rows = source[saved]
        lengths = np.zeros(size, np.int64)
        lengths[saved] = self._offsets[rows + 1] - self._offsets[rows]
        kept, crc = np.zeros(size, np.bool_), np.zeros(size, np.uint32)
        kept[saved], crc[saved] = self._kept[rows], self._crc[rows]
        fresh: dict[int, bytes] = {}
        missing = np.flatnonzero(~saved).tolist()
        written = self._written.read([ids[row] for row in missing])
        for row in missing:  # a record written since (or another tool's, not kept)
            held = written.get(ids[row])
            text = b"" if held is None else held[0].encode("utf-8", "surrogatepass")
            fresh[row], lengths[row], kept[row] = text, len(text), held is not None
            crc[row] = _check(ids[row], text)
        return _Parts(self._chunks(source, fresh), lengths, kept, crc)

    def _chunks(self, source: npt.NDArray[np.int64], fresh: dict[int, bytes]) -> list[bytes | memoryview]:
        """The texts' bytes in row order: each run of consecutive saved rows as one slice of the save."""
        if not len(source):
            return []
        view = memoryview(self._data)  # type: ignore[arg-type]  # numpy arrays are buffers
        before = np.concatenate(([-2], source[:-1]))
        # A run of saved rows breaks where a row does not follow its predecessor in the save.
        starts = np.flatnonzero((source < 0) | (before < 0) | (source != before + 1))
        stops = np.append(starts[1:], len(source))
        chunks: list[bytes | memoryview] = []
        for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
            first = int(source[start])
            if first < 0:  # rows not from the save, one by one
                chunks.extend(fresh.get(row, b"") for row in range(start, stop))
            else:
                last = int(source[stop - 1])
                chunks.append(view[int(self._offsets[first]) : int(self._offsets[last + 1])])
        return chunks
