"""`HashingEmbedding`: the offline default. No download, deterministic, fast.

(First version; the tuned tokenizer and weighting land with the embeddings work.)
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rag.embeddings.base import normalize_rows
from rag.errors import InvalidRequestError

__all__ = ["HashingEmbedding"]

_WORD = re.compile(r"\w+")


class HashingEmbedding:
    """Hashed term frequencies: texts that share distinctive words get similar vectors.

    Example:
        >>> model = HashingEmbedding(dimensions=256)
        >>> model.embed(["Chroma keeps vectors", "vectors in Chroma"]).shape
        (2, 256)
    """

    def __init__(self, dimensions: int = 1024) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 2:
            raise InvalidRequestError(f"dimensions must be an integer >= 2, got {dimensions!r}")
        self._dimensions = dimensions

    @property
    def name(self) -> str:
        return f"hashing-v1-{self._dimensions}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word, tf in Counter(_WORD.findall(text.lower())).items():
                h = zlib.crc32(word.encode("utf-8"))
                sign = 1.0 if h & 0x80000000 else -1.0
                out[row, h % self._dimensions] += sign * (1.0 + np.log(tf))
        return normalize_rows(out, model=self.name)

    def __repr__(self) -> str:
        return f"HashingEmbedding(dimensions={self._dimensions})"
