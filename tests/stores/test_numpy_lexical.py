"""The numpy store's lexical index: saved with the store atomically, rebuilt from texts when it must be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import stores.numpy.persist as numpy_persist
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


def _manifest(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / numpy_persist.MANIFEST).read_text())
    return data


def _no_rebuild(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: LexicalIndex, ids: Any, texts: Any) -> None:
        raise AssertionError("the saved index should have been loaded, not rebuilt")

    monkeypatch.setattr(LexicalIndex, "add", refuse)


def test_batched_search_mixes_modes_like_single_searches() -> None:
    store = NumpyVectorStore(MODEL)
    store.add(lexical_documents())
    store.delete(["l3"])  # rows move: the index's rows and the store's must stay matched
    requests = [*REQUESTS, SearchRequest(LEXICAL_QUERY, top_k=4, filter="n > 1"), SearchRequest("dense")]
    batched = store.similarity_search_batch(requests)
    assert batched == [store.similarity_search(r) for r in requests]
    assert [d.id for d in batched[1]] == [d.id for d in store.similarity_search(REQUESTS[1])]
    assert all(d.id != "l3" for found in batched for d in found)
