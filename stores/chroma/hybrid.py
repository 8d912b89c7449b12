"""The Chroma store's `stores.ranking.Candidates`: its vector search, the BM25 index, rows by id.

A filter means for lexical candidates exactly what it means for vector search: the ids it matches
(`ChromaVectorStore._matching_ids`, Chroma's `where` plus the Python post-filter, or the exact copy of
`stores.chroma.mirror`) restrict the BM25 ranking. The vector list holds ids and cosines only (from
Chroma's distances, or the exact copy); embeddings are read from Chroma only when the threshold or MMR
needs them (rows an exact scan already read are kept).

The final page's texts and metadata come, for each id, from the first of: rows read from Chroma during
this request; the records the sidecar keeps on a server or an embedded folder (`stores.chroma.kept`,
saved with the sidecar in a folder: `stores.chroma.kept_file`), current as of the state token this
request read; one read from Chroma for the rest (records written since that read, records another
tool wrote, a saved record whose checksum fails).

Over HTTP the reads the BM25 ranking depends on, the check of the sidecar against the collection's
state token and the filter's matches, do not depend on the vector query: given `background`, they and
the BM25 ranking itself start before it and run while it does, each once per request. A hybrid search
is then one round of requests (the vector query beside the token check), where it was three in a row
(vector query, token check, read of the final documents) and then two.

A write by another store that lands after the token check and before the answer gives, for each
document, its text and metadata either before or after that write (the sidecar's, or Chroma's for a
record the sidecar does not hold); never those of an earlier state, since a changed token makes the
sidecar rebuild. A ranked record that cannot be read any more (`RowsLost`) makes the store rank again
with the token read afresh (`stores.chroma.answering`).

Example:
    >>> from rag import Document, HashingEmbedding, SearchRequest
    >>> from stores import ChromaVectorStore
    >>> with ChromaVectorStore(HashingEmbedding(), collection="hybrid-demo") as store:
    ...     store.add([Document("a", "exact error code E-214"), Document("b", "dense retrieval")])
    ...     [d.id for d in store.similarity_search(SearchRequest("E-214", top_k=1, mode="hybrid"))]
    ['a']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from rag.documents import Document, SearchRequest
from rag.errors import StoreError
from stores.chroma.kept import KeptRecords
from stores.chroma.kept_file import SavedRecords
from stores.chroma.lexical import Sidecar
from stores.chroma.search import Row, scores
from stores.lexical.index import LexicalIndex
from stores.numpy.records import Record
from stores.ranking import candidate_depth

__all__ = ["ChromaCandidates", "RowsLost"]

_TEXT_FIELDS = ["metadatas", "documents"]
_ROW_FIELDS = ["embeddings", "metadatas", "documents"]
_T = TypeVar("_T")
Background = Callable[[Callable[[], Any]], "Future[Any]"]
"""Runs a call on another thread (`stores.chroma.client.background`)."""


class RowsLost(StoreError):
    """Ranked ids whose records are gone: the collection changed during the search (`ids` names them)."""

    def __init__(self, ids: Sequence[str]) -> None:
        super().__init__(
            f"the collection changed during the search: {ids[0]!r} was ranked but is no longer stored"
        )
        self.ids = list(ids)


class _Once(Generic[_T]):
    """A value computed once per request, on a worker thread when one is given."""

    def __init__(self, make: Callable[[], _T], background: Background | None) -> None:
        self._make = make
        self._future: Future[_T] | None = None if background is None else background(make)
        self._value: tuple[_T] | None = None

    def get(self) -> _T:
        if self._value is None:
            self._value = (self._make() if self._future is None else self._future.result(),)
        return self._value[0]

    def made(self) -> _T | None:
        """The value if it was computed or started (waiting for it then); None, never computing it."""
        return None if self._value is None and self._future is None else self.get()

    def settle(self) -> None:
        """Wait until a call started on a worker has ended (its outcome stays in the future)."""
        if self._future is not None:
            wait([self._future])


@dataclass(frozen=True)
class _Lexical:
    """What the lexical list of one request rests on, and its ranking at the depth `rank` asks first."""

    index: LexicalIndex
    records: KeptRecords | SavedRecords | None
    allowed: set[str] | None
    depth: int
    hits: list[tuple[str, float]]


def _lexical_for(
    request: SearchRequest, lexical: Callable[[], Sidecar], allowed: Callable[[], set[str]] | None
) -> _Lexical:
    sidecar = lexical()
    index = sidecar.index
    matches = None if allowed is None else allowed()
    # `stores.ranking.rank` asks first for this many (then more, to fill a threshold).
    depth = (
        candidate_depth(request.top_k) if request.mode == "hybrid" or request.diversity > 0 else request.top_k
    )
    hits = index.search(request.query, depth, allowed=matches)
    return _Lexical(index, sidecar.records, matches, depth, hits)


class ChromaCandidates:
    """Candidate lists for one request over a Chroma collection (see the module docstring).

    Use it as a context manager: leaving waits for the reads started on workers, so none outlives the
    store's read lock.

    Args:
        request: The request (its query text, filter, top-k and threshold).
        query: The query's unit vector.
        vector_hits: Vector search for a request: (row, cosine), best first; rows that carry text or
            metadata (exact scans read them whole) are kept for the final read.
        allowed: The ids matching the filter; None when there is no filter.
        fetch: Rows by ids with the fields asked for (unknown ids skipped).
        document: The document of a row read from Chroma, with a score.
        lexical: The collection's sidecar, current with its records (this checks the state token):
            its BM25 index and, over HTTP, the records that make the final page (`page`).
        background: Runs `lexical`, `allowed` and the BM25 ranking on a worker while the vector query
            runs (servers).
        lenient: Leave out ids that are no longer stored instead of raising `RowsLost` (a retry):
            from the final rows, and from a threshold's lexical candidates (cosine -inf).
    """

    def __init__(
        self,
        request: SearchRequest,
        query: npt.NDArray[np.float32],
        vector_hits: Callable[[SearchRequest], list[tuple[Row, float]]],
        allowed: Callable[[], set[str]] | None,
        fetch: Callable[[list[str], list[str]], list[Row]],
        document: Callable[[Row, float], Document],
        lexical: Callable[[], Sidecar],
        background: Background | None = None,
        *,
        lenient: bool = False,
    ) -> None:
        self._request = request
        self._query = query
        self._vector_hits = vector_hits
        self._fetch = fetch
        self._document = document
        self._rows: dict[str, Row] = {}
        self._lenient = lenient
        # The lexical list needs neither the vector query nor its answer: start its reads (and the
        # BM25 ranking) first.
        wanted = background if request.mode != "vector" else None
        self._lexical = _Once(lambda: _lexical_for(request, lexical, allowed), wanted)

    def __enter__(self) -> ChromaCandidates:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._lexical.settle()

    def vector(self, depth: int, threshold: float) -> list[tuple[str, float]]:
        """The best `depth` (id, cosine) among the filter's matches whose cosine passes `threshold`."""
        if depth == 0:
            return []
        plain = self._request.replace(
            mode="vector", diversity=0.0, top_k=depth, similarity_threshold=threshold
        )
        hits = self._vector_hits(plain)
        for row, _ in hits:
            if row.record is not None or row.document is not None:  # a whole row, not ids only
                self._rows.setdefault(row.id, row)
        return [(row.id, score) for row, score in hits]

    def lexical(self, depth: int) -> list[tuple[str, float]]:
        """The best `depth` (id, BM25) among the filter's matches."""
        known = self._lexical.get()
        if depth == known.depth:
            return known.hits
        return known.index.search(self._request.query, depth, allowed=known.allowed)

    def page(self, ranked: Sequence[tuple[str, float]]) -> list[Document]:
        """The documents of the ranked (id, score) pairs, in order.

        Rows read from Chroma during this request come first; then the records the sidecar keeps
        (as current as the state token read by this request, see the module docstring); Chroma is
        asked for the rest (a record written since the token was read, another tool's record).

        Raises:
            RowsLost: As `rows`.
        """
        ids = [doc_id for doc_id, _ in ranked]
        known = self._lexical.made()
        kept: dict[str, Record] = {}
        if known is not None and known.records is not None:
            kept = known.records.read(doc_id for doc_id in ids if doc_id not in self._rows)
        rows = {row.id: row for row in self.rows([doc_id for doc_id in ids if doc_id not in kept])}
        found: list[Document] = []
        for doc_id, score in ranked:
            record = kept.get(doc_id)
            if record is not None:
                # Held by the sidecar only when this store's layout wrote it: checked then.
                found.append(Document._trusted(doc_id, record[0], record[1], score))
            elif doc_id in rows:
                found.append(self._document(rows[doc_id], score))
        return found

    def rows(self, ids: Sequence[str], *, embeddings: bool = False) -> list[Row]:
        """The rows of `ids` (text and metadata, and embeddings if asked), read once and kept.

        Raises:
            RowsLost: Some ids are no longer stored (another store deleted them since they were
                ranked); when `lenient`, they are left out instead.
        """
        self._read(ids, embeddings)
        lost = [doc_id for doc_id in ids if doc_id not in self._rows]
        if lost and not self._lenient:
            raise RowsLost(lost)
        return [self._rows[doc_id] for doc_id in ids if doc_id in self._rows]

    def _read(self, ids: Sequence[str], embeddings: bool) -> None:
        missing = [
            doc_id
            for doc_id in dict.fromkeys(ids)
            if doc_id not in self._rows or (embeddings and self._rows[doc_id].embedding is None)
        ]
        if missing:
            fields = _ROW_FIELDS if embeddings else _TEXT_FIELDS
            self._rows.update((row.id, row) for row in self._fetch(missing, fields))

    def cosines(self, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """Exact cosine of each id with the query (as the numpy store computes it); -inf for an id
        no longer stored when `lenient`, which no threshold accepts."""
        rows = self.rows(ids, embeddings=True)
        if len(rows) == len(ids):
            return scores(rows, self._query)
        found = dict(zip([row.id for row in rows], scores(rows, self._query).tolist(), strict=True))
        return np.array([found.get(doc_id, -np.inf) for doc_id in ids], dtype=np.float64)

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """The stored vector of each id (MMR needs every one: lost ids raise `RowsLost` always)."""
        rows = self.rows(ids, embeddings=True)
        if len(rows) < len(ids):
            raise RowsLost([doc_id for doc_id in ids if doc_id not in self._rows])
        return np.stack([row.embedding for row in rows if row.embedding is not None]).astype(np.float32)
