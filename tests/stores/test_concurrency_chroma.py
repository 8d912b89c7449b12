"""The Chroma store shared by threads (issue 12): embedded and in-process, checked like the numpy store.

Writers own their ids, so the store must end equal to the numpy store after a serial replay of the
same operations (`stores.testing.concurrency`); readers check every answer while the writers run.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.documents import SearchRequest
from rag.embeddings import HashingEmbedding
from rag.vectorstore import VectorStore
from stores import ChromaVectorStore, NumpyVectorStore
from stores.testing.concurrency import (
    Operation,
    apply,
    fast_switching,
    lexical_scores,
    replay,
    run_threads,
    state,
    writer_plans,
)

MODEL = HashingEmbedding(dimensions=64)


@pytest.fixture(params=["embedded", "in-process"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ChromaVectorStore]:
    path = tmp_path / "chroma" if request.param == "embedded" else None
    with ChromaVectorStore(MODEL, collection="threads", path=path) as opened:
        yield opened


@pytest.mark.parametrize("seed", [5, 6])
def test_writers_and_readers_end_like_a_serial_replay(store: ChromaVectorStore, seed: int) -> None:
    plans = writer_plans(seed, writers=4, steps=8)
    with fast_switching():
        report = run_threads(store, plans, readers=2, seed=seed)
    assert report.errors == []
    assert report.reads > 0
    serial = replay(NumpyVectorStore(MODEL), plans)
    assert state(store) == state(serial)
    assert store.count() == serial.count()
    final = serial.get()
    for query in ("alpha beta", "vector search index", "omega"):
        for mode in ("vector", "hybrid"):
            request = SearchRequest(query, top_k=6, mode=mode)
            found, expected = store.similarity_search(request), serial.similarity_search(request)
            assert [d.id for d in found] == [d.id for d in expected]  # HNSW finds all at this size
            assert [d.score for d in found] == pytest.approx([d.score for d in expected], abs=1e-5)
        found = store.similarity_search(SearchRequest(query, top_k=10, mode="lexical"))
        assert [(d.id, d.score) for d in found] == lexical_scores(final, query, 10)


def test_two_stores_on_one_folder_share_the_lock(tmp_path: Path) -> None:
    plans = writer_plans(9, writers=4, steps=6)
    folder = tmp_path / "chroma"
    with (
        ChromaVectorStore(MODEL, collection="twins", path=folder) as first,
        ChromaVectorStore(MODEL, collection="twins", path=folder) as second,
    ):
        turns = itertools.count()

        def write(_: VectorStore, operation: Operation) -> None:
            apply((first, second)[next(turns) % 2], operation)  # each store writes half the time

        with fast_switching():
            report = run_threads(first, plans, readers=2, writer=write)
        assert report.errors == []
        serial = replay(NumpyVectorStore(MODEL), plans)
        assert state(first) == state(serial) == state(second)
        found = second.similarity_search(SearchRequest("alpha", top_k=10, mode="lexical"))
        assert [(d.id, d.score) for d in found] == lexical_scores(serial.get(), "alpha", 10)
