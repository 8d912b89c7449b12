"""The numpy store's hybrid search fuses index rows, not ids: same answers, far fewer ids decoded.

Each answer is checked against a brute-force reference built from the public pieces (every cosine by
`exact_scores`, every BM25 score by `LexicalIndex.scores_for` of an index built from the store's
documents, sorted in Python by score then id, fused by `rag.retrieval`), on a corpus made of ties:
repeated vectors, repeated texts, ids whose order has nothing to do with row order, and rows moved by
deletes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.retrieval import reciprocal_rank_fusion, weighted_fusion
from rag.retrieval.ranking import candidate_depth
from stores import LexicalIndex, NumpyVectorStore
from stores.numpy.embed import embed_queries
from stores.numpy.search import exact_scores

DIMENSIONS = 32
WORDS = str.split("tide harbour keeper lamp stone river bridge signal cloud gate rope mast")
QUERIES = ["harbour lamp", "tide tide keeper", "signal", "rope mast gate cloud", "nothing matches"]

Hit = tuple[str, float]


def _corpus(count: int = 600, seed: int = 3) -> list[Document]:
    """Documents whose scores tie often: 40 distinct vectors and 150 distinct texts among 600."""
    rng = random.Random(seed)
    vectors = np.random.default_rng(seed).standard_normal((40, DIMENSIONS)).astype(np.float32)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))) for _ in range(150)]
    ids = [f"{rng.getrandbits(40):010x}" for _ in range(count)]  # id order unrelated to row order
    return [
        Document(doc_id, texts[i % 150], {"n": i % 5}, embedding=vectors[rng.randrange(40)])
        for i, doc_id in enumerate(ids)
    ]


@pytest.fixture(scope="module")
def store() -> NumpyVectorStore:
    store = NumpyVectorStore(HashingEmbedding(dimensions=DIMENSIONS))
    docs = _corpus()
    store.add(docs)
    store.delete([doc.id for doc in docs[::7]])  # holes filled by moved rows: the numberings differ
    return store


def _best(scores: dict[str, float], depth: int) -> list[Hit]:
    return sorted(scores.items(), key=lambda hit: (-hit[1], hit[0]))[:depth]


_BM25: dict[int, tuple[NumpyVectorStore, LexicalIndex]] = {}


def _bm25_of(store: NumpyVectorStore) -> LexicalIndex:
    """A BM25 index of the store's documents: its statistics are over every document, not a filter's."""
    if id(store) not in _BM25:
        docs = store.get()
        index = LexicalIndex()
        index.add([doc.id for doc in docs], [doc.text for doc in docs], [doc.metadata for doc in docs])
        _BM25[id(store)] = (store, index)  # the store is kept, so its id is not reused
    return _BM25[id(store)][1]


def _reference(store: NumpyVectorStore, request: SearchRequest) -> list[Hit]:
    """Brute force: every eligible document scored both ways, then fused as `rag.retrieval.ranking` says."""
    docs = store.get(filter=request.filter, include_embeddings=True)
    ids = [doc.id for doc in docs]
    query = embed_queries(store.embedding, [request.query])[0]
    vectors = np.stack([doc.embedding for doc in docs if doc.embedding is not None])
    cosines = exact_scores(vectors, np.arange(len(docs)), query).tolist()
    bm25 = _bm25_of(store).scores_for(request.query, ids).tolist()
    depth = candidate_depth(request.top_k)
    vector = _best(dict(zip(ids, cosines, strict=True)), depth)
    lexical = _best({i: s for i, s in zip(ids, bm25, strict=True) if s > 0}, depth)
    if request.mode == "lexical":
        return lexical[: request.top_k]
    if request.fusion == "weighted":
        fused = weighted_fusion(vector, lexical, request.vector_weight, vector_floor=request.vector_floor)
    else:
        weights = [2.0 * request.vector_weight, 2.0 * (1.0 - request.vector_weight)]
        rankings = [[i for i, _ in vector], [i for i, _ in lexical]]
        fused = reciprocal_rank_fusion(rankings, k=request.rrf_k, weights=weights)
    evident = {i for i, _ in lexical} | {i for i, cosine in vector if cosine > 0.0}
    return [hit for hit in fused if hit[0] in evident][: request.top_k]


def _hits(store: NumpyVectorStore, request: SearchRequest) -> list[Hit]:
    return [(doc.id, doc.score) for doc in store.similarity_search(request) if doc.score is not None]


@pytest.mark.parametrize("fusion", ["rrf", "weighted"])
@pytest.mark.parametrize("vector_weight", [0.0, 0.3, 0.5, 1.0])
@pytest.mark.parametrize("filter", [None, "n != 2"])
def test_hybrid_equals_the_brute_force_fusion_scores_included(
    store: NumpyVectorStore, fusion: str, vector_weight: float, filter: str | None
) -> None:
    for query in QUERIES:
        for top_k in (1, 7, 100, 130):
            for rrf_k in (1, 60):
                request = SearchRequest(
                    query,
                    top_k=top_k,
                    mode="hybrid",
                    fusion=fusion,  # type: ignore[arg-type]
                    vector_weight=vector_weight,
                    rrf_k=rrf_k,
                    filter=filter,
                )
                assert _hits(store, request) == _reference(store, request), request


@pytest.mark.parametrize("vector_weight", [0.3, 0.7])
def test_a_vector_floor_reaches_the_store_fusion(store: NumpyVectorStore, vector_weight: float) -> None:
    changed = 0
    for query in QUERIES:
        for top_k in (7, 130):
            request = SearchRequest(
                query, top_k, mode="hybrid", fusion="weighted", vector_weight=vector_weight, vector_floor=True
            )
            assert _hits(store, request) == _reference(store, request), request
            changed += _hits(store, request) != _hits(store, request.replace(vector_floor=False))
    assert changed  # the floor changes rankings of this corpus: the parity above is not vacuous


@pytest.mark.parametrize("filter", [None, "n == 1"])
def test_lexical_equals_the_brute_force_bm25_ranking(store: NumpyVectorStore, filter: str | None) -> None:
    for query in QUERIES:
        for top_k in (1, 5, 60, 500):
            request = SearchRequest(query, top_k=top_k, mode="lexical", filter=filter)
            assert _hits(store, request) == _reference(store, request), request


def test_the_corpus_is_made_of_ties(store: NumpyVectorStore) -> None:
    """The comparisons above mean something only if equal scores abound in every list."""
    request = SearchRequest("harbour lamp", top_k=100, mode="hybrid")
    fused = [score for _, score in _reference(store, request)]
    lexical = [score for _, score in _reference(store, request.replace(mode="lexical"))]
    assert len(fused) - len(set(fused)) > 10
    assert len(lexical) - len(set(lexical)) > 50


class _CountingIds:
    """Counts the ids `LexicalIndex` decodes for its callers (a spy: every call goes through)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.decoded = 0
        ids_at, id_at = LexicalIndex.ids_at, LexicalIndex.id_at

        def counted_ids_at(index: LexicalIndex, rows: Sequence[int]) -> list[str]:
            found = ids_at(index, rows)
            self.decoded += len(found)
            return found

        def counted_id_at(index: LexicalIndex, row: int) -> str:
            self.decoded += 1
            return id_at(index, row)

        monkeypatch.setattr(LexicalIndex, "ids_at", counted_ids_at)
        monkeypatch.setattr(LexicalIndex, "id_at", counted_id_at)


def test_a_hybrid_query_decodes_the_ids_of_its_page_not_of_its_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fusing 2 x 100 candidates reads the ids of the page (and of tied scores) only."""
    rng = np.random.default_rng(11)
    words = [f"w{i}" for i in range(40)]
    vectors = rng.standard_normal((3000, DIMENSIONS)).astype(np.float32)
    docs = [
        Document(f"d{i:05d}", " ".join(rng.choice(words, size=int(rng.integers(20, 400)))), embedding=vector)
        for i, vector in enumerate(vectors)
    ]
    store = NumpyVectorStore(HashingEmbedding(dimensions=DIMENSIONS))
    store.add(docs)
    request = SearchRequest("w1 w2 w3", top_k=5, mode="hybrid", vector_weight=0.4)
    spy = _CountingIds(monkeypatch)
    found = store.similarity_search(request)
    decoded = spy.decoded
    assert [(doc.id, doc.score) for doc in found] == _reference(store, request)
    # Both lists are full: a search that named its candidates would decode 200 ids or more.
    assert len(store.similarity_search(request.replace(mode="lexical", top_k=500))) > candidate_depth(5)
    assert request.top_k <= decoded <= 2 * request.top_k  # the page's own ids, and those of any ties
