"""Document post-processors: drop near-duplicates, cap chunks per source, diversify with MMR.

Each keeps the order it is given except where it says otherwise, so they compose in any order after
a joiner or a reranker.

Example:
    >>> from rag import Document
    >>> docs = [Document("1", "Add CORS middleware.", {"source": "a.md"}),
    ...         Document("2", "add  CORS middleware", {"source": "b.md"}),
    ...         Document("3", "Path parameters.", {"source": "a.md"})]
    >>> [d.id for d in NearDuplicateFilter().process(Query("cors"), docs)]
    ['1', '3']
    >>> [d.id for d in MaxPerSource(1).process(Query("cors"), docs)]
    ['1', '2']
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rag.documents import Document
from rag.embeddings.base import EmbeddingModel
from rag.errors import InvalidRequestError
from rag.retrieval.mmr import mmr
from rag.retrieval.stages import Query

__all__ = ["MaxPerSource", "MaximalMarginalRelevance", "NearDuplicateFilter"]

_WORD = re.compile(r"\w+")


def _unit(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise InvalidRequestError(f"{name} must be within [0, 1], got {value!r}")
    return float(value)


def _shingles(text: str) -> frozenset[tuple[str, ...]]:
    """Word pairs of the case-folded text (single words for a one-word text): punctuation and spacing
    do not count, so two copies of a chunk that differ only in those are identical here."""
    words = _WORD.findall(text.casefold())
    if len(words) < 2:
        return frozenset((word,) for word in words)
    return frozenset(itertools.pairwise(words))


class NearDuplicateFilter:
    """Drops a document whose text nearly repeats one kept before it (the better-ranked copy stays).

    Texts are compared as sets of consecutive word pairs, ignoring case, punctuation and spacing;
    two texts whose Jaccard similarity is at least `threshold` are near-duplicates (1.0: only texts
    with the same words in the same order). Cost: O(n^2) set comparisons for n documents.

    Example:
        >>> from rag import Document
        >>> docs = [Document("a", "The beacon is lit at dusk."), Document("b", "the beacon is lit at dusk")]
        >>> [d.id for d in NearDuplicateFilter(threshold=1.0).process(Query("beacon"), docs)]
        ['a']
    """

    def __init__(self, threshold: float = 0.9) -> None:
        self.threshold = _unit("threshold", threshold)

    def process(self, query: Query, documents: Sequence[Document]) -> list[Document]:
        kept: list[Document] = []
        seen: list[frozenset[tuple[str, ...]]] = []
        for document in documents:
            shingles = _shingles(document.text)
            if not any(self._similar(shingles, other) for other in seen):
                kept.append(document)
                seen.append(shingles)
        return kept

    def _similar(self, a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> bool:
        if not a or not b:
            return a == b  # two texts without words are the same (empty) text
        return len(a & b) / len(a | b) >= self.threshold


class MaxPerSource:
    """Keeps at most `limit` documents from each source (metadata `key`, "source" by default).

    The first ones, in the order given, are kept. A document without the key is its own source.

    Example:
        >>> from rag import Document
        >>> docs = [Document(str(i), "x", {"source": "a.md" if i < 3 else "b.md"}) for i in range(5)]
        >>> [d.id for d in MaxPerSource(2).process(Query("x"), docs)]
        ['0', '1', '3', '4']
    """

    def __init__(self, limit: int, *, key: str = "source") -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidRequestError(f"limit must be an integer >= 1, got {limit!r}")
        self.limit = limit
        self.key = key

    def process(self, query: Query, documents: Sequence[Document]) -> list[Document]:
        counts: dict[str, int] = {}
        kept: list[Document] = []
        for document in documents:
            value = document.metadata.get(self.key)
            # repr keeps 1 and "1" apart; the id stands in for a missing source.
            source = repr(value) if value is not None else f"id:{document.id}"
            counts[source] = counts.get(source, 0) + 1
            if counts[source] <= self.limit:
                kept.append(document)
        return kept


class MaximalMarginalRelevance:
    """Reorders (and optionally cuts) the documents by maximal marginal relevance.

    Relevance is the documents' order as given: their scores when all have one, else their ranks.
    Similarity between documents is the cosine of their vectors: their `Document.embedding` when
    every one has one (of one size), otherwise their texts embedded with `embedding`. `diversity` 0
    keeps the order, 1 picks by novelty alone after the first (see `rag.retrieval.mmr`). `top_k`
    None keeps every document.

    Example:
        >>> from rag import Document, HashingEmbedding
        >>> docs = [Document("a", "beacon lamp lit"), Document("a2", "beacon lamp lit"),
        ...         Document("b", "tides flood the causeway")]
        >>> mmr_ = MaximalMarginalRelevance(HashingEmbedding(), diversity=0.8, top_k=2)
        >>> [d.id for d in mmr_.process(Query("beacon"), docs)]
        ['a', 'b']
    """

    def __init__(
        self, embedding: EmbeddingModel, diversity: float = 0.5, *, top_k: int | None = None
    ) -> None:
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0):
            raise InvalidRequestError(f"top_k must be an integer >= 0 or None, got {top_k!r}")
        self.embedding = embedding
        self.diversity = _unit("diversity", diversity)
        self.top_k = top_k

    def process(self, query: Query, documents: Sequence[Document]) -> list[Document]:
        count = len(documents) if self.top_k is None else min(self.top_k, len(documents))
        if count == 0:
            return []
        scores = [document.score for document in documents]
        relevance = (
            [float(s) for s in scores if s is not None]
            if all(s is not None for s in scores)
            else [float(len(documents) - i) for i in range(len(documents))]
        )
        picked = mmr(None, self._vectors(documents), relevance, count, self.diversity)
        return [documents[index] for index in picked]

    def _vectors(self, documents: Sequence[Document]) -> npt.NDArray[np.float64]:
        stored = [document.embedding for document in documents]
        if all(v is not None for v in stored) and len({v.shape for v in stored if v is not None}) == 1:
            return np.stack([np.asarray(v, dtype=np.float64) for v in stored if v is not None])
        # Some lack a vector (or they come from different stores): embed every text with one model.
        return np.asarray(self.embedding.embed([d.text for d in documents]), dtype=np.float64)
