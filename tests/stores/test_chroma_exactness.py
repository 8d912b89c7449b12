"""The exactness contract of the Chroma store (docs/exactness.md), on collections where HNSW is approximate.

The collections are built with a sparse HNSW graph (4 neighbours, small `ef_search`) so that Chroma's
graph search visibly misses true neighbours at a few thousand vectors, as it does with the default
settings at hundreds of thousands. The numpy store is the reference:

- `get`, `count` and which documents may appear in a search are identical, always;
- `exact=True` gives the numpy store's answer exactly (ids, order, scores), and so does a collection of
  at most `ef_search` records;
- a default search returns eligible documents only, best first, with scores equal to their exact cosines
  (within 2e-6: float32 distances, rounded to 6 decimals), and finds most but not all true neighbours here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag import Document, SearchRequest
from stores import ChromaVectorStore, NumpyVectorStore

DIMS = 32
FILTERS = [None, "odd == true", "bucket < 2 AND odd != true", "name < 'n0300'"]


class _Lookup:
    """An embedding model mapping chosen query texts to chosen unit vectors (documents bring their own)."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.dimensions = DIMS
        self.name = f"lookup-{DIMS}"

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vectors[text] for text in texts]).astype(np.float32)


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _corpus() -> tuple[_Lookup, list[Document]]:
    rng = np.random.default_rng(11)
    vectors = _unit(rng.standard_normal((3000, DIMS)))
    vectors[100:130] = vectors[7]  # a block of exact ties
    vectors[200:210] = 0.0  # zero vectors (empty texts), which HNSW can lose
    queries = {
        "tie": vectors[7],
        **{f"q{i}": v for i, v in enumerate(_unit(rng.standard_normal((12, DIMS))))},
    }
    docs = [
        Document(
            f"v{i:04d}",
            "",
            {"odd": i % 3 == 1, "bucket": i % 10, "name": f"n{(i * 7919) % 3000:04d}"},
            embedding=vector,
        )
        for i, vector in enumerate(vectors)
    ]
    return _Lookup(queries), docs


def _sparse_collection(path: Path, model: _Lookup) -> None:
    """Creates the collection with a sparse graph, the way a user could before opening the store."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    client.create_collection(
        "sparse",
        embedding_function=None,
        metadata={"rag:embedding_model": model.name, "rag:dimensions": model.dimensions},
        configuration={"hnsw": {"space": "ip", "ef_search": 10, "ef_construction": 20, "max_neighbors": 4}},
    )
    client.close()


@pytest.fixture(scope="module")
def stores(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ChromaVectorStore, NumpyVectorStore]]:
    model, docs = _corpus()
    path = tmp_path_factory.mktemp("sparse")
    _sparse_collection(path, model)
    reference = NumpyVectorStore(model)  # type: ignore[arg-type]
    reference.add(docs)
    with ChromaVectorStore(model, collection="sparse", path=path, ef_search=10) as chroma:  # type: ignore[arg-type]
        chroma.add(docs)
        yield chroma, reference


def _requests(**options: Any) -> Iterator[SearchRequest]:
    for name in ["tie", *(f"q{i}" for i in range(12))]:
        for top_k, text_filter in [
            (10, None),
            (40, None),
            (10, FILTERS[1]),
            (5, FILTERS[2]),
            (8, FILTERS[3]),
        ]:
            yield SearchRequest(name, top_k, filter=text_filter, **options)


def _hits(found: list[Document]) -> list[tuple[str, float | None]]:
    return [(doc.id, doc.score) for doc in found]


@pytest.mark.parametrize("text_filter", FILTERS)
def test_filters_are_identical_on_every_path(
    stores: tuple[ChromaVectorStore, NumpyVectorStore], text_filter: str | None
) -> None:
    chroma, reference = stores
    assert [d.id for d in chroma.get(filter=text_filter)] == [d.id for d in reference.get(filter=text_filter)]
    assert chroma.count(text_filter) == reference.count(text_filter)


def test_exact_requests_equal_the_numpy_store(stores: tuple[ChromaVectorStore, NumpyVectorStore]) -> None:
    chroma, reference = stores
    for request in _requests(exact=True):
        assert _hits(chroma.similarity_search(request)) == _hits(reference.similarity_search(request)), (
            request
        )
    tied = chroma.similarity_search(SearchRequest("tie", top_k=20, exact=True))
    assert [d.id for d in tied] == ["v0007", *(f"v{i:04d}" for i in range(100, 119))]


def test_exact_hybrid_equals_the_numpy_store(stores: tuple[ChromaVectorStore, NumpyVectorStore]) -> None:
    chroma, reference = stores
    request = SearchRequest("q3", 10, filter="odd == true", mode="hybrid", exact=True)
    assert [d.id for d in chroma.similarity_search(request)] == [
        d.id for d in reference.similarity_search(request)
    ]


def test_default_searches_are_approximate_but_honest(
    stores: tuple[ChromaVectorStore, NumpyVectorStore],
) -> None:
    chroma, reference = stores
    found = wanted = 0
    for request in _requests():
        hits = chroma.similarity_search(request)
        exact = reference.similarity_search(request)
        eligible = {d.id for d in reference.get(filter=request.filter)}
        assert {d.id for d in hits} <= eligible and len(hits) <= request.top_k
        assert [(d.score, d.id) for d in hits] == sorted(
            ((d.score, d.id) for d in hits), key=lambda pair: (-pair[0], pair[1])
        )
        true_scores = {d.id: d.score for d in reference.similarity_search(request.replace(top_k=3000))}
        for doc in hits:
            assert doc.score == pytest.approx(true_scores[doc.id], abs=2e-6)  # one rounding step
        found += len({d.id for d in hits} & {d.id for d in exact})
        wanted += len(exact)
    # The sparse graph loses neighbours (this is what `exact=True` is for), yet most are found.
    assert 0.3 < found / wanted < 1.0


def test_small_collections_are_searched_exactly() -> None:
    model, docs = _corpus()
    small = docs[:10] + docs[100:105] + docs[200:203]  # ties and zero vectors included
    with ChromaVectorStore(model, collection="small", ef_search=20) as store:  # type: ignore[arg-type]
        store.add(small)
        oracle = NumpyVectorStore(model)  # type: ignore[arg-type]
        oracle.add(small)
        for request in [SearchRequest("tie", 18), SearchRequest("q1", 6, filter="odd == true")]:
            assert _hits(store.similarity_search(request)) == _hits(oracle.similarity_search(request))


class _Calls:
    """Wraps a chromadb collection and records which of its methods are called (the real ones run)."""

    def __init__(self, collection: Any) -> None:
        self.collection = collection
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        return getattr(self.collection, name)


@pytest.mark.parametrize("text_filter", [None, "bucket == 3"])
def test_a_large_collection_is_queried_once(
    stores: tuple[ChromaVectorStore, NumpyVectorStore], text_filter: str | None
) -> None:
    chroma, _ = stores
    chroma.similarity_search(SearchRequest("q0", 5))  # the collection's size is now known
    chroma._mirror.drop()  # without the exact copy (tests/stores/test_chroma_mirror.py), Chroma answers
    spy = _Calls(chroma._nearest.collection)
    chroma._nearest.collection = spy
    try:
        hits = chroma.similarity_search(SearchRequest("q0", 5, filter=text_filter))
    finally:
        chroma._nearest.collection = spy.collection
    assert len(hits) == 5
    assert spy.calls == ["query"]  # the `where` clause is evaluated once: no counting `get`


def test_exact_must_be_a_flag() -> None:
    from rag.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError, match="exact must be True or False, got 'yes'"):
        SearchRequest("q", exact="yes")  # type: ignore[arg-type]


def test_a_filtered_search_on_an_embedded_folder_reads_no_collection_metadata(
    stores: tuple[ChromaVectorStore, NumpyVectorStore],
) -> None:
    chroma, _ = stores
    chroma.similarity_search(SearchRequest("q0", 5, filter="bucket == 3"))
    spy = _Calls(chroma._conn.client)
    chroma._conn.client = spy
    try:
        assert len(chroma.similarity_search(SearchRequest("q0", 5, filter="bucket == 3"))) == 5
    finally:
        chroma._conn.client = spy.collection
    assert spy.calls == []  # the keys Chroma cannot index are known in-process (stores.chroma.opaque)


def test_stores_over_one_folder_share_the_keys_chroma_cannot_index(tmp_path: Path) -> None:
    from rag.embeddings import HashingEmbedding

    model = HashingEmbedding(dimensions=16)
    with ChromaVectorStore(model, path=tmp_path) as first, ChromaVectorStore(model, path=tmp_path) as second:
        second.add([Document("small", "a", {"n": 1})])
        assert second.count("n > 5") == 0
        first.add([Document("huge", "b", {"n": 2**70})])  # beyond float precision: filtered in Python
        assert [d.id for d in second.get(filter="n > 5")] == ["huge"]
