"""Exact vector top-k on a Chroma collection: HNSW candidates re-scored, with what HNSW can lose.

The re-ranking rule is `stores.chroma_search`'s; this module decides which rows Chroma is asked for.
Up to `ef_search` matches (counted with a limited read) are read directly. Beyond, Chroma is
queried; only when it returns fewer rows than asked are the matches counted, and if there are more,
HNSW lost some and every match is read. Records sharing a vector are completed by their `VECTOR`
digest when a returned record is marked `TWIN` (`mark_twins` sets it on writes; collections of
older versions are searched for every record's twins). Zero-vector records, which HNSW may lose,
are read by their `ZERO` marker when one of them could enter the result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import SearchRequest
from stores.chroma_client import Connection
from stores.chroma_filters import ChromaFilter, Where
from stores.chroma_records import TWIN, VECTOR, ZERO, decode_metadata
from stores.chroma_search import Row, merge, rows_from_get, rows_from_query, scores, top_rows

__all__ = ["ExactNearest", "mark_twins"]

_ROW_FIELDS = ["embeddings", "metadatas", "documents"]


@dataclass
class ExactNearest:
    """Exact cosine top-k among a filter's matches in one collection (`ChromaVectorStore` uses it).

    Example:
        >>> nearest = ExactNearest(conn, collection, "docs", 400, 1024, fetch, matching_ids)  # doctest: +SKIP
        >>> found = nearest.rows(query, compile_filter(None), request)  # doctest: +SKIP
        >>> [(row.id, score) for row, score in found]  # doctest: +SKIP
        [('a', 0.91), ('b', 0.42)]
    """

    conn: Connection
    collection: Any
    name: str
    scan_limit: int
    """Up to this many matches (the collection's `ef_search`) are read and scored directly."""
    batch_size: int
    fetch: Callable[[list[str], Sequence[str]], list[Row]]
    """Rows by ids, with the given fields (`ChromaVectorStore._fetch`)."""
    matching_ids: Callable[[ChromaFilter], list[str]]
    """Every id a filter matches, its Python part included."""
    all_twins: bool = False
    """The collection may hold duplicates written without `TWIN` (by older versions): look for them all."""
    large: bool = False
    """The whole collection was seen holding more than `scan_limit` records (`forget_size` resets it)."""

    def forget_size(self) -> None:
        """After deletes: the collection may have become small enough to read directly again."""
        self.large = False

    def rows(
        self, query: npt.NDArray[np.float32], compiled: ChromaFilter, req: SearchRequest
    ) -> list[tuple[Row, float]]:
        """Exact cosine top-k (with threshold) among the filter's matches, rows with their embeddings."""
        if compiled.exact:
            found = top_rows(lambda n: self._nearest(query, n, compiled.where, None), query, req)
            return self._with_zero_rows(found, query, compiled, req)
        # Python decides the matches; Chroma ranks only those ids, chunk by chunk.
        ids = sorted(self.matching_ids(compiled))
        parts = [
            top_rows(lambda n, chunk=chunk: self._nearest(query, n, None, chunk), query, req)  # type: ignore[misc]
            for chunk in (ids[i : i + self.batch_size] for i in range(0, len(ids), self.batch_size))
        ]
        return self._with_zero_rows(merge(parts, req.top_k), query, compiled, req)

    def _with_zero_rows(
        self,
        found: list[tuple[Row, float]],
        query: npt.NDArray[np.float32],
        compiled: ChromaFilter,
        req: SearchRequest,
    ) -> list[tuple[Row, float]]:
        """`found` with the zero-vector records (cosine 0) that belong in it, which HNSW may have lost.

        Many records sharing the zero vector leave some of them unreachable in Chroma's graph, so they
        are read by their `ZERO` marker instead, and only when one of them could enter the result.
        """
        if not req.accepts(0.0) or (len(found) == req.top_k and found[-1][1] > 0.0):
            return found
        where: Where = {ZERO: True} if compiled.where is None else {"$and": [compiled.where, {ZERO: True}]}
        with self.conn.errors(f"read from the collection {self.name!r}"):
            marked = rows_from_get(self.collection.get(where=where, include=["metadatas"]))
        # Equal scores go to the smaller id, so the first top_k zero ids by id are all that can enter.
        known = {row.id for row, _ in found}
        zero_ids = sorted(r.id for r in marked if compiled.accepts(decode_metadata(r.record)))[: req.top_k]
        rows = self.fetch([i for i in zero_ids if i not in known], _ROW_FIELDS)
        extra = list(zip(rows, scores(rows, query).tolist(), strict=True))
        return merge([found, extra], req.top_k)

    def _nearest(
        self, query: npt.NDArray[np.float32], n: int, where: Where | None, ids: list[str] | None
    ) -> list[Row]:
        """Chroma's nearest `n` matches, or every match when there are few or its graph lost some."""
        # Up to ef_search matches are read directly: HNSW would visit them all anyway, and after
        # upserts and deletes its graph can leave a record unreachable, which a direct read cannot.
        # The size of the whole collection is remembered: only deletes shrink it (in a collection shared
        # with other writers, theirs go unseen and such searches stay on HNSW).
        whole = where is None and ids is None
        if not (whole and self.large):
            if self._population(where, ids, limit=self.scan_limit + 1) <= self.scan_limit:
                return self._every_match(where, ids)
            self.large = self.large or whole
        with self.conn.errors(f"query the collection {self.name!r}"):
            result = self.collection.query(
                query_embeddings=[query], n_results=n, where=where, ids=ids, include=_ROW_FIELDS
            )
        rows = rows_from_query(result)
        if len(rows) >= n:
            return rows + self._duplicates(rows, where, ids)
        # Fewer rows than asked: either every match, or HNSW lost records (it does with equal vectors).
        if len(rows) >= self._population(where, ids):
            return rows
        return self._every_match(where, ids)

    def _every_match(self, where: Where | None, ids: list[str] | None) -> list[Row]:
        if ids is not None:
            return self.fetch(ids, _ROW_FIELDS)
        with self.conn.errors(f"read from the collection {self.name!r}"):
            return rows_from_get(self.collection.get(where=where, include=_ROW_FIELDS))

    def _duplicates(self, rows: list[Row], where: Where | None, ids: list[str] | None) -> list[Row]:
        """The matches sharing a vector with `rows` but missing from them (HNSW loses such twins)."""
        digests = sorted(
            {
                row.record[VECTOR]
                for row in rows
                if row.record and VECTOR in row.record and (self.all_twins or TWIN in row.record)
            }
        )
        if not digests:
            return []
        clause: Where = {VECTOR: {"$in": digests}}
        with self.conn.errors(f"read from the collection {self.name!r}"):
            result = self.collection.get(
                where=clause if where is None else {"$and": [where, clause]}, ids=ids, include=_ROW_FIELDS
            )
        known = {row.id for row in rows}
        return [row for row in rows_from_get(result) if row.id not in known]

    def _population(self, where: Where | None, ids: list[str] | None, limit: int | None = None) -> int:
        """How many records a query with `where` or `ids` (existing ids only) ranks, counted up to `limit`.

        A limited count reads at most `limit` ids, so a large collection costs no full count.
        """
        if ids is not None:
            return len(ids)
        with self.conn.errors(f"count the collection {self.name!r}"):
            if where is None and limit is None:
                return int(self.collection.count())
            return len(self.collection.get(where=where, limit=limit, include=[])["ids"])


def mark_twins(conn: Connection, collection: Any, ids: list[str], records: list[dict[str, Any]]) -> None:
    """Set `TWIN` on the records about to be written whose vector another record has, and on those others.

    `records` (the Chroma metadata for `ids`, with their `VECTOR` keys) are changed in place; stored
    records sharing a vector with one of them gain `TWIN` at once. Stored records with the same ids are
    being replaced, so only their new vectors count.
    """
    batch: dict[str, list[int]] = {}
    for i, record in enumerate(records):
        if VECTOR in record:
            batch.setdefault(record[VECTOR], []).append(i)
    if not batch:
        return
    writing = set(ids)
    with conn.errors("look for records with the same vectors"):
        stored = rows_from_get(collection.get(where={VECTOR: {"$in": sorted(batch)}}, include=["metadatas"]))
    partners = [row for row in stored if row.id not in writing and row.record]
    shared = {row.record[VECTOR] for row in partners if row.record}
    shared.update(digest for digest, members in batch.items() if len(members) > 1)
    for digest in shared:
        for i in batch[digest]:
            records[i][TWIN] = 1
    unmarked = [row.id for row in partners if row.record and TWIN not in row.record]
    if unmarked:
        with conn.errors("mark records with the same vectors"):
            collection.update(ids=unmarked, metadatas=[{TWIN: 1} for _ in unmarked])
