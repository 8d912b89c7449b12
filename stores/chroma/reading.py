"""How `ChromaVectorStore` decides which records a filter selects, and answers `get` and `count`.

A filter is evaluated in one of three places, always with the same answer (the numpy store's):

- The filter columns of the sidecar (`stores.chroma.columns`, kept by `stores.chroma.lexical`): a numpy
  mask, then Chroma is asked for those ids only (or not at all: an empty selection makes no call). An
  embedded folder or an in-process store is written by this process only, so its columns are always
  current and always used. A store on a server (or a client you made) uses them when they are held
  and the collection's state token still matches (one round trip), and builds them (one full read)
  for a filter Chroma cannot evaluate alone, or once Chroma's `where` clauses have cost as much time
  as that read (rent or buy, `_columns_due`); otherwise Chroma's `where` answers, as it costs no read.
- The exact copy (`stores.chroma.mirror`) while it is current (server and client stores).
- Chroma's `where` (`stores.chroma.filters`), with the Python check for the part Chroma cannot do.

Rows read by ids after the columns chose them are checked again on server and client stores, where
another process may have changed a record between the token check and the read: an answer never holds
a record that does not match.

A filtered vector search on a server store that holds neither columns nor an exact copy sends its
`where` alone, without first reading the collection's metadata for the keys other processes made
opaque (`guarded_where`): one request, as raw chromadb makes.

The store mixes this class in; it holds the state named below (set by `ChromaVectorStore.__init__`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rag.documents import Document
from rag.filters import Comparison, Filter, Normal, as_filter, holds
from rag.store_get import GetRequest
from stores.chroma.client import Connection
from stores.chroma.columns import FilterColumns, Selection
from stores.chroma.filters import ChromaFilter, Where, compile_filter
from stores.chroma.lexical import ChromaLexical
from stores.chroma.mirror import Mirror, Snapshot
from stores.chroma.nearest import Nearest
from stores.chroma.opaque import OpaqueKeys
from stores.chroma.records import OPAQUE, decode_metadata, key_token
from stores.chroma.search import Row, rows_from_get
from stores.locking import ReadWriteLock

__all__ = ["COLUMNS_SECONDS_PER_RECORD", "Reading", "guarded_where"]

_GET_FIELDS = ["metadatas", "documents"]
COLUMNS_SECONDS_PER_RECORD = 25e-6
"""What building a server store's sidecar (filter columns and BM25 index) costs a record: 0.24 s for
10,000 records over HTTP on 2 shared cores. The price of the columns in `Reading._columns_due`."""
_GUARDED_KEYS = 8  # more keys than this: one `$contains` per key would cost Chroma more than a read


def _keys(normal: Normal) -> set[str]:
    """Every key a filter's normal form compares."""
    keys: set[str] = set()
    todo = [normal]
    while todo:
        node = todo.pop()
        if isinstance(node, Comparison):
            keys.add(node.key)
        else:
            todo.extend(node.items)
    return keys


def guarded_where(compiled: ChromaFilter) -> Where | None:
    """`compiled.where` widened to every record holding a value Chroma could not index under a key the
    filter compares (None when the filter has no such clause or too many keys).

    A filter is compiled with the keys known to hold such values (`stores.chroma.opaque`), which
    another process may have added to since. Records holding one carry its token in `_rag_opaque`, so
    the widened clause selects every match whatever that set is now; the records the widening adds are
    the only ones the clause may wrongly select, and they are recognisable by that key (see
    `Nearest.guarded`). Costs Chroma 1-5% more than the clause alone (10,000 records over HTTP).
    """
    if compiled.where is None or compiled.normal is None:
        return None
    keys = sorted(_keys(compiled.normal))
    if not keys or len(keys) > _GUARDED_KEYS:
        return None
    return {"$or": [compiled.where, *({OPAQUE: {"$contains": key_token(name)}} for name in keys)]}


class Reading:
    """Filters, `get` and `count` for `ChromaVectorStore` (see the module docstring)."""

    _lock: ReadWriteLock
    _conn: Connection
    _collection: Any
    _name: str
    _batch_size: int
    _lexical: ChromaLexical
    _mirror: Mirror
    _nearest: Nearest
    _opaque: OpaqueKeys
    _local: bool
    _legacy: bool
    _ordered: bool
    _exact_order: bool

    if TYPE_CHECKING:  # defined by the store and `Answering`, which come after this class in the MRO

        def _current_opaque(self) -> frozenset[str]: ...

        def _copy_for(self, exact: bool, tree: Filter | None, *, build: bool = True) -> Snapshot | None: ...

        @staticmethod
        def _document(row: Row, with_embedding: bool, score: float | None = None) -> Document: ...

    def _compile(self, filter: str | Filter | None, *, known: bool = False) -> ChromaFilter:
        """`filter` compiled for this collection; with `known`, for the keys this process knows to be
        opaque, without reading the collection's metadata (see `guarded_where`)."""
        tree = as_filter(filter)
        if tree is None:
            return compile_filter(None)
        return compile_filter(
            tree,
            self._opaque.current if known else self._current_opaque(),
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
        if kept is not None or (compiled.exact and not self._columns_due()):
            return kept
        # Chroma would need the Python check (a read of the candidates' metadata) anyway, or its
        # `where` clauses have cost as much as reading the collection: read once.
        started = time.perf_counter()
        columns = self._lexical.columns()
        self._nearest.rent, self._nearest.price = 0.0, time.perf_counter() - started
        return columns

    def _columns_due(self) -> bool:
        """Whether Chroma's `where` clauses have cost as much time since the columns were last built
        as building them would (rent or buy, as for the exact copy: a process that filters a few
        times never reads the collection, one that filters often pays at most twice the best choice).
        The price is estimated from the collection's size until a build has measured it.

        Then a filter costs a state-token check and a query restricted to the matching ids, which
        in raw chromadb calls at 10,000 records over HTTP take 0.77x the `where` at 10% of them,
        0.48x at 50%, 0.99x at 1%.
        """
        price, size = self._nearest.price, self._nearest.size
        if price is None:  # never built: estimated from the size last counted
            price = None if size is None else size * COLUMNS_SECONDS_PER_RECORD
        return price is not None and self._nearest.rent >= price

    def _selection(self, compiled: ChromaFilter) -> Selection | None:
        """The records the filter matches by the filter columns, or None when Chroma's `where` decides."""
        columns = self._columns_for(compiled)
        if columns is None or compiled.tree is None:
            return None
        selection = columns.select(compiled.tree)
        selection.records = self._lexical.records_of(columns)
        return selection

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
            started = time.perf_counter()
            rows = rows_from_get(self._collection.get(where=compiled.where, include=include))
            self._nearest.rent += time.perf_counter() - started
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
