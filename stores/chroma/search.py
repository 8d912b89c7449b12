"""Rows of Chroma's answers, scored exactly as the numpy store scores, and merged across partial results.

Chroma returns columns (ids, documents, metadatas, embeddings, distances); `rows_from_get` and
`rows_from_query` turn them into `Row`s, `scores` computes cosines with the numpy store's own
`exact_scores` (so exact paths agree with it to the last bit), and `merge` combines partial top-k lists
(ties by id). `query_vector` embeds a search's query.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from rag.embeddings import EmbeddingModel, normalize_rows
from rag.errors import EmbeddingError
from stores.numpy.search import exact_scores

_new = tuple.__new__
_FLOAT32 = struct.Struct("f")

__all__ = ["KeptRow", "Row", "merge", "query_vector", "rows_from_get", "rows_from_query", "scores"]


class Row(NamedTuple):
    """One record as Chroma returned it (metadata still in the stored layout).

    A named tuple, not a dataclass: a search builds one per hit, and a tuple is built about three
    times faster.
    """

    id: str
    document: str | None
    record: Mapping[str, Any] | None
    embedding: npt.NDArray[np.float32] | None = None


class KeptRow(Row):
    """A hit whose text (`document`) and metadata (`record`, decoded: the caller's own dict, not the
    stored layout) come from the records the sidecar keeps (`stores.chroma.kept`), not from Chroma.

    Only records this store's layout wrote are kept, so they were checked when written: a search
    turns one into a `Document` as it is, and never checks its metadata against a filter again (the
    filter columns of the same sidecar chose it).
    """

    __slots__ = ()


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
        # `tuple.__new__` directly: `Row(...)` runs a Python `__new__` per row.
        return [_new(Row, (i, d, m, None)) for i, d, m in zip(ids, docs, metas)]  # noqa: B905
    return [
        Row(i, d, m, None if v is None else np.asarray(v, dtype=np.float32))
        for i, d, m, v in zip(ids, docs, metas, vectors)  # noqa: B905  # docs, metas may repeat forever
    ]


def rows_from_get(result: Mapping[str, Any]) -> list[Row]:
    """Rows of a `collection.get` answer."""
    return _rows(result["ids"], result.get("documents"), result.get("metadatas"), result.get("embeddings"))


def rows_from_query(result: Mapping[str, Any]) -> list[Row]:
    """Rows of a one-query `collection.query` answer."""
    documents, records, vectors = result.get("documents"), result.get("metadatas"), result.get("embeddings")
    return _rows(
        result["ids"][0],
        None if documents is None else documents[0],
        None if records is None else records[0],
        None if vectors is None else vectors[0],
    )


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


def query_vector(model: EmbeddingModel, text: str) -> npt.NDArray[np.float32]:
    """`text` embedded by `model` as a unit float32 vector, bit for bit what `embed_queries` returns.

    A search embeds one text, and `normalize_rows`'s general path (a finiteness pass, `np.linalg.norm`,
    a masked divide) was a third of a store's own time per query. For the usual answer (one writable
    float32 row of the right length) the norm is computed as `np.linalg.norm(axis=1)` computes it (the
    same pairwise sum of squares, the same float32 square root and division), so the vector, and every
    score, is unchanged. A sum of squares that is not finite (NaN, infinity, or float32 overflow) and
    any other answer take the general path, which raises its usual errors.
    """
    vectors = model.embed([text])
    dimensions = int(model.dimensions)
    if (
        type(vectors) is np.ndarray
        and vectors.dtype == np.float32
        and vectors.shape == (1, dimensions)
        and vectors.flags.writeable
    ):
        row: npt.NDArray[np.float32] = vectors[0]
        square = float(np.add.reduce(row * row))
        if math.isfinite(square):
            # The float64 root rounded to float32 is the float32 root (double rounding is harmless
            # for sqrt). Models return unit rows, whose root is mostly exactly 1: dividing by it
            # would change no bit, and a numpy call costs a search some 15 us with cold caches.
            root = math.sqrt(square)
            if square > 0 and _FLOAT32.unpack(_FLOAT32.pack(root))[0] != 1.0:
                # A Python float divides a float32 array in float32 (NEP 50), as the root rounded.
                np.divide(row, root, out=row)  # in place, as `normalize_rows` divides
            return row
    shape = getattr(vectors, "shape", None)
    if shape != (1, dimensions):
        raise EmbeddingError(
            f"embedding model {model.name!r} returned shape {shape!r} for 1 texts, expected (1, {dimensions})"
        )
    unit: npt.NDArray[np.float32] = normalize_rows(vectors, model=model.name)[0]
    return unit
