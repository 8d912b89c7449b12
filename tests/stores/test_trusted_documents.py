"""Documents a store builds from its own records skip `Document(...)`'s checks.

What they return must be exactly what the checked constructor would have built from the same input:
equal, with every metadata value of the same type (`True` is not `1`, `2.0` is not `2`, `-0.0` keeps its
sign), lists as lists, and owned by the caller (changing one result never changes the next). Records
another tool wrote to a Chroma collection still go through the checks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.errors import InvalidRequestError
from stores import ChromaVectorStore, NumpyVectorStore
from stores.chroma.records import decode

MODEL = HashingEmbedding(dimensions=32)

ODD: dict[str, Any] = {
    "yes": True,
    "no": False,
    "zero": 0,
    "big": 2**70,
    "negative_big": -(2**64) - 1,
    "just_safe": 2**53 + 1,
    "whole_float": 2.0,
    "negative_zero": -0.0,
    "tiny": 5e-324,
    "huge": 1.7976931348623157e308,
    "sum": 0.1 + 0.2,
    "mixed": [1, 1.0, True, "1", 2**65, -0.0],
    "empty": [],
    "bools": [False, True],
    "unicode": "héllo 漢字 🎉",
    "surrogate": "lone \ud800 half",
    "nul": "a\x00b",
    "$dollar": 1,
    "#hash": "h",
    "_rag_meta": "a user key with the reserved prefix",
    "chroma:key": 3,
    "clé ü 🎉": 1.5,
    'quote"key': "q",
}

TEXTS = {
    "odd": 'text with "quotes", \\ backslashes, 漢字, 🎉 and a lone \udc80 surrogate',
    "plain": "plain rivers and lakes",
    "empty-meta": "a document without metadata",
}


def _typed(value: object) -> object:
    """The value with each scalar's type spelled out: `==` alone takes True for 1 and 2.0 for 2."""
    if isinstance(value, dict):
        return {name: _typed(item) for name, item in value.items()}
    if isinstance(value, list):
        return ["list", [_typed(item) for item in value]]
    return [type(value).__name__, repr(value)]


def _documents() -> list[Document]:
    metadata = {"odd": ODD, "plain": {"n": 7, "tags": ["x"]}, "empty-meta": {}}
    rng = np.random.default_rng(3)
    return [
        Document(doc_id, text, metadata[doc_id], embedding=rng.standard_normal(32).astype(np.float32))
        for doc_id, text in TEXTS.items()
    ]


def _assert_same(found: list[Document], expected: dict[str, Document]) -> None:
    assert found
    for doc in found:
        checked = expected[doc.id].with_score(doc.score).with_embedding(None)
        assert doc == checked
        assert type(doc.text) is str and doc.text == checked.text
        assert _typed(doc.metadata) == _typed(checked.metadata)


@pytest.fixture(params=["chroma", "numpy"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Each store holding `_documents()`."""
    if request.param == "numpy":
        yield NumpyVectorStore(MODEL)
        return
    with ChromaVectorStore(MODEL, path=tmp_path) as chroma:
        yield chroma


def test_stored_documents_equal_checked_ones_with_the_same_types(store: Any) -> None:
    originals = _documents()
    store.add(originals)
    expected = {doc.id: doc for doc in originals}
    _assert_same(store.get(), expected)
    _assert_same(store.get(ids=["odd", "plain"]), expected)
    for mode in ("vector", "hybrid"):
        # A word of each text: a hit needs evidence (a cosine or a BM25 term) to be returned at all.
        found = store.similarity_search(SearchRequest("surrogate plain document", top_k=3, mode=mode))
        assert {doc.id for doc in found} == set(TEXTS)
        _assert_same(found, expected)
    exact = store.capabilities.exact
    _assert_same(store.similarity_search(SearchRequest("rivers", top_k=3, exact=exact)), expected)


def test_a_returned_document_owns_its_metadata(store: Any) -> None:
    store.add(_documents())
    [first] = store.get(ids=["odd"])
    first.metadata["mixed"].append("changed")
    first.metadata["unicode"] = "changed"
    [hit] = [d for d in store.similarity_search(SearchRequest("quotes", top_k=3)) if d.id == "odd"]
    for again in (store.get(ids=["odd"])[0], hit):
        assert again.metadata["mixed"] == ODD["mixed"] and again.metadata["unicode"] == ODD["unicode"]


def test_returned_embeddings_are_read_only_copies(store: Any) -> None:
    originals = {doc.id: doc for doc in _documents()}
    store.add(originals.values())
    for doc in store.get(include_embeddings=True):
        assert doc.embedding is not None and doc.embedding.dtype == np.float32
        assert not doc.embedding.flags.writeable
        original = originals[doc.id].embedding
        assert original is not None
        np.testing.assert_allclose(doc.embedding, original / np.linalg.norm(original), rtol=1e-6)


def test_a_store_built_document_is_a_checked_one(store: Any) -> None:
    vector = np.array([1.0, 2.0, 2.0, *[0.0] * 29], dtype=np.float32)  # unit length after / 3
    store.add([Document("d", "text", {"a": [1, 2.0], "b": True}, embedding=vector)])
    [made] = store.similarity_search(SearchRequest("text", top_k=1))
    assert _typed(made.metadata) == _typed({"a": [1, 2.0], "b": True})
    checked = Document("d", "text", dict(made.metadata), score=made.score)  # Chroma may reorder keys
    assert made == checked and repr(made) == repr(checked)
    assert type(made) is Document and made.with_score(0.1).score == 0.1
    with pytest.raises(AttributeError):
        made.text = "other"  # type: ignore[misc]
    assert made.embedding is None and store.get(ids=["d"])[0].embedding is None
    [held] = store.get(ids=["d"], include_embeddings=True)
    assert held.embedding is not None and held.embedding.dtype == np.float32
    assert not held.embedding.flags.writeable
    store.add([Document("d", "text", embedding=-vector)])  # rewrites the store's buffer in place
    np.testing.assert_allclose(held.embedding, vector / 3, rtol=1e-6)


def test_records_another_tool_wrote_are_still_checked(tmp_path: Path) -> None:
    with ChromaVectorStore(MODEL, path=tmp_path) as store:
        store.add([Document("ours", "our text", {"n": 1})])
        vectors = MODEL.embed(["foreign text", "broken text"])
        store.chroma_collection.add(
            ids=["foreign", "broken"],
            embeddings=vectors,
            documents=["foreign text", "broken text"],
            metadatas=[{"n": 2, "s": "x", "f": 1.5}, {"_rag_meta": "[1, 2]"}],
        )
        [foreign] = store.get(ids=["foreign"])
        assert foreign == Document("foreign", "foreign text", {"n": 2, "s": "x", "f": 1.5})
        assert _typed(foreign.metadata) == _typed({"n": 2, "s": "x", "f": 1.5})
        with pytest.raises(InvalidRequestError, match="metadata of document 'broken' must be a mapping"):
            store.get(ids=["broken"])
        assert [doc.id for doc in store.get(ids=["ours"])] == ["ours"]  # nothing stored is lost


@pytest.mark.parametrize(
    ("stored", "decoded"),
    [
        ('{"a":1,"b":[2.0,true]}', {"a": 1, "b": [2.0, True]}),
        (' { "a" : 1 } ', {"a": 1}),  # whitespace, as another JSON writer may leave
        ('{"k":"\\ud800"}', {"k": "\ud800"}),
    ],
)
def test_decoding_reads_any_json_layout_of_the_previous_records(stored: str, decoded: dict[str, Any]) -> None:
    record = {"_rag_meta": stored, "_rag_text": ' "the text" '}
    assert decode(None, record) == ("the text", decoded)


@pytest.mark.parametrize("stored", ['{"a":1} trailing', '{"a":', ""])
def test_decoding_malformed_json_raises_the_json_error(stored: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        decode(None, {"_rag_meta": stored})
