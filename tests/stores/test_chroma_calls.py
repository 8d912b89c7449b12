"""What one search costs in Chroma calls: the constant costs issue 17 removed, pinned by counting calls.

A spy wraps the chromadb collection or client and records each method called (the real ones run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag import Document, HashingEmbedding, SearchRequest
from stores import ChromaVectorStore

MODEL = HashingEmbedding(dimensions=32)


class Calls:
    """Records `name(include=...)` of every method called on the wrapped object."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.target, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, tuple(kwargs.get("include") or ())))
            return method(*args, **kwargs)

        return call


def _docs() -> list[Document]:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    return [
        Document(f"d{i:04d}", f"{words[i % 8]} {words[(i * 3) % 8]} code E-{i}", {"n": i}) for i in range(900)
    ]


def _spied(store: ChromaVectorStore) -> tuple[Calls, Calls]:
    collection, client = Calls(store._collection), Calls(store._conn.client)
    store._collection = store._nearest.collection = collection
    store._conn.client = client
    return collection, client


def test_a_hybrid_search_on_a_folder_makes_one_query_and_one_read(tmp_path: Path) -> None:
    # Before: the vector half fetched embeddings, metadata and text of 100 candidates, the final rows
    # were read again, and every search read the collection's metadata for the lexical state token.
    with ChromaVectorStore(MODEL, path=tmp_path, ef_search=50) as store:
        store.add(_docs())
        request = SearchRequest("gamma code E-17", top_k=5, mode="hybrid")
        first = store.similarity_search(request)
        collection, client = _spied(store)
        again = store.similarity_search(request)
        assert [(d.id, d.score, d.text) for d in again] == [(d.id, d.score, d.text) for d in first]
        assert len(again) == 5
        assert collection.calls == [("query", ("distances",)), ("get", ("metadatas", "documents"))]
        assert client.calls == []


def test_a_write_by_a_second_store_reaches_the_first_ones_lexical_index(tmp_path: Path) -> None:
    with ChromaVectorStore(MODEL, path=tmp_path) as first, ChromaVectorStore(MODEL, path=tmp_path) as second:
        first.add(_docs()[:10])
        assert first.similarity_search(SearchRequest("omega", mode="lexical")) == []
        second.add([Document("new", "omega", {})])
        assert [d.id for d in first.similarity_search(SearchRequest("omega", mode="lexical"))] == ["new"]
        second.delete(["new"])
        assert first.similarity_search(SearchRequest("omega", mode="lexical")) == []
