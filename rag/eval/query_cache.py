"""`QueryEmbeddingCache`: an embedding model that embeds each query once per evaluation run.

A sweep searches every question once per mode, filter setting and threshold, and a store embeds the
query on every search. Wrapped in this cache, the store's model embeds each question once: a call
with one text (a query; stores embed documents in batches) is answered from memory when the text was
seen. While `query_vector_unused()` is active, single texts get a placeholder vector without any
model call: `evaluate` uses it for lexical searches with threshold 0 and no diversity, whose ranking
reads BM25 scores only (see `rag.retrieval.ranking`), so lexical mode embeds nothing.

Example:
    >>> from rag.testing import FakeEmbedding
    >>> fake = FakeEmbedding(dimensions=4)
    >>> cache = QueryEmbeddingCache(fake)
    >>> _ = cache.embed(["where?"]), cache.embed(["where?"])
    >>> with cache.query_vector_unused():
    ...     _ = cache.embed(["not embedded"])
    >>> fake.calls, cache.name == fake.name
    ([['where?']], True)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import numpy.typing as npt

from rag.embeddings.base import EmbeddingModel

__all__ = ["QueryEmbeddingCache"]


class QueryEmbeddingCache:
    """Wraps an `EmbeddingModel`; same name and dimensions, so a store accepts it as the model itself.

    Args:
        model: the model that embeds.
        max_queries: how many query vectors to keep (the oldest are forgotten first).
    """

    def __init__(self, model: EmbeddingModel, max_queries: int = 100_000) -> None:
        self.model = model
        self._max = max_queries
        self._vectors: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._unused = 0

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def dimensions(self) -> int:
        return self.model.dimensions

    @contextmanager
    def query_vector_unused(self) -> Iterator[None]:
        """Inside, a single text gets a placeholder unit vector: for searches that never read it."""
        self._unused += 1
        try:
            yield
        finally:
            self._unused -= 1

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The model's vectors; a single text is embedded once and then answered from memory."""
        batch = list(texts)
        if len(batch) != 1:
            return self.model.embed(batch)  # documents: not worth remembering
        [text] = batch
        if self._unused:
            placeholder = np.zeros((1, self.dimensions), np.float32)
            placeholder[0, 0] = 1.0
            return placeholder
        vector = self._vectors.get(text)
        if vector is None:
            vector = np.asarray(self.model.embed([text]), dtype=np.float32)[0]
            self._vectors[text] = vector
            if len(self._vectors) > self._max:
                self._vectors.popitem(last=False)
        else:
            self._vectors.move_to_end(text)
        return vector[np.newaxis, :].copy()

    def close(self) -> None:
        """Close the wrapped model (its HTTP client), when it has anything to close."""
        closer = getattr(self.model, "close", None)
        if callable(closer):
            closer()

    def __repr__(self) -> str:
        return f"QueryEmbeddingCache({self.model!r})"
