"""Rows of Chroma's answers, scored exactly as the numpy store scores, and merged across partial results.

Chroma returns columns (ids, documents, metadatas, embeddings, distances); `rows_from_get` and
`rows_from_query` turn them into `Row`s, `scores` computes cosines with the numpy store's own
`exact_scores` (so exact paths agree with it to the last bit), and `merge` combines partial top-k lists
(ties by id).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stores.numpy.search import exact_scores

__all__ = ["Row", "merge", "rows_from_get", "rows_from_query", "scores"]


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


def merge(parts: Sequence[list[tuple[Row, float]]], top_k: int) -> list[tuple[Row, float]]:
    """The best `top_k` of several exact partial results (ties by id)."""
    combined = [hit for part in parts for hit in part]
    combined.sort(key=lambda hit: (-hit[1], hit[0].id))
    return combined[:top_k]
