"""Vector top-k on a Chroma collection: exact scans, or Chroma's HNSW graph (approximate).

The contract (docs/exactness.md):

- Which documents are eligible never depends on the path: a filter means what it means for `get` and
  `count`. The filter columns (`stores.chroma.columns`) give the eligible ids when the store uses them
  (`stores.chroma.reading`): none means no call to Chroma, else Chroma ranks only those ids
  (`query(..., ids=...)`, cheap where a `where` clause is not). Otherwise Chroma's `where` plus the
  Python part of `stores.chroma.filters` decides; on a server store holding nothing to check first,
  a filter Chroma evaluates alone is one query (`guarded`).
- Exact paths score every eligible record in numpy (`stores.numpy.search.exact_scores`, so scores equal
  the numpy store's to the last bit) and order by (score descending, id ascending): a request with
  `exact=True`, and any collection of at most `scan_limit` records (the store's `ef_search`), where
  reading everything costs no more than HNSW would.
- Otherwise Chroma's HNSW graph answers, once, with the fields a raw `collection.query` would return:
  it may miss true neighbours (how often is measured by benchmarks/search.py and stated in the docs),
  and the scores it reports are Chroma's own (1 - inner-product distance, rounded like the numpy
  store's), which agree with exact scores to about 1e-7.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import SearchRequest
from rag.errors import StoreConnectionError, StoreError
from rag.filters import holds
from stores.chroma.client import Connection
from stores.chroma.columns import Selection
from stores.chroma.filters import ChromaFilter, Where, compile_filter
from stores.chroma.records import OPAQUE, decode_metadata
from stores.chroma.search import KeptRow, Row, merge, rows_from_get, rows_from_query, scores
from stores.numpy.search import SCORE_DECIMALS

__all__ = ["GUARDED_RECORDS", "Nearest", "ranked"]

_row = tuple.__new__  # a `Row` without its Python `__new__`
_NO_FILTER = compile_filter(None)
_ROW_FIELDS = ["embeddings", "metadatas", "documents"]
_TEXT_FIELDS = ["metadatas", "documents"]
# One query restricted to 19k ids costs 7.6 ms at 20k records, three of ~6k ids 16 ms; 95k ids in one
# query work too (94 ms at 100k, where a `where` took 540 ms). So ids go in as few queries as this allows.
_IDS_PER_QUERY = 100_000
# A filter matching at least this share of the records is searched by one unrestricted query first.
# Below it, Chroma's own search restricted to the ids finds more true neighbours (recall@10 at 20,000
# random vectors: 1.00 against 0.72 at 10%, 0.90 against 0.73 at 50%, 0.78 against 0.77 at 95%).
_BROAD = 0.9
GUARDED_RECORDS = 30_000
"""Up to this many records, a filter Chroma evaluates alone is sent widened in one query (`guarded`).
The widening costs Chroma a share of the clause's own time that grows with the collection (over HTTP
1-5% at 10,000 records, 2-9% at 100,000: 0.3 ms and 2-8 ms), while the metadata read it spares costs
about 1.2 ms at any size: larger collections read the metadata and send the clause alone."""


def _overfetch(top_k: int, share: float) -> int:
    """How many unrestricted neighbours to ask for so that about twice `top_k` of them match."""
    return math.ceil(top_k / share * 2) + 10


def ranked(rows: Sequence[Row], values: Sequence[float], req: SearchRequest) -> list[tuple[Row, float]]:
    """The best `req.top_k` of `rows` scored `values` that pass the threshold, best first, ties by id."""
    hits = [(row, value) for row, value in zip(rows, values, strict=True) if req.accepts(value)]
    hits.sort(key=lambda hit: (-hit[1], hit[0].id))
    return hits[: req.top_k]


def _best_first(hit: tuple[Row, float]) -> tuple[float, str]:
    return -hit[1], hit[0].id


def _answer(result: Mapping[str, Any], req: SearchRequest) -> list[tuple[Row, float]]:
    """`ranked` over the rows of a one-query Chroma answer, scored by `_score_of`, in one pass.

    Every search that reaches HNSW comes here with Chroma's caches still warm and ours cold, so the
    work per hit is one loop, not three (`rows_from_query`, the scores, `ranked`).
    """
    threshold = req.similarity_threshold
    documents, records = result.get("documents"), result.get("metadatas")
    hits: list[tuple[Row, float]] = []
    previous, ordered = math.inf, True  # Chroma lists hits nearest first: no sort unless scores tie
    for doc_id, document, record, distance in zip(  # noqa: B905  # the columns may repeat forever
        result["ids"][0],
        repeat(None) if documents is None else documents[0],
        repeat(None) if records is None else records[0],
        result["distances"][0],
    ):
        value = round(min(1.0, max(-1.0, 1.0 - float(distance))), SCORE_DECIMALS) + 0.0  # `_score_of`
        if threshold == 0.0 or value >= threshold:  # `req.accepts`
            hits.append((_row(Row, (doc_id, document, record, None)), value))
            ordered = ordered and value < previous
            previous = value
    if not ordered:
        hits.sort(key=_best_first)
    return hits[: req.top_k]


def _score_of(distance: float) -> float:
    """A cosine score from Chroma's inner-product distance, rounded as the numpy store rounds."""
    return round(min(1.0, max(-1.0, 1.0 - float(distance))), SCORE_DECIMALS) + 0.0


@dataclass
class Nearest:
    """Vector top-k (with threshold) among a filter's matches in one collection (`ChromaVectorStore`).

    Example:
        >>> nearest = Nearest(conn, collection, "docs", 400, 1024, fetch, matching_ids)  # doctest: +SKIP
        >>> request = SearchRequest("q", exact=True)
        >>> found = nearest.rows(query, compile_filter(None), request)  # doctest: +SKIP
        >>> [(row.id, score) for row, score in found]  # doctest: +SKIP
        [('a', 0.91), ('b', 0.42)]
    """

    conn: Connection
    collection: Any
    name: str
    scan_limit: int
    """Collections of up to this many records (the store's `ef_search`) are read and scored exactly."""
    batch_size: int
    fetch: Callable[[list[str], Sequence[str]], list[Row]]
    """Rows by ids, with the given fields (`ChromaVectorStore._fetch`)."""
    matching_ids: Callable[[ChromaFilter], list[str]]
    """Every id a filter matches, its Python part included."""
    eligible: Callable[[ChromaFilter], Selection | None] = lambda compiled: None
    """What a filter matches by the filter columns, or None when Chroma's `where` should decide."""
    verify: bool = False
    """Check the metadata of rows found by ids (another process may change records meanwhile)."""
    forget: Callable[[], None] = lambda: None
    """Drop the filter columns: they named an id the collection no longer holds."""
    large: bool = False
    """The collection was seen holding more than `scan_limit` records (`forget_size` resets it)."""
    size: int | None = None
    """How many records the collection held when last counted (None: never counted)."""
    rent: float = 0.0
    """Seconds Chroma spent on `where` clauses since the filter columns were last built (see
    `stores.chroma.reading.Reading._columns_due`)."""
    price: float | None = None
    """Seconds the last build of the filter columns took (None: not built yet, so estimated)."""

    def forget_size(self) -> None:
        """After deletes: the collection may have become small enough to read directly again."""
        self.large = False

    def rows(
        self,
        query: npt.NDArray[np.float32],
        compiled: ChromaFilter,
        req: SearchRequest,
        *,
        light: bool = False,
    ) -> list[tuple[Row, float]]:
        """Top-k (with threshold) among the filter's matches.

        Rows carry embeddings, text and metadata on exact paths; HNSW's carry text and metadata, or
        only their ids with `light` (hybrid reads the rows it keeps afterwards).
        """
        if req.top_k == 0:
            return []
        try:
            return self._rows(query, compiled, req, light)
        except StoreConnectionError:
            raise
        except StoreError:
            if compiled.tree is None:
                raise
            # Chroma refuses `ids=` naming a record it lost: another process deleted it after the
            # columns were checked (or raw chromadb calls did). Rebuilt columns decide again, once.
            self.forget()
            return self._rows(query, compiled, req, light)

    def unfiltered(self, query: npt.NDArray[np.float32], req: SearchRequest) -> list[tuple[Row, float]]:
        """`rows` of an approximate request without a filter, whose texts and metadata are kept: on a
        large collection straight to the one HNSW query every such search makes."""
        if self.large:
            return self._hnsw(query, req, None, None, False)
        return self.rows(query, _NO_FILTER, req)

    def _rows(
        self, query: npt.NDArray[np.float32], compiled: ChromaFilter, req: SearchRequest, light: bool
    ) -> list[tuple[Row, float]]:
        selection = None if compiled.tree is None else self.eligible(compiled)
        if selection is not None and selection.count == 0:
            return []  # nothing matches: no call to Chroma
        eligible = None if selection is None else selection.ids
        large = self._is_large()
        if req.exact or not large:
            return self._checked(self._scan(query, compiled, req, large, eligible), compiled)
        if selection is None and compiled.exact:
            started = time.perf_counter()
            try:
                return self._hnsw(query, req, compiled.where, None, light)
            finally:
                self.rent += time.perf_counter() - started
        if selection is not None and self._is_broad(selection):
            found = self._broad(query, req, selection, light)
            if found is not None:
                return self._checked(found, compiled)
        # The columns or Python decide the matches; Chroma ranks only those ids, chunk by chunk.
        ids = sorted(self.matching_ids(compiled) if eligible is None else eligible)
        if eligible is None and len(ids) <= self.scan_limit:
            # Chroma would need these rows' metadata read anyway (the Python check): score them here.
            rows = self.fetch(ids, _ROW_FIELDS)
            return self._checked(ranked(rows, scores(rows, query).tolist(), req), compiled)
        parts = [
            self._hnsw(query, req, None, ids[i : i + _IDS_PER_QUERY], light)
            for i in range(0, len(ids), _IDS_PER_QUERY)
        ]
        return self._checked(merge(parts, req.top_k), compiled)

    def guarded(
        self, query: npt.NDArray[np.float32], compiled: ChromaFilter, req: SearchRequest, where: Where
    ) -> list[tuple[Row, float]] | None:
        """Top-k of an exact filter in one Chroma query with `where` (`reading.guarded_where`: the
        filter's clause widened to records whose values under its keys Chroma could not index), or
        None when the caller must take the usual path (a small collection, one larger than
        `GUARDED_RECORDS`, or a hit the widening let in that does not match).

        A hit without `_rag_opaque` matched the clause itself, which is exact for it; one with it is
        checked in Python. When every hit matches, they are the top-k of the matches, since the
        widened clause selects every match. A hit that does not match would leave fewer than top_k
        (Chroma filled its list with it): None, and the caller reads the opaque keys afresh.
        """
        if not self._is_large() or (self.size or 0) > GUARDED_RECORDS:
            return None
        started = time.perf_counter()
        try:
            hits = self._hnsw(query, req, where, None, False)
        finally:
            self.rent += time.perf_counter() - started
        normal = compiled.normal
        for row, _ in hits:
            record = row.record
            if (
                record is not None
                and OPAQUE in record
                and (normal is None or not holds(normal, decode_metadata(record)))
            ):
                return None
        return hits

    @staticmethod
    def _is_broad(selection: Selection) -> bool:
        return selection.count >= _BROAD * selection.total

    def _broad(
        self, query: npt.NDArray[np.float32], req: SearchRequest, selection: Selection, light: bool
    ) -> list[tuple[Row, float]] | None:
        """Top-k of a broad filter: one unrestricted query for about twice `top_k` matching neighbours,
        kept if enough of them match; None when they do not (the caller asks with the ids).

        Chroma's cost for `ids=` grows with their number (94 ms for 95,000 of 100,000 records, against
        4 ms unrestricted), while an unrestricted query costs about the same for any candidate list up
        to the graph's own (`ef_search`). It returns distances only: texts and metadata of 210
        neighbours cost Chroma 20 ms where 10 read by id cost 1.7 ms, and the sidecar that holds
        the columns usually keeps them, so no read at all (`_broad_page`).
        """
        wanted = min(selection.total, _overfetch(req.top_k, selection.count / selection.total))
        with self.conn.errors(f"query the collection {self.name!r}"):
            result = self.collection.query(query_embeddings=[query], n_results=wanted, include=["distances"])
        rows = rows_from_query(result)
        values = [_score_of(d) for d in result["distances"][0]]
        kept = [i for i, row in enumerate(rows) if row.id in selection]
        # Complete when top_k matches were found, every record was seen, or the threshold cut the list.
        complete = (
            len(kept) >= req.top_k
            or len(rows) >= selection.total
            or (bool(values) and not req.accepts(values[-1]))
        )
        if not complete:
            return None
        hits = ranked([rows[i] for i in kept], [values[i] for i in kept], req)
        if light or not hits:
            return hits
        return self._broad_page(hits, selection)

    def _broad_page(self, hits: list[tuple[Row, float]], selection: Selection) -> list[tuple[Row, float]]:
        """Text and metadata of a broad filter's hits: from the records kept beside the columns that
        chose them (the same state, so they match), else read from Chroma by id (another tool's
        records, a damaged saved record; a record deleted since is left out)."""
        records = selection.records
        kept = {} if records is None else records.read(row.id for row, _ in hits)
        rest = [row.id for row, _ in hits if row.id not in kept]
        full = {row.id: row for row in self.fetch(rest, _TEXT_FIELDS)} if rest else {}
        page: list[tuple[Row, float]] = []
        for row, value in hits:
            record = kept.get(row.id)
            if record is not None:
                page.append((_row(KeptRow, (row.id, record[0], record[1], None)), value))
            elif row.id in full:
                page.append((full[row.id], value))
        return page

    def _checked(self, hits: list[tuple[Row, float]], compiled: ChromaFilter) -> list[tuple[Row, float]]:
        """Hits found by ids, without those another process changed to non-matching meanwhile."""
        normal = compiled.normal
        if not self.verify or normal is None:
            return hits
        # Rows without metadata (`light`) are checked by the caller when it reads them.
        return [
            hit
            for hit in hits
            if hit[0].record is None
            or type(hit[0]) is KeptRow  # the columns of the same state chose it
            or holds(normal, decode_metadata(hit[0].record))
        ]

    def _is_large(self) -> bool:
        # Only deletes shrink a collection, so once large it stays so until `forget_size` (writes by
        # other processes to a shared collection go unseen: their searches stay on HNSW, as documented).
        if not self.large:
            with self.conn.errors(f"count the collection {self.name!r}"):
                self.size = int(self.collection.count())
            self.large = self.size > self.scan_limit
        return self.large

    def _hnsw(
        self,
        query: npt.NDArray[np.float32],
        req: SearchRequest,
        where: Where | None,
        ids: list[str] | None,
        light: bool,
    ) -> list[tuple[Row, float]]:
        """One Chroma query: its nearest `top_k` matches, scored by Chroma's distances."""
        wanted = req.top_k if ids is None else min(req.top_k, len(ids))
        include = ["distances"] if light else ["metadatas", "documents", "distances"]
        try:
            result = self.collection.query(
                query_embeddings=[query], n_results=wanted, where=where, ids=ids, include=include
            )
        except Exception:
            # Entered only on failure: every search comes here, and a `with` costs it time.
            with self.conn.errors(f"query the collection {self.name!r}"):
                raise
        return _answer(result, req)

    def _scan(
        self,
        query: npt.NDArray[np.float32],
        compiled: ChromaFilter,
        req: SearchRequest,
        large: bool,
        eligible: list[str] | None,
    ) -> list[tuple[Row, float]]:
        """Exact: every match's vector scored in numpy, a page at a time.

        A small collection is read whole in one call; a large one (`exact=True`) without metadata, which
        is then read for the winners only.
        """
        fields = ["embeddings"] if large else _ROW_FIELDS
        if eligible is None and compiled.exact:
            pages = self.pages(compiled.where, fields)
        else:
            ids = sorted(self.matching_ids(compiled) if eligible is None else eligible)
            pages = (
                self.fetch(ids[i : i + self.batch_size], fields) for i in range(0, len(ids), self.batch_size)
            )
        best: list[tuple[Row, float]] = []
        for page in pages:
            best = merge([best, ranked(page, scores(page, query).tolist(), req)], req.top_k)
        if not best or fields == _ROW_FIELDS:
            return best
        full = {row.id: row for row in self.fetch([row.id for row, _ in best], _ROW_FIELDS)}
        return [(full[row.id], value) for row, value in best if row.id in full]

    def pages(self, where: Where | None, fields: list[str]) -> Iterator[list[Row]]:
        """Every record matching `where`, ids and embeddings, `batch_size` at a time."""
        offset = 0
        while True:
            page = self._page(where, fields, offset)
            if page:
                yield page
            if len(page) < self.batch_size:
                return
            offset += self.batch_size

    def _page(self, where: Where | None, fields: list[str], offset: int) -> list[Row]:
        """One page of `pages`, read a second time if Chroma fails the first.

        Another store or process deleting records while Chroma (1.5.9) reads a page makes it fail
        with "Internal error: Error finding id" (seen over HTTP while the exact copy was being built
        for a filtered search): a search must not fail because of a concurrent delete. Connection
        errors are not retried.
        """
        action = f"read from the collection {self.name!r}"
        read = partial(self.collection.get, where=where, limit=self.batch_size, offset=offset, include=fields)
        try:
            with self.conn.errors(action):
                return rows_from_get(read())
        except StoreConnectionError:
            raise
        except StoreError:
            pass  # the second read below raises if Chroma still fails
        with self.conn.errors(action):
            return rows_from_get(read())
