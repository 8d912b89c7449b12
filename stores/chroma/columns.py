"""Every record's metadata as numpy columns beside a Chroma collection, so filters never need `where`.

Chroma evaluates a `where` clause in SQLite at a cost that grows with the collection whatever the
filter's selectivity (about 17 ms for 10% of 20k records, 87 ms for a string ordering over the two
order codes), while restricting a query to given ids (`query(..., ids=[...])`) is cheap (about 5 ms
for 10,000 ids at 20k). `FilterColumns` holds each record's id and exact metadata (the numpy store's
own `stores.numpy.columns.MetadataColumns`, the reference for what a filter means), so a filter is a
boolean mask computed in numpy and Chroma is asked only for those ids, or nothing at all.

The columns live in the lexical sidecar (`stores.chroma.lexical`): one read of the collection builds
the BM25 index and the columns together, the store's own writes update both, and an embedded folder
saves both under the collection's state token (`FILE` in the token's folder). The save holds the
encoded columns themselves (`stores.numpy.columns_file`) beside the packed ids and metadata texts, so
the first filtered query of a new process (each `rag query --filter ...`) loads them without parsing
or encoding any metadata: about 9x faster than encoding again at 100,000 records. A save of the first
version (`LEGACY_FILE`: JSON texts) is read the old way once and rewritten in this format; a damaged
save is not loaded (the sidecar is rebuilt from the collection).

Rows are dense as in the numpy store: a delete moves the last rows into the holes. Each row keeps its
metadata as compact JSON (a third of the memory a dict takes), decoded only for the rows the columns
cannot settle alone (integers beyond 2**53) and for rows rewritten or removed.

Example:
    >>> from rag.filters import parse
    >>> columns = FilterColumns()
    >>> columns.write(["a", "b"], [{"date": "2023-05-01"}, {"date": "2021-01-01"}])
    >>> columns.matching_ids(parse("date >= '2023-01-01'")), columns.count(parse("date IS NULL"))
    (['a'], 0)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from rag.errors import StoreError
from rag.filters import Filter
from stores.numpy.columns import MetadataColumns
from stores.numpy.columns_file import (
    columns_from_arrays,
    columns_to_arrays,
    pack_strings,
    read_arrays,
    read_text_array,
    unpack_strings,
    write_arrays,
)
from stores.numpy.compaction import compaction
from stores.numpy.records import Record

__all__ = ["FILE", "LEGACY_FILE", "FilterColumns", "RecordReader", "Selection"]

FILE = "filter-columns.npz"
"""The columns' file in a sidecar folder: ids, metadata texts and the encoded columns, loaded as they are."""
LEGACY_FILE = "filter-columns.json"
"""The first version's file (ids and metadata texts, the columns encoded again on load)."""


class RecordReader(Protocol):
    """Records kept beside the columns (`stores.chroma.kept.KeptRecords` or, over a save,
    `stores.chroma.kept_file.SavedRecords`, which imports this module: hence a protocol here)."""

    def read(self, ids: Iterable[str]) -> dict[str, Record]:
        """The records held for `ids` (ids not held are left out)."""
        ...


_FORMAT = "rag-chroma-filter-columns"
_VERSION = 2
_HEADER = "filter.header"
_log = logging.getLogger(__name__)

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def _dumps(metadata: Mapping[str, Any]) -> str:
    # ASCII escapes keep lone surrogates; Python's JSON keeps big integers, NaN and infinities exactly.
    return json.dumps(metadata, separators=(",", ":"))


class _Decoded:
    """Row -> metadata, decoded on demand (`MetadataColumns.mask` asks only for rows it cannot settle)."""

    def __init__(self, texts: list[str]) -> None:
        self._texts = texts

    def __getitem__(self, row: int) -> dict[str, Any]:
        decoded: dict[str, Any] = json.loads(self._texts[row])
        return decoded


class Selection:
    """The records a filter selects, by the filter columns: how many, their ids, and membership.

    Valid while the columns do not change (the store's lock keeps writes out of a search).
    """

    def __init__(self, ids: list[str], rows: dict[str, int], mask: BoolArray) -> None:
        self._all_ids, self._rows, self._mask = ids, rows, mask
        self.count = int(np.count_nonzero(mask))
        """How many records match."""
        self.total = len(mask)
        """How many records the collection holds."""
        self._ids: list[str] | None = None
        self.records: RecordReader | None = None
        """The records kept beside these columns, as current (`ChromaLexical.records_of`), when held:
        a search builds the page of a broad filter from them (`stores.chroma.nearest`)."""

    @property
    def ids(self) -> list[str]:
        """The matching ids, in row order (made on first use: a large selection may not need them)."""
        if self._ids is None:
            every = self._all_ids
            self._ids = [every[row] for row in np.flatnonzero(self._mask).tolist()]
        return self._ids

    def __contains__(self, doc_id: object) -> bool:
        row = self._rows.get(doc_id) if isinstance(doc_id, str) else None
        return row is not None and bool(self._mask[row])


class FilterColumns:
    """Ids and metadata of every record of one collection, filtered in numpy (see the module docstring).

    Example:
        >>> columns = FilterColumns()
        >>> columns.write(["a"], [{"n": 1}])
        >>> columns.delete(["a", "missing"]), len(columns)
        (1, 0)
    """

    def __init__(self) -> None:
        self._columns = MetadataColumns()
        self._ids: list[str] = []  # row -> id
        self._rows: dict[str, int] = {}  # id -> row
        self._texts: list[str] = []  # row -> metadata as JSON

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._rows

    @property
    def ids(self) -> list[str]:
        """Every id, in row order (the list itself: do not change it)."""
        return self._ids

    def row_of(self, doc_id: str) -> int | None:
        """The row of `doc_id`, or None when it is not held."""
        return self._rows.get(doc_id)

    def metadata_text(self, row: int) -> str:
        """The metadata of `row` as the JSON text it is kept in."""
        return self._texts[row]

    def saved_rows(self) -> tuple[dict[str, int], list[str]]:
        """Copies of the id -> row map and of the metadata texts by row, as they are now (later writes
        leave the copies alone: `stores.chroma.kept_file.SavedRecords` keeps the rows of a save)."""
        return dict(self._rows), list(self._texts)

    # -- writing --------------------------------------------------------------------------------------

    def write(
        self,
        ids: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]],
        texts: Sequence[str | None] | None = None,
    ) -> None:
        """Insert or replace the metadata of `ids` (distinct ids, as a store's write holds them).

        `texts`: each metadata already as JSON (a record's `_rag_meta`, a save), or None where it is
        to be encoded here (encoding costs more than the rest of the write).
        """
        given = texts if texts is not None else [None] * len(ids)
        encoded = [
            _dumps(metadata) if text is None else text
            for metadata, text in zip(metadatas, given, strict=True)
        ]
        replaced = [self._rows[doc_id] for doc_id in ids if doc_id in self._rows]
        if replaced:
            rows = np.asarray(replaced, np.int64)
            self._columns.clear(rows, [json.loads(self._texts[row]) for row in replaced])
        slots: list[int] = []
        for doc_id, text in zip(ids, encoded, strict=True):
            row = self._rows.get(doc_id)
            if row is None:
                row = self._rows[doc_id] = len(self._ids)
                self._ids.append(doc_id)
                self._texts.append("")
            self._texts[row] = text
            slots.append(row)
        if slots:
            self._columns.write(np.asarray(slots, np.int64), metadatas)

    def delete(self, ids: Iterable[str]) -> int:
        """Forget `ids` (unknown ones ignored); returns how many were held."""
        found = sorted({self._rows[doc_id] for doc_id in ids if doc_id in self._rows})
        if not found:
            return 0
        dead, holes, tails, new_size = compaction(len(self._ids), found)  # the numpy store's scheme
        self._columns.remove(holes, tails, dead, new_size)
        for row in found:
            del self._rows[self._ids[row]]
        for hole, tail in zip(holes.tolist(), tails.tolist(), strict=True):
            self._ids[hole], self._texts[hole] = self._ids[tail], self._texts[tail]
            self._rows[self._ids[hole]] = hole
        del self._ids[new_size:], self._texts[new_size:]
        return len(found)

    # -- filtering ------------------------------------------------------------------------------------

    def mask(self, tree: Filter) -> BoolArray:
        """Which rows match `tree` (exactly `rag.filters.matches` on each row's metadata)."""
        return self._columns.mask(tree, len(self._ids), _Decoded(self._texts))

    def select(self, tree: Filter) -> Selection:
        """The records matching `tree`."""
        return Selection(self._ids, self._rows, self.mask(tree))

    def matching_ids(self, tree: Filter) -> list[str]:
        """The ids matching `tree`, in row order."""
        return self.select(tree).ids

    def count(self, tree: Filter) -> int:
        """How many records match `tree`."""
        return int(np.count_nonzero(self.mask(tree)))

    def accepted(self, ids: Sequence[str], tree: Filter) -> list[str]:
        """Those of `ids` held here whose record matches `tree`, in the given order."""
        mask = self.mask(tree)
        rows = self._rows
        return [doc_id for doc_id in ids if doc_id in rows and mask[rows[doc_id]]]

    # -- files ----------------------------------------------------------------------------------------

    def save(self, folder: Path) -> None:
        """Write ids, metadata texts and the encoded columns into `folder / FILE`, atomically (a crash
        keeps the old file)."""
        arrays = columns_to_arrays(self._columns)
        header = {"format": _FORMAT, "version": _VERSION, "rows": len(self._ids)}
        arrays[_HEADER] = np.frombuffer(json.dumps(header).encode("ascii"), np.uint8)
        arrays["ids"], arrays["ids_ends"] = pack_strings(self._ids)
        arrays["texts"], arrays["texts_ends"] = pack_strings(self._texts)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            write_arrays(folder / FILE, arrays)
        except OSError as exc:
            raise StoreError(f"could not save the filter columns to {str(folder)!r}: {exc}") from exc

    @classmethod
    def load(cls, folder: Path) -> FilterColumns | None:
        """The columns saved in `folder`, or None when there is no readable save (derived data: the
        caller rebuilds them). A save of the first version (`LEGACY_FILE`) is read and rewritten."""
        if not (folder / FILE).exists():
            return cls._upgrade(folder)
        arrays = read_arrays(folder / FILE)
        if arrays is None:
            return None
        columns = cls()
        try:
            header = read_text_array(arrays, _HEADER)
            if (
                not isinstance(header, dict)
                or header.get("format") != _FORMAT
                or header.get("version") != _VERSION
            ):
                return None
            ids = unpack_strings(arrays["ids"], arrays["ids_ends"])
            texts = unpack_strings(arrays["texts"], arrays["texts_ends"])
            rows = dict(zip(ids, range(len(ids)), strict=True))
            if len(texts) != len(ids) or len(rows) != len(ids) or header.get("rows") != len(ids):
                return None
            columns._columns = columns_from_arrays(arrays, len(ids))
        except (KeyError, ValueError):
            return None
        columns._ids, columns._rows, columns._texts = ids, rows, texts
        return columns

    @classmethod
    def _upgrade(cls, folder: Path) -> FilterColumns | None:
        """Columns from a save of the first version (JSON texts), saved again in this one."""
        columns = cls._load_json(folder / LEGACY_FILE)
        if columns is not None:
            try:
                columns.save(folder)
                (folder / LEGACY_FILE).unlink()
            except (StoreError, OSError) as exc:
                _log.debug("the filter columns in %r stay in the first format: %s", str(folder), exc)
        return columns

    @classmethod
    def _load_json(cls, path: Path) -> FilterColumns | None:
        try:
            with path.open(encoding="utf-8") as saved:
                body = json.load(saved)
        except (OSError, ValueError):
            return None  # derived data: missing or damaged means rebuilt
        if not isinstance(body, dict) or body.get("format") != _FORMAT or body.get("version") != 1:
            return None
        ids, texts = body.get("ids"), body.get("metadata")
        if not isinstance(ids, list) or not isinstance(texts, list) or len(ids) != len(texts):
            return None
        columns = cls()
        try:
            columns.write(ids, [json.loads(text) for text in texts], texts)
        except (TypeError, ValueError):
            return None
        return columns
