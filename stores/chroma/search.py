"""Rows of Chroma's answers, scored exactly as the numpy store scores, and merged across partial results.

Chroma returns columns (ids, documents, metadatas, embeddings, distances); `rows_from_get` and
`rows_from_query` turn them into `Row`s, `scores` computes cosines with the numpy store's own
`exact_scores` (so exact paths agree with it to the last bit), and `merge` combines partial top-k lists
(ties by id).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from stores.numpy.search import exact_scores

__all__ = ["Row", "merge", "rows_from_get", "rows_from_query", "scores"]


class Row(NamedTuple):
    """One record as Chroma returned it (metadata still in the stored layout).

    A named tuple, not a dataclass: a search builds one per hit, and a tuple is built about three
    times faster.
    """

    id: str
    document: str | None
    record: Mapping[str, Any] | None
    embedding: npt.NDArray[np.float32] | None = None


def _rows(
    ids: Sequence[str],
    documents: Sequence[str | None] | None,
    records: Sequence[Mapping[str, Any] | None] | None,
    vectors: Sequence[Any] | None,
) -> list[Row]:
    """Rows from Chroma's columns (a column Chroma did not return is None)."""
    docs: Iterable[str | None] = repeat(None) if documents is None else documents
    metas: Iterable[Mapping[str, Any] | None] = repeat(None) if records is None else records
    if vectors is None:
        return list(map(Row, ids, docs, metas))
    return [
        Row(i, d, m, None if v is None else np.asarray(v, dtype=np.float32))
        for i, d, m, v in zip(ids, docs, metas, vectors)  # noqa: B905  # docs, metas may repeat forever
    ]


def rows_from_get(result: Mapping[str, Any]) -> list[Row]:
    """Rows of a `collection.get` answer."""
    return _rows(result["ids"], result.get("documents"), result.get("metadatas"), result.get("embeddings"))


def rows_from_query(result: Mapping[str, Any]) -> list[Row]:
    """Rows of a one-query `collection.query` answer."""
    columns = [result.get(name) for name in ("documents", "metadatas", "embeddings")]
    documents, records, vectors = (None if column is None else column[0] for column in columns)
    return _rows(result["ids"][0], documents, records, vectors)


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
