"""Exact top-k cosine search over a float32 matrix of unit rows, and the store's ranked requests.

A threaded float32 pass (`score_rows`) keeps the rows within `TOLERANCE` of a lower bound on the k-th
best score (the k-th largest of many block maxima: faster than an `argpartition`); `exact_scores`
scores them again, the same for a row wherever it lies, so every exact store reproduces them. Ranked
requests go through `rag.retrieval.ranking` (`NumpyCandidates`), keyed by BM25 index rows.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from rag.documents import SearchRequest
from rag.retrieval.ranking import Keyed, rank_keys, rank_scored
from stores.lexical.index import LexicalIndex
from stores.numpy.rowmap import RowMap
from stores.ties import best_first

__all__ = [
    "SCORE_DECIMALS",
    "TOLERANCE",
    "NumpyCandidates",
    "exact_scores",
    "rank_rows",
    "score_rows",
    "top_rows",
]

FloatMatrix = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]

SCORE_DECIMALS = 6
# Far above the float32 dot-product error for unit vectors (~1e-6), far below real score gaps.
TOLERANCE = 1e-4
_CHUNK = 2048
_CONTIGUOUS_GROUP = 4096  # group length from which contiguous blocks beat strided groups
_PARALLEL_ROWS = 32768  # below this the rows sit in cache and threads cost more than they give
# Memory bandwidth, not arithmetic, bounds a single query; a few threads saturate it.
_WORKERS = max(1, min(4, os.cpu_count() or 1))
_VECDOT: Any = getattr(np, "vecdot", None)


def exact_scores(matrix: FloatMatrix, rows: IntArray, query: FloatMatrix) -> npt.NDArray[np.float64]:
    """Cosine scores of `matrix[rows]` against `query` (unit vectors), float64, rounded, within [-1, 1]."""
    query64 = query.astype(np.float64)
    out = np.empty(len(rows), np.float64)
    for start in range(0, len(rows), _CHUNK):
        block = matrix[rows[start : start + _CHUNK]].astype(np.float64)
        block *= query64  # elementwise and a row sum, not BLAS: every row is computed the same way
        out[start : start + _CHUNK] = block.sum(axis=1)
    # The ufuncs and the method, not np.clip / np.round: their Python wrappers cost more than the work.
    np.minimum(out, 1.0, out=out)
    np.maximum(out, -1.0, out=out)
    out.round(SCORE_DECIMALS, out=out)
    out += 0.0  # turns -0.0 into 0.0
    return out


def _lower_bounds(scores: FloatMatrix, k: int) -> npt.NDArray[np.float32]:
    """For each row of `scores` (m x c, 0 < k < c): a value <= its k-th largest entry, usually equal."""
    count = scores.shape[1]
    if count < 64 * k:
        return np.partition(scores, count - k, axis=1)[:, count - k]
    # Any split of the entries into groups works: each of the k largest group maxima is a distinct
    # entry, so the k-th of them is a lower bound. Long groups are contiguous blocks; short ones are
    # strided (entries i, i + groups, ...), because numpy reduces many short rows slowly but takes the
    # elementwise maximum of a few long rows at memory speed.
    groups = max(64, 16 * k)
    if count // groups >= _CONTIGUOUS_GROUP:
        width = count // groups
        maxima = scores[:, : groups * width].reshape(len(scores), groups, width).max(axis=2)
    else:
        groups = min(max(1024, groups), count // 4)
        width = count // groups
        maxima = scores[:, : groups * width].reshape(len(scores), width, groups).max(axis=1)
    if groups * width < count:
        maxima = np.concatenate([maxima, scores[:, groups * width :].max(axis=1, keepdims=True)], axis=1)
    return np.partition(maxima, maxima.shape[1] - k, axis=1)[:, maxima.shape[1] - k]


def candidate_positions(scores: FloatMatrix, k: int, threshold: float = 0.0) -> list[IntArray]:
    """Per row of `scores` (m x c): the positions that may be in its top `k` and pass `threshold`."""
    count = scores.shape[1]
    if k >= count:
        floors = np.full(len(scores), -np.inf, np.float32)
    else:
        floors = _lower_bounds(scores, k) - np.float32(TOLERANCE)
    if threshold > 0.0:
        floors = np.maximum(floors, np.float32(threshold - TOLERANCE))
    hits = scores >= floors[:, None]
    return [row.nonzero()[0] for row in hits]


def top_rows(
    matrix: FloatMatrix,
    query: FloatMatrix,
    k: int,
    ids_of: Callable[[IntArray], list[str]],
    threshold: float = 0.0,
    rows: IntArray | None = None,
) -> tuple[IntArray, npt.NDArray[np.float64]]:
    """`rank_rows` over the rows of `matrix` (or `rows`) a float32 scan finds may be in the top `k`."""
    [positions] = candidate_positions(score_rows(matrix, query, rows)[None, :], k, threshold)
    return rank_rows(matrix, positions if rows is None else rows[positions], query, k, ids_of, threshold)


def _row_dot(block: FloatMatrix, query: FloatMatrix, out: FloatMatrix) -> None:
    if _VECDOT is not None:
        _VECDOT(block, query, out=out)
    else:  # numpy < 2.0
        np.einsum("ij,j->i", block, query, out=out)


def _score_range(
    matrix: FloatMatrix, query: FloatMatrix, rows: IntArray | None, out: FloatMatrix, start: int, stop: int
) -> None:
    if rows is None:
        _row_dot(matrix[start:stop], query, out[start:stop])
        return
    buffer = np.empty((min(_CHUNK, stop - start), matrix.shape[1]), np.float32)
    for begin in range(start, stop, _CHUNK):
        end = min(begin + _CHUNK, stop)
        # Gathering a cache-sized chunk at a time avoids writing and re-reading a copy of the rows.
        # mode="clip" skips a bounds check per index (the rows come from the store): twice as fast.
        block = np.take(matrix, rows[begin:end], axis=0, out=buffer[: end - begin], mode="clip")
        _row_dot(block, query, out[begin:end])


def score_rows(matrix: FloatMatrix, query: FloatMatrix, rows: IntArray | None = None) -> FloatMatrix:
    """float32 dot products of `matrix` rows (all, or `rows`) with `query`, split over worker threads
    (`np.vecdot` releases the GIL and, unlike OpenBLAS's own threads, never spin-waits)."""
    total = len(matrix) if rows is None else len(rows)
    out = np.empty(total, np.float32)
    # Gathered rows cost more each than contiguous ones, so they are worth threads sooner.
    workers = _WORKERS if total >= (_PARALLEL_ROWS if rows is None else _PARALLEL_ROWS // 4) else 1
    parts = list(itertools.pairwise(np.linspace(0, total, workers + 1).astype(int).tolist()))
    futures = [_pool().submit(_score_range, matrix, query, rows, out, a, b) for a, b in parts[1:]]
    _score_range(matrix, query, rows, out, *parts[0])  # the calling thread takes a share too
    for future in futures:
        future.result()
    return out


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=_WORKERS - 1, thread_name_prefix="numpy-store-search")


def rank_rows(
    matrix: FloatMatrix,
    rows: IntArray,
    query: FloatMatrix,
    k: int,
    ids_of: Callable[[IntArray], list[str]],
    threshold: float = 0.0,
) -> tuple[IntArray, npt.NDArray[np.float64]]:
    """The best `k` of `rows` and their scores, score descending then id ascending, keeping only
    scores >= `threshold` when it is above 0 (0 keeps every score, as `SearchRequest.accepts`).
    Only rows whose score ties with another's have their id looked up (`ids_of`)."""
    scores = exact_scores(matrix, rows, query)
    if threshold > 0.0:
        kept = scores >= threshold
        rows, scores = rows[kept], scores[kept]
    if len(rows) > k > 0:
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        kept = scores >= kth  # rows tied with the k-th come along: the id decides between them
        rows, scores = rows[kept], scores[kept]
    return best_first(rows, scores, ids_of, k)


@dataclass
class NumpyCandidates:
    """`rag.retrieval.ranking.KeyedCandidates` for one request over the store's live rows (`rows` match the
    request's filter, None for all), and the ranking of that request (`ranked`)."""

    matrix: npt.NDArray[np.float32]
    query: npt.NDArray[np.float32]
    text: str
    rows: IntArray | None
    row_map: RowMap
    index: LexicalIndex
    mask: npt.NDArray[np.bool_] | None = None  # `rows` as index rows, built at the first lexical search

    def vector(self, depth: int, threshold: float) -> list[tuple[str, float]]:
        keys, scores = self.vector_keys(depth, threshold)
        return list(zip(self.ids_of(keys), scores.tolist(), strict=True))

    def lexical(self, depth: int) -> list[tuple[str, float]]:
        keys, scores = self.lexical_keys(depth)
        return list(zip(self.ids_of(keys), scores.tolist(), strict=True))

    def vector_keys(self, depth: int, threshold: float) -> Keyed:
        if depth == 0 or not len(self.matrix):
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        rows, scores = top_rows(self.matrix, self.query, depth, self.row_map.ids_of, threshold, self.rows)
        return self.row_map.index_rows_of(rows), scores

    def lexical_keys(self, depth: int) -> Keyed:
        if self.rows is not None and self.mask is None:
            self.mask = np.zeros(self.index.row_count, dtype=np.bool_)
            self.mask[self.row_map.index_rows_of(self.rows)] = True
        return self.index.search_rows(self.text, depth, row_mask=self.mask)

    def ids_of(self, keys: IntArray) -> list[str]:
        return self.index.ids_at(keys.tolist())

    def cosines(self, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        return exact_scores(self.matrix, self.row_map.rows_of(ids), self.query)

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.matrix[self.row_map.rows_of(ids)]

    def ranked(self, request: SearchRequest) -> tuple[list[int], list[float], list[dict[str, float]]]:
        """The store rows `request` returns, their scores and named scores."""
        page = rank_keys(request, self)  # hybrid: index rows fused, only the page's ids decoded
        if page is not None:
            kept = self.row_map.store_rows(page.keys)
            cosines = exact_scores(self.matrix, kept, self.query).tolist()  # what `cosines` gives
            named = [{**scores, "cosine": cosine} for scores, cosine in zip(page.named, cosines, strict=True)]
            return kept.tolist(), list(page.scores), named
        hits = rank_scored(request, self)
        found = self.row_map.rows_of([hit.id for hit in hits]).tolist()
        return found, [hit.score for hit in hits], [hit.scores for hit in hits]
