"""The sidecar of one Chroma collection: its filter columns, BM25 index and kept records, which always
hold the same records (`stores.chroma.lexical` loads, rebuilds and saves it).

Example:
    >>> from stores.chroma.columns import FilterColumns
    >>> from stores.lexical.index import LexicalIndex
    >>> sidecar = Sidecar(FilterColumns(), LexicalIndex())
    >>> sidecar.add(["a"], ["reciprocal rank fusion"], [{"n": 1}])
    >>> len(sidecar), sidecar.index.search("fusion", 1)[0][0]
    (1, 'a')
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag.errors import StoreError
from stores.chroma.columns import FilterColumns
from stores.chroma.kept import KeptRecords
from stores.chroma.kept_file import SavedRecords
from stores.lexical.index import LexicalIndex

__all__ = ["Sidecar"]


class Sidecar:
    """The filter columns, the BM25 index and, over HTTP and in folders, the records themselves
    (`records`) of one collection, always holding the same records.

    A sidecar loaded from a folder may hold its columns alone at first (`whole` False): a filter needs
    nothing else, and `ChromaLexical.sidecar` loads the rest (the *lexical half*: the BM25 index and
    the kept records) from `source` when a lexical or hybrid search or a write first needs it.

    Args:
        columns: The filter columns.
        index: The BM25 index; None while the lexical half is not loaded.
        records: Text and metadata of each record, so a page needs no read from Chroma (see the
            module); None when not kept (or not loaded yet).
        source: The token folder the lexical half is still to be loaded from.
    """

    def __init__(
        self,
        columns: FilterColumns,
        index: LexicalIndex | None,
        records: KeptRecords | SavedRecords | None = None,
        source: Path | None = None,
    ) -> None:
        self.columns, self._index, self.records, self.source = columns, index, records, source

    @property
    def whole(self) -> bool:
        """Whether the lexical half (the BM25 index and the records) is loaded."""
        return self._index is not None

    @property
    def index(self) -> LexicalIndex:
        """The BM25 index (`ChromaLexical.sidecar` loads it first; the columns alone never need it)."""
        if self._index is None:
            raise StoreError("the lexical index of this sidecar is not loaded (see ChromaLexical.sidecar)")
        return self._index

    def complete(self, index: LexicalIndex, records: KeptRecords | SavedRecords | None) -> None:
        """Take the lexical half loaded from `source`."""
        self.records, self.source = records, None
        self._index = index  # last: a reader that sees `whole` sees the records too

    def __len__(self) -> int:
        return len(self.columns)

    def add(
        self,
        ids: list[str],
        texts: list[str],
        metadatas: list[dict[str, Any]],
        encoded: list[str | None] | None = None,
        trusted: list[bool] | None = None,
    ) -> None:
        """Insert or replace records (distinct ids) in every part (the sidecar must be whole).

        Args:
            ids: The records' ids.
            texts: The documents' own texts; the index reads their names and language in `metadatas`.
            metadatas: Their metadata.
            encoded: See `FilterColumns.write`.
            trusted: See `KeptRecords.write` (None: every record follows this store's layout).
        """
        index = self.index
        if isinstance(self.records, SavedRecords):
            self.records.detach()  # before the columns' rows change: the saved rows follow them
        index.add(ids, texts, metadatas)
        self.columns.write(ids, metadatas, encoded)
        if self.records is not None:
            self.records.write(ids, texts, metadatas, trusted)

    def delete(self, ids: list[str]) -> None:
        """Remove records from every part (unknown ids ignored; the sidecar must be whole)."""
        index = self.index
        if isinstance(self.records, SavedRecords):
            self.records.detach()
        index.delete(ids)
        self.columns.delete(ids)
        if self.records is not None:
            self.records.delete(ids)
