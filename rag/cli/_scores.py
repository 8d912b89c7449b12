"""What a hit's scores mean: the rank score of the search mode, and the cosine that `--threshold` compares.

In lexical and hybrid mode a hit's `score` is a BM25 or fused score (the fused top hit is often 1.000),
while `--threshold` always compares the cosine similarity. The commands show both, labelled, so a user
can tell why a threshold keeps or drops a hit. The cosine is recomputed here from the stored vectors
exactly as the stores compute it (`stores.numpy.search.exact_scores`), so it is the very number the
threshold saw.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag.documents import Document, SearchRequest
from rag.vectorstore import VectorStore

__all__ = ["SCORES_LEGEND", "cosines", "score_kind"]

SCORES_LEGEND = "score ranks the hits ({kind}); cosine is the similarity that --threshold compares"


def score_kind(request: SearchRequest) -> str:
    """What `Document.score` holds for hits of `request`: `cosine`, `bm25` or e.g. `hybrid-weighted`.

    Example:
        >>> score_kind(SearchRequest("q", mode="hybrid", fusion="weighted"))
        'hybrid-weighted'
    """
    if request.mode == "vector":
        return "cosine"
    return "bm25" if request.mode == "lexical" else f"hybrid-{request.fusion}"


def cosines(store: VectorStore, query: str, hits: Sequence[Document]) -> list[float | None]:
    """The cosine similarity of each hit with `query`, as the store's threshold computes it.

    None for a hit the store no longer holds (deleted meanwhile). Costs one query embedding and one
    read of the hits' vectors.
    """
    if not hits:
        return []
    from stores.numpy.embed import embed_queries
    from stores.numpy.search import exact_scores

    stored = store.get([doc.id for doc in hits], include_embeddings=True)
    vectors = {doc.id: doc.embedding for doc in stored if doc.embedding is not None}
    found = [doc.id for doc in hits if doc.id in vectors]
    if not found:
        return [None] * len(hits)
    query_vector = embed_queries(store.embedding, [query])[0]
    matrix = np.stack([np.asarray(vectors[doc_id], np.float32) for doc_id in found])
    values = dict(zip(found, exact_scores(matrix, np.arange(len(found)), query_vector).tolist(), strict=True))
    return [values.get(doc.id) for doc in hits]
