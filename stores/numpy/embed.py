"""Unit vectors for the stores: given embeddings checked, missing ones computed in batches."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rag.documents import Document
from rag.embeddings import EmbeddingModel, normalize_rows
from rag.errors import DimensionMismatchError, EmbeddingError

__all__ = ["document_vectors", "embed_queries"]


def embed_queries(model: EmbeddingModel, texts: list[str]) -> npt.NDArray[np.float32]:
    """`model.embed(texts)`, shape-checked and normalised to unit rows."""
    dimensions = int(model.dimensions)
    vectors = model.embed(texts)
    shape = getattr(vectors, "shape", None)
    if shape != (len(texts), dimensions):
        raise EmbeddingError(
            f"embedding model {model.name!r} returned shape {shape!r} for {len(texts)} texts, "
            f"expected ({len(texts)}, {dimensions})"
        )
    return normalize_rows(vectors, model=model.name)


def document_vectors(
    documents: Sequence[Document], model: EmbeddingModel, batch_size: int
) -> npt.NDArray[np.float32]:
    """One unit row per document: its own embedding (checked) or `model`'s, embedded in batches."""
    dimensions = int(model.dimensions)
    vectors = np.empty((len(documents), dimensions), np.float32)
    missing: list[int] = []
    for i, document in enumerate(documents):
        if document.embedding is None:
            missing.append(i)
            continue
        if document.embedding.shape != (dimensions,):
            size = document.embedding.shape[0]
            raise DimensionMismatchError(
                f"the embedding of document {document.id!r} has {size} dimensions, "
                f"but model {model.name!r} of this store has {dimensions}"
            )
        if not np.isfinite(document.embedding).all():
            raise DimensionMismatchError(f"the embedding of document {document.id!r} holds NaN or infinity")
        vectors[i] = document.embedding
    for start in range(0, len(missing), batch_size):
        chosen = missing[start : start + batch_size]
        vectors[chosen] = embed_queries(model, [documents[i].text for i in chosen])
    return normalize_rows(vectors, model=model.name)
