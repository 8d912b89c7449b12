"""Hybrid and MMR results do not depend on the page size: a shorter list is a prefix of a longer one.

Fusion and MMR run over a fixed candidate pool (`rag.retrieval.ranking.CANDIDATE_POOL` per ranking), so asking
for more results only extends the list: the same ids, in the same order, with the same scores.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.retrieval.ranking import CANDIDATE_POOL, candidate_depth
from rag.vectorstore import VectorStore
from stores import ChromaVectorStore, NumpyVectorStore

WORDS = str.split(
    "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega river stone cloud lamp tide "
    "harbour keeper bridge signal"
)
QUERIES = ["alpha beta lamp", "river stone signal keeper", "omega tide", "gamma"]
DIMENSIONS = 64
PAGE_SIZES = [1, 3, 10, 25, 60, CANDIDATE_POOL]


def _corpus(count: int = 400, seed: int = 7) -> list[Document]:
    """Documents of random words with random vectors, so the two rankings disagree and run deep.

    Many documents share the query terms, and the vector ranking is unrelated to the lexical one: the
    documents near the top of one list sit anywhere in the other, as with a real embedder and BM25.
    """
    rng = random.Random(seed)
    vectors = np.random.default_rng(seed).standard_normal((count, DIMENSIONS)).astype(np.float32)
    docs = []
    for i in range(count):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        docs.append(
            Document(f"d{i:04d}", text, {"n": i % 5}, embedding=vectors[i] / np.linalg.norm(vectors[i]))
        )
    return docs


@pytest.fixture(scope="module")
def numpy_store() -> NumpyVectorStore:
    store = NumpyVectorStore(HashingEmbedding(dimensions=DIMENSIONS))
    store.add(_corpus())
    return store


@pytest.fixture(scope="module")
def chroma_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaVectorStore]:
    folder: Path = tmp_path_factory.mktemp("fusion-pool")
    with ChromaVectorStore(HashingEmbedding(dimensions=DIMENSIONS), path=folder, collection="pool") as store:
        store.add(_corpus())
        yield store


def _hits(store: VectorStore, request: SearchRequest) -> list[tuple[str, float | None]]:
    return [(doc.id, doc.score) for doc in store.similarity_search(request)]


def _assert_prefixes(store: VectorStore, base: SearchRequest) -> None:
    longest = _hits(store, base.replace(top_k=CANDIDATE_POOL))
    assert len(longest) == CANDIDATE_POOL  # the corpus is deep enough for the test to mean something
    for size in PAGE_SIZES:
        assert _hits(store, base.replace(top_k=size)) == longest[:size], (base, size)


@pytest.mark.parametrize("fusion", ["rrf", "weighted"])
@pytest.mark.parametrize("query", QUERIES)
def test_numpy_hybrid_lists_are_prefixes_of_longer_ones(
    numpy_store: NumpyVectorStore, fusion: str, query: str
) -> None:
    base = SearchRequest(query, mode="hybrid", fusion=fusion, vector_weight=0.3)  # type: ignore[arg-type]
    _assert_prefixes(numpy_store, base)
    _assert_prefixes(numpy_store, base.replace(filter="n != 2"))


@pytest.mark.parametrize("fusion", ["rrf", "weighted"])
@pytest.mark.parametrize("query", QUERIES[:2])
def test_chroma_hybrid_lists_are_prefixes_of_longer_ones(
    chroma_store: ChromaVectorStore, numpy_store: NumpyVectorStore, fusion: str, query: str
) -> None:
    base = SearchRequest(query, mode="hybrid", fusion=fusion, vector_weight=0.7)  # type: ignore[arg-type]
    _assert_prefixes(chroma_store, base)
    # And the stores still agree with each other, scores included.
    request = base.replace(top_k=10)
    assert [i for i, _ in _hits(chroma_store, request)] == [i for i, _ in _hits(numpy_store, request)]


@pytest.mark.parametrize("mode", ["vector", "lexical", "hybrid"])
def test_mmr_lists_are_prefixes_of_longer_ones(numpy_store: NumpyVectorStore, mode: str) -> None:
    base = SearchRequest("alpha beta lamp", mode=mode, diversity=0.4)  # type: ignore[arg-type]
    _assert_prefixes(numpy_store, base)


def test_the_pool_is_fixed_up_to_its_size_and_grows_beyond() -> None:
    assert {candidate_depth(k) for k in range(0, CANDIDATE_POOL + 1)} == {CANDIDATE_POOL}
    assert candidate_depth(CANDIDATE_POOL + 1) == CANDIDATE_POOL + 1
    assert candidate_depth(1000) == 1000
