"""Maximal marginal relevance (Carbonell and Goldstein, 1998): relevant results that do not repeat each other.

Each step picks the candidate maximising

    (1 - diversity) * relevance(c) - diversity * max over picked p of cosine(c, p)

so `diversity=0` keeps the relevance order and `diversity=1` picks by novelty alone (after the most
relevant candidate, which always comes first). LangChain and Spring AI call `1 - diversity` lambda.

Example:
    >>> import numpy as np
    >>> vectors = np.array([[1.0, 0.0], [0.99, 0.14], [0.0, 1.0]])
    >>> mmr(None, vectors, [0.9, 0.85, 0.5], top_k=2, diversity=0.0)
    [0, 1]
    >>> mmr(None, vectors, [0.9, 0.85, 0.5], top_k=2, diversity=0.5)
    [0, 2]
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from rag.errors import InvalidRequestError

__all__ = ["mmr"]


def _unit_rows(vectors: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)  # a zero vector is similar to nothing


def _relevance(
    query_vector: npt.ArrayLike | None, vectors: npt.NDArray[np.float64], relevance: npt.ArrayLike | None
) -> npt.NDArray[np.float64]:
    if relevance is not None:
        scores = np.asarray(relevance, dtype=np.float64)
        if scores.shape != (vectors.shape[0],):
            raise InvalidRequestError(f"relevance must hold one score per candidate ({vectors.shape[0]})")
        return scores
    if query_vector is None:
        raise InvalidRequestError("mmr needs a query_vector or relevance scores")
    query = np.asarray(query_vector, dtype=np.float64)
    if query.shape != (vectors.shape[1],):
        raise InvalidRequestError(f"query_vector must have {vectors.shape[1]} dimensions, got {query.shape}")
    norm = float(np.linalg.norm(query))
    return _unit_rows(vectors) @ (query / norm if norm > 0 else query)


def _check(top_k: int, diversity: float) -> None:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise InvalidRequestError(f"top_k must be an integer >= 0, got {top_k!r}")
    if isinstance(diversity, bool) or not isinstance(diversity, int | float) or not 0 <= diversity <= 1:
        raise InvalidRequestError(f"diversity must be within [0, 1], got {diversity!r}")


def mmr(
    query_vector: npt.ArrayLike | None,
    candidate_vectors: npt.ArrayLike,
    relevance: npt.ArrayLike | None,
    top_k: int,
    diversity: float,
    *,
    normalize: bool = True,
) -> list[int]:
    """Indices of up to `top_k` candidates in selection order.

    Args:
        query_vector: Used only when `relevance` is None, which then is the cosine similarity of each
            candidate to it.
        candidate_vectors: (n, dim) vectors; similarity between candidates is their cosine.
        relevance: One score per candidate, higher is better, on any scale (cosine, BM25, a fused score).
        top_k: How many to pick (at most n).
        diversity: 0 ranks by relevance only, 1 by novelty only.
        normalize: Rescale relevance to [0, 1] (best 1, worst 0) first, so scores on any scale trade
            off against cosine similarity alike. With False the raw scores are used (LangChain's form,
            meant for cosine relevance).

    Ties go to the more relevant candidate, then to the lower index, so `diversity=0` returns the
    relevance order exactly. Cost: O(top_k * n * dim).

    Raises:
        InvalidRequestError: mismatched shapes, non-finite values, `top_k` < 0 or `diversity` outside [0, 1].
    """
    _check(top_k, diversity)
    vectors = np.asarray(candidate_vectors, dtype=np.float64)
    if vectors.ndim != 2:
        raise InvalidRequestError(f"candidate_vectors must be a 2-D array, got shape {vectors.shape}")
    scores = _relevance(query_vector, vectors, relevance)
    if not (np.isfinite(scores).all() and np.isfinite(vectors).all()):
        raise InvalidRequestError("mmr needs finite vectors and relevance scores")
    count = min(top_k, scores.size)
    # Stable sort on (-relevance): the relevance order with ties by index, the answer at diversity 0.
    by_relevance = np.argsort(-scores, kind="stable")
    if diversity == 0 or count <= 1:
        return [int(index) for index in by_relevance[:count]]
    gain = scores
    if normalize:
        spread = float(scores.max() - scores.min())
        gain = (scores - scores.min()) / spread if spread > 0 else np.ones_like(scores)
    unit = _unit_rows(vectors)
    closest = np.zeros(scores.size)  # highest similarity to anything picked so far
    picked: list[int] = [int(by_relevance[0])]
    available = np.ones(scores.size, dtype=np.bool_)
    available[picked[0]] = False
    while len(picked) < count:
        np.maximum(closest, unit @ unit[picked[-1]], out=closest)
        value = np.where(available, (1.0 - diversity) * gain - diversity * closest, -np.inf)
        tied = np.flatnonzero(value == value.max())
        choice = int(tied[np.argmax(scores[tied])])  # argmax keeps the first (lowest index) of equals
        picked.append(choice)
        available[choice] = False
    return picked
