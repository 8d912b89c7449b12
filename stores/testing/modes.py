"""Conformance tests for the search modes (vector, lexical, hybrid), fusion, the threshold and MMR.

Mixed into `VectorStoreConformance`, so every store that runs the suite runs these too, with the same
two fixtures (`store`, `reopen`). Expected answers come from the definitions in `stores.ranking`:
a reference `LexicalIndex` over the same texts, and `rag.retrieval`'s fusion functions applied to the
store's own vector and lexical rankings.

Example:
    >>> # class TestMyStore(VectorStoreConformance): ...   # runs SearchModeConformance as well
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stores.testing._extra import missing

try:
    import pytest
except ImportError as exc:  # the suite is pytest tests: say which extra brings pytest
    raise missing("pytest", __name__) from exc

from rag.documents import Document, SearchRequest
from rag.filters import key
from rag.retrieval import reciprocal_rank_fusion, weighted_fusion
from rag.vectorstore import VectorStore
from stores.lexical.index import LexicalIndex
from stores.ranking import candidate_depth
from stores.testing.cases import (
    LEXICAL_QUERY,
    LEXICAL_TEXTS,
    CountingEmbedding,
    Reopen,
    lexical_documents,
    query_vector,
    vector_with_cosine,
)

__all__ = ["Reopen", "SearchModeConformance"]

_MODES = ("vector", "lexical", "hybrid")


def _hits(found: list[Document]) -> list[tuple[str, float]]:
    return [(d.id, d.score if d.score is not None else float("nan")) for d in found]


def _assert_hits(found: list[Document], expected: Sequence[tuple[str, float]]) -> None:
    """Same ids in the same order, scores within 1e-9."""
    assert [d.id for d in found] == [doc_id for doc_id, _ in expected]
    assert [d.score for d in found] == pytest.approx([score for _, score in expected], abs=1e-9)


def _reference(texts: dict[str, str], metadatas: list[dict[str, Any]] | None = None) -> LexicalIndex:
    index = LexicalIndex()
    index.add(list(texts), list(texts.values()), metadatas)
    return index


def _with_cosines(store: VectorStore, rows: dict[str, tuple[float, str]], query: str) -> dict[str, float]:
    """Add documents with a given cosine to `query` and a given text; returns the cosines."""
    q = query_vector(store.embedding, query)
    store.add(
        Document(doc_id, text, {"n": n}, embedding=vector_with_cosine(q, cosine, seed=n))
        for n, (doc_id, (cosine, text)) in enumerate(rows.items())
    )
    return {doc_id: cosine for doc_id, (cosine, _) in rows.items()}


# Cosines and texts chosen so that the cosine order and the BM25 order differ.
_SCORED = {
    "p": (0.9, "alpha"),
    "q": (0.6, "alpha beta alpha beta"),
    "r": (0.3, "beta beta beta alpha gamma"),
    "s": (0.1, "alpha alpha alpha alpha alpha"),
    "t": (0.8, "gamma delta"),
    "u": (-0.4, "beta"),
}

# A title and heading path that a chunk's own text does not repeat, one it does, and none at all.
_TITLED = [
    Document(
        "sec", "Declare the type of the path parameter.", {"title": "Guide", "headings": ["Validators"]}
    ),
    Document("rec", "Aspirin\n\nReduces fever in guides.", {"title": "Aspirin", "n": 1}),
    Document("bare", "A guide to path parameters and fever.", {"n": 2}),
]
_TITLED_QUERY = "guide aspirin path fever"


class SearchModeConformance:
    """Search-mode tests; the `store` and `reopen` fixtures come from `VectorStoreConformance`."""

    def test_lexical_ranks_by_bm25_with_bm25_scores(self, store: VectorStore) -> None:
        store.add(lexical_documents())
        found = store.similarity_search(SearchRequest(LEXICAL_QUERY, top_k=10, mode="lexical"))
        _assert_hits(found, _reference(LEXICAL_TEXTS).search(LEXICAL_QUERY, 10))
        assert found[0].id == "l2" and "l5" not in {d.id for d in found}  # no query term, no hit
        assert found[0].text == LEXICAL_TEXTS["l2"] and found[0].metadata == {"kind": "sparse", "n": 2}

    def test_titles_and_headings_are_indexed_beside_the_text(
        self, store: VectorStore, reopen: Reopen, embedding: CountingEmbedding
    ) -> None:
        store.add(_TITLED)
        found = store.similarity_search(SearchRequest("validators", top_k=5, mode="lexical"))
        assert [d.id for d in found] == ["sec"]  # the word is only in its heading path
        assert found[0].text == _TITLED[0].text and found[0].metadata == _TITLED[0].metadata
        reference = _reference({d.id: d.text for d in _TITLED}, [d.metadata for d in _TITLED])
        _assert_hits(
            store.similarity_search(SearchRequest(_TITLED_QUERY, top_k=5, mode="lexical")),
            reference.search(_TITLED_QUERY, 5),
        )
        again = reopen(store, embedding)
        _assert_hits(
            again.similarity_search(SearchRequest(_TITLED_QUERY, top_k=5, mode="lexical")),
            reference.search(_TITLED_QUERY, 5),
        )

    def test_lexical_analyses_each_document_in_its_language(self, store: VectorStore) -> None:
        docs = [
            Document("de", "Die Häuser am Fluss", {"lang": "de"}),
            Document("en", "The houses by the river", {"lang": "en"}),
            Document("ru", "Дома у реки", {"lang": "ru"}),
            Document("doc", "Release notes", {"title": "Houses", "source": "guide/river-house.md"}),
        ]
        store.add(docs)
        reference = _reference({d.id: d.text for d in docs}, [d.metadata for d in docs])
        for query in ("Haus", "house rivers", "дом", "die Flüsse"):
            found = store.similarity_search(SearchRequest(query, top_k=5, mode="lexical"))
            _assert_hits(found, reference.search(query, 5))
        assert store.similarity_search(SearchRequest("Haus", mode="lexical"))[0].id == "de"
        store.delete(["ru", "en"])  # the languages held, and their statistics, follow deletes
        kept = [d for d in docs if d.id not in {"ru", "en"}]
        reference = _reference({d.id: d.text for d in kept}, [d.metadata for d in kept])
        for query in ("Haus", "house rivers", "дом"):
            found = store.similarity_search(SearchRequest(query, top_k=5, mode="lexical"))
            _assert_hits(found, reference.search(query, 5))

    @pytest.mark.parametrize(("query", "expected"), [("東京", "l7"), ("cafe zurich", "l6")])
    def test_lexical_matches_accents_and_other_scripts(
        self, store: VectorStore, query: str, expected: str
    ) -> None:
        store.add(lexical_documents())
        assert [d.id for d in store.similarity_search(SearchRequest(query, mode="lexical"))] == [expected]

    def test_lexical_filter_top_k_and_empty_queries(self, store: VectorStore) -> None:
        assert store.similarity_search(SearchRequest("anything", mode="lexical")) == []
        store.add(lexical_documents())
        request = SearchRequest(LEXICAL_QUERY, top_k=2, mode="lexical", filter=key("kind") != "sparse")
        # BM25 statistics cover the whole collection; the filter chooses which documents come back.
        allowed = set(LEXICAL_TEXTS) - {"l1", "l2"}
        expected = _reference(LEXICAL_TEXTS).search(LEXICAL_QUERY, 2, allowed=allowed)
        _assert_hits(store.similarity_search(request), expected)
        assert store.similarity_search(request.replace(top_k=0)) == []
        assert store.similarity_search(request.replace(query="the of and")) == []  # stopwords only
        # Without lexical hits, hybrid is reciprocal rank fusion of the vector ranking alone, less the
        # documents without evidence (cosine 0 and no query term): here, every one.
        vector = store.similarity_search(SearchRequest("the of and", top_k=3))
        hybrid = store.similarity_search(SearchRequest("the of and", top_k=3, mode="hybrid"))
        evident = [d for d in vector if d.score is not None and d.score > 0.0]
        _assert_hits(hybrid, [(d.id, 1 / (61 + rank)) for rank, d in enumerate(evident)])

    def test_lexical_index_follows_upserts_and_deletes(self, store: VectorStore) -> None:
        store.add(lexical_documents())
        store.add([Document("l5", "sparse sparse sparse sparse retrieval", {"kind": "sparse"})])
        assert store.delete(["l2"]) == 1 and store.delete(filter=key("kind") == "dense") == 1
        texts = {**LEXICAL_TEXTS, "l5": "sparse sparse sparse sparse retrieval"}
        del texts["l2"], texts["l3"]
        found = store.similarity_search(SearchRequest(LEXICAL_QUERY, top_k=10, mode="lexical"))
        _assert_hits(found, _reference(texts).search(LEXICAL_QUERY, 10))
        store.add([Document("l5", "nothing relevant")])
        assert "l5" not in [d.id for d in store.similarity_search(SearchRequest("sparse", mode="lexical"))]

    @pytest.mark.parametrize("threshold", [0.0, 0.2, 0.5, 0.85])
    def test_threshold_applies_to_cosine_in_every_mode(self, store: VectorStore, threshold: float) -> None:
        cosines = _with_cosines(store, _SCORED, "alpha beta")
        passing = {doc_id for doc_id, c in cosines.items() if threshold == 0 or c >= threshold}
        texts = {doc_id: text for doc_id, (_, text) in _SCORED.items()}
        request = SearchRequest("alpha beta", top_k=10, similarity_threshold=threshold, mode="lexical")
        expected = _reference(texts).search("alpha beta", 10, allowed=passing)
        _assert_hits(store.similarity_search(request), expected)
        vector = [d.id for d in store.similarity_search(request.replace(mode="vector"))]
        assert set(vector) == passing
        hybrid = store.similarity_search(request.replace(mode="hybrid"))
        assert {d.id for d in hybrid} == passing

    @pytest.mark.parametrize("fusion", ["rrf", "weighted"])
    @pytest.mark.parametrize("filtered", [False, True])
    def test_hybrid_fuses_the_vector_and_lexical_rankings(
        self, store: VectorStore, fusion: str, filtered: bool
    ) -> None:
        _with_cosines(store, _SCORED, "alpha beta")
        store.add(lexical_documents())
        tree = key("n") < 4 if filtered else None
        base = SearchRequest("alpha beta sparse", top_k=4, filter=tree, rrf_k=7, vector_weight=0.3)
        depth = candidate_depth(base.top_k)
        vector = _hits(store.similarity_search(base.replace(top_k=depth)))
        lexical = _hits(store.similarity_search(base.replace(top_k=depth, mode="lexical")))
        if fusion == "rrf":
            rankings = [[i for i, _ in vector], [i for i, _ in lexical]]
            expected = reciprocal_rank_fusion(rankings, k=7, weights=[0.6, 1.4])  # vector_weight 0.3
        else:
            expected = weighted_fusion(vector, lexical, 0.3)
        _assert_hits(store.similarity_search(base.replace(mode="hybrid", fusion=fusion)), expected[:4])

    def test_hybrid_rrf_score_of_a_double_winner(self, store: VectorStore) -> None:
        _with_cosines(store, {"a": (0.9, "alpha alpha"), "b": (0.5, "alpha"), "c": (0.1, "beta")}, "alpha")
        [best] = store.similarity_search(SearchRequest("alpha", top_k=1, mode="hybrid", rrf_k=1))
        assert best.id == "a" and best.score == pytest.approx(1.0)  # 1/(1+1) from each ranking

    @pytest.mark.parametrize("mode", _MODES)
    def test_diversity_skips_a_near_duplicate(self, store: VectorStore, mode: str) -> None:
        q = query_vector(store.embedding, "alpha")
        twin = vector_with_cosine(q, 0.9, seed=1)
        store.add(
            [
                Document("a", "alpha alpha", embedding=twin),
                Document("a2", "alpha alpha", embedding=twin),
                Document("b", "alpha gamma delta", embedding=vector_with_cosine(q, 0.6, seed=2)),
            ]
        )
        request = SearchRequest("alpha", top_k=2, mode=mode)  # type: ignore[arg-type]
        assert [d.id for d in store.similarity_search(request)] == ["a", "a2"]
        found = store.similarity_search(request.replace(diversity=0.9))
        relevance = store.similarity_search(request.replace(top_k=3))
        assert [d.id for d in found] == ["a", "b"]
        scores = {d.id: d.score for d in relevance}
        assert [d.score for d in found] == [scores["a"], scores["b"]]  # each keeps its mode score

    def test_modes_survive_reopening(
        self, store: VectorStore, reopen: Reopen, embedding: CountingEmbedding
    ) -> None:
        _with_cosines(store, _SCORED, "alpha beta")
        store.add(lexical_documents())
        modes = ("vector", "lexical", "hybrid")
        requests = [SearchRequest("alpha sparse", top_k=5, mode=m, diversity=0.3) for m in modes]  # type: ignore[arg-type]
        before = [_hits(store.similarity_search(r)) for r in requests]
        again = reopen(store, embedding)
        assert [_hits(again.similarity_search(r)) for r in requests] == before
