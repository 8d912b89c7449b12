"""The conformance suite every vector store passes: the `VectorStore` contract as pytest tests.

A store joins by subclassing `VectorStoreConformance` and supplying two fixtures: `store`, an EMPTY store
built with the suite's `embedding` fixture, and `reopen`, a function that opens the same stored data
again with a given embedding model (for persistence and the model-mismatch check). The store's
`capabilities` say what it promises: an approximate store is held to the exact answers where its index
finds every neighbour (the small data here) and must refuse `exact=True`.

Example:
    >>> import pytest
    >>> from stores import NumpyVectorStore
    >>> class TestMyStore(VectorStoreConformance):
    ...     @pytest.fixture
    ...     def store(self, embedding):
    ...         return NumpyVectorStore(embedding)
"""

from __future__ import annotations

from typing import Any

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
from rag.vectorstore import Capabilities, VectorStore
from stores.testing.cases import (
    FILTER_CASES,
    CountingEmbedding,
    Reopen,
    add_with_cosines,
    filter_documents,
    ids,
    query_vector,
    vector_with_cosine,
)
from stores.testing.modes import SearchModeConformance

__all__ = ["Reopen", "VectorStoreConformance"]

DIMENSIONS = 64

_COSINES = {"p": 0.9, "q": 0.6, "r": 0.3, "s": 0.0, "t": -0.5}
_KEPT: dict[str, Any] = {"source": "Zürich/東京.md", "page": 3, "ratio": 0.25, "ok": True, "tags": ["a", "ä"]}
_WRITTEN: dict[str, Any] = {**_KEPT, "gone": None}  # a None value is a missing key
_ONES = np.ones(DIMENSIONS - 1, np.float32)
_SIZES = "{0}.*{1}|{1}.*{0}"  # a message naming both sizes
_BAD_VECTORS = {  # each with what its message must say
    "too-short": (_ONES, _SIZES.format(DIMENSIONS - 1, DIMENSIONS)),
    "too-long": (np.ones(DIMENSIONS + 7, np.float32), _SIZES.format(DIMENSIONS + 7, DIMENSIONS)),
    "nan": (np.full(DIMENSIONS, np.nan, np.float32), "NaN|finite"),
    "inf": (np.append(_ONES, np.float32(np.inf)), "inf|finite"),
    "minus-inf": (np.append(_ONES, np.float32(-np.inf)), "inf|finite"),
}
_BAD_GETS = {  # arguments of `get` and the one message each gives
    "negative": ({"limit": -1}, "limit must be an integer >= 0 or None, got -1"),
    "bool": ({"limit": True}, "limit must be an integer >= 0 or None, got True"),
    "float": ({"limit": 1.5}, "limit must be an integer >= 0 or None, got 1.5"),
    "one-string": ({"ids": "d1"}, "ids must be a list of ids, not the single string 'd1'"),
    "not-a-string": ({"ids": ["d1", 7]}, "ids must be strings, got 7"),
}


def _scored(store: VectorStore, cosines: dict[str, float]) -> None:
    """Documents whose cosine with "alpha beta" is given; their texts never share its words."""
    add_with_cosines(store, {i: (c, f"doc {i}") for i, c in cosines.items()}, "alpha beta")


class VectorStoreConformance(SearchModeConformance):
    """Mixin of contract tests; see the module docstring for the two fixtures a subclass supplies."""

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
        store.add([Document("doc-1", "Grüße aus 東京 🙂", _WRITTEN)])
        [got] = store.get(["doc-1"])
        assert (got.id, got.text, got.score, got.metadata) == ("doc-1", "Grüße aus 東京 🙂", None, _KEPT)
        assert type(got.metadata["page"]) is int and type(got.metadata["ok"]) is bool
        assert store.count() == 1

    def test_upsert_replaces_text_metadata_and_vector(self, store: VectorStore) -> None:
        store.add(
            [Document("x", "apples and pears", {"kind": "fruit", "tags": ["old"]}), Document("y", "trains")]
        )
        store.add([Document("x", "rockets and planets", {"kind": "space"})])
        assert store.count() == 2
        [got] = store.get(["x"])
        assert (got.text, got.metadata) == ("rockets and planets", {"kind": "space"})
        assert store.count(key("kind") == "fruit") == 0 and store.count(key("tags").contains("old")) == 0
        assert ids(store.similarity_search(SearchRequest("rockets planets", top_k=1))) == ["x"]

    def test_repeated_id_in_one_add_keeps_the_last(self, store: VectorStore) -> None:
        store.add(
            [Document("a", "first", {"v": 1}), Document("b", "other"), Document("a", "second", {"v": 2})]
        )
        assert store.count() == 2
        assert [(d.text, d.metadata) for d in store.get(["a"])] == [("second", {"v": 2})]

    def test_add_nothing_is_a_no_op_and_an_empty_store_finds_nothing(self, store: VectorStore) -> None:
        store.add([])
        assert store.count() == 0 and store.get() == [] and store.similarity_search("anything") == []

    def test_given_embeddings_are_kept_normalised_and_not_recomputed(
        self, store: VectorStore, embedding: CountingEmbedding
    ) -> None:
        given = np.zeros(DIMENSIONS, np.float32)
        given[[3, 5]] = [3.0, 4.0]
        store.add([Document("g", "given text", embedding=given), Document("m", "missing text")])
        assert embedding.texts == ["missing text"]
        vectors = {d.id: d.embedding for d in store.get(include_embeddings=True)}
        np.testing.assert_allclose(vectors["g"], given / 5.0, atol=1e-6)  # type: ignore[arg-type]
        np.testing.assert_allclose(vectors["m"], embedding.inner.embed(["missing text"])[0], atol=1e-6)  # type: ignore[arg-type]

    def test_many_documents_are_each_embedded_once(
        self, store: VectorStore, embedding: CountingEmbedding
    ) -> None:
        texts = [f"text number {i}" for i in range(700)]
        store.add(Document(f"id{i:04d}", t) for i, t in enumerate(texts))
        assert sorted(embedding.texts) == sorted(texts)
        assert store.count() == 700 and ids(store.get(limit=2)) == ["id0000", "id0001"]

    @pytest.mark.parametrize(("vector", "message"), _BAD_VECTORS.values(), ids=_BAD_VECTORS)
    def test_bad_vector_raises_and_loses_nothing(
        self, store: VectorStore, vector: np.ndarray, message: str
    ) -> None:
        store.add([Document("keep", "kept text", {"v": 1})])
        batch = [
            Document("keep", "overwritten?"),
            Document("new", "new text"),
            Document("bad id", "x", embedding=vector),
        ]
        with pytest.raises(DimensionMismatchError, match=message) as info:
            store.add(batch)
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
    def test_delete_by_filter(self, filtered: VectorStore, as_text: bool) -> None:
        tree = key("tags").contains("tech") | (key("year") < 2000)
        assert filtered.delete(filter=str(tree) if as_text else tree) == 3
        assert ids(filtered.get()) == ["d3", "d4", "d5", "d7"]
        assert filtered.delete(filter=key("nokey") == 1) == 0

    def test_delete_everything_then_add_again(self, filtered: VectorStore) -> None:
        assert filtered.delete(filter=key("nokey").is_null()) == 7
        assert filtered.count() == 0 and filtered.get() == [] and filtered.similarity_search("document") == []
        filtered.add([Document("d1", "back again", {"year": 2020})])
        assert ids(filtered.get(filter=key("year") == 2020)) == ["d1"]

    # -- get / count -----------------------------------------------------------------------------

    def test_get_by_ids_keeps_their_order(self, filtered: VectorStore) -> None:
        assert ids(filtered.get(["d7", "zz", "d1", "d7", "d3"])) == ["d7", "d1", "d3"]
        assert ids(filtered.get(["d7", "d1", "d3"], filter=key("year") >= 2020)) == ["d1", "d3"]
        assert ids(filtered.get(["d7", "d1", "d3"], limit=2)) == ["d7", "d1"]
        assert filtered.get([]) == []

    def test_get_without_ids_is_in_code_point_id_order(self, store: VectorStore) -> None:
        every = ["b", "B", "a", "ä", "10", "9", "Z", "_", "東"]
        store.add(Document(i, f"text {n}") for n, i in enumerate(every))
        assert ids(store.get()) == sorted(every) and ids(store.get(limit=3)) == sorted(every)[:3]

    @pytest.mark.parametrize("limit", [0, 1, 3, 100])
    def test_get_limit_applies_after_filter(self, filtered: VectorStore, limit: int) -> None:
        found = ids(filtered.get(filter=key("year").is_not_null(), limit=limit))
        assert found == ["d1", "d2", "d3", "d4", "d6", "d7"][:limit]

    @pytest.mark.parametrize(("arguments", "message"), _BAD_GETS.values(), ids=_BAD_GETS)
    def test_bad_get_arguments_have_one_message(
        self, filtered: VectorStore, arguments: dict[str, object], message: str
    ) -> None:
        with pytest.raises(InvalidRequestError) as info:
            filtered.get(**arguments)  # type: ignore[arg-type]
        assert str(info.value) == message

    def test_get_embeddings_only_when_asked_and_count(self, filtered: VectorStore) -> None:
        assert all(d.embedding is None for d in filtered.get())
        expected = filter_documents(DIMENSIONS)[0].embedding
        got = filtered.get(["d1"], include_embeddings=True)[0].embedding
        np.testing.assert_allclose(got, expected, atol=1e-6)  # type: ignore[arg-type]
        assert filtered.count() == 7 and filtered.count(key("year") == 2020) == 2

    # -- similarity search -----------------------------------------------------------------------

    def test_best_first_with_cosine_scores(self, store: VectorStore) -> None:
        _scored(store, _COSINES)
        found = store.similarity_search(SearchRequest("alpha beta", top_k=3))
        assert ids(found) == ["p", "q", "r"]
        assert [d.score for d in found] == pytest.approx([0.9, 0.6, 0.3], abs=1e-5)
        assert found[0].metadata == {"n": 0} and found[0].text == "doc p" and found[0].embedding is None

    @pytest.mark.parametrize(
        ("top_k", "threshold", "expected"),
        [(0, 0.0, ""), (10, 0.0, "pqrst"), (10, 0.25, "pqr"), (10, 0.5, "pq"), (1, 0.5, "p"), (10, 0.95, "")],
    )  # threshold 0 accepts every score, negative ones too
    def test_top_k_and_threshold(
        self, store: VectorStore, top_k: int, threshold: float, expected: str
    ) -> None:
        _scored(store, _COSINES)
        request = SearchRequest("alpha beta", top_k=top_k, similarity_threshold=threshold)
        assert ids(store.similarity_search(request)) == list(expected)

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

    def test_text_request_and_real_embeddings(self, store: VectorStore) -> None:
        texts = ["Chroma keeps vectors on disk", "café au lait à Paris", "東京 タワー"]
        store.add(Document(str(n), text) for n, text in enumerate(texts, 1))
        assert ids(store.similarity_search("where does chroma keep vectors"))[0] == "1"
        assert ids(store.similarity_search(SearchRequest("東京", top_k=1))) == ["3"]
        assert ids(store.similarity_search(SearchRequest("café", top_k=1))) == ["2"]

    def test_search_with_filter_ranks_within_matches(self, store: VectorStore) -> None:
        _scored(store, {"p": 0.9, "q": 0.6, "r": 0.3, "s": 0.0})
        request = SearchRequest("alpha beta", top_k=2, filter=key("n") >= 1)
        assert ids(store.similarity_search(request)) == ["q", "r"]
        assert store.similarity_search(request.replace(filter="n > 100")) == []

    def test_declares_its_capabilities(self, store: VectorStore) -> None:
        capabilities = getattr(store, "capabilities", None)
        assert isinstance(capabilities, Capabilities), "a store declares `capabilities`"
        if not capabilities.exact:
            # An approximate store refuses exact requests, naming the stores that answer them.
            with pytest.raises(InvalidRequestError, match=r"numpy.*pgvector"):
                store.similarity_search(SearchRequest("alpha beta", exact=True))

    def test_exact_requests_rank_every_match_exactly(self, store: VectorStore) -> None:
        # An exact store ranks every match exactly with `exact=True`, filtered or not, with ties by id,
        # zero vectors included; an approximate one gives the same result set and order at this size.
        exact = store.capabilities.exact  # type: ignore[attr-defined]
        q = query_vector(store.embedding, "alpha beta")
        _scored(store, {f"c{i:02d}": round(0.9 - 0.05 * i, 2) for i in range(20)})
        store.add([Document("z0", "", {"n": 0}), Document("z1", "", {"n": 1})])  # zero vectors: cosine 0
        store.add([Document("tie", "t", {"n": 2}, embedding=vector_with_cosine(q, 0.5, seed=5))])
        for text_filter, least in ((None, 0), ("n >= 2", 2)):
            request = SearchRequest("alpha beta", top_k=25, filter=text_filter, exact=exact)
            every = store.get(filter=text_filter, include_embeddings=True)
            expected = sorted(every, key=lambda d: (-round(float(np.dot(d.embedding, q)), 5), d.id))  # type: ignore[arg-type]
            found = store.similarity_search(request)
            assert ids(found) == ids(expected)[:25]
            assert all(int(str(d.metadata["n"])) >= least for d in found)
            if exact:
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

    def test_filter_text_with_quoting(self, filtered: VectorStore) -> None:
        assert ids(filtered.get(filter="'file name' == \"a b.txt\" OR \"名前\" == '東京'")) == ["d1", "d3"]
        assert ids(filtered.get(filter="meta.lang IN ['en', 'nl'] AND NOT draft == true")) == ["d1"]

    # -- persistence and the embedding model -----------------------------------------------------

    def test_reopen_with_same_model_sees_the_documents(
        self, filtered: VectorStore, reopen: Reopen, embedding: CountingEmbedding
    ) -> None:
        again = reopen(filtered, embedding)
        assert ids(again.get()) == ids(filtered.get())
        assert ids(again.get(filter=key("tags").contains("tech"))) == ["d1", "d2"]

    @pytest.mark.parametrize(("name", "dimensions"), [("another-model", DIMENSIONS), (None, 32)])
    def test_reopen_with_another_model_is_refused(
        self,
        filtered: VectorStore,
        reopen: Reopen,
        embedding: CountingEmbedding,
        name: str | None,
        dimensions: int,
    ) -> None:
        other = CountingEmbedding(HashingEmbedding(dimensions=dimensions), name=name)
        with pytest.raises(EmbeddingModelMismatchError) as info:
            reopen(filtered, other)
        assert repr(embedding.name) in str(info.value) and repr(other.name) in str(info.value)
