"""Hits carry their named scores (cosine, bm25, fused) on every store, and the query is embedded at most
once per search, never for a lexical one without a threshold."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from rag import Document, HashingEmbedding, SearchRequest
from rag.errors import DimensionMismatchError, InvalidRequestError
from rag.vectorstore import VectorStore
from stores import ChromaVectorStore, NumpyVectorStore, PgVectorStore
from stores.numpy.embed import embed_queries
from stores.numpy.search import exact_scores

TEXTS = [
    "the pump primes itself before dawn",
    "valves open at dawn and close at dusk",
    "the tank fills from the river at night",
    "pump maintenance: grease the valves monthly",
    "error E-214 means the valve is stuck",
    "the river floods the causeway in spring",
    "dawn patrol checks every pump and valve",
    "night shift logs the tank level",
]
QUERY = "pump valve at dawn"


class CountingEmbedding:
    """`HashingEmbedding` that counts the texts it is asked to embed."""

    def __init__(self) -> None:
        self._model = HashingEmbedding(dimensions=64)
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return self._model.name

    @property
    def dimensions(self) -> int:
        return self._model.dimensions

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.texts.extend(texts)
        return self._model.embed(texts)


@pytest.fixture(params=["numpy", "chroma", "pgvector"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, fresh_name: Callable[[str], str]
) -> Iterator[tuple[VectorStore, CountingEmbedding]]:
    model = CountingEmbedding()
    opened: VectorStore
    if request.param == "numpy":
        opened = NumpyVectorStore(model)
    elif request.param == "chroma":
        opened = ChromaVectorStore(model, collection=fresh_name("named"), path=str(tmp_path / "chroma"))
    else:
        url = request.getfixturevalue("postgres_server_url")
        opened = PgVectorStore(model, url=url, table=fresh_name("named"))
    opened.add(Document(str(i), text, {"even": i % 2 == 0}) for i, text in enumerate(TEXTS))
    model.texts.clear()
    yield opened, model
    close = getattr(opened, "close", None)
    if callable(close):
        close()


def _stored_cosines(store: VectorStore, hits: list[Document]) -> dict[str, float]:
    """The cosine of each hit computed here from the stored vectors and the query's own embedding."""
    stored = {d.id: d.embedding for d in store.get([h.id for h in hits], include_embeddings=True)}
    matrix = np.stack([np.asarray(stored[h.id], np.float32) for h in hits])
    query = embed_queries(HashingEmbedding(dimensions=64), [QUERY])[0]
    return dict(
        zip([h.id for h in hits], exact_scores(matrix, np.arange(len(hits)), query).tolist(), strict=True)
    )


CASES = {
    "vector": ({}, "cosine", {"cosine"}),
    "vector-filtered": ({"filter": "even == true"}, "cosine", {"cosine"}),
    "vector-exact": ({"exact": True}, "cosine", {"cosine"}),
    "vector-filtered-mmr": ({"filter": "even == true", "diversity": 0.5}, "cosine", {"cosine"}),
    "lexical": ({"mode": "lexical"}, "bm25", {"bm25"}),
    "lexical-threshold": ({"mode": "lexical", "similarity_threshold": 0.05}, "bm25", {"bm25", "cosine"}),
    "hybrid-rrf": ({"mode": "hybrid"}, "fused", {"fused", "cosine"}),
    "hybrid-weighted": ({"mode": "hybrid", "fusion": "weighted"}, "fused", {"fused", "cosine"}),
    "hybrid-mmr": ({"mode": "hybrid", "diversity": 0.3}, "fused", {"fused", "cosine"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hits_carry_named_scores(store: tuple[VectorStore, CountingEmbedding], case: str) -> None:
    opened, model = store
    options, kind, names = CASES[case]
    if options.get("exact") and not opened.capabilities.exact:
        with pytest.raises(InvalidRequestError, match="exact store"):
            opened.similarity_search(SearchRequest(QUERY, top_k=6, exact=True))
        return
    hits = opened.similarity_search(SearchRequest(QUERY, top_k=6, **options))  # type: ignore[arg-type]
    assert hits
    # The query was embedded once, or not at all for a lexical search that reads text alone.
    assert model.texts == ([QUERY] if "cosine" in names else [])
    for hit in hits:
        assert set(hit.scores) >= names and set(hit.scores) <= {"cosine", "bm25", "fused"}
        assert hit.scores[kind] == hit.score
    cosines = _stored_cosines(opened, hits)
    # An exact store gives the exact cosine; an approximate one (Chroma) reads its float32 distance.
    within = 0.0 if opened.capabilities.exact else 1e-6
    for hit in hits:
        if "cosine" in names:
            assert hit.scores["cosine"] == pytest.approx(cosines[hit.id], rel=0, abs=within)
            assert hit.scores["cosine"] >= options.get("similarity_threshold", -1.0)
    if kind == "fused":  # BM25 as the lexical search scores it, for hits among its candidates
        lexical = {
            d.id: d.score for d in opened.similarity_search(SearchRequest(QUERY, top_k=8, mode="lexical"))
        }
        assert any("bm25" in hit.scores for hit in hits)
        for hit in hits:
            assert hit.scores.get("bm25") == lexical.get(hit.id)


def test_a_given_query_vector_is_used_and_checked(store: tuple[VectorStore, CountingEmbedding]) -> None:
    opened, model = store
    vector = embed_queries(HashingEmbedding(dimensions=64), [QUERY])[0]
    for mode in ("vector", "hybrid"):
        given = opened.similarity_search(SearchRequest(QUERY, top_k=4, mode=mode, query_vector=vector))
        assert model.texts == []
        embedded = opened.similarity_search(SearchRequest(QUERY, top_k=4, mode=mode))
        assert model.texts == [QUERY]
        model.texts.clear()
        assert [(d.id, d.score, dict(d.scores)) for d in given] == [
            (d.id, d.score, dict(d.scores)) for d in embedded
        ]
    with pytest.raises(DimensionMismatchError, match="query_vector has 3 dimensions"):
        opened.similarity_search(SearchRequest(QUERY, query_vector=[1.0, 0.0, 0.0]))
