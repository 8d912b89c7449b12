"""Rank fusion and maximal marginal relevance: the pieces hybrid retrieval is assembled from.

Example:
    >>> from rag.retrieval import reciprocal_rank_fusion
    >>> [doc_id for doc_id, _ in reciprocal_rank_fusion([["a", "b"], ["b", "c"]])]
    ['b', 'a', 'c']
"""

from rag.retrieval.fusion import reciprocal_rank_fusion, weighted_fusion
from rag.retrieval.mmr import mmr

__all__ = ["mmr", "reciprocal_rank_fusion", "weighted_fusion"]
