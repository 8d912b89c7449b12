"""How `ChromaVectorStore` answers a `SearchRequest`: from the exact copy, Chroma's HNSW graph, or a ranking.

- The exact copy (`stores.chroma.mirror`) answers `exact=True` requests, and filtered ones while it is
  current (or once Chroma's filtering has cost as much as building it, see `Mirror.due`); it needs no
  call to Chroma.
- Otherwise a vector request is one Chroma query (`stores.chroma.nearest`), and any other mode ranks
  through `stores.ranking` with `stores.chroma.hybrid.ChromaCandidates`.
- On a server store, a filtered vector request that finds nothing held to check against the
  collection's state (no copy, no filter columns) and a filter Chroma evaluates alone is that one
  query and no other request (`_one_request`): raw chromadb's `query(where=...)`, widened so that
  keys another process made opaque since need no read of the collection's metadata first.

The store mixes this class in; it holds the state named below (set by `ChromaVectorStore.__init__`).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext, suppress
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from rag.documents import Document, SearchRequest
from rag.embeddings.base import EmbeddingModel
from rag.filters import Filter
from stores.chroma.client import Connection, background
from stores.chroma.filters import ChromaFilter, Where
from stores.chroma.hybrid import ChromaCandidates, RowsLost
from stores.chroma.lexical import (
    STATE_KEY,
    ChromaLexical,
    CollectionAccess,
    one_state_read,
    read_state_again,
)
from stores.chroma.mirror import Mirror, Snapshot, read_snapshot
from stores.chroma.mirror_files import load
from stores.chroma.nearest import Nearest
from stores.chroma.reading import guarded_where
from stores.chroma.records import decode_fields, decode_metadata, decode_text
from stores.chroma.search import KeptRow, Row, query_vector
from stores.locking import ReadWriteLock
from stores.query_vector import request_vector
from stores.ranking import named_scores, needs_ranking, rank_scored, with_cosines

__all__ = ["Answering"]

_COPY_FIELDS = ["embeddings", "metadatas", "documents"]
_ATTEMPTS = 3  # rankings of one request while documents it ranked keep being deleted


class Answering:
    """`similarity_search` for `ChromaVectorStore` (see the module docstring)."""

    _embedding: EmbeddingModel
    _lock: ReadWriteLock
    _conn: Connection
    _access: CollectionAccess
    _nearest: Nearest
    _mirror: Mirror
    _lexical: ChromaLexical
    _keep_copy: bool | None
    _copy_root: Path | None
    _local: bool
    _shared: bool
    _legacy: bool

    def _compile(self, filter: str | Filter | None, *, known: bool = False) -> ChromaFilter:
        raise NotImplementedError

    def _columns_for(self, compiled: ChromaFilter) -> object | None:
        raise NotImplementedError

    def _matching_ids(self, compiled: ChromaFilter, *, build: bool = True) -> list[str]:
        raise NotImplementedError

    def _fetch(self, ids: list[str], where: Where | None, *, include: Sequence[str]) -> list[Row]:
        raise NotImplementedError

    @staticmethod
    def _document(row: Row, with_embedding: bool, score: float | None = None) -> Document:
        embedding = row.embedding if with_embedding else None
        if type(row) is KeptRow:  # already decoded from the sidecar's records
            # `KeptRecords.read` made the metadata dict for this hit: the document may own it.
            metadata = cast("dict[str, Any]", row.record)
            return Document._trusted(row.id, row.document or "", metadata, score, embedding)
        fields = decode_fields(row.document, row.record)
        if fields is None:  # a record another tool wrote: check it as any new document
            text, metadata = decode_text(row.document, row.record), decode_metadata(row.record)
            return Document(row.id, text, metadata, score=score, embedding=embedding)
        # Checked when written and decoded fresh (`decode_fields`): the checks would only cost time.
        return Document._trusted(row.id, fields[0], fields[1], score, embedding)

    @classmethod
    def _found(cls, hits: list[tuple[Row, float]]) -> list[Document]:
        """`_document` of each vector hit (rows without embeddings), its score named `cosine`, in one
        loop: every vector search ends here."""
        trusted = Document._trusted
        found: list[Document] = []
        for row, score in hits:
            # A kept row's metadata is the caller's own, whose keys may look like the stored layout's.
            fields = None if type(row) is KeptRow else decode_fields(row.document, row.record)
            if fields is None:  # another tool's record, or one the sidecar kept
                found.append(cls._document(row, False, score).with_scores({"cosine": score}))
            else:
                found.append(trusted(row.id, fields[0], fields[1], score, None, {"cosine": score}))
        return found

    def similarity_search(self, request: SearchRequest | str) -> list[Document]:
        """The best `top_k` documents for the request's query, with `score` set (ties by id).

        Exact for small collections and `exact=True`; from Chroma's HNSW graph otherwise (see the class).
        """
        req = request if isinstance(request, SearchRequest) else SearchRequest(request)
        if req.top_k == 0:
            return []
        # Embedded once, outside the lock (writers wait only for the search), and only when the
        # search needs the vector; a lexical search never reads it (`stores.ranking`).
        vector = request_vector(req, self._embedding, lambda text: query_vector(self._embedding, text))
        query = vector if vector is not None else np.zeros(int(self._embedding.dimensions), np.float32)
        with self._lock.read():
            if req.filter is None and not req.exact and not needs_ranking(req):
                # What `_search` does for a plain vector search, without its steps that do nothing
                # here (no filter, no copy, no index; so no collection metadata read either).
                found = self._found(self._nearest.unfiltered(query, req))
            else:
                with one_state_read():
                    found = self._search(req, query)
        return found  # the scores named by `_found`, the exact copy's path or `_rank_once`

    def _search(self, req: SearchRequest, query: npt.NDArray[np.float32]) -> list[Document]:
        if req.filter is not None and not self._local and not req.exact and not needs_ranking(req):
            hits = self._one_request(req, query)
            if hits is not None:
                return self._found(hits)
        compiled = self._compile(req.filter)
        if compiled.matches_nothing:
            return []
        copy = self._copy_for(req.exact, compiled.tree)
        if not needs_ranking(req):
            if copy is not None:
                found = copy.top(query, copy.rows(compiled.tree), req)
                return [
                    copy.document(row, score).with_scores(named_scores(req, score)) for row, score in found
                ]
            with self._renting(compiled):
                hits = self._nearest.rows(query, compiled, req)
            return self._found(hits)
        return self._ranked(req, query, compiled, copy)

    def _one_request(
        self, req: SearchRequest, query: npt.NDArray[np.float32]
    ) -> list[tuple[Row, float]] | None:
        """A filtered vector search on a server store as one Chroma query (`Nearest.guarded`), or None
        for the usual path: a filter Chroma cannot finish alone, a collection of an older layout, or
        a copy or filter columns this store holds (they answer faster, once the state token vouches
        for them: 0.88-0.96x raw chromadb's `where` at 10% of 10,000 records over HTTP, against
        1.03-1.09x for this one query; benchmarks/chroma_speed.py).

        The usual path reads the collection's metadata first, for the opaque keys and the state
        token: 1.1 ms of a 9 ms search at 10,000 records, the whole gap to raw chromadb.
        """
        compiled = self._compile(req.filter, known=True)
        if self._legacy or not compiled.exact or compiled.matches_nothing:
            return None
        where = guarded_where(compiled)
        if where is None or self._copy_for(False, compiled.tree) is not None:
            return None
        if self._columns_for(compiled) is not None:
            return None
        with self._renting(compiled):
            return self._nearest.guarded(query, compiled, req, where)

    def _ranked(
        self,
        req: SearchRequest,
        query: npt.NDArray[np.float32],
        compiled: ChromaFilter,
        copy: Snapshot | None,
    ) -> list[Document]:
        """Any mode but plain vector: `stores.ranking.rank` over `ChromaCandidates`.

        If another store deletes a ranked document during the search (the final read misses it), the
        ranking runs again from fresh reads: that store changed the state token before deleting, so
        the BM25 index is rebuilt. After `_ATTEMPTS` tries, ids still missing (deleted by raw chromadb
        calls, which leave the token alone, or by writes that keep landing mid-search) are left out:
        an answer never holds a document the collection no longer has, and is shorter instead. (MMR,
        which needs every candidate's vector, raises `RowsLost` then.)
        """
        for _ in range(_ATTEMPTS - 1):
            try:
                return self._rank_once(req, query, compiled, copy, lenient=False)
            except RowsLost:
                read_state_again()  # the token this request read is out of date: read it afresh
        return self._rank_once(req, query, compiled, copy, lenient=True)

    def _rank_once(
        self,
        req: SearchRequest,
        query: npt.NDArray[np.float32],
        compiled: ChromaFilter,
        copy: Snapshot | None,
        *,
        lenient: bool,
    ) -> list[Document]:
        allowed = None if compiled.tree is None else (lambda: set(self._matching_ids(compiled)))
        with ChromaCandidates(
            req,
            query,
            lambda plain: self._vector_hits(query, compiled, plain, copy),
            allowed,
            lambda ids, fields: self._fetch(ids, None, include=fields),
            lambda row, score: self._document(row, False, score),
            self._lexical.sidecar,
            # Over HTTP the state-token check and the filter's read overlap the vector query.
            background if self._conn.remote else None,
            lenient=lenient,
        ) as source:
            # The final documents first, then the cosines no candidate list held (which read vectors).
            ranked = rank_scored(req, source, complete=False)
            found = source.page([(hit.id, hit.score) for hit in ranked])
            kept = [hit for hit in ranked if hit.id in {doc.id for doc in found}]
            # A document deleted since it was ranked has no vector left: its text stands alone.
            with suppress(RowsLost):
                kept = with_cosines(req, source, kept)
            named = {hit.id: hit.scores for hit in kept}
            return [doc.with_scores(named[doc.id]) for doc in found]

    def _vector_hits(
        self,
        query: npt.NDArray[np.float32],
        compiled: ChromaFilter,
        req: SearchRequest,
        copy: Snapshot | None,
    ) -> list[tuple[Row, float]]:
        """Vector top-k for ranking: ids and cosines (whole rows where an exact scan read them)."""
        if copy is not None:
            found = copy.top(query, copy.rows(compiled.tree), req)
            return [(Row(str(copy.ids[row]), None, None), score) for row, score in found]
        with self._renting(compiled):
            return self._nearest.rows(query, compiled, req, light=True)

    def _renting(self, compiled: ChromaFilter) -> AbstractContextManager[Any]:
        """Times what Chroma spends on a filter, toward building the copy (`Mirror.due`). Not on a store
        only this process writes: its filter columns decide filters, as cheap as the copy would."""
        return self._mirror.renting() if compiled.tree is not None and not self._local else nullcontext()

    def _copy_for(self, exact: bool, tree: Filter | None, *, build: bool = True) -> Snapshot | None:
        """The exact copy if it should answer: always for exact requests (unless `exact_copy=False`),
        for filtered ones while current or once Chroma's filtering has cost as much as building it."""
        if (not exact and tree is None) or self._keep_copy is False:
            return None
        copy = self._mirror.current(self._state)
        wanted = exact or self._keep_copy or self._mirror.due(self._access.count)
        if copy is None and build and wanted:
            copy = self._mirror.get(self._make_copy, self._state)
        return copy

    def _make_copy(self, stamp: object) -> tuple[Snapshot, bool]:
        """The copy saved beside an embedded folder if it is current, else one read from Chroma."""
        token = self._access.metadata().get(STATE_KEY) if self._copy_root is not None else None
        self._mirror.token = token if isinstance(token, str) else None
        if self._copy_root is not None and self._mirror.token is not None:
            loaded = load(self._copy_root, self._mirror.token, self._access.count(), stamp)
            if loaded is not None:
                self._mirror.saved = True
                return loaded, False
        self._mirror.saved = False
        return read_snapshot(self._nearest.pages(None, _COPY_FIELDS), stamp), True

    def _state(self) -> object:
        # An embedded folder or a private store is written by this process only, whose writes drop
        # the copy; elsewhere other processes may write, which changes the collection's state token.
        return None if self._local or not self._shared else self._access.metadata().get(STATE_KEY)
