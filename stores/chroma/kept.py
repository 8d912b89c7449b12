"""Every record's text and metadata, packed, kept beside a Chroma collection (server or folder).

A hybrid or lexical search over HTTP used to end with a second round trip: one `get` of the final
page's documents, which costs a Chroma server about 1.9 ms whatever it returns (and an embedded
folder about 1.1 ms of a 4 ms hybrid search; its sidecar saves the records with the rest:
`stores.chroma.kept_file`). The sidecar
(`stores.chroma.lexical.Sidecar`) already reads every record's text and metadata to build the BM25
index and the filter columns, and is checked against the collection's state token on every search, so
it keeps them too (`KeptRecords`), and the page is assembled from them without asking Chroma.

The records live in the numpy store's packed buffer (`stores.numpy.records.PackedRecords`: the text's
UTF-8 bytes, the metadata's values in `marshal`, its key sequence by number, one or nine bytes of
length, and two 4-byte offsets per record), with a dict from id to row and a list of ids beside it
(about 70 bytes a record; the id strings themselves are the filter columns'). Measured with
`tracemalloc` (four metadata keys: a path, an int, a title, a list of two headings): 163 bytes a
record for a 34-byte text, 1,134 bytes for a 1,005-byte chunk, so about 130 bytes beyond the text.
A Python `str` and `dict` per record would take two to three times as much for short chunks. Keeping
them adds 33-63 ms for 10,000 chunks of 1 KB to a rebuild of the sidecar, whose index and columns take
470-640 ms (besides reading the records from Chroma).

Only records this store wrote, or that follow its layout (`stores.chroma.records.decode_fields`), are
kept: a record another tool wrote is read from Chroma and checked as any such record is
(`trusted=False` below).

Rows are dense like the numpy store's: a delete moves the last rows into the holes.

Example:
    >>> kept = KeptRecords()
    >>> kept.write(["a", "b"], ["red", "blue"], [{"n": 1}, {}])
    >>> kept.read(["b", "missing"])
    {'b': ('blue', {})}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from stores.chroma.records import META, decode_fields, decode_metadata, decode_text
from stores.chroma.search import Row
from stores.numpy.compaction import compaction
from stores.numpy.records import PackedRecords, Record

__all__ = ["KeptRecords", "Page", "page_of"]


class KeptRecords:
    """Text and metadata by id, packed (see the module docstring).

    Example:
        >>> kept = KeptRecords()
        >>> kept.write(["a"], ["text"], [{"tags": ["x"]}], trusted=[False])
        >>> len(kept), kept.read(["a"])
        (0, {})
    """

    def __init__(self) -> None:
        self._packed = PackedRecords()
        self._ids: list[str] = []  # row -> id
        self._rows: dict[str, int] = {}  # id -> row

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._rows

    @property
    def nbytes(self) -> int:
        """Bytes of the packed buffer and its offsets (the id dict and list not counted)."""
        return self._packed.nbytes

    def write(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[dict[str, Any]],
        trusted: Sequence[bool] | None = None,
    ) -> None:
        """Insert or replace the records of `ids` (distinct ids, as a store's write holds them).

        `trusted[i]` False: record `i` did not follow this store's layout; it is forgotten instead
        (a search reads it from Chroma). None: all follow it.
        """
        keep = [True] * len(ids) if trusted is None else trusted
        dropped = [doc_id for doc_id, kept in zip(ids, keep, strict=True) if not kept]
        if dropped:
            self.delete(dropped)
        slots: list[int] = []
        records: list[Record] = []
        for doc_id, text, metadata, kept in zip(ids, texts, metadatas, keep, strict=True):
            if not kept:
                continue
            row = self._rows.get(doc_id)
            if row is None:
                row = self._rows[doc_id] = len(self._ids)
                self._ids.append(doc_id)
            slots.append(row)
            records.append((text, metadata))
        if slots:
            self._packed.write(np.asarray(slots, np.int64), records)

    def delete(self, ids: Iterable[str]) -> int:
        """Forget `ids` (unknown ones ignored); returns how many were held."""
        found = sorted({self._rows[doc_id] for doc_id in ids if doc_id in self._rows})
        if not found:
            return 0
        # The numpy store's scheme, which `PackedRecords.remove` follows.
        _, holes, tails, new_size = compaction(len(self._ids), found)
        self._packed.remove(np.asarray(found, np.int64), holes, tails, new_size)
        for row in found:
            del self._rows[self._ids[row]]
        for hole, tail in zip(holes.tolist(), tails.tolist(), strict=True):
            self._ids[hole] = self._ids[tail]
            self._rows[self._ids[hole]] = hole
        del self._ids[new_size:]
        return len(found)

    def read(self, ids: Iterable[str]) -> dict[str, Record]:
        """Text and a fresh metadata dict of each of `ids` held here (others left out)."""
        rows = self._rows
        held = [doc_id for doc_id in dict.fromkeys(ids) if doc_id in rows]
        if not held:
            return {}
        found = self._packed.read_many([rows[doc_id] for doc_id in held])
        return dict(zip(held, found, strict=True))


class Page(NamedTuple):
    """Records as `Sidecar.add` takes them."""

    ids: list[str]
    texts: list[str]
    """The documents' texts (the BM25 index reads their names and language in the metadata)."""
    metadatas: list[dict[str, Any]]
    encoded: list[str | None]
    """The metadata as JSON where the record holds it (`FilterColumns.write`)."""
    trusted: list[bool]
    """Whether the record follows this store's layout (`stores.chroma.records.decode_fields`)."""


def page_of(rows: list[Row]) -> Page:
    """The records of `rows` (read with documents and metadatas) as `Sidecar.add` takes them."""
    texts: list[str] = []
    metadatas: list[dict[str, Any]] = []
    trusted: list[bool] = []
    for row in rows:
        fields = decode_fields(row.document, row.record)
        trusted.append(fields is not None)
        if fields is None:  # another tool's record: decoded as the store's reads decode it
            fields = decode_text(row.document, row.record), decode_metadata(row.record)
        texts.append(fields[0])
        metadatas.append(fields[1])
    encoded = [(row.record or {}).get(META) for row in rows]
    return Page([row.id for row in rows], texts, metadatas, encoded, trusted)
