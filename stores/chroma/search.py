"""Vector search on Chroma's HNSW index with an exact filter finish, and the `Candidates` for ranking.

A score is Chroma's inner product (float32) read as a cosine, rounded as the engine rounds: within 1e-6
of the engine's exact cosine; ties go by id. HNSW can miss a true neighbour (docs/stores.md).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from stores.chroma.filters import ChromaFilter
from stores.lexical import LexicalIndex
from stores.numpy.search import SCORE_DECIMALS, exact_scores

__all__ = ["ChromaCandidates", "Found", "Query", "cosines", "nearest"]

Found = tuple[str, float, str, dict[str, Any]]
"""A hit: id, cosine, text and metadata."""
Query = Callable[[npt.NDArray[np.float32], int, "dict[str, Any] | None"], list[Found]]
"""Chroma's query: (vector, n_results, where) -> the records found, nearest first."""


def cosines(distances: Sequence[float]) -> list[float]:
    """Chroma's inner-product distances (1 - dot) as cosines in [-1, 1], rounded as `exact_scores`
    rounds (+ 0.0 turns -0.0 into 0.0)."""
    return [min(1.0, max(-1.0, round(1.0 - d, SCORE_DECIMALS))) + 0.0 for d in distances]


def nearest(
    query: Query, vector: npt.NDArray[np.float32], k: int, condition: ChromaFilter, threshold: float
) -> list[Found]:
    """The best `k` (>= 1) records that match `condition` and whose cosine passes `threshold` (0: any):
    Chroma's nearest among the filter's superset, fetched four times deeper while fewer than `k` pass
    (or the `k`-th ties with the deepest fetched)."""
    wanted = k + 1  # one more, to see whether the k-th ties with the next
    while True:
        found = query(vector, wanted, condition.where)
        deepest = min((hit[1] for hit in found), default=1.0)
        hits = [hit for hit in found if (not threshold or hit[1] >= threshold) and condition.accepts(hit[3])]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        exhausted = len(found) < wanted or (threshold > 0 and deepest < threshold)
        if exhausted or (len(hits) >= k and hits[k - 1][1] > deepest):
            return hits[:k]
        wanted *= 4


@dataclass
class ChromaCandidates:
    """`rag.retrieval.ranking.Candidates` over a Chroma collection for one request."""

    text: str
    condition: ChromaFilter
    query_vector: Callable[[], npt.NDArray[np.float32]]
    """The query's unit vector (embedded on first need: lexical requests without threshold never ask)."""
    query: Query
    embeddings: Callable[[Sequence[str]], dict[str, npt.NDArray[np.float32]]]
    matching: Callable[[ChromaFilter, Sequence[str] | None], Collection[str]]
    """The ids that match a filter, among the given ids (None: among all records)."""
    index: Callable[[], LexicalIndex]
    found: dict[str, Found] = field(default_factory=dict)
    _stored: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    _eligible: Collection[str] | None = None

    def vector(self, depth: int, threshold: float) -> list[tuple[str, float]]:
        hits = nearest(self.query, self.query_vector(), depth, self.condition, threshold)
        self.found.update((hit[0], hit) for hit in hits)
        return [(hit[0], hit[1]) for hit in hits]

    def lexical(self, depth: int) -> list[tuple[str, float]]:
        index = self.index()
        if self.condition.normal is not None and self._eligible is None:
            # Check the best few by id first: a filter most records pass (the answering commands' "no
            # chat-memory turns") then reads a few records, not every record the filter selects.
            wanted = 4 * depth
            found = index.search(self.text, wanted)
            passing = self.matching(self.condition, [doc_id for doc_id, _ in found])
            hits = [hit for hit in found if hit[0] in passing]
            if len(hits) >= depth or len(found) < wanted:
                return hits[:depth]
            self._eligible = self.matching(self.condition, None)
        return index.search(self.text, depth, allowed=self._eligible)

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        self._stored.update(self.embeddings([doc_id for doc_id in ids if doc_id not in self._stored]))
        dimensions = len(self.query_vector())
        zero = np.zeros(dimensions, np.float32)  # an id the collection lost since the index saw it
        rows = [self._stored.get(doc_id, zero) for doc_id in ids]
        return np.array(rows, np.float32).reshape(-1, dimensions)

    def cosines(self, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        return exact_scores(self.vectors(ids), np.arange(len(ids)), self.query_vector())
