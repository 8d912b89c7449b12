"""`FakeEmbedding`: deterministic vectors seeded by a hash of each text."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rag.embeddings.base import normalize_rows
from rag.errors import InvalidRequestError
from rag.observability.steps import traced_embedding

__all__ = ["FakeEmbedding"]


class FakeEmbedding:
    """Unit vectors drawn from a random generator seeded with the SHA-256 of the text.

    The same text always gets the same vector, in any process; different texts get unrelated vectors,
    so similarity means nothing except identity. `calls` records each batch it was asked to embed.

    Example:
        >>> fake = FakeEmbedding(dimensions=8)
        >>> bool((fake.embed(["a"]) == fake.embed(["a"])).all())
        True
        >>> fake.calls
        [['a'], ['a']]
    """

    __test__ = False

    def __init__(self, dimensions: int = 16) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            raise InvalidRequestError(f"dimensions must be an integer >= 1, got {dimensions!r}")
        self._dimensions = dimensions
        self.calls: list[list[str]] = []

    @property
    def name(self) -> str:
        return f"fake-{self._dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @traced_embedding
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        batch = list(texts)
        self.calls.append(batch)
        rows = np.empty((len(batch), self._dimensions), dtype=np.float64)
        for i, text in enumerate(batch):
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
            rows[i] = np.random.default_rng(seed).standard_normal(self._dimensions)
        return normalize_rows(rows, model=self.name)

    def __repr__(self) -> str:
        return f"FakeEmbedding(dimensions={self._dimensions})"
