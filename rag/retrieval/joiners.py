"""Document joiners: one list out of the rankings of several queries and retrievers.

Example:
    >>> from rag import Document
    >>> a, b, c = (Document(i, i) for i in "abc")
    >>> rankings = [[a.with_score(0.9), b.with_score(0.4)], [b.with_score(0.7), c.with_score(0.5)]]
    >>> [(d.id, d.score) for d in ConcatenationDocumentJoiner().join(rankings)]
    [('a', 0.9), ('b', 0.7), ('c', 0.5)]
    >>> [d.id for d in ReciprocalRankDocumentJoiner().join(rankings)]
    ['b', 'a', 'c']
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rag.documents import Document
from rag.errors import InvalidRequestError
from rag.retrieval.fusion import reciprocal_rank_fusion

__all__ = ["ConcatenationDocumentJoiner", "ReciprocalRankDocumentJoiner"]


def _check_top_k(top_k: int | None) -> int | None:
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0):
        raise InvalidRequestError(f"top_k must be an integer >= 0 or None, got {top_k!r}")
    return top_k


def _score(document: Document) -> float:
    return document.score if document.score is not None else -math.inf


class ConcatenationDocumentJoiner:
    """All documents of all rankings, each id once with its best score, best score first.

    A document found by several queries or retrievers is kept once: the copy with the highest score
    (a missing score counts as the lowest). Equal scores keep the order of first appearance. Scores
    from different search modes are on different scales (cosine, BM25, fused); join those with
    `ReciprocalRankDocumentJoiner` instead. `top_k` cuts the result (None keeps everything).

    Example:
        >>> from rag import Document
        >>> twice = [[Document("a", "x", score=0.2)], [Document("a", "x", score=0.8)]]
        >>> [d.score for d in ConcatenationDocumentJoiner().join(twice)]
        [0.8]
    """

    def __init__(self, *, top_k: int | None = None) -> None:
        self.top_k = _check_top_k(top_k)

    def join(self, rankings: Sequence[Sequence[Document]]) -> list[Document]:
        best: dict[str, Document] = {}
        for ranking in rankings:
            for document in ranking:
                kept = best.get(document.id)
                if kept is None or _score(document) > _score(kept):
                    best[document.id] = document
        # sorted() is stable: equal scores stay in order of first appearance (dict order).
        joined = sorted(best.values(), key=lambda document: -_score(document))
        return joined if self.top_k is None else joined[: self.top_k]


class ReciprocalRankDocumentJoiner:
    """Reciprocal rank fusion of the rankings: ids found high in many lists come first.

    Each id scores `sum 1 / (k + rank)` over the rankings holding it (rank from 1), which needs no
    comparable scores, so it joins vector, lexical and reranked lists alike. The documents come out
    with that fused score; equal scores go to the smaller id. `top_k` cuts the result.

    Example:
        >>> from rag import Document
        >>> lists = [[Document("a", "x"), Document("b", "y")], [Document("b", "y")]]
        >>> [(d.id, round(d.score, 4)) for d in ReciprocalRankDocumentJoiner(k=1).join(lists)]
        [('b', 0.8333), ('a', 0.5)]
    """

    def __init__(self, k: int = 60, *, top_k: int | None = None) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidRequestError(f"k must be an integer >= 1, got {k!r}")
        self.k = k
        self.top_k = _check_top_k(top_k)

    def join(self, rankings: Sequence[Sequence[Document]]) -> list[Document]:
        first: dict[str, Document] = {}
        for ranking in rankings:
            for document in ranking:
                first.setdefault(document.id, document)
        fused = reciprocal_rank_fusion([[d.id for d in ranking] for ranking in rankings], k=self.k)
        joined = [first[doc_id].with_score(score) for doc_id, score in fused]
        return joined if self.top_k is None else joined[: self.top_k]
