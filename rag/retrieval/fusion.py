"""Fusing ranked lists: reciprocal rank fusion, and a weighted blend of scaled scores.

Both are deterministic: equal fused scores come out in ascending id order (code points), and the
inputs are never reordered or mutated.

Example:
    >>> reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=1)
    [('b', 0.8333333333333333), ('a', 0.5), ('c', 0.3333333333333333)]
    >>> weighted_fusion([("a", 0.8), ("b", 0.4)], [("b", 8.0), ("c", 2.0)], vector_weight=0.75)
    [('a', 0.75), ('b', 0.625), ('c', 0.0625)]
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from rag.errors import InvalidRequestError

__all__ = ["reciprocal_rank_fusion", "weighted_fusion"]

_FLOOR_RANK = 40


def _ranked(scores: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Each id scored `sum_i weights[i] / (k + rank_i)` over the rankings that hold it (rank from 1).

    Cormack, Clarke and Buettcher (2009); `k=60` is their constant. A ranking that repeats an id counts
    only its first (best) position. Weights default to 1 each.

    Raises:
        InvalidRequestError: `k` < 1, or weights that are negative, not finite or not one per ranking.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidRequestError(f"rrf k must be an integer >= 1, got {k!r}")
    if weights is None:
        weights = [1.0] * len(rankings)
    elif len(weights) != len(rankings) or not all(math.isfinite(w) and w >= 0 for w in weights):
        raise InvalidRequestError(
            f"weights must be one finite number >= 0 per ranking ({len(rankings)}), got {weights!r}"
        )
    parts: dict[str, list[float]] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        if isinstance(ranking, str):
            raise InvalidRequestError(f"a ranking must be a sequence of ids, not a str: {ranking!r}")
        for rank, doc_id in enumerate(dict.fromkeys(ranking), start=1):
            parts.setdefault(doc_id, []).append(weight / (k + rank))
    # fsum rounds once, so the fused score does not depend on the order of the rankings.
    return _ranked({doc_id: math.fsum(terms) for doc_id, terms in parts.items()})


def _scaled(hits: Sequence[tuple[str, float]], name: str, floor_rank: int | None) -> dict[str, float]:
    """Each score's lead over the list's floor, divided by the list's best score.

    The floor is the `floor_rank`-th best score, or 0 when there is no floor rank or the list holds
    fewer ids (a list that short is exhausted: every document left out of it scores 0). A score at or
    below the floor (a negative cosine), or every score when the best is not above zero, becomes 0."""
    scores: dict[str, float] = {}
    for doc_id, score in hits:
        if not math.isfinite(score):
            raise InvalidRequestError(f"{name} score of {doc_id!r} is not finite: {score!r}")
        scores.setdefault(doc_id, score)  # a repeated id keeps its first (best-ranked) score
    best = max(scores.values(), default=0.0)
    if best <= 0.0:
        return dict.fromkeys(scores, 0.0)
    floor = 0.0
    if floor_rank is not None and len(scores) >= floor_rank:
        floor = max(heapq.nlargest(floor_rank, scores.values())[-1], 0.0)
    return {doc_id: max(score - floor, 0.0) / best for doc_id, score in scores.items()}


def weighted_fusion(
    vector: Sequence[tuple[str, float]],
    lexical: Sequence[tuple[str, float]],
    vector_weight: float,
    *,
    vector_floor: bool = False,
) -> list[tuple[str, float]]:
    """`vector_weight * v + (1 - vector_weight) * l`, with each list's scores divided by its best.

    Cosine similarities and BM25 scores live on unrelated scales; dividing each list by its best
    score puts both on [0, 1] (the best hit of each list gets 1) and keeps how far apart the scores
    are. The hundred cosines of a candidate list often lie close together (0.30 to 0.36, say): scaled
    by the best they stay close, where min-max normalisation would stretch them across [0, 1] and let
    near-ties in one list outvote clear leads in the other. An id missing from a list gets 0 from it,
    as does a negative cosine. The fused score is in [0, 1].

    A BM25 score counts by its lead over the list's 40th best score (0 when the list holds fewer
    ids), divided by the best: a question whose words are common gives a flat BM25 head,
    whose scores stand little above that floor, and the cosines decide among them; a head that
    stands out keeps its say. Documents at or below the floor get 0 from BM25.

    `vector_floor` measures cosines from the vector list's 40th best the same way. It suits a trained
    embedder, whose cosines for unrelated texts sit well above 0 and close together: the floor removes
    that common part, so the cosines' lead counts, not their level. The hashing embedder's cosines
    only count shared words; they need no floor.

    Raises:
        InvalidRequestError: `vector_weight` outside [0, 1], or a score that is not finite.
    """
    if isinstance(vector_weight, bool) or not isinstance(vector_weight, int | float):
        raise InvalidRequestError(f"vector_weight must be within [0, 1], got {vector_weight!r}")
    if not 0.0 <= vector_weight <= 1.0:
        raise InvalidRequestError(f"vector_weight must be within [0, 1], got {vector_weight!r}")
    dense = _scaled(vector, "vector", _FLOOR_RANK if vector_floor else None)
    sparse = _scaled(lexical, "lexical", _FLOOR_RANK)
    fused = {
        doc_id: vector_weight * dense.get(doc_id, 0.0) + (1.0 - vector_weight) * sparse.get(doc_id, 0.0)
        for doc_id in (*dense, *sparse)
    }
    return _ranked(fused)
