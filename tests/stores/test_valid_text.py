"""Lone surrogates (strings no UTF-8 encoder can write) get one behaviour on every store: a document holding
one is refused with an error naming it and the field, nothing of its batch is written, and a filter or
query holding one is answered or refused the same way everywhere."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.errors import FilterError, InvalidRequestError
from rag.filters import key, parse
from rag.vectorstore import VectorStore
from stores import ChromaVectorStore, NumpyVectorStore, PgVectorStore

MODEL = HashingEmbedding(dimensions=32)


@pytest.fixture(params=["numpy", "chroma", "pgvector"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, fresh_name: Callable[[str], str]
) -> Iterator[VectorStore]:
    if request.param == "numpy":
        yield NumpyVectorStore(MODEL)
    elif request.param == "chroma":
        yield ChromaVectorStore(MODEL, path=tmp_path / "chroma")
    else:
        url = request.getfixturevalue("postgres_server_url")
        with PgVectorStore(MODEL, url=url, table=fresh_name("surrogates")) as pg:
            yield pg


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (Document("t", "bad \udc80 byte"), r"document 't': its text holds a lone surrogate at index 4"),
        (Document("m", "fine", {"source": "caf\udce9.md"}), r"document 'm': metadata 'source' holds"),
        (Document("l", "fine", {"tags": ["ok", "\ud800"]}), r"document 'l': metadata 'tags' holds"),
        (Document("k", "fine", {"k\udc80": 1}), r"document 'k': metadata key 'k\\udc80' holds"),
        (Document("i\udc80", "fine"), r"document 'i\\udc80': its id holds"),
    ],
    ids=["text", "metadata", "list", "key", "id"],
)
def test_a_lone_surrogate_is_refused_naming_the_document_and_nothing_is_written(
    store: VectorStore, bad: Document, message: str
) -> None:
    store.add([Document("keep", "kept", {"source": "keep.md"})])
    with pytest.raises(InvalidRequestError, match=message):
        store.add([Document("new", "fine"), bad])
    assert [d.id for d in store.get()] == ["keep"]
    assert store.count() == 1


def test_filters_and_queries_holding_one_are_treated_alike(store: VectorStore) -> None:
    store.add([Document("keep", "kept lamp", {"source": "keep.md"})])
    with pytest.raises(FilterError, match="not valid Unicode text"):
        store.get(filter=key("source") == "caf\udce9.md")
    with pytest.raises(FilterError, match="not valid Unicode text"):
        store.count(filter=parse("source IN ['a', '\udce9']"))
    for mode in ("vector", "lexical", "hybrid"):
        found = store.similarity_search(SearchRequest("lamp \udc80", top_k=2, mode=mode))
        assert [d.id for d in found] == ["keep"]
