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

from rag.errors import MissingDependencyError

try:
    import pytest
except ImportError as exc:
    raise MissingDependencyError(
        f'{__name__} needs pytest, which is not installed: pip install "rag-advisors[dev]"',
        package="pytest",
        extra="dev",
    ) from exc

from rag.documents import Document, SearchRequest
from rag.filters import key
from rag.retrieval import reciprocal_rank_fusion, weighted_fusion
from rag.vectorstore import VectorStore
from stores.ranking import candidate_depth
from stores.testing.cases import (
    LEXICAL_QUERY,
    LEXICAL_TEXTS,
    CountingEmbedding,
    Reopen,
    add_with_cosines,
    ids,
    lexical_documents,
    lexical_reference,
    query_vector,
    vector_with_cosine,
)

__all__ = ["SearchModeConformance"]


def _hits(found: list[Document]) -> list[tuple[str, float]]:
    return [(d.id, d.score if d.score is not None else float("nan")) for d in found]


def _assert_hits(found: list[Document], expected: Sequence[tuple[str, float]]) -> None:
    """Same ids in the same order, scores within 1e-9."""
    assert ids(found) == [doc_id for doc_id, _ in expected]
    assert [d.score for d in found] == pytest.approx([score for _, score in expected], abs=1e-9)


# Cosines and texts chosen so that the cosine order and the BM25 order differ.
_SCORED = {
    "p": (0.9, "alpha"),
    "q": (0.6, "alpha beta alpha beta"),
    "r": (0.3, "beta beta beta alpha gamma"),
    "s": (0.1, "alpha alpha alpha alpha alpha"),
    "t": (0.8, "gamma delta"),
    "u": (-0.4, "beta"),
}
_SCORED_DOCUMENTS = [Document(doc_id, text) for doc_id, (_, text) in _SCORED.items()]
# A title and heading path that a chunk's own text does not repeat, one it does, and none at all.
_TITLED = [
    Document(
        "sec", "Declare the type of the path parameter.", {"title": "Guide", "headings": ["Validators"]}
    ),
    Document("rec", "Aspirin\n\nReduces fever in guides.", {"title": "Aspirin", "n": 1}),
    Document("bare", "A guide to path parameters and fever.", {"n": 2}),
]
_LANGUAGES = [
    Document("de", "Die Häuser am Fluss", {"lang": "de"}),
    Document("en", "The houses by the river", {"lang": "en"}),
    Document("ru", "Дома у реки", {"lang": "ru"}),
    Document("doc", "Release notes", {"title": "Houses", "source": "guide/river-house.md"}),
]


def _lexical(store: VectorStore, query: str, top_k: int = 4) -> list[Document]:
    return store.similarity_search(SearchRequest(query, top_k=top_k, mode="lexical"))


class SearchModeConformance:
    """Search-mode tests; the `store` and `reopen` fixtures come from `VectorStoreConformance`."""

    def test_lexical_ranks_by_bm25_with_bm25_scores(self, store: VectorStore) -> None:
        store.add(lexical_documents())
        found = _lexical(store, LEXICAL_QUERY, 10)
        _assert_hits(found, lexical_reference(lexical_documents()).search(LEXICAL_QUERY, 10))
        assert found[0].id == "l2" and "l5" not in ids(found)  # no query term, no hit
        assert found[0].text == LEXICAL_TEXTS["l2"] and found[0].metadata == {"kind": "sparse", "n": 2}
        for query, expected in (("東京", "l7"), ("cafe zurich", "l6")):  # accents and other scripts
            assert ids(_lexical(store, query)) == [expected]

    def test_titles_and_headings_are_indexed_beside_the_text(
        self, store: VectorStore, reopen: Reopen, embedding: CountingEmbedding
    ) -> None:
        store.add(_TITLED)
        [found] = _lexical(store, "validators", 5)  # the word is only in its heading path
        assert (found.id, found.text, found.metadata) == ("sec", _TITLED[0].text, _TITLED[0].metadata)
        expected = lexical_reference(_TITLED).search("guide aspirin path fever", 5)
        for opened in (store, reopen(store, embedding)):
            _assert_hits(_lexical(opened, "guide aspirin path fever", 5), expected)

    def test_lexical_analyses_each_document_in_its_language(self, store: VectorStore) -> None:
        store.add(_LANGUAGES)
        assert _lexical(store, "Haus")[0].id == "de"
        for query in ("Haus", "house rivers", "дом", "die Flüsse"):
            _assert_hits(_lexical(store, query, 5), lexical_reference(_LANGUAGES).search(query, 5))
        store.delete(["ru", "en"])  # the languages held, and their statistics, follow deletes
        kept = [d for d in _LANGUAGES if d.id not in {"ru", "en"}]
        for query in ("Haus", "house rivers", "дом"):
            _assert_hits(_lexical(store, query, 5), lexical_reference(kept).search(query, 5))

    def test_lexical_filter_top_k_and_empty_queries(self, store: VectorStore) -> None:
        assert _lexical(store, "anything") == []
        store.add(lexical_documents())
        request = SearchRequest(LEXICAL_QUERY, top_k=2, mode="lexical", filter=key("kind") != "sparse")
        # BM25 statistics cover the whole collection; the filter chooses which documents come back.
        allowed = set(LEXICAL_TEXTS) - {"l1", "l2"}
        _assert_hits(
            store.similarity_search(request),
            lexical_reference(lexical_documents()).search(LEXICAL_QUERY, 2, allowed=allowed),
        )
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
        kept = [d for d in lexical_documents() if d.id not in {"l2", "l3", "l5"}]
        kept.append(Document("l5", "sparse sparse sparse sparse retrieval"))
        _assert_hits(_lexical(store, LEXICAL_QUERY, 10), lexical_reference(kept).search(LEXICAL_QUERY, 10))
        store.add([Document("l5", "nothing relevant")])
        assert "l5" not in ids(_lexical(store, "sparse"))

    @pytest.mark.parametrize("threshold", [0.0, 0.2, 0.5, 0.85])
    def test_threshold_applies_to_cosine_in_every_mode(self, store: VectorStore, threshold: float) -> None:
        add_with_cosines(store, _SCORED, "alpha beta")
        passing = {doc_id for doc_id, (c, _) in _SCORED.items() if threshold == 0 or c >= threshold}
        request = SearchRequest("alpha beta", top_k=10, similarity_threshold=threshold, mode="lexical")
        expected = lexical_reference(_SCORED_DOCUMENTS).search("alpha beta", 10, allowed=passing)
        _assert_hits(store.similarity_search(request), expected)
        for mode in ("vector", "hybrid"):
            assert set(ids(store.similarity_search(request.replace(mode=mode)))) == passing, mode

    @pytest.mark.parametrize("fusion", ["rrf", "weighted"])
    @pytest.mark.parametrize("filtered", [False, True])
    def test_hybrid_fuses_the_vector_and_lexical_rankings(
        self, store: VectorStore, fusion: str, filtered: bool
    ) -> None:
        add_with_cosines(store, _SCORED, "alpha beta")
        store.add(lexical_documents())
        tree = key("n") < 4 if filtered else None
        base = SearchRequest("alpha beta sparse", top_k=4, filter=tree, rrf_k=7, vector_weight=0.3)
        depth = candidate_depth(base.top_k)
        vector = _hits(store.similarity_search(base.replace(top_k=depth)))
        lexical = _hits(store.similarity_search(base.replace(top_k=depth, mode="lexical")))
        if fusion == "rrf":  # vector_weight 0.3 weighs the rankings 0.6 and 1.4
            rankings = [[i for i, _ in vector], [i for i, _ in lexical]]
            expected = reciprocal_rank_fusion(rankings, k=7, weights=[0.6, 1.4])
        else:
            expected = weighted_fusion(vector, lexical, 0.3)
        _assert_hits(store.similarity_search(base.replace(mode="hybrid", fusion=fusion)), expected[:4])

    def test_hybrid_rrf_score_of_a_double_winner(self, store: VectorStore) -> None:
        add_with_cosines(store, {"a": (0.9, "alpha alpha"), "b": (0.5, "alpha"), "c": (0.1, "beta")}, "alpha")
        [best] = store.similarity_search(SearchRequest("alpha", top_k=1, mode="hybrid", rrf_k=1))
        assert best.id == "a" and best.score == pytest.approx(1.0)  # 1/(1+1) from each ranking

    @pytest.mark.parametrize("mode", ["vector", "lexical", "hybrid"])
    def test_diversity_skips_a_near_duplicate(self, store: VectorStore, mode: str) -> None:
        q = query_vector(store.embedding, "alpha")
        twin = vector_with_cosine(q, 0.9, seed=1)
        other = vector_with_cosine(q, 0.6, seed=2)
        store.add(
            [
                Document("a", "alpha alpha", embedding=twin),
                Document("a2", "alpha alpha", embedding=twin),
                Document("b", "alpha gamma delta", embedding=other),
            ]
        )
        request = SearchRequest("alpha", top_k=2, mode=mode)  # type: ignore[arg-type]
        assert ids(store.similarity_search(request)) == ["a", "a2"]
        found = store.similarity_search(request.replace(diversity=0.9))
        scores = {d.id: d.score for d in store.similarity_search(request.replace(top_k=3))}
        assert [(d.id, d.score) for d in found] == [
            ("a", scores["a"]),
            ("b", scores["b"]),
        ]  # mode scores kept

    def test_modes_survive_reopening(
        self, store: VectorStore, reopen: Reopen, embedding: CountingEmbedding
    ) -> None:
        add_with_cosines(store, _SCORED, "alpha beta")
        store.add(lexical_documents())
        requests = [
            SearchRequest("alpha sparse", top_k=5, mode=m, diversity=0.3)
            for m in ("vector", "lexical", "hybrid")
        ]
        before = [_hits(store.similarity_search(r)) for r in requests]
        again = reopen(store, embedding)
        assert [_hits(again.similarity_search(r)) for r in requests] == before
