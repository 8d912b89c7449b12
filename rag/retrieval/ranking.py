"""Search modes, fusion, the threshold and MMR: one ranking procedure that every store runs.

A store supplies exact candidate lists (`Candidates`); `rank_scored` turns them into the final hits of
any `SearchRequest` (each mode's spec is `rag.vectorstore.VectorStore`), so stores with exact candidates
agree by construction, ties (to the smaller id) and scores included. Hybrid fuses the vector and the
lexical lists, each cut at `candidate_depth(top_k)`, and keeps documents with a positive cosine or a
query term; MMR (`diversity` > 0) picks from the same depth. Every hit carries its named scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from rag.documents import SearchRequest
from rag.retrieval.fusion import reciprocal_rank_fusion, weighted_fusion
from rag.retrieval.mmr import mmr

__all__ = [
    "CANDIDATE_POOL",
    "Candidates",
    "Hit",
    "Keyed",
    "KeyedCandidates",
    "KeyedPage",
    "ScoredHit",
    "candidate_depth",
    "needs_ranking",
    "rank_keys",
    "rank_scored",
]

Hit = tuple[str, float]
Keyed = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]
"""A ranked list as arrays: integer keys (one per document) and their scores, best first."""
CANDIDATE_POOL = 100
"""How many candidates each fused or diversified list holds, for every `top_k` up to this size."""


def candidate_depth(top_k: int) -> int:
    """How many candidates each list contributes to fusion or MMR: `max(top_k, CANDIDATE_POOL)`, fixed
    so that the results at `top_k=10` are the first ten at `top_k=100`."""
    return max(top_k, CANDIDATE_POOL)


def needs_ranking(request: SearchRequest) -> bool:
    """Whether the request needs `rank_scored` (anything but a plain vector search)."""
    return request.mode != "vector" or request.diversity > 0


class Candidates(Protocol):
    """What a store supplies for one request (its query text, vector and filter bound in).

    Every list is exact and ordered by score descending, then id ascending.
    """

    def vector(self, depth: int, threshold: float) -> list[Hit]:
        """The best `depth` (id, cosine) among filter matches whose cosine passes `threshold`."""

    def lexical(self, depth: int) -> list[Hit]:
        """The best `depth` (id, BM25) among filter matches holding at least one query term."""

    def cosines(self, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """The cosine of each id with the query, from its stored vector."""

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """The stored unit vector of each id, one row each."""


class KeyedCandidates(Candidates, Protocol):
    """`Candidates` whose vector and lexical lists also come as `Keyed` arrays in one key space: the same
    documents in the same order, scores included."""

    def vector_keys(self, depth: int, threshold: float) -> Keyed:
        """`vector` as keys and cosines."""

    def lexical_keys(self, depth: int) -> Keyed:
        """`lexical` as keys and BM25 scores."""

    def ids_of(self, keys: npt.NDArray[np.int64]) -> list[str]:
        """The id of each key."""


class ScoredHit(NamedTuple):
    """A final hit: its id, the score it ranks by, and its named scores (`Document.scores`)."""

    id: str
    score: float
    scores: dict[str, float]


def _lexical(request: SearchRequest, source: Candidates, depth: int, seen: dict[str, float]) -> list[Hit]:
    """The best `depth` lexical hits whose cosine passes the threshold (their cosines into `seen`)."""
    if request.similarity_threshold == 0.0:
        return source.lexical(depth)
    wanted = depth
    while True:
        hits = source.lexical(wanted)
        cosines = source.cosines([doc_id for doc_id, _ in hits]).tolist()
        passing = [hit for hit, cosine in zip(hits, cosines, strict=True) if request.accepts(cosine)]
        if len(passing) >= depth or len(hits) < wanted:  # fewer hits than asked: the ranking is exhausted
            seen.update(zip((doc_id for doc_id, _ in hits), cosines, strict=True))
            return passing[:depth]
        wanted *= 4


def _fuse(request: SearchRequest, vector: list[Hit], lexical: list[Hit]) -> list[Hit]:
    if request.fusion == "weighted":
        fused = weighted_fusion(vector, lexical, request.vector_weight, vector_floor=request.vector_floor)
    else:
        rankings = [[doc_id for doc_id, _ in vector], [doc_id for doc_id, _ in lexical]]
        # vector_weight shares the vote in RRF too: 0.5 gives both rankings weight 1, plain RRF.
        weights = [2.0 * request.vector_weight, 2.0 * (1.0 - request.vector_weight)]
        fused = reciprocal_rank_fusion(rankings, k=request.rrf_k, weights=weights)
    # Fusion scores every candidate, even one with cosine 0 that shares no word with the query.
    evident = {doc_id for doc_id, _ in lexical} | {doc_id for doc_id, cosine in vector if cosine > 0.0}
    return [hit for hit in fused if hit[0] in evident]


class KeyedPage(NamedTuple):
    """A final ranking from `rank_keys`, best first: keys, scores, ids and the named scores but the
    cosine, which the store reads from the rows it holds for the keys."""

    keys: npt.NDArray[np.int64]
    scores: list[float]
    ids: list[str]
    named: Sequence[dict[str, float]]


def rank_keys(request: SearchRequest, keyed: KeyedCandidates) -> KeyedPage | None:
    """The final page of an RRF hybrid request without threshold or diversity, fused on keys (`_fuse`'s
    operations on each score, ids decoded for the page and ties only); None for any other request."""
    if request.mode != "hybrid" or request.fusion != "rrf" or request.diversity > 0:
        return None
    if request.similarity_threshold != 0.0 or request.top_k == 0:
        return None
    depth, vw, top_k = candidate_depth(request.top_k), request.vector_weight, request.top_k
    lexical_keys, lexical_scores = keyed.lexical_keys(depth)
    vector_keys, vector_scores = keyed.vector_keys(depth, 0.0)
    # What `reciprocal_rank_fusion` adds per list, `weight / (rrf_k + rank)`, summed per key onto 0.0:
    # the same two-number sums.
    vector_terms = 2.0 * vw / (request.rrf_k + np.arange(1, len(vector_keys) + 1))
    lexical_terms = 2.0 * (1.0 - vw) / (request.rrf_k + np.arange(1, len(lexical_keys) + 1))
    keys, slots = np.unique(np.concatenate((vector_keys, lexical_keys)), return_inverse=True)
    fused = np.bincount(slots, np.concatenate((vector_terms, lexical_terms)), minlength=keys.size)
    evident = np.isin(keys, np.concatenate((lexical_keys, vector_keys[vector_scores > 0.0])))
    keys, fused = keys[evident], fused[evident]
    if len(keys) > top_k:
        kept = fused >= np.partition(fused, len(keys) - top_k)[len(keys) - top_k]
        keys, fused = keys[kept], fused[kept]  # keys tied with the k-th come along: the id decides
    # Fused scores tie often and the page's ids are wanted anyway: decode them and sort in Python.
    page = sorted(zip((-fused).tolist(), keyed.ids_of(keys), range(len(keys)), strict=True))[:top_k]
    chosen = keys[[position for _, _, position in page]]
    scores = [-negated for negated, _, _ in page]
    bm25 = dict(zip(lexical_keys.tolist(), lexical_scores.tolist(), strict=True))
    named = [
        {"fused": score, **({"bm25": bm25[key]} if key in bm25 else {})}
        for key, score in zip(chosen.tolist(), scores, strict=True)
    ]
    return KeyedPage(chosen, scores, [doc_id for _, doc_id, _ in page], named)


def rank_scored(request: SearchRequest, source: Candidates) -> list[ScoredHit]:
    """The final hits for `request`, best (or, with diversity, first picked) first, with named scores."""
    if request.top_k == 0:
        return []
    diverse = request.diversity > 0
    depth = candidate_depth(request.top_k) if diverse or request.mode == "hybrid" else request.top_k
    cosines: dict[str, float] = {}
    bm25: dict[str, float] = {}
    if request.mode == "vector":
        ranked = source.vector(depth, request.similarity_threshold)
        cosines.update(ranked)
    elif request.mode == "lexical":
        ranked = _lexical(request, source, depth, cosines)
        bm25.update(ranked)
    else:
        vector = source.vector(depth, request.similarity_threshold)
        lexical = _lexical(request, source, depth, cosines)
        cosines.update(vector)
        bm25.update(lexical)
        ranked = _fuse(request, vector, lexical)[:depth]
    kind = {"vector": "cosine", "lexical": "bm25"}.get(request.mode, "fused")
    if diverse and len(ranked) > 1:
        vectors = source.vectors([doc_id for doc_id, _ in ranked])
        picked = mmr(None, vectors, [score for _, score in ranked], request.top_k, request.diversity)
        ranked = [ranked[index] for index in picked]
    ranked = ranked[: request.top_k]
    # The cosines no list held (hybrid hits found by BM25 alone), when the request embedded its query;
    # one the source cannot give (not finite: a document deleted meanwhile) is left out.
    missing = [doc_id for doc_id, _ in ranked if doc_id not in cosines]
    if request.embeds_query and missing:
        cosines.update(zip(missing, source.cosines(missing).tolist(), strict=True))
    hits = []
    for doc_id, score in ranked:
        named = {kind: score}
        if kind != "cosine" and math.isfinite(cosines.get(doc_id, math.nan)):
            named["cosine"] = cosines[doc_id]
        if kind == "fused" and doc_id in bm25:
            named["bm25"] = bm25[doc_id]
        hits.append(ScoredHit(doc_id, score, named))
    return hits
