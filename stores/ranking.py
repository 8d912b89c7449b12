"""Search modes, fusion, the threshold and MMR: one ranking procedure that every store runs.

A store supplies exact candidate lists through `Candidates` (its own vector search, its lexical index,
and exact cosines and vectors by id); `rank` turns them into the final (id, score) list for any
`SearchRequest`. Every store calls this one function, so given exact candidates the stores agree by
construction, ties and scores included.

What each mode returns (the spec in `rag.vectorstore.VectorStore`):

- "vector": the `top_k` best cosine scores among the documents matching the filter whose cosine
  passes the threshold. Score: cosine similarity.
- "lexical": the `top_k` best BM25 scores among the documents matching the filter that hold a query
  term and whose cosine passes the threshold (threshold 0 checks nothing). Score: BM25 (> 0).
- "hybrid": the vector list and the lexical list above, each cut at `candidate_depth(top_k)`, fused
  (reciprocal rank fusion with `rrf_k`, or `weighted_fusion` with `vector_weight`); the best `top_k`
  fused scores, among the documents with some evidence: a positive cosine or a query term (a
  document with neither is never returned, however short the page). Score: the fused score.

The candidate pool is fixed (`CANDIDATE_POOL` per list) for every `top_k` up to its size, so the page
size never changes the ranking: the results at `top_k=10` are exactly the first ten at `top_k=100`,
scores included. (A pool that grew with `top_k` changed the fusion's input: RRF then saw documents
deeper in one list, and weighted fusion's min-max scaling another worst score.)

A store whose lists also come as arrays of integer keys (`KeyedCandidates`, as the numpy store's,
whose keys are its BM25 index rows) has its hybrid requests without threshold or diversity ranked by
`rank_keys` instead: the same floating-point operations on arrays, and ids decoded only for the page
and for tied scores. The results are
identical, scores bit for bit (`tests/stores/test_hybrid_keys.py` checks them against a brute-force
fusion); a Chroma or PostgreSQL source, without keys, takes the path above.

Every final hit carries its named scores (`rank_scored`, `ScoredHit.scores`, which stores put in
`Document.scores`): `cosine` wherever the request embedded the query (`SearchRequest.embeds_query`:
every mode but lexical without a threshold), `bm25` for lexical hits and hybrid hits among the
lexical candidates, `fused` for hybrid hits. They are the numbers the ranking read, so nothing needs
computing again to show them; a cosine a list did not hold is read through `Candidates.cosines`.

Ties always go to the smaller id (code points). With `diversity` > 0, maximal marginal relevance
(`rag.retrieval.mmr`, relevance = the mode's score, similarity = cosine between stored vectors) picks
`top_k` documents from the mode's best `candidate_depth(top_k)`, in selection order, each keeping its
mode score; MMR picks greedily, so over the same pool a shorter list is a prefix of a longer one too.

Example:
    >>> candidate_depth(4), candidate_depth(100), candidate_depth(150)
    (100, 100, 150)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import NamedTuple, Protocol, cast

import numpy as np
import numpy.typing as npt

from rag.documents import SearchRequest
from rag.retrieval import mmr, reciprocal_rank_fusion, weighted_fusion

__all__ = [
    "CANDIDATE_POOL",
    "Candidates",
    "Hit",
    "Keyed",
    "KeyedCandidates",
    "KeyedPage",
    "ScoredHit",
    "candidate_depth",
    "named_scores",
    "needs_ranking",
    "rank",
    "rank_keys",
    "rank_scored",
    "with_cosines",
]

Hit = tuple[str, float]
Keyed = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]
"""A ranked list as arrays: integer keys (one per document) and their scores, best first."""
CANDIDATE_POOL = 100
"""How many candidates each list fused or diversified holds (when there are that many), for every
`top_k` up to this size; a larger `top_k` takes `top_k` candidates."""


def candidate_depth(top_k: int) -> int:
    """How many candidates each list contributes to fusion or MMR: `max(top_k, CANDIDATE_POOL)`.

    Fixed rather than proportional to `top_k`, so that a longer list only extends a shorter one (see
    the module docstring). 100 is deep enough that a document ranked moderately in both lists (where
    RRF puts the documents both rankers agree on) is seen by the fusion, that MMR has alternatives to
    choose from, and that a page of 100 results is still exact; each list costs one exact top-100
    search, a fraction of a millisecond on the numpy store.
    """
    return max(top_k, CANDIDATE_POOL)


def needs_ranking(request: SearchRequest) -> bool:
    """Whether the request needs `rank` (anything but a plain vector search)."""
    return request.mode != "vector" or request.diversity > 0


class Candidates(Protocol):
    """What a store supplies to `rank` for one request (its query text, vector and filter bound in).

    Every list is exact and ordered by score descending, then id ascending.
    """

    def vector(self, depth: int, threshold: float) -> list[Hit]:
        """The best `depth` (id, cosine) among filter matches whose cosine passes `threshold`."""
        ...

    def lexical(self, depth: int) -> list[Hit]:
        """The best `depth` (id, BM25) among filter matches holding at least one query term."""
        ...

    def cosines(self, ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """The cosine of each id, computed as `stores.numpy.search.exact_scores` does."""
        ...

    def vectors(self, ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """The stored unit vector of each id, one row each."""
        ...


class KeyedCandidates(Candidates, Protocol):
    """`Candidates` whose vector and lexical lists also come as `Keyed` arrays, in one key space.

    The keyed lists hold the same documents in the same order as `vector` and `lexical`, scores
    included; `ids_of` names the documents of any keys.
    """

    def vector_keys(self, depth: int, threshold: float) -> Keyed:
        """`vector` as keys and cosines."""
        ...

    def vector_order(self, depth: int) -> npt.NDArray[np.int64]:
        """The keys of `vector_keys(depth, 0.0)`, in the same order (what RRF needs: no scores)."""
        ...

    def lexical_keys(self, depth: int) -> Keyed:
        """`lexical` as keys and BM25 scores."""
        ...

    def ids_of(self, keys: npt.NDArray[np.int64]) -> list[str]:
        """The id of each key."""
        ...


class ScoredHit(NamedTuple):
    """A final hit: its id, the score it ranks by, and its named scores (`Document.scores`)."""

    id: str
    score: float
    scores: dict[str, float]


def named_scores(request: SearchRequest, score: float) -> dict[str, float]:
    """The named scores of a plain vector hit (`needs_ranking` False), whose score is its cosine.

    Example:
        >>> named_scores(SearchRequest("q"), 0.5)
        {'cosine': 0.5}
    """
    return {"cosine": score}


def _lexical(
    request: SearchRequest, source: Candidates, depth: int, cosines_of: dict[str, float]
) -> list[Hit]:
    """The best `depth` lexical hits whose cosine passes the threshold, looking deeper while needed.

    The cosines read for the threshold go into `cosines_of`."""
    if request.similarity_threshold == 0.0:
        return source.lexical(depth)
    wanted = depth
    while True:
        hits = source.lexical(wanted)
        cosines = source.cosines([doc_id for doc_id, _ in hits]).tolist()
        passing = [hit for hit, cosine in zip(hits, cosines, strict=True) if request.accepts(cosine)]
        # Fewer hits than asked means the lexical ranking is exhausted.
        if len(passing) >= depth or len(hits) < wanted:
            cosines_of.update(zip((doc_id for doc_id, _ in hits), cosines, strict=True))
            return passing[:depth]
        wanted *= 4


def _fuse(request: SearchRequest, vector: list[Hit], lexical: list[Hit]) -> list[Hit]:
    if request.fusion == "weighted":
        return weighted_fusion(vector, lexical, request.vector_weight)
    rankings = [[doc_id for doc_id, _ in vector], [doc_id for doc_id, _ in lexical]]
    # vector_weight shares the vote in RRF too: 0.5 gives both rankings weight 1, plain RRF.
    weights = [2.0 * request.vector_weight, 2.0 * (1.0 - request.vector_weight)]
    return reciprocal_rank_fusion(rankings, k=request.rrf_k, weights=weights)


def _with_evidence(fused: list[Hit], vector: list[Hit], lexical: list[Hit]) -> list[Hit]:
    """The fused hits that hold a query term or have a positive cosine: fusion gives every candidate
    a score, even one whose cosine is 0 and that shares no word with the query."""
    evident = {doc_id for doc_id, _ in lexical} | {doc_id for doc_id, cosine in vector if cosine > 0.0}
    return [hit for hit in fused if hit[0] in evident]


def _min_max(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """`rag.retrieval.fusion`'s min-max scaling, elementwise: the same operations on each score."""
    if not scores.size:
        return scores
    low, high = scores.min(), scores.max()
    if high == low:
        return np.ones_like(scores)
    scaled: npt.NDArray[np.float64] = (scores - low) / (high - low)
    return scaled


class KeyedPage(NamedTuple):
    """A final ranking from `rank_keys`: the keys, scores and ids of its documents, best first, and
    the named scores of each (`ScoredHit.scores`) but the cosine, which the store reads from the rows
    it holds for the keys (as `Candidates.cosines` would, without looking the ids up)."""

    keys: npt.NDArray[np.int64]
    scores: list[float]
    ids: list[str]
    named: Sequence[dict[str, float]] = ()


@functools.lru_cache(maxsize=64)
def _rrf_terms(rrf_k: int, length: int, weight: float) -> npt.NDArray[np.float64]:
    """`weight / (rrf_k + rank)` for ranks 1..length: what `reciprocal_rank_fusion` adds per list.

    Cached (read-only): a store serves the same few (rrf_k, depth, weight) triples again and again.
    """
    terms: npt.NDArray[np.float64] = weight / (rrf_k + np.arange(1, length + 1))
    terms.setflags(write=False)
    return terms


def _union(
    first: npt.NDArray[np.int64],
    first_terms: npt.NDArray[np.float64],
    second: npt.NDArray[np.int64],
    second_terms: npt.NDArray[np.float64],
) -> Keyed:
    """Every key of two lists (each without repeats), with the sum of its terms: `first`'s term, plus
    `second`'s for keys in both (one addition, as `math.fsum` of two numbers, rounded once)."""
    # Where each key of `second` sits in `first`, through an array indexed by key: its cells start
    # unset (np.empty costs nothing per cell), so only those of `second` are cleared and read back.
    size = max(int(np.maximum.reduce(first, initial=-1)), int(np.maximum.reduce(second, initial=-1))) + 1
    where = np.empty(size, np.int64)
    where[second] = -1
    where[first] = np.arange(len(first))
    at = where[second]
    shared = at >= 0
    sums = first_terms.copy()
    sums[at[shared]] += second_terms[shared]
    alone = ~shared
    return np.concatenate((first, second[alone])), np.concatenate((sums, second_terms[alone]))


def _fuse_keys(request: SearchRequest, source: KeyedCandidates, depth: int) -> KeyedPage:
    """`_fuse` over keyed lists, best `top_k` only: the same floating-point operations on each score
    (see `_union`), and ids decoded for the page alone."""
    lexical_keys, lexical_scores = source.lexical_keys(depth)
    vw = request.vector_weight
    vector_keys, vector_scores = source.vector_keys(depth, 0.0)
    if request.fusion == "weighted":
        vector_terms = vw * _min_max(vector_scores)
        lexical_terms = (1.0 - vw) * _min_max(lexical_scores)
    else:
        vector_terms = _rrf_terms(request.rrf_k, len(vector_keys), 2.0 * vw)
        lexical_terms = _rrf_terms(request.rrf_k, len(lexical_keys), 2.0 * (1.0 - vw))
    keys, fused = _union(vector_keys, vector_terms, lexical_keys, lexical_terms)
    evident = np.isin(keys, np.concatenate((lexical_keys, vector_keys[vector_scores > 0.0])))
    keys, fused = keys[evident], fused[evident]
    top_k = request.top_k
    if len(keys) > top_k:
        kth = np.partition(fused, len(keys) - top_k)[len(keys) - top_k]
        kept = fused >= kth  # keys tied with the k-th come along: the id decides between them
        keys, fused = keys[kept], fused[kept]
    # Fused scores tie often (a rank in one list against the same rank in the other), and the page's
    # ids are wanted anyway: decode them all and sort in Python.
    page = sorted(zip((-fused).tolist(), source.ids_of(keys), range(len(keys)), strict=True))[:top_k]
    chosen = keys[[position for _, _, position in page]]
    scores = [-negated for negated, _, _ in page]
    ids = [doc_id for _, doc_id, _ in page]
    bm25 = dict(zip(lexical_keys.tolist(), lexical_scores.tolist(), strict=True))
    named = [
        {"fused": score, **({"bm25": bm25[key]} if key in bm25 else {})}
        for key, score in zip(chosen.tolist(), scores, strict=True)
    ]
    return KeyedPage(chosen, scores, ids, named)


def rank_keys(request: SearchRequest, source: Candidates) -> KeyedPage | None:
    """`rank` as a `KeyedPage`, for the requests a `KeyedCandidates` source ranks by keys alone
    (hybrid, without threshold or diversity); None for any other request or source."""
    if request.mode != "hybrid" or request.diversity > 0 or request.similarity_threshold != 0.0:
        return None
    if request.top_k == 0 or not hasattr(source, "vector_keys"):
        return None
    return _fuse_keys(request, cast(KeyedCandidates, source), candidate_depth(request.top_k))


def _diversify(request: SearchRequest, source: Candidates, ranked: list[Hit]) -> list[Hit]:
    if len(ranked) <= 1:
        return ranked[: request.top_k]
    vectors = source.vectors([doc_id for doc_id, _ in ranked])
    relevance = [score for _, score in ranked]
    picked = mmr(None, vectors, relevance, request.top_k, request.diversity)
    return [ranked[index] for index in picked]


def rank(request: SearchRequest, source: Candidates) -> list[Hit]:
    """The final (id, score) list for `request`, best (or, with diversity, first picked) first:
    `rank_scored` without the named scores."""
    return [(hit.id, hit.score) for hit in rank_scored(request, source)]


def rank_scored(request: SearchRequest, source: Candidates, *, complete: bool = True) -> list[ScoredHit]:
    """The final hits for `request`, best (or, with diversity, first picked) first, each with its
    named scores (see the module docstring).

    `complete=False` leaves out the cosines no candidate list held (hybrid hits found by BM25 alone),
    for a store that reads them with its final documents (`with_cosines`)."""
    if request.top_k == 0:
        return []
    keyed = rank_keys(request, source)
    if keyed is not None:
        hits = list(map(ScoredHit, keyed.ids, keyed.scores, keyed.named))
        return with_cosines(request, source, hits)
    diverse = request.diversity > 0
    depth = candidate_depth(request.top_k) if diverse or request.mode == "hybrid" else request.top_k
    threshold = request.similarity_threshold
    cosines: dict[str, float] = {}
    bm25: dict[str, float] = {}
    if request.mode == "vector":
        ranked = source.vector(depth, threshold)
        cosines.update(ranked)
    elif request.mode == "lexical":
        ranked = _lexical(request, source, depth, cosines)
        bm25.update(ranked)
    else:
        vector, lexical = source.vector(depth, threshold), _lexical(request, source, depth, cosines)
        cosines.update(vector)
        bm25.update(lexical)
        ranked = _with_evidence(_fuse(request, vector, lexical), vector, lexical)[:depth]
    final = _diversify(request, source, ranked) if diverse else ranked[: request.top_k]
    kind = {"vector": "cosine", "lexical": "bm25"}.get(request.mode, "fused")
    hits = [ScoredHit(doc_id, score, _named(kind, doc_id, score, cosines, bm25)) for doc_id, score in final]
    return with_cosines(request, source, hits) if complete else hits


def with_cosines(request: SearchRequest, source: Candidates, hits: list[ScoredHit]) -> list[ScoredHit]:
    """`hits` with the cosine of those lacking one, when the request embedded its query; a cosine the
    source cannot give (not finite: a document deleted meanwhile) is left out."""
    missing = [hit.id for hit in hits if "cosine" not in hit.scores]
    if not request.embeds_query or not missing:
        return hits
    found = dict(zip(missing, source.cosines(missing).tolist(), strict=True))
    return [
        hit._replace(scores={**hit.scores, "cosine": found[hit.id]})
        if hit.id in found and math.isfinite(found[hit.id])
        else hit
        for hit in hits
    ]


def _named(
    kind: str, doc_id: str, score: float, cosines: dict[str, float], bm25: dict[str, float]
) -> dict[str, float]:
    named = {kind: score}
    if kind != "cosine" and math.isfinite(cosines.get(doc_id, math.nan)):
        named["cosine"] = cosines[doc_id]
    if kind == "fused" and doc_id in bm25:
        named["bm25"] = bm25[doc_id]
    return named
