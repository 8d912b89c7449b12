"""The conformance suite every vector store passes: the `VectorStore` contract as pytest tests.

A store joins by subclassing `VectorStoreConformance` and supplying two fixtures: `store`, an EMPTY store
built with the suite's `embedding` fixture, and `reopen`, a function that opens the same stored data
again with a given embedding model (for persistence and the model-mismatch check). The store's
`capabilities` say what it promises: an approximate store is held to the exact answers where its index
finds every neighbour (the small data here) and must refuse `exact=True`. Lexical and hybrid answers
are compared with their definitions: a reference `LexicalIndex` over the same texts, and
`rag.retrieval`'s fusion functions applied to the store's own vector and lexical rankings.

Example:
    >>> import pytest
    >>> from stores import NumpyVectorStore
    >>> class TestMyStore(VectorStoreConformance):
    ...     @pytest.fixture
    ...     def store(self, embedding):
    ...         return NumpyVectorStore(embedding)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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
from rag.embeddings import HashingEmbedding
from rag.errors import DimensionMismatchError, EmbeddingModelMismatchError, InvalidRequestError
from rag.filters import Filter, key
from rag.retrieval import reciprocal_rank_fusion, weighted_fusion
from rag.retrieval.ranking import candidate_depth
from rag.vectorstore import Capabilities, VectorStore
from stores.testing.cases import (
    BAD_GETS,
    BAD_VECTORS,
    COSINES,
    DIMENSIONS,
    FILTER_CASES,
    KEPT,
    LANGUAGES,
    LEXICAL_QUERY,
    LEXICAL_TEXTS,
    SCORED,
    TITLED,
    WRITTEN,
    CountingEmbedding,
    Reopen,
    add_with_cosines,
    filter_documents,
    ids,
    lexical_documents,
    lexical_reference,
    query_vector,
    vector_with_cosine,
)

__all__ = ["Reopen", "VectorStoreConformance"]


def _scored(store: VectorStore, cosines: dict[str, float]) -> None:
    """Documents whose cosine with "alpha beta" is given; their texts never share its words."""
    add_with_cosines(store, {i: (c, f"doc {i}") for i, c in cosines.items()}, "alpha beta")


def _hits(found: list[Document]) -> list[tuple[str, float]]:
    return [(d.id, d.score if d.score is not None else float("nan")) for d in found]


def _assert_hits(found: list[Document], expected: Sequence[tuple[str, float]]) -> None:
    """Same ids in the same order, scores within 1e-9."""
    assert ids(found) == [doc_id for doc_id, _ in expected]
    assert [d.score for d in found] == pytest.approx([score for _, score in expected], abs=1e-9)


def _lexical(store: VectorStore, query: str, top_k: int = 4) -> list[Document]:
    return store.similarity_search(SearchRequest(query, top_k=top_k, mode="lexical"))


class VectorStoreConformance:
    """Contract tests; see the module docstring for the two fixtures a subclass supplies."""

    @pytest.fixture
    def embedding(self) -> CountingEmbedding:
        return CountingEmbedding(HashingEmbedding(dimensions=DIMENSIONS))

    @pytest.fixture
    def reopen(self) -> Reopen:
        pytest.fail("a store's conformance class must supply a `reopen` fixture")

    @pytest.fixture
    def filtered(self, store: VectorStore) -> VectorStore:
        store.add(filter_documents(DIMENSIONS))
        return store

    # -- add / upsert ----------------------------------------------------------------------------

    def test_add_then_get_round_trips_text_and_metadata(self, store: VectorStore) -> None:
        store.add([])  # a no-op, and an empty store finds nothing in any mode
        assert store.count() == 0 and store.get() == []
        for mode in ("vector", "lexical", "hybrid"):
            assert store.similarity_search(SearchRequest("anything", mode=mode)) == [], mode
        store.add([Document("doc-1", "Grüße aus 東京 🙂", WRITTEN)])
        [got] = store.get(["doc-1"])
        assert (got.id, got.text, got.score, got.metadata) == ("doc-1", "Grüße aus 東京 🙂", None, KEPT)
        assert type(got.metadata["page"]) is int and type(got.metadata["ok"]) is bool
        assert store.count() == 1

    def test_upsert_replaces_and_the_last_of_repeated_ids_wins(self, store: VectorStore) -> None:
        store.add(
            [Document("x", "apples and pears", {"kind": "fruit", "tags": ["old"]}), Document("y", "trains")]
        )
        repeated = [Document("z", "first", {"v": 1}), Document("x", "rockets and planets", {"kind": "space"})]
        store.add([*repeated, Document("z", "second", {"v": 2})])
        assert store.count() == 3
        expected = [("rockets and planets", {"kind": "space"}), ("second", {"v": 2})]
        assert [(d.text, d.metadata) for d in store.get(["x", "z"])] == expected
        assert store.count(key("kind") == "fruit") == 0 and store.count(key("tags").contains("old")) == 0
        assert ids(store.similarity_search("rockets planets"))[0] == "x"  # a text request

    def test_missing_embeddings_are_computed_once_and_given_ones_kept_normalised(
        self, store: VectorStore, embedding: CountingEmbedding
    ) -> None:
        given = np.zeros(DIMENSIONS, np.float32)
        given[[3, 5]] = [3.0, 4.0]
        texts = [f"text number {i}" for i in range(700)]
        store.add(
            [Document("given", "given text", embedding=given)]
            + [Document(f"id{i:04d}", t) for i, t in enumerate(texts)]
        )
        assert sorted(embedding.texts) == sorted(texts)  # each once, the given vector's text never
        assert store.count() == 701 and ids(store.get(limit=2)) == ["given", "id0000"]
        vectors = [d.embedding for d in store.get(["given", "id0699"], include_embeddings=True)]
        np.testing.assert_allclose(vectors[0], given / 5.0, atol=1e-6)  # type: ignore[arg-type]
        np.testing.assert_allclose(vectors[1], embedding.inner.embed([texts[-1]])[0], atol=1e-6)  # type: ignore[arg-type]

    @pytest.mark.parametrize(("vector", "message"), BAD_VECTORS.values(), ids=BAD_VECTORS)
    def test_bad_vector_raises_and_loses_nothing(
        self, store: VectorStore, vector: np.ndarray, message: str
    ) -> None:
        store.add([Document("keep", "kept text", {"v": 1})])
        batch = [Document("keep", "overwritten?"), Document("new", "new text")]
        with pytest.raises(DimensionMismatchError, match=message) as info:
            store.add([*batch, Document("bad id", "x", embedding=vector)])
        assert "'bad id'" in str(info.value)
        assert [(d.id, d.text, d.metadata) for d in store.get()] == [("keep", "kept text", {"v": 1})]

    # -- delete ----------------------------------------------------------------------------------

    def test_delete_by_ids(self, filtered: VectorStore) -> None:
        for arguments in ({}, {"ids": ["d1"], "filter": key("year") == 1}):  # neither or both: refused
            with pytest.raises(InvalidRequestError):
                filtered.delete(**arguments)  # type: ignore[arg-type]
        assert filtered.delete(["d2", "nope", "d5", "d2"]) == 2
        assert ids(filtered.get()) == ["d1", "d3", "d4", "d6", "d7"]
        assert filtered.count(key("meta.lang") == "nl") == 0
        assert "d2" not in ids(filtered.similarity_search(SearchRequest("document", top_k=10)))
        assert filtered.delete([]) == 0 and filtered.count() == 5

    @pytest.mark.parametrize("as_text", [False, True], ids=["tree", "text"])
    def test_delete_by_filter_down_to_nothing_then_add_again(
        self, filtered: VectorStore, as_text: bool
    ) -> None:
        tree = key("tags").contains("tech") | (key("year") < 2000)
        assert filtered.delete(filter=str(tree) if as_text else tree) == 3
        assert ids(filtered.get()) == ["d3", "d4", "d5", "d7"]
        assert filtered.delete(filter=key("nokey") == 1) == 0
        assert filtered.delete(filter=key("nokey").is_null()) == 4
        assert filtered.count() == 0 and filtered.get() == [] and filtered.similarity_search("document") == []
        filtered.add([Document("d1", "back again", {"year": 2020})])
        assert ids(filtered.get(filter=key("year") == 2020)) == ["d1"]

    # -- get / count -----------------------------------------------------------------------------

    def test_get_and_count(self, filtered: VectorStore) -> None:
        assert ids(filtered.get(["d7", "zz", "d1", "d7", "d3"])) == ["d7", "d1", "d3"]  # in their order
        assert ids(filtered.get(["d7", "d1", "d3"], filter=key("year") >= 2020)) == ["d1", "d3"]
        assert ids(filtered.get(["d7", "d1", "d3"], limit=2)) == ["d7", "d1"]
        assert filtered.get([]) == []
        for limit in (0, 1, 3, 100):  # the limit applies after the filter
            found = ids(filtered.get(filter=key("year").is_not_null(), limit=limit))
            assert found == ["d1", "d2", "d3", "d4", "d6", "d7"][:limit], limit
        assert all(d.embedding is None for d in filtered.get())  # embeddings only when asked
        got = filtered.get(["d1"], include_embeddings=True)[0].embedding
        np.testing.assert_allclose(got, filter_documents(DIMENSIONS)[0].embedding, atol=1e-6)  # type: ignore[arg-type]
        assert filtered.count() == 7 and filtered.count(key("year") == 2020) == 2

    def test_get_without_ids_is_in_code_point_id_order(self, store: VectorStore) -> None:
        every = ["b", "B", "a", "ä", "10", "9", "Z", "_", "東"]
        store.add(Document(i, f"text {n}") for n, i in enumerate(every))
        assert ids(store.get()) == sorted(every) and ids(store.get(limit=3)) == sorted(every)[:3]

    @pytest.mark.parametrize(("arguments", "message"), BAD_GETS.values(), ids=BAD_GETS)
    def test_bad_get_arguments_have_one_message(
        self, filtered: VectorStore, arguments: dict[str, object], message: str
    ) -> None:
        with pytest.raises(InvalidRequestError) as info:
            filtered.get(**arguments)  # type: ignore[arg-type]
        assert str(info.value) == message

    # -- vector search ---------------------------------------------------------------------------

    @pytest.mark.parametrize(
        ("top_k", "threshold", "expected"),
        [
            (0, 0.0, ""),
            (3, 0.0, "pqr"),
            (10, 0.0, "pqrst"),
            (10, 0.25, "pqr"),
            (10, 0.5, "pq"),
            (1, 0.5, "p"),
            (10, 0.95, ""),
        ],
    )  # threshold 0 accepts every score, negative ones too
    def test_best_first_with_cosine_scores_top_k_and_threshold(
        self, store: VectorStore, top_k: int, threshold: float, expected: str
    ) -> None:
        _scored(store, COSINES)
        found = store.similarity_search(
            SearchRequest("alpha beta", top_k=top_k, similarity_threshold=threshold)
        )
        assert ids(found) == list(expected)
        assert [d.score for d in found] == pytest.approx([COSINES[i] for i in expected], abs=1e-5)
        order = list(COSINES)
        assert [(d.text, d.metadata, d.embedding) for d in found] == [
            (f"doc {i}", {"n": order.index(i)}, None) for i in expected
        ]

    def test_threshold_one_keeps_identical_vectors_only(self, store: VectorStore) -> None:
        _scored(store, {"same": 1.0, "close": 0.999, "far": 0.2})
        found = store.similarity_search(SearchRequest("alpha beta", top_k=5, similarity_threshold=1.0))
        assert ids(found) == ["same"] and found[0].score == pytest.approx(1.0)

    def test_equal_scores_in_ascending_id_order(self, store: VectorStore) -> None:
        q = query_vector(store.embedding, "alpha beta")
        tied = vector_with_cosine(q, 0.5, seed=3)
        store.add([Document(i, f"t{i}", embedding=tied) for i in ["m", "b", "z", "a"]])
        store.add([Document("best", "x", embedding=q), Document("worst", "y", embedding=-q)])
        expected = ["best", "a", "b", "m", "z", "worst"]
        assert ids(store.similarity_search(SearchRequest("alpha beta", top_k=10))) == expected
        assert ids(store.similarity_search(SearchRequest("alpha beta", top_k=3))) == expected[:3]

    def test_capabilities_and_exact_ranking_of_every_match(self, store: VectorStore) -> None:
        capabilities = getattr(store, "capabilities", None)
        assert isinstance(capabilities, Capabilities), "a store declares `capabilities`"
        if not capabilities.exact:  # refused, naming the stores that answer it
            with pytest.raises(InvalidRequestError, match=r"numpy.*pgvector"):
                store.similarity_search(SearchRequest("alpha beta", exact=True))
        # An exact store ranks every match exactly with `exact=True`, filtered or not, within the top k,
        # with ties by id, zero vectors included; an approximate one gives the same ids at this size.
        q = query_vector(store.embedding, "alpha beta")
        _scored(store, {f"c{i:02d}": round(0.9 - 0.05 * i, 2) for i in range(20)})
        store.add([Document("z0", "", {"n": 0}), Document("z1", "", {"n": 1})])  # zero vectors: cosine 0
        store.add([Document("tie", "t", {"n": 2}, embedding=vector_with_cosine(q, 0.5, seed=5))])
        for tree, top_k in ((None, 25), (key("n") >= 2, 25), (key("n") >= 2, 3), ("n > 100", 5)):
            request = SearchRequest("alpha beta", top_k=top_k, filter=tree, exact=capabilities.exact)
            every = store.get(filter=tree, include_embeddings=True)
            expected = sorted(every, key=lambda d: (-round(float(np.dot(d.embedding, q)), 5), d.id))  # type: ignore[arg-type]
            found = store.similarity_search(request)
            assert ids(found) == ids(expected)[:top_k]
            if capabilities.exact:
                assert store.similarity_search(request.replace(exact=False)) == found  # small: exact anyway

    # -- filters ---------------------------------------------------------------------------------

    @pytest.mark.parametrize(("label", "tree", "expected"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES])
    def test_filter_operator(
        self, filtered: VectorStore, label: str, tree: Filter, expected: list[str]
    ) -> None:
        assert ids(filtered.get(filter=tree)) == expected
        if "empty" not in label:  # the text form parses back to the same tree (text has no empty lists)
            assert ids(filtered.get(filter=str(tree))) == expected
        assert filtered.count(tree) == len(expected)
        for mode in ("vector", "lexical", "hybrid"):
            # Every text holds the word "document": each mode returns exactly the matches.
            found = filtered.similarity_search(SearchRequest("document", top_k=20, filter=tree, mode=mode))
            assert sorted(ids(found)) == expected, mode

    # -- lexical and hybrid search ---------------------------------------------------------------

    def test_lexical_ranks_by_bm25_and_follows_upserts_and_deletes(self, store: VectorStore) -> None:
        store.add(lexical_documents())
        found = _lexical(store, LEXICAL_QUERY, 10)
        _assert_hits(found, lexical_reference(lexical_documents()).search(LEXICAL_QUERY, 10))
        assert found[0].id == "l2" and "l5" not in ids(found)  # no query term, no hit
        assert found[0].text == LEXICAL_TEXTS["l2"] and found[0].metadata == {"kind": "sparse", "n": 2}
        for query, expected in (("東京", "l7"), ("cafe zurich", "l6")):  # accents and other scripts
            assert ids(_lexical(store, query)) == [expected]
        store.add([Document("l5", "sparse sparse sparse sparse retrieval", {"kind": "sparse"})])
        assert store.delete(["l2"]) == 1 and store.delete(filter=key("kind") == "dense") == 1
        kept = [d for d in lexical_documents() if d.id not in {"l2", "l3", "l5"}]
        kept.append(Document("l5", "sparse sparse sparse sparse retrieval"))
        _assert_hits(_lexical(store, LEXICAL_QUERY, 10), lexical_reference(kept).search(LEXICAL_QUERY, 10))
        store.add([Document("l5", "nothing relevant")])
        assert "l5" not in ids(_lexical(store, "sparse"))

    def test_titles_and_headings_are_indexed_beside_the_text(
        self, store: VectorStore, reopen: Reopen, embedding: CountingEmbedding
    ) -> None:
        store.add(TITLED)
        [found] = _lexical(store, "validators", 5)  # the word is only in its heading path
        assert (found.id, found.text, found.metadata) == ("sec", TITLED[0].text, TITLED[0].metadata)
        expected = lexical_reference(TITLED).search("guide aspirin path fever", 5)
        for opened in (store, reopen(store, embedding)):
            _assert_hits(_lexical(opened, "guide aspirin path fever", 5), expected)

    def test_lexical_analyses_each_document_in_its_language(self, store: VectorStore) -> None:
        store.add(LANGUAGES)
        assert _lexical(store, "Haus")[0].id == "de"
        for query in ("Haus", "house rivers", "дом", "die Flüsse"):
            _assert_hits(_lexical(store, query, 5), lexical_reference(LANGUAGES).search(query, 5))
        store.delete(["ru", "en"])  # the languages held, and their statistics, follow deletes
        kept = [d for d in LANGUAGES if d.id not in {"ru", "en"}]
        for query in ("Haus", "house rivers", "дом"):
            _assert_hits(_lexical(store, query, 5), lexical_reference(kept).search(query, 5))

    def test_lexical_filter_top_k_and_empty_queries(self, store: VectorStore) -> None:
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

    @pytest.mark.parametrize("threshold", [0.0, 0.2, 0.5, 0.85])
    def test_threshold_applies_to_cosine_in_every_mode(self, store: VectorStore, threshold: float) -> None:
        add_with_cosines(store, SCORED, "alpha beta")
        passing = {doc_id for doc_id, (c, _) in SCORED.items() if threshold == 0 or c >= threshold}
        request = SearchRequest("alpha beta", top_k=10, similarity_threshold=threshold, mode="lexical")
        documents = [Document(doc_id, text) for doc_id, (_, text) in SCORED.items()]
        _assert_hits(
            store.similarity_search(request),
            lexical_reference(documents).search("alpha beta", 10, allowed=passing),
        )
        for mode in ("vector", "hybrid"):
            assert set(ids(store.similarity_search(request.replace(mode=mode)))) == passing, mode

    @pytest.mark.parametrize("fusion", ["rrf", "weighted"])
    @pytest.mark.parametrize("filtered", [False, True])
    def test_hybrid_fuses_the_vector_and_lexical_rankings(
        self, store: VectorStore, fusion: str, filtered: bool
    ) -> None:
        add_with_cosines(store, SCORED, "alpha beta")
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

    @pytest.mark.parametrize("mode", ["vector", "lexical", "hybrid"])
    def test_diversity_skips_a_near_duplicate(self, store: VectorStore, mode: str) -> None:
        q = query_vector(store.embedding, "alpha")
        twin = vector_with_cosine(q, 0.9, seed=1)
        store.add([Document(i, "alpha alpha", embedding=twin) for i in ("a", "a2")])
        store.add([Document("b", "alpha gamma delta", embedding=vector_with_cosine(q, 0.6, seed=2))])
        request = SearchRequest("alpha", top_k=2, mode=mode)  # type: ignore[arg-type]
        assert ids(store.similarity_search(request)) == ["a", "a2"]
        scores = {d.id: d.score for d in store.similarity_search(request.replace(top_k=3))}
        found = store.similarity_search(request.replace(diversity=0.9))  # the mode's scores kept
        assert [(d.id, d.score) for d in found] == [("a", scores["a"]), ("b", scores["b"])]

    # -- persistence and the embedding model -----------------------------------------------------

    def test_reopening_with_the_same_model_keeps_documents_and_rankings(
        self, filtered: VectorStore, reopen: Reopen, embedding: CountingEmbedding
    ) -> None:
        add_with_cosines(filtered, SCORED, "alpha beta")
        filtered.add(lexical_documents())
        requests = [
            SearchRequest("alpha sparse", top_k=5, mode=m, diversity=0.3)
            for m in ("vector", "lexical", "hybrid")
        ]
        before = [_hits(filtered.similarity_search(r)) for r in requests]
        again = reopen(filtered, embedding)
        assert again.get() == filtered.get()
        assert ids(again.get(filter=key("tags").contains("tech"))) == ["d1", "d2"]
        assert [_hits(again.similarity_search(r)) for r in requests] == before

    @pytest.mark.parametrize(("name", "dimensions"), [("another-model", DIMENSIONS), (None, 32)])
    def test_reopen_with_another_model_is_refused(
        self, filtered: VectorStore, reopen: Reopen, name: str | None, dimensions: int
    ) -> None:
        other = CountingEmbedding(HashingEmbedding(dimensions=dimensions), name=name)
        with pytest.raises(EmbeddingModelMismatchError) as info:
            reopen(filtered, other)
        assert repr(filtered.embedding.name) in str(info.value) and repr(other.name) in str(info.value)
