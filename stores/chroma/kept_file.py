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

The loaded records are read-only: the sidecar's first write turns them into `KeptRecords`
(`SavedRecords.to_kept`), which reads every kept record once.

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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

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


def _write_texts(path: Path, data: npt.NDArray[np.uint8]) -> None:
    staged = path.with_name(f".{path.name}.tmp")
    try:
        write_new(staged, lambda handle: np.save(handle, data, allow_pickle=False))
        os.replace(staged, path)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise


def save_records(records: KeptRecords | SavedRecords, columns: FilterColumns, folder: Path) -> None:
    """Save `records` in `folder`, in the row order of `columns` (saved there too), atomically.

    Raises:
        StoreError: The folder cannot be written.
    """
    ids = columns.ids
    held = records.read(ids)
    texts = [held[doc_id][0].encode("utf-8", "surrogatepass") if doc_id in held else b"" for doc_id in ids]
    offsets = np.zeros(len(ids) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, texts), np.int64, len(ids)), out=offsets[1:])
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
        "kept": np.fromiter((doc_id in held for doc_id in ids), np.bool_, len(ids)),
        "crc": np.fromiter(map(_check, ids, texts), np.uint32, len(ids)),
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # The texts first, under a new name: the header that names them is replaced last.
        _write_texts(folder / name, np.frombuffer(b"".join(texts), np.uint8))
        write_arrays(folder / FILE, arrays)
        for old in folder.glob(f"{_TEXTS_PREFIX}*.npy"):
            if old.name != name:
                old.unlink(missing_ok=True)
        sync_folder(folder)
    except OSError as exc:
        raise StoreError(f"could not save the kept records to {str(folder)!r}: {exc}") from exc


class SavedRecords:
    """Kept records loaded from a save (see the module docstring); read-only.

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

    def __len__(self) -> int:
        return int(np.count_nonzero(self._kept))

    def __contains__(self, doc_id: object) -> bool:
        row = self._columns.row_of(doc_id) if isinstance(doc_id, str) else None
        return row is not None and bool(self._kept[row])

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

    def read(self, ids: Iterable[str]) -> dict[str, Record]:
        """Text and a fresh metadata dict of each of `ids` kept here whose row checks (others left out)."""
        found: dict[str, Record] = {}
        for doc_id in dict.fromkeys(ids):
            row = self._columns.row_of(doc_id)
            if row is None or not self._kept[row]:
                continue
            raw = self._data[int(self._offsets[row]) : int(self._offsets[row + 1])].tobytes()
            if _check(doc_id, raw) != int(self._crc[row]):
                continue  # damaged, or not these columns' row: Chroma is asked
            metadata = json.loads(self._columns.metadata_text(row))
            if type(metadata) is dict:
                found[doc_id] = (raw.decode("utf-8", "surrogatepass"), metadata)
        return found

    def to_kept(self) -> KeptRecords:
        """The same records in memory, which writes can change (reads every kept record once)."""
        ids = [doc_id for doc_id, kept in zip(self._columns.ids, self._kept.tolist(), strict=True) if kept]
        held = self.read(ids)
        kept_ids = [doc_id for doc_id in ids if doc_id in held]
        records = KeptRecords()
        records.write(kept_ids, [held[i][0] for i in kept_ids], [held[i][1] for i in kept_ids])
        return records
