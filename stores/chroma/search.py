"""Vector search on Chroma's HNSW index with an exact filter finish, and the `Candidates` for ranking.

`nearest` asks Chroma for the `k` nearest records among a filter's superset (`stores.chroma.filters`),
checks each candidate's metadata, and asks again four times deeper while fewer than `k` candidates
pass (or the `k`-th ties with the deepest fetched), until Chroma has no more. HNSW chooses the
candidates; their scores are the cosines of their stored vectors computed as the engine computes
them (`exact_scores`), so a score, the threshold and the order of ties are the engine's. HNSW is
approximate: a true neighbour can be missed (docs/stores.md gives the measured recall).

`ChromaCandidates` feeds `stores.ranking.rank_scored` for lexical, hybrid, threshold and MMR requests:
vector lists from `nearest`, lexical lists from the BM25 index beside the collection, and cosines and
vectors by id from the stored embeddings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from stores.chroma.filters import ChromaFilter
from stores.chroma.records import decode
from stores.lexical import LexicalIndex
from stores.numpy.search import exact_scores

__all__ = ["ChromaCandidates", "Found", "Query", "nearest"]

Found = tuple[str, float, str, dict[str, Any]]
"""A hit: id, cosine, text and metadata."""
Query = Callable[
    [npt.NDArray[np.float32], int, "dict[str, Any] | None"],
    tuple[list[str], npt.NDArray[np.float32], list[Any]],
]
"""Chroma's query: (vector, n_results, where) -> ids, their stored vectors, (document, raw metadata)
pairs, nearest first."""


def nearest(
    query: Query, vector: npt.NDArray[np.float32], k: int, condition: ChromaFilter, threshold: float
) -> list[Found]:
    """The best `k` records that match `condition` and whose cosine passes `threshold` (0: any)."""
    if k == 0 or condition.matches_nothing:
        return []
    wanted = k + 1  # one more, to see whether the k-th ties with the next
    while True:
        ids, vectors, records = query(vector, wanted, condition.where)
        scores = exact_scores(vectors, np.arange(len(ids)), vector).tolist() if ids else []
        hits: list[Found] = []
        deepest = min(scores, default=1.0)
        for doc_id, score, record in zip(ids, scores, records, strict=True):
            if threshold and score < threshold:
                continue
            text, metadata = decode(*record)
            if condition.accepts(metadata):
                hits.append((doc_id, score, text, metadata))
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        exhausted = len(ids) < wanted or (threshold > 0 and deepest < threshold)
        if exhausted or (len(hits) > k and hits[k - 1][1] > deepest):
            return hits[:k]
        wanted *= 4


@dataclass
class ChromaCandidates:
    """`stores.ranking.Candidates` over a Chroma collection for one request."""

    text: str
    condition: ChromaFilter
    query_vector: Callable[[], npt.NDArray[np.float32]]
    """The query's unit vector (embedded on first need: lexical requests without threshold never ask)."""
    query: Query
    embeddings: Callable[[Sequence[str]], dict[str, npt.NDArray[np.float32]]]
    matching: Callable[[ChromaFilter], set[str]]
    index: Callable[[], LexicalIndex]
    found: dict[str, Found] = field(default_factory=dict)
    _stored: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)
    _eligible: set[str] | None = None

    def vector(self, depth: int, threshold: float) -> list[tuple[str, float]]:
        hits = nearest(self.query, self.query_vector(), depth, self.condition, threshold)
        self.found.update((hit[0], hit) for hit in hits)
        return [(hit[0], hit[1]) for hit in hits]

    def lexical(self, depth: int) -> list[tuple[str, float]]:
        if self.condition.matches_nothing:
            return []
        if self.condition.normal is not None and self._eligible is None:
            self._eligible = self.matching(self.condition)
        return self.index().search(self.text, depth, allowed=self._eligible)

    def _vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        missing = [doc_id for doc_id in ids if doc_id not in self._stored]
        if missing:
            self._stored.update(self.embeddings(missing))
        rows = [self._stored.get(doc_id) for doc_id in ids]
        dimensions = len(self.query_vector())
        zero = np.zeros(dimensions, np.float32)  # an id the collection lost since the index saw it
        return np.array([zero if row is None else row for row in rows], np.float32).reshape(-1, dimensions)

    def cosines(self, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        matrix = self._vectors(ids)
        return exact_scores(matrix, np.arange(len(ids)), self.query_vector())

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._vectors(ids)
