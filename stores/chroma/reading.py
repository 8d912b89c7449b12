"""How `ChromaVectorStore` decides which records a filter selects, and answers `get` and `count`.

A filter is evaluated in one of three places, always with the same answer (the numpy store's):

- The filter columns of the sidecar (`stores.chroma.columns`, kept by `stores.chroma.lexical`): a numpy
  mask, then Chroma is asked for those ids only (or not at all: an empty selection makes no call). An
  embedded folder or an in-process store is written by this process only, so its columns are always
  current and always used. A store on a server (or a client you made) uses them when they are held
  and the collection's state token still matches (one round trip), and builds them (one full read)
  for a filter Chroma cannot evaluate alone; otherwise Chroma's `where` answers, as it costs no read.
- The exact copy (`stores.chroma.mirror`) while it is current (server and client stores).
- Chroma's `where` (`stores.chroma.filters`), with the Python check for the part Chroma cannot do.

Rows read by ids after the columns chose them are checked again on server and client stores, where
another process may have changed a record between the token check and the read: an answer never holds
a record that does not match.

The store mixes this class in; it holds the state named below (set by `ChromaVectorStore.__init__`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rag.documents import Document
from rag.filters import Filter, as_filter, holds
from rag.store_get import GetRequest
from stores.chroma.client import Connection
from stores.chroma.columns import FilterColumns, Selection
from stores.chroma.filters import ChromaFilter, Where, compile_filter
from stores.chroma.lexical import ChromaLexical
from stores.chroma.mirror import Mirror, Snapshot
from stores.chroma.records import decode_metadata
from stores.chroma.search import Row, rows_from_get
from stores.locking import ReadWriteLock

__all__ = ["Reading"]

_GET_FIELDS = ["metadatas", "documents"]


class Reading:
    """Filters, `get` and `count` for `ChromaVectorStore` (see the module docstring)."""

    _lock: ReadWriteLock
    _conn: Connection
    _collection: Any
    _name: str
    _batch_size: int
    _lexical: ChromaLexical
    _mirror: Mirror
    _local: bool
    _legacy: bool
    _ordered: bool
    _exact_order: bool

    if TYPE_CHECKING:  # defined by the store and `Answering`, which come after this class in the MRO

        def _current_opaque(self) -> frozenset[str]: ...

        def _copy_for(self, exact: bool, tree: Filter | None, *, build: bool = True) -> Snapshot | None: ...

        @staticmethod
        def _document(row: Row, with_embedding: bool, score: float | None = None) -> Document: ...

    def _compile(self, filter: str | Filter | None) -> ChromaFilter:
        tree = as_filter(filter)
        if tree is None:
            return compile_filter(None)
        return compile_filter(
            tree,
            self._current_opaque(),
            legacy_keys=self._legacy,
            ordered=self._ordered,
            exact_order=self._exact_order,
        )

    def _fetch(self, ids: list[str], where: Where | None, *, include: Sequence[str]) -> list[Row]:
        rows: list[Row] = []
        for start in range(0, len(ids), self._batch_size):
            with self._conn.errors(f"read from the collection {self._name!r}"):
                result = self._collection.get(
                    ids=ids[start : start + self._batch_size], where=where, include=list(include)
                )
            rows.extend(rows_from_get(result))
        return rows

    def _columns_for(self, compiled: ChromaFilter) -> FilterColumns | None:
        """The filter columns if they should decide this filter (see the module docstring), else None."""
        if compiled.tree is None or compiled.matches_nothing:
            return None
        if self._local:
            return self._lexical.columns()
        kept = self._lexical.kept_columns()
        if kept is not None or compiled.exact:
            return kept
        # Chroma would need the Python check (a read of the candidates' metadata) anyway: read once.
        return self._lexical.columns()

    def _selection(self, compiled: ChromaFilter) -> Selection | None:
        """The records the filter matches by the filter columns, or None when Chroma's `where` decides."""
        columns = self._columns_for(compiled)
        if columns is None or compiled.tree is None:
            return None
        return columns.select(compiled.tree)

    def _verified(self, rows: list[Row], compiled: ChromaFilter) -> list[Row]:
        """`rows` read by ids the columns chose, without any another process changed meanwhile."""
        normal = compiled.normal
        if self._local or normal is None:
            return rows  # only this process writes, and it holds the lock
        return [row for row in rows if holds(normal, decode_metadata(row.record))]

    def _matching_ids(self, compiled: ChromaFilter, *, build: bool = True) -> list[str]:
        """Every id the filter matches, in no particular order (`build`: the copy may be built)."""
        if compiled.matches_nothing:
            return []
        selection = self._selection(compiled)
        if selection is not None:
            return selection.ids
        copy = self._copy_for(False, compiled.tree, build=build)
        if copy is not None:
            return copy.matching_ids(compiled.tree)
        include = [] if compiled.exact else ["metadatas"]
        with self._conn.errors(f"read from the collection {self._name!r}"), self._mirror.renting():
            rows = rows_from_get(self._collection.get(where=compiled.where, include=include))
        return [row.id for row in rows if compiled.accepts(decode_metadata(row.record))]

    def _get_documents(self, request: GetRequest) -> list[Document]:
        with self._lock.read():
            return self._get(request.ids, request.filter, request.limit, request.include_embeddings)

    def _get(
        self, ids: list[str] | None, filter: Filter | None, limit: int | None, include_embeddings: bool
    ) -> list[Document]:
        compiled = self._compile(filter)
        include = [*_GET_FIELDS, *(["embeddings"] if include_embeddings else [])]
        if compiled.matches_nothing or limit == 0:
            return []
        if ids is not None:
            columns = self._columns_for(compiled)
            if columns is None:
                found = {row.id: row for row in self._fetch(ids, compiled.where, include=include)}
                rows = [
                    found[i] for i in ids if i in found and compiled.accepts(decode_metadata(found[i].record))
                ]
                return [self._document(row, include_embeddings) for row in rows[:limit]]
            assert compiled.tree is not None
            ids = columns.accepted(ids, compiled.tree)
            chosen = ids if limit is None else ids[:limit]
        else:
            chosen = sorted(self._matching_ids(compiled))[:limit]
        found = {row.id: row for row in self._fetch(chosen, None, include=include)}
        rows = self._verified([found[i] for i in chosen if i in found], compiled)
        return [self._document(row, include_embeddings) for row in rows]

    def count(self, filter: str | Filter | None = None) -> int:
        """How many documents (match the filter)."""
        tree = as_filter(filter)
        with self._lock.read():
            compiled = self._compile(tree)
            if compiled.where is None and compiled.exact and not compiled.matches_nothing:
                with self._conn.errors(f"count the collection {self._name!r}"):
                    return int(self._collection.count())
            columns = self._columns_for(compiled)
            if columns is not None and compiled.tree is not None:
                return columns.count(compiled.tree)
            return len(self._matching_ids(compiled))
