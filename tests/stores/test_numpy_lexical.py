"""The numpy store's lexical index: saved with the store atomically, rebuilt from texts when it must be."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rag import HashingEmbedding, SearchRequest
from stores.lexical import LexicalIndex
from stores.numpy.store import NumpyVectorStore
from stores.testing.cases import LEXICAL_QUERY, lexical_documents

MODEL = HashingEmbedding(dimensions=32)
REQUESTS = [
    SearchRequest(LEXICAL_QUERY, top_k=5, mode="lexical"),
    SearchRequest(LEXICAL_QUERY, top_k=5, mode="hybrid", filter="n > 1"),
    SearchRequest(LEXICAL_QUERY, top_k=3, mode="hybrid", fusion="weighted", diversity=0.5),
]


def _answers(store: NumpyVectorStore) -> list[list[tuple[str, float | None]]]:
    return [[(d.id, d.score) for d in store.similarity_search(r)] for r in REQUESTS]


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, list[list[tuple[str, float | None]]]]:
    store = NumpyVectorStore(MODEL)
    store.add(lexical_documents())
    return store.save(tmp_path / "store"), _answers(store)


def _no_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: LexicalIndex, ids: Any, texts: Any) -> None:
        raise AssertionError("the saved index should have been loaded, not rebuilt")

    monkeypatch.setattr(LexicalIndex, "add", refuse)


def test_a_reopened_store_answers_from_its_saved_index(
    saved: tuple[Path, list[list[tuple[str, float | None]]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, answers = saved
    _no_rebuild(monkeypatch)
    assert _answers(NumpyVectorStore(MODEL, path=folder)) == answers


def test_batched_search_mixes_modes_like_single_searches() -> None:
    store = NumpyVectorStore(MODEL)
    store.add(lexical_documents())
    store.delete(["l3"])  # rows move: the index's rows and the store's must stay matched
    requests = [*REQUESTS, SearchRequest(LEXICAL_QUERY, top_k=4, filter="n > 1"), SearchRequest("dense")]
    batched = store.similarity_search_batch(requests)
    assert batched == [store.similarity_search(r) for r in requests]
    assert [d.id for d in batched[1]] == [d.id for d in store.similarity_search(REQUESTS[1])]
    assert all(d.id != "l3" for found in batched for d in found)
