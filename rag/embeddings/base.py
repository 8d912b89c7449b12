"""The `EmbeddingModel` protocol and the checks every model's output goes through."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from rag.errors import EmbeddingError

__all__ = ["EmbeddingModel", "TokenCounter", "normalize_rows"]


@runtime_checkable
class EmbeddingModel(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    - `name` identifies the model and every setting that changes its vectors; stores record it.
    - `dimensions` is the length of every vector.
    - `embed(texts)` returns a float32 array of shape (len(texts), dimensions), each row of unit length
      (a row of an empty or vector-less text may be all zeros).
    """

    @property
    def name(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


@runtime_checkable
class TokenCounter(Protocol):
    """An embedding model that can size text in its own tokens, so splitters never exceed its input."""

    @property
    def max_tokens(self) -> int | None: ...

    def count_tokens(self, text: str) -> int: ...


def normalize_rows(matrix: npt.ArrayLike, *, model: str) -> npt.NDArray[np.float32]:
    """float32 rows of unit length; zero rows stay zero. Raises `EmbeddingError` on NaN or infinity."""
    vectors = np.asarray(matrix, dtype=np.float32)
    if vectors.ndim != 2:
        raise EmbeddingError(f"embedding model {model!r} returned an array of shape {vectors.shape}, not 2-D")
    if not np.isfinite(vectors).all():
        raise EmbeddingError(f"embedding model {model!r} returned non-finite values (NaN or infinity)")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    np.divide(vectors, norms, out=vectors, where=norms > 0)
    return vectors
