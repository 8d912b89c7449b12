"""What a hit's scores mean: the rank score of the search mode, and the cosine that `--threshold` compares.

In lexical and hybrid mode a hit's `score` is a BM25 or fused score (the fused top hit is often 1.000),
while `--threshold` always compares the cosine similarity. The commands show both, labelled, so a user
can tell why a threshold keeps or drops a hit. The cosine shown is the one the search computed and
left in the hit's named scores (`Document.scores`), the very number the threshold saw; nothing is
embedded or computed again for display. A lexical search without a threshold never embeds the
question, so its hits have no cosine to show.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.documents import Document, SearchRequest

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


def cosines(hits: Sequence[Document]) -> list[float | None]:
    """The cosine similarity of each hit with the question, as its search computed it (None where the
    search did not embed the question).

    Example:
        >>> cosines([Document("a", "text", score=2.5, scores={"bm25": 2.5, "cosine": 0.4})])
        [0.4]
    """
    return [doc.scores.get("cosine") for doc in hits]
