"""NumpyVectorStore: the conformance suite, persistence, and filters/search against reference oracles."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag import Document, HashingEmbedding, SearchRequest
from rag.embeddings import EmbeddingModel
from rag.errors import EmbeddingError, InvalidRequestError, StoreError, StoreNotFoundError
from rag.filters import Filter, key, matches
from rag.vectorstore import VectorStore
from stores.numpy.search import exact_scores, score_rows
from stores.numpy.store import NumpyVectorStore
from stores.testing.cases import CountingEmbedding
from stores.testing.conformance import VectorStoreConformance
from stores.testing.strategies import filter_trees, metadata_dicts

DIMENSIONS = 16


class TestInMemoryConformance(VectorStoreConformance):
    @pytest.fixture
    def store(self, embedding: EmbeddingModel) -> NumpyVectorStore:
        return NumpyVectorStore(embedding, batch_size=100)

    @pytest.fixture
    def reopen(self, tmp_path: Path) -> Callable[[VectorStore, EmbeddingModel], VectorStore]:
        def reopen(store: VectorStore, embedding: EmbeddingModel) -> VectorStore:
            assert isinstance(store, NumpyVectorStore)
            store.save(tmp_path / "saved")
            return NumpyVectorStore.load(tmp_path / "saved", embedding)

        return reopen

    def test_batches_respect_batch_size(self, store: NumpyVectorStore, embedding: CountingEmbedding) -> None:
        store.add(Document(str(i), f"text {i}") for i in range(250))
        assert [len(b) for b in embedding.batches] == [100, 100, 50]


class _TableModel:
    """Embeds known query texts as fixed unit vectors, so searches can be checked against brute force."""

    name = "table"
    dimensions = DIMENSIONS

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed(self, texts: Any) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


def _random_store(
    count: int, seed: int = 0, embedding: EmbeddingModel | None = None
) -> tuple[NumpyVectorStore, np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIMENSIONS)).astype(np.float32)
    store = NumpyVectorStore(embedding or HashingEmbedding(DIMENSIONS))
    store.add(
        Document(f"id{i:05d}", f"t{i}", {"bucket": i % 10, "even": i % 2 == 0}, embedding=v)
        for i, v in enumerate(vectors)
    )
    return store, vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


# -- persistence ---------------------------------------------------------------------------------


def _saved_state(store: NumpyVectorStore) -> list[tuple[Any, ...]]:
    return [(d.id, d.text, d.metadata, d.embedding.tobytes()) for d in store.get(include_embeddings=True)]  # type: ignore[union-attr]


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    store, _ = _random_store(300)
    store.add(
        [
            Document(
                "odd", "lone \ud800 surrogate, 東京", {"big": 2**70, "f": 0.1, "b": True, "l": [1, 2.5, "x"]}
            )
        ]
    )
    folder = store.save(tmp_path / "nested" / "store")
    loaded = NumpyVectorStore.load(folder, HashingEmbedding(DIMENSIONS))
    assert _saved_state(loaded) == _saved_state(store)
    assert loaded.get(["odd"])[0].metadata == {"big": 2**70, "f": 0.1, "b": True, "l": [1, 2.5, "x"]}
    assert loaded.count(key("bucket") == 3) == 30 and loaded.count(key("big") == 2**70) == 1
    request = SearchRequest("t1", top_k=7, filter=key("even") == True)  # noqa: E712
    assert loaded.similarity_search(request) == store.similarity_search(request)
    assert loaded.path == folder


def test_constructor_path_loads_when_present_and_saves_there(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    first = NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=folder)
    assert first.count() == 0 and not folder.exists()
    first.add([Document("a", "alpha")])
    assert first.save() == folder
    assert [d.id for d in NumpyVectorStore(HashingEmbedding(DIMENSIONS), path=folder).get()] == ["a"]
    with pytest.raises(InvalidRequestError, match="path"):
        NumpyVectorStore(HashingEmbedding(DIMENSIONS)).save()


def test_load_of_a_missing_path_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "nothing here"
    with pytest.raises(StoreNotFoundError, match="nothing here") as info:
        NumpyVectorStore.load(missing, HashingEmbedding(DIMENSIONS))
    assert info.value.path == str(missing)


def test_crash_before_the_manifest_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, _ = _random_store(20)
    folder = store.save(tmp_path / "s")
    store.add([Document("new", "new one")])

    def no_rename(src: Any, dst: Any) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", no_rename)
    with pytest.raises(StoreError):
        store.save(folder)
    assert NumpyVectorStore.load(folder, HashingEmbedding(DIMENSIONS)).count() == 20


# -- filters against the reference evaluator -----------------------------------------------------


def _reference_ids(metadatas: dict[str, dict[str, Any]], tree: Filter) -> list[str]:
    return sorted(i for i, m in metadatas.items() if matches(tree, m))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(metadata_dicts(), min_size=1, max_size=25),
    st.lists(filter_trees(), min_size=1, max_size=4),
    st.sets(st.integers(0, 30), max_size=10),
    st.lists(metadata_dicts(), max_size=6),
)
def test_filters_agree_with_the_reference(
    metadatas: list[dict[str, Any]],
    trees: list[Filter],
    deleted: set[int],
    replacements: list[dict[str, Any]],
) -> None:
    store = NumpyVectorStore(HashingEmbedding(DIMENSIONS))
    docs = [Document(f"d{i:02d}", "x", m) for i, m in enumerate(metadatas)]
    store.add(docs)
    # Deletes and upserts move rows and rewrite columns; the masks must follow.
    store.delete([f"d{i:02d}" for i in deleted])
    store.add(Document(f"d{i * 3:02d}", "y", m) for i, m in enumerate(replacements))
    current = {d.id: d.metadata for d in docs if int(d.id[1:]) not in deleted}
    current.update({f"d{i * 3:02d}": Document("z", "", m).metadata for i, m in enumerate(replacements)})
    for tree in trees:
        assert [d.id for d in store.get(filter=tree)] == _reference_ids(current, tree)
        assert store.count(tree) == len(_reference_ids(current, tree))


@pytest.mark.parametrize(
    "tree",
    [
        key("n") == 2**60,
        key("n") == 2**60 + 1,
        key("n") == float(2**60),
        key("n") < 2**60 + 1,
        key("n") >= 2**60 + 1,
        key("n") > 10**400,
        key("n") < -(10**400),
        key("n").in_([2**60 + 1, "x"]),
        key("l").contains(2**60 + 1),
        key("l").contains(float(2**60)),
        key("n") != 2**60 + 1,
    ],
)
def test_integers_beyond_float_precision_compare_exactly(tree: Filter) -> None:
    metadatas: dict[str, dict[str, Any]] = {
        "a": {"n": 2**60, "l": [2**60]},
        "b": {"n": 2**60 + 1, "l": [1, 2**60 + 1]},
        "c": {"n": float(2**60), "l": [float(2**60)]},
        "d": {"n": 10**400, "l": ["x"]},
        "e": {"n": "x"},
    }
    store = NumpyVectorStore(HashingEmbedding(DIMENSIONS))
    store.add(Document(i, i, m) for i, m in metadatas.items())
    assert [d.id for d in store.get(filter=tree)] == _reference_ids(metadatas, tree)


# -- exact search against brute force ------------------------------------------------------------


def _brute_force(
    vectors: np.ndarray, ids: list[str], query: np.ndarray, k: int, rows: np.ndarray
) -> list[str]:
    scores = exact_scores(vectors.astype(np.float32), rows, query)
    order = sorted(range(len(rows)), key=lambda j: (-scores[j], ids[rows[j]]))
    return [ids[rows[j]] for j in order[:k]]


@pytest.mark.parametrize("k", [1, 10, 64, 5000])
@pytest.mark.parametrize("bucket", [None, 3])
def test_search_equals_brute_force(k: int, bucket: int | None) -> None:
    rng = np.random.default_rng(1)
    queries = {f"q{i}": rng.standard_normal(DIMENSIONS) for i in range(5)}
    queries = {text: (q / np.linalg.norm(q)).astype(np.float32) for text, q in queries.items()}
    store, vectors = _random_store(3000, seed=k, embedding=_TableModel(queries))
    ids = [f"id{i:05d}" for i in range(3000)]
    store.delete(ids[::7])  # exercise moved rows
    live = np.array([i for i in range(3000) if i % 7], np.int64)
    rows = live if bucket is None else live[live % 10 == bucket]
    tree = None if bucket is None else key("bucket") == bucket
    for text, unit in queries.items():
        found = [d.id for d in store.similarity_search(SearchRequest(text, top_k=k, filter=tree))]
        assert found == _brute_force(vectors, ids, unit, k, rows)


@pytest.mark.parametrize("selected", [None, slice(None, None, 3)], ids=["all", "third"])
def test_threaded_row_scores_equal_blas(selected: slice | None) -> None:
    matrix = np.random.default_rng(2).standard_normal((70_000, 8)).astype(np.float32)
    query = np.linspace(-1, 1, 8, dtype=np.float32)
    rows = None if selected is None else np.arange(70_000)[selected]
    expected = matrix @ query if rows is None else matrix[rows] @ query
    np.testing.assert_allclose(score_rows(matrix, query, rows), expected, rtol=1e-5, atol=1e-5)


def test_batched_search_equals_single_searches() -> None:
    store, _ = _random_store(2000)
    requests = [SearchRequest(f"t{i}", top_k=5, filter=key("bucket") < i) for i in range(1, 6)] + ["t7", "t1"]
    assert store.similarity_search_batch(requests) == [store.similarity_search(r) for r in requests]


def test_duplicated_vectors_tie_by_id_across_many_rows() -> None:
    store = NumpyVectorStore(HashingEmbedding(DIMENSIONS))
    vector = np.ones(DIMENSIONS, np.float32)
    store.add(Document(f"{i:04d}", "x", embedding=vector) for i in reversed(range(500)))
    found = store.similarity_search(SearchRequest("x", top_k=5))
    assert [d.id for d in found] == ["0000", "0001", "0002", "0003", "0004"]


def test_deletes_keep_vectors_with_their_documents() -> None:
    store, vectors = _random_store(1000)
    rng = np.random.default_rng(5)
    alive = set(range(1000))
    for _ in range(20):
        gone = rng.choice(sorted(alive), size=30, replace=False)
        store.delete([f"id{i:05d}" for i in gone])
        alive -= set(gone.tolist())
    got = store.get(include_embeddings=True)
    assert [d.id for d in got] == [f"id{i:05d}" for i in sorted(alive)]
    np.testing.assert_array_equal(np.stack([d.embedding for d in got]), vectors[sorted(alive)])  # type: ignore[misc]
    assert store.count(key("bucket") == 0) == sum(1 for i in alive if i % 10 == 0)


# -- bad input -----------------------------------------------------------------------------------


class _BrokenModel:
    name = "broken"
    dimensions = DIMENSIONS

    def __init__(self, output: np.ndarray) -> None:
        self.output = output

    def embed(self, texts: Any) -> np.ndarray:
        return self.output


@pytest.mark.parametrize(
    "output",
    [
        np.full((1, DIMENSIONS), np.nan, np.float32),
        np.ones((1, DIMENSIONS + 1), np.float32),
        np.ones((2, DIMENSIONS)),
    ],
    ids=["nan", "wide", "rows"],
)
def test_bad_model_output_is_an_embedding_error(output: np.ndarray) -> None:
    store = NumpyVectorStore(_BrokenModel(output))
    with pytest.raises(EmbeddingError, match="broken"):
        store.add([Document("a", "text")])
    assert store.count() == 0


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.delete("abc"),
        lambda s: s.get("abc"),
        lambda s: s.get(limit=-1),
        lambda s: s.add([{"id": "x"}]),
        lambda s: s.similarity_search_batch([3]),
        lambda s: NumpyVectorStore(HashingEmbedding(DIMENSIONS), batch_size=0),
    ],
    ids=["delete-str", "get-str", "limit", "not-a-document", "not-a-request", "batch-size"],
)
def test_bad_arguments_are_invalid_requests(call: Callable[[NumpyVectorStore], Any]) -> None:
    store, _ = _random_store(3)
    with pytest.raises(InvalidRequestError):
        call(store)
    assert store.count() == 3
