"""The numpy store's lexical index: saved with the store atomically, rebuilt from texts when it must be."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import stores.numpy.persist as numpy_persist
from rag import Document, HashingEmbedding, SearchRequest
from rag.errors import StoreError
from stores.lexical import LexicalIndex
from stores.lexical.persist import MANIFEST as LEXICAL_MANIFEST
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


def test_the_saved_index_is_loaded(saved: tuple[Path, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    folder, answers = saved
    assert (folder / _manifest(folder)["lexical"] / LEXICAL_MANIFEST).is_file()
    _no_rebuild(monkeypatch)
    assert _answers(NumpyVectorStore.load(folder, MODEL)) == answers


def test_a_store_saved_before_the_index_existed_gains_one(saved: tuple[Path, Any]) -> None:
    folder, answers = saved
    manifest = _manifest(folder)
    shutil.rmtree(folder / manifest.pop("lexical"))
    (folder / numpy_persist.MANIFEST).write_text(json.dumps(manifest))
    store = NumpyVectorStore(MODEL, path=folder)
    assert _answers(store) == answers
    store.save()
    assert "lexical" in _manifest(folder)


@pytest.mark.parametrize("damage", ["tokenizer", "other ids", "missing data"])
def test_an_unusable_index_is_rebuilt_from_the_texts(saved: tuple[Path, Any], damage: str) -> None:
    folder, answers = saved
    index_folder = folder / _manifest(folder)["lexical"]
    if damage == "tokenizer":
        lexical = json.loads((index_folder / LEXICAL_MANIFEST).read_text())
        lexical["settings"]["tokenizer"] = "an-older-analysis"
        (index_folder / LEXICAL_MANIFEST).write_text(json.dumps(lexical))
    elif damage == "other ids":
        other = LexicalIndex()
        other.add(["zz"], ["sparse retrieval"])
        other.save(index_folder)
    else:
        for data in index_folder.glob("*.npz"):
            data.unlink()
    assert _answers(NumpyVectorStore.load(folder, MODEL)) == answers


def test_a_crash_while_saving_the_index_keeps_the_previous_save(
    saved: tuple[Path, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, answers = saved
    store = NumpyVectorStore.load(folder, MODEL)
    store.delete(["l2"])
    store.add([Document("l9", "sparse sparse retrieval")])

    def fail(self: LexicalIndex, target: Any) -> None:
        raise StoreError("no space left on device")

    monkeypatch.setattr(LexicalIndex, "save", fail)
    with pytest.raises(StoreError, match="no space"):
        store.save()
    monkeypatch.undo()
    assert _answers(NumpyVectorStore.load(folder, MODEL)) == answers
    store.save()
    assert _answers(NumpyVectorStore.load(folder, MODEL)) == _answers(store) != answers


def test_batched_search_mixes_modes_like_single_searches() -> None:
    store = NumpyVectorStore(MODEL)
    store.add(lexical_documents())
    store.delete(["l3"])  # rows move: the index's rows and the store's must stay matched
    requests = [*REQUESTS, SearchRequest(LEXICAL_QUERY, top_k=4, filter="n > 1"), SearchRequest("dense")]
    batched = store.similarity_search_batch(requests)
    assert batched == [store.similarity_search(r) for r in requests]
    assert [d.id for d in batched[1]] == [d.id for d in store.similarity_search(REQUESTS[1])]
    assert all(d.id != "l3" for found in batched for d in found)


def test_an_index_of_an_older_analysis_is_rebuilt_with_titles_and_headings(tmp_path: Path) -> None:
    store = NumpyVectorStore(MODEL)
    store.add([Document("sec", "Declare the type.", {"title": "Guide", "headings": ["Validators"]})])
    folder = store.save(tmp_path / "store")
    index_folder = folder / _manifest(folder)["lexical"]
    lexical = json.loads((index_folder / LEXICAL_MANIFEST).read_text())
    lexical["settings"]["tokenizer"] = "rag-en-1"  # as the previous version saved it
    (index_folder / LEXICAL_MANIFEST).write_text(json.dumps(lexical))
    again = NumpyVectorStore.load(folder, MODEL)
    assert [d.id for d in again.similarity_search(SearchRequest("validators guide", mode="lexical"))] == [
        "sec"
    ]
