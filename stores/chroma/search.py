"""Exact top-k over Chroma's approximate (HNSW) neighbours.

Chroma's HNSW index is approximate and computes distances in its own float32 arithmetic, so its order
can differ from the numpy store's in the last bits and among equal scores. The store therefore asks
Chroma for a few more candidates than `top_k`, with their stored embeddings, scores them again in numpy
(with the numpy store's own `exact_scores`, so scores agree to the last bit), sorts by (score
descending, id ascending), and asks again for four times as many while the weakest candidate returned
is not clearly below the k-th best score (or the threshold): every document Chroma did not return
scores no better than the weakest it did, so once that one is below the cut-off nothing beyond can
enter the top k, equal scores included. What remains approximate is the graph search itself: the
collection is created with a large `ef_search` (the candidate list HNSW keeps, default 400 here), which
makes it visit every node of collections up to that size and miss a true neighbour only very rarely
beyond (tests/stores/test_chroma.py checks top-k against brute force on thousands of vectors).

Records that share one vector (the zero vector of empty or stopword-only texts above all) break the
"fewer than asked means no more" rule: HNSW leaves some of them unreachable, so `query(n_results=174)`
can return 173 ids. `ChromaVectorStore` therefore reads every match directly when there are at most
`ef_search` of them (HNSW would visit them all anyway) or when a query returns fewer rows than asked
though more match, adds the zero-vector records (score 0) by their `_rag_zero` key when one of them
could enter the result, and completes groups of identical vectors by their `_rag_vec` digest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import SearchRequest
from stores.numpy.search import exact_scores

__all__ = ["Row", "merge", "rows_from_get", "rows_from_query", "scores", "top_rows"]

# Chroma's distances and numpy's scores may differ by a few float32 ulps; a candidate counts as
# "clearly below" a cut-off only by more than this.
_MARGIN = 1e-4


@dataclass(frozen=True)
class Row:
    """One record as Chroma returned it (metadata still in the stored layout)."""

    id: str
    document: str | None
    record: Mapping[str, Any] | None
    embedding: npt.NDArray[np.float32] | None = None


def _column(result: Mapping[str, Any], name: str, count: int) -> Sequence[Any]:
    values = result.get(name)
    return [None] * count if values is None else values


def rows_from_get(result: Mapping[str, Any]) -> list[Row]:
    """Rows of a `collection.get` answer."""
    ids: list[str] = list(result["ids"])
    docs = _column(result, "documents", len(ids))
    metas = _column(result, "metadatas", len(ids))
    vectors = _column(result, "embeddings", len(ids))
    return [
        Row(i, d, m, None if v is None else np.asarray(v, dtype=np.float32))
        for i, d, m, v in zip(ids, docs, metas, vectors, strict=True)
    ]


def rows_from_query(result: Mapping[str, Any]) -> list[Row]:
    """Rows of a one-query `collection.query` answer."""
    single = {
        name: (None if value is None else value[0]) for name, value in result.items() if name != "included"
    }
    return rows_from_get(single)


def scores(rows: Sequence[Row], query: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """Cosine scores of rows with unit (or zero) embeddings, computed exactly as the numpy store does."""
    if not rows:
        return np.zeros(0, dtype=np.float64)
    matrix = np.stack([row.embedding for row in rows if row.embedding is not None]).astype(np.float32)
    return exact_scores(matrix, np.arange(len(rows)), query)


def _settled(values: npt.NDArray[np.float64], passing: list[int], request: SearchRequest) -> bool:
    """Whether no document beyond the candidates fetched can enter the result."""
    if len(passing) >= request.top_k:
        cutoff = float(values[passing[request.top_k - 1]])
    elif request.similarity_threshold > 0.0:
        cutoff = request.similarity_threshold
    else:
        return False
    return float(values.min()) < cutoff - _MARGIN


def top_rows(
    fetch: Callable[[int], list[Row]], query: npt.NDArray[np.float32], request: SearchRequest
) -> list[tuple[Row, float]]:
    """The exact best `request.top_k` rows passing the threshold, best first, ties by id.

    `fetch(n)` returns Chroma's (approximately) nearest `n` candidates with embeddings; fewer than `n`
    means there are no more.
    """
    wanted = request.top_k
    if wanted == 0:
        return []
    n = wanted + max(5, wanted // 2)
    while True:
        rows = fetch(n)
        values = scores(rows, query)
        order = sorted(range(len(rows)), key=lambda i: (-float(values[i]), rows[i].id))
        passing = [i for i in order if request.accepts(float(values[i]))]
        if len(rows) < n or _settled(values, passing, request):
            return [(rows[i], float(values[i])) for i in passing[:wanted]]
        n *= 4


def merge(parts: Sequence[list[tuple[Row, float]]], top_k: int) -> list[tuple[Row, float]]:
    """The best `top_k` of several exact partial results (ties by id)."""
    combined = [hit for part in parts for hit in part]
    combined.sort(key=lambda hit: (-hit[1], hit[0].id))
    return combined[:top_k]
